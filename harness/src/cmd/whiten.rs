//! `unmix whiten`: fit a PCA / ZCA whitener and write the whitened data (and the model).

use super::{check_fit_size, explain_rank_zero, named, read_input, require_npy, threads};
use crate::io::Table;
use crate::io::{Matrix, NpyFloat};
use crate::output::{Delivery, Outputs};
use crate::pipeline::{WhitenJob, whiten_into, whiten_then};
use crate::simd::GemmFloat;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use unmix::whiten::{Method, Rotation, WhitenOptions};

/// Arguments of `unmix whiten`.
#[derive(clap::Args)]
pub struct Args {
    /// Samples as rows: .npy (float32/float64/integer, C or Fortran order) or .csv.
    #[arg(long)]
    pub input: PathBuf,
    /// Components to keep (default: all features; an error if the data are rank-deficient).
    #[arg(long)]
    pub n_components: Option<usize>,
    /// Whitening matrix: PCA (principal axes) or ZCA (symmetric; keeps all features).
    #[arg(long, value_parser = named::<Method>(Method::NAMES), default_value = Method::Pca.as_str())]
    pub method: Method,
    /// Rotate the whitened data by a Haar-random orthogonal matrix (the "PCA + Rand" control).
    #[arg(long, value_parser = named::<Rotation>(Rotation::NAMES), default_value = Rotation::None.as_str())]
    pub rotation: Rotation,
    /// Seed of the random rotation.
    #[arg(long, default_value_t = 0)]
    pub random_state: u64,
    /// Delta degrees of freedom of the covariance: 0 (scikit-learn's FastICA) or 1 (its PCA).
    #[arg(long, default_value_t = 0)]
    pub ddof: u32,
    /// Eigenvalues above this fraction of the largest count towards the effective rank.
    #[arg(long, default_value_t = WhitenOptions::DEFAULT.rank_rtol)]
    pub rank_rtol: f64,
    /// Worker threads (default: all cores; at most 4 per core). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Where to write the whitened data (.npy, the input's float type).
    #[arg(long)]
    pub output: PathBuf,
    /// Where to write the fitted whitener (JSON; `transform` applies it to new data).
    #[arg(long)]
    pub model: Option<PathBuf>,
}

/// Runs `unmix whiten`.
pub fn run(a: &Args) -> Result<serde_json::Value> {
    require_npy("--output", &a.output)?;
    let mut outs = vec![("--output", a.output.as_path())];
    if let Some(m) = &a.model {
        outs.push(("--model", m.as_path()));
    }
    let mut outputs = Outputs::reserve(&[("--input", a.input.as_path())], &outs)?;
    let table = read_input(&a.input)?;
    crate::phases::done("read");
    let (n, d) = table.shape();
    let k = a.n_components.unwrap_or(d);
    if a.method == Method::Zca && k != d {
        bail!(
            "ZCA keeps every feature: --n-components must be {d} (the features), not {k}; use \
             --method pca to keep fewer (invalid number of components {k} for ZCA)"
        );
    }
    let threads = threads(a.threads);
    check_fit_size(n, d, k, threads, true).with_context(|| a.input.display().to_string())?;
    let job = WhitenJob {
        n_components: Some(k),
        options: WhitenOptions {
            method: a.method,
            rotation: a.rotation.with_seed(a.random_state),
            ddof: a.ddof,
            rank_rtol: a.rank_rtol,
        },
        threads,
    };
    let input = a.input.display();
    let (model, max_cov_error) = match table {
        Table::F32(x) => whiten_to(&x, &job, &mut outputs).map_err(|e| explain_rank_zero(e, &x)),
        Table::F64(x) => whiten_to(&x, &job, &mut outputs).map_err(|e| explain_rank_zero(e, &x)),
    }
    .with_context(|| format!("{input}"))?;
    if a.model.is_some() {
        outputs.write_json("--model", &crate::model::Model::Whitener(model.clone()))?;
    }
    outputs.persist()?;
    crate::phases::done("persist");
    Ok(serde_json::json!({
        "output": a.output,
        "model": a.model,
        "n_samples": n,
        "n_features": d,
        "n_components": model.n_components,
        "effective_rank": model.effective_rank,
        "max_abs_cov_error": max_cov_error,
    }))
}

/// Whitens `x` into `--output` a block at a time (the whitened data are never held whole);
/// returns the model and the self-check.
fn whiten_to<T: GemmFloat + NpyFloat + serde::Serialize>(
    x: &Matrix<T>,
    job: &WhitenJob,
    outputs: &mut Outputs,
) -> Result<(crate::model::WhitenerModel, f64)> {
    let (model, check, ()) = whiten_then(x, job, |view, pool| {
        let delivery = Delivery::for_threads(pool.current_num_threads());
        outputs.write("--output", |w| whiten_into(view, x, pool, delivery, w))
    })?;
    Ok((model, check))
}
