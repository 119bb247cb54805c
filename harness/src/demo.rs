//! `unmix demo`: the pipeline on data that ship with the crate.
//!
//! The data are scikit-learn's bundled handwritten digits (1797 images of 8 x 8 pixels, values
//! 0..16; Alpaydin and Kaynak, UCI), committed as `harness/data/digits_x.npy`.

use crate::io::{Matrix, Table, read_npy_from};
use crate::pipeline::{WhitenJob, whiten};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use unmix::whiten::{Method, Rotation, WhitenOptions};

const DIGITS_X: &[u8] = include_bytes!("../data/digits_x.npy");

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

/// Runs the demo and returns its report.
pub fn run(threads: usize) -> Result<Value> {
    let x = digits()?;
    let keep = nonconstant_columns(&x);
    let xs = x.select_columns(&keep);
    let mut report = Vec::new();
    let variants = [
        ("PCA", Method::Pca, Rotation::None, 20),
        ("PCA + Rand", Method::Pca, Rotation::Random { seed: 0 }, 20),
        ("ZCA", Method::Zca, Rotation::None, xs.cols),
    ];
    for (name, method, rotation, k) in variants {
        let options = WhitenOptions {
            method,
            rotation,
            ..WhitenOptions::DEFAULT
        };
        let job = WhitenJob {
            n_components: Some(k),
            options,
            threads,
        };
        let out = whiten(&xs, &job)?;
        let ev: Vec<f64> = out.model["explained_variance"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        report.push(json!({
            "variant": name,
            "n_components": k,
            "effective_rank": out.model["effective_rank"],
            "explained_variance_kept": ev.iter().sum::<f64>(),
            "max_abs_cov_error": out.max_cov_error,
        }));
    }
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
        "data": {"name": "digits", "n_samples": x.rows, "n_features": x.cols,
                 "nonconstant_features": keep.len()},
        "whitening": report,
        "all_64_pixels": refused,
    }))
}
