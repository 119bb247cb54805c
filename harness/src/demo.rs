//! `unmix demo`: the pipeline on data that ship with the crate.
//!
//! The data are scikit-learn's bundled handwritten digits (1797 images of 8 x 8 pixels, values
//! 0..16; Alpaydin and Kaynak, UCI), committed as `harness/data/digits_x.npy`.

use crate::fastica::{self, FitJob};
use crate::io::{Matrix, Table, read_npy_from};
use crate::metric::{ConcentrationJob, Trees, concentration};
use crate::pipeline::{WhitenJob, whiten};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use unmix::ica::{FastIcaOptions, WInit};
use unmix::whiten::{Rotation, WhitenOptions};

const DIGITS_X: &[u8] = include_bytes!("../data/digits_x.npy");
const DIGITS_Y: &[u8] = include_bytes!("../data/digits_y.npy");

/// The digits data as `f64`, 1797 x 64.
pub fn digits() -> Result<Matrix<f64>> {
    match read_npy_from(DIGITS_X, "digits_x.npy (bundled)")? {
        Table::F64(m) => Ok(m),
        Table::F32(_) => bail!("bundled digits data have an unexpected dtype"),
    }
}

/// Columns of `x` whose values are not all equal.
pub fn nonconstant_columns(x: &Matrix<f64>) -> Vec<usize> {
    (0..x.cols)
        .filter(|&c| (1..x.rows).any(|r| x.data[r * x.cols + c] != x.data[c]))
        .collect()
}

/// FastICA with scikit-learn's defaults and seed 0, no progress bar.
fn fit_default(x: &Matrix<f64>, k: usize, threads: usize) -> Result<fastica::Fitted<f64>> {
    let progress = |_: usize, _: f64| {};
    let options = FastIcaOptions::DEFAULT;
    fastica::fit(
        x,
        &FitJob {
            n_components: Some(k),
            options,
            init: WInit::Seed(0),
            threads,
            progress: &progress,
        },
    )
}

/// Known sources through a random mixing, recovered by whitening alone and by whitening + FastICA.
fn synthetic(threads: usize) -> Result<Value> {
    use unmix::metrics::{amari_index, correlation::Method, mcc};
    let (n, k, d) = (20_000, 6, 12);
    let mut g = unmix::random::Normals::new(2026);
    // Sources: Laplace (a product of normals is heavy-tailed) and uniform-like, alternating.
    let s: Vec<f64> = (0..n * k)
        .map(|i| {
            if i % 2 == 0 {
                g.next_normal() * g.next_normal()
            } else {
                g.below(1 << 53) as f64 / (1u64 << 52) as f64 - 1.0 // uniform on [-1, 1)
            }
        })
        .collect();
    let a: Vec<f64> = (0..d * k).map(|_| g.next_normal()).collect(); // d x k mixing
    let x: Vec<f64> = (0..n)
        .flat_map(|r| {
            let (s, a) = (&s, &a);
            (0..d).map(move |i| (0..k).map(|j| a[i * k + j] * s[r * k + j]).sum::<f64>())
        })
        .collect();
    let x = Matrix::new(n, d, x)?;
    let score = |est: &[f64]| -> Result<f64> {
        let (lf, lu) = mcc::workspace_len(n, k, k, Method::Pearson);
        let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; k]);
        Ok(mcc::mcc(
            &s,
            k,
            est,
            k,
            Method::Pearson,
            &mut pairs,
            &mut wf,
            &mut wu,
        )?)
    };
    let white = whiten(
        &x,
        &WhitenJob {
            n_components: Some(k),
            options: WhitenOptions::DEFAULT,
            threads,
        },
    )?;
    let fitted = fit_default(&x, k, threads)?;
    let components: Vec<f64> = fitted.model.components.concat();
    let amari = amari_index(&components, &a, k, d, &mut vec![0.0; k * k])?;
    Ok(json!({
        "n_samples": n, "n_sources": k, "n_features": d,
        "mcc_pca": score(&white.z.data)?,
        "mcc_pca_ica": score(&fitted.sources.data)?,
        "amari_pca_ica": amari,
        "ica_iterations": fitted.info.n_iter,
    }))
}

/// The paper's microscopy table on the digits: sparsity of tree split fractions and concentration
/// of each one-vs-rest label's information, for Base, PCA, PCA + ICA and PCA + Rand.
fn digits_table(xs: &Matrix<f64>, labels: &[i64], k: usize, threads: usize) -> Result<Value> {
    let base = xs.clone();
    let pca = whiten(
        xs,
        &WhitenJob {
            n_components: Some(k),
            options: WhitenOptions::DEFAULT,
            threads,
        },
    )?
    .z;
    let rand_opts = WhitenOptions {
        rotation: Rotation::Random { seed: 0 },
        ..WhitenOptions::DEFAULT
    };
    let rand = whiten(
        xs,
        &WhitenJob {
            n_components: Some(k),
            options: rand_opts,
            threads,
        },
    )?
    .z;
    let ica = fit_default(xs, k, threads)?.sources;
    let mut rows = Vec::new();
    for (name, z) in [
        ("Base", &base),
        ("PCA", &pca),
        ("PCA + ICA", &ica),
        ("PCA + Rand", &rand),
    ] {
        let (mut sparsity, mut concentrated) = (0.0, 0.0);
        for digit in 0..10 {
            let y: Vec<bool> = labels.iter().map(|l| *l == digit).collect();
            let cj = ConcentrationJob {
                top: 0.25,
                random_state: 0,
                test_fraction: 0.25,
                trees: Trees::default(),
            };
            let r = concentration(z, &y, None, &cj)?;
            sparsity += r["sparsity"].as_f64().unwrap_or(f64::NAN) / 10.0;
            concentrated += r["concentration"].as_f64().unwrap_or(f64::NAN) / 10.0;
        }
        rows.push(json!({ "representation": name, "n_features": z.cols, "sparsity": sparsity, "concentration_top25": concentrated }));
    }
    Ok(Value::Array(rows))
}

/// Runs the demo and returns its report.
pub fn run(threads: usize) -> Result<Value> {
    let x = digits()?;
    let labels: Vec<i64> = match read_npy_from(DIGITS_Y, "digits_y.npy (bundled)")? {
        Table::F64(m) => m.data.iter().map(|v| *v as i64).collect(),
        Table::F32(_) => bail!("bundled digit labels have an unexpected dtype"),
    };
    let keep = nonconstant_columns(&x);
    let xs = x.select_columns(&keep);
    // Rank-deficiency is reported, not clipped: all 64 pixels include constant ones.
    let all = WhitenJob {
        n_components: Some(x.cols),
        options: WhitenOptions::DEFAULT,
        threads,
    };
    let refused = match whiten(&x, &all) {
        Ok(_) => "accepted".to_string(),
        Err(e) => format!("{e:#}"),
    };
    Ok(json!({
        "synthetic_identifiability": synthetic(threads)?,
        "digits": {
            "n_samples": x.rows, "n_features": x.cols, "nonconstant_features": keep.len(),
            "whitening_all_64_pixels": refused,
            "table": digits_table(&xs, &labels, 20, threads)?,
            "note": "mean over the ten one-vs-rest labels; 20 components; held-out AUROC from gradient-boosted trees",
        },
    }))
}
