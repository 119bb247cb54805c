//! `unmix transform` / `unmix inverse-transform`: apply a fitted model (a FastICA model from
//! `fit`, or a whitener from `whiten --model`) to new rows.

use super::{require_npy, threads};
use crate::fastica::{map_rows, pool, sources_of};
use crate::io::{self, Matrix};
use crate::model::{self, Loaded};
use crate::output::Outputs;
use crate::simd::GemmFloat;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;

/// Arguments of `unmix transform` and `unmix inverse-transform`.
#[derive(clap::Args)]
pub struct Args {
    /// A model written by `unmix fit --model` or `unmix whiten --model`.
    #[arg(long)]
    pub model: PathBuf,
    /// Rows to map: .npy or .csv.
    #[arg(long)]
    pub input: PathBuf,
    /// Where to write the result (.npy, the model's float type).
    #[arg(long)]
    pub output: PathBuf,
    /// Worker threads (default: all cores; at most 4 per core). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs `transform` (`inverse = false`: features to components) or `inverse-transform`.
pub fn run(a: &Args, inverse: bool) -> Result<serde_json::Value> {
    let mut outputs = Outputs::reserve(
        &[
            ("--model", a.model.as_path()),
            ("--input", a.input.as_path()),
        ],
        &[("--output", a.output.as_path())],
    )?;
    require_npy("--output", &a.output)?;
    let model = model::read(&a.model)?;
    let table = io::read_table(&a.input)?;
    let (n, width) = table.shape();
    let (in_w, out_w) = if inverse {
        (model.k, model.d)
    } else {
        (model.d, model.k)
    };
    if width != in_w {
        bail!(
            "{}: {width} columns, but the {} {} expects {in_w}",
            a.input.display(),
            model.kind(),
            a.model.display()
        );
    }
    let t = threads(a.threads);
    let input = a.input.display();
    if model.dtype == "float32" {
        let out = apply(&model, &table.to_f32(), out_w, inverse, t)
            .with_context(|| format!("{input}"))?;
        outputs.write_npy("--output", &out)?;
    } else {
        let out = apply(&model, &table.to_f64(), out_w, inverse, t)
            .with_context(|| format!("{input}"))?;
        outputs.write_npy("--output", &out)?;
    }
    outputs.persist()?;
    Ok(serde_json::json!({"output": a.output, "n_samples": n, "n_columns": out_w}))
}

fn apply<T: GemmFloat + npyz::AutoSerialize>(
    m: &Loaded,
    x: &Matrix<T>,
    out_w: usize,
    inverse: bool,
    threads: usize,
) -> Result<Matrix<T>> {
    let storage: Vec<T> = m.storage.iter().map(|v| T::from_f64(*v)).collect();
    let len = x.rows.checked_mul(out_w).context("output too large")?;
    let mut out = vec![T::ZERO; len];
    // Closures, not trait objects, so that the AVX2 build of `map_rows` can inline them.
    let (xd, w) = (&x.data, x.cols);
    let pool = pool(threads)?;
    match m.ica {
        Some(info) => {
            let v = unmix::ica::FastIcaView::from_parts(m.d, m.k, &storage, info)?;
            if inverse {
                map_rows(&pool, xd, w, &mut out, out_w, |xi, oi| {
                    v.inverse_transform_rows(xi, oi)
                })?;
            } else {
                map_rows(&pool, xd, w, &mut out, out_w, |xi, oi| {
                    sources_of(&v, xi, oi)
                })?;
            }
        }
        None => {
            let v = unmix::whiten::WhitenerView::from_parts(m.d, m.k, &storage)?;
            if inverse {
                map_rows(&pool, xd, w, &mut out, out_w, |xi, oi| {
                    v.inverse_transform_rows(xi, oi)
                })?;
            } else {
                map_rows(&pool, xd, w, &mut out, out_w, |xi, oi| {
                    v.transform_rows(xi, oi)
                })?;
            }
        }
    }
    Matrix::new(x.rows, out_w, out)
}
