//! `unmix metric ...`: the core's metrics over files (the concentration pipeline is in
//! [`crate::concentration`]).

use crate::io::{self, Matrix};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use std::path::Path;
use unmix::metrics::{self, assignment::UNASSIGNED, correlation::Method, mcc, sparsity};

/// Reads a 1-D array (or one column) of floats.
pub fn read_vector(path: &Path) -> Result<Vec<f64>> {
    let m = io::read_table(path)?.to_f64();
    if m.cols != 1 {
        bail!("{}: expected one column, found {}", path.display(), m.cols);
    }
    Ok(m.data.into_vec())
}

/// Reads binary labels: exactly two distinct integer values; the greater is the positive class
/// (scikit-learn's convention for `roc_auc_score`).
pub fn read_binary_labels(path: &Path) -> Result<Vec<bool>> {
    let y = io::read_labels(path)?;
    let mut classes: Vec<i64> = y.clone();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() != 2 {
        bail!(
            "{}: labels must hold exactly two classes, found {} ({:?})",
            path.display(),
            classes.len(),
            &classes[..classes.len().min(5)]
        );
    }
    Ok(y.iter().map(|v| *v == classes[1]).collect())
}

fn same_len(a: usize, b: usize, what: &str) -> Result<()> {
    if a != b {
        bail!("{what}: lengths differ ({a} vs {b})");
    }
    Ok(())
}

/// `{"auroc": ...}`.
pub fn auroc(scores: &Path, labels: &Path, weights: Option<&Path>) -> Result<Value> {
    let s = read_vector(scores)?;
    let y = read_binary_labels(labels)?;
    same_len(s.len(), y.len(), "scores and labels")?;
    let a = match weights {
        Some(w) => {
            let w = read_vector(w)?;
            same_len(s.len(), w.len(), "scores and weights")?;
            metrics::auroc_weighted(&s, &y, &w, &mut vec![0; s.len()])?
        }
        None => metrics::auroc(&s, &y, &mut vec![0; s.len()])?,
    };
    Ok(json!({ "auroc": a, "n_samples": s.len() }))
}

/// `{"sparsity": ...}` of split fractions (or counts: they are normalised first).
pub fn sparsity(fractions: &Path) -> Result<Value> {
    let m = io::read_table(fractions)?.to_f64();
    let c = if m.rows == 1 || m.cols == 1 {
        m.data
    } else {
        bail!("{}: expected a vector", fractions.display())
    };
    let mut f = vec![0.0; c.len()];
    sparsity::split_fractions(&c, &mut f)?;
    Ok(json!({ "sparsity": metrics::hoyer_sparsity(&f)?, "n_features": c.len() }))
}

/// Checks a matrix for a metric: every value finite (reported where it is in the file).
fn check_finite(m: &Matrix<f64>, path: &Path) -> Result<()> {
    if let Some(i) = m.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "{}: non-finite value at row {}, column {}",
            path.display(),
            i / m.cols,
            i % m.cols
        );
    }
    Ok(())
}

/// Divides each column by its largest magnitude, so that the core's sums of squares neither
/// overflow (data near 1e307) nor underflow (near 1e-310); correlations do not change. A constant
/// column is an error naming the file and the column.
fn scale_columns(m: &mut Matrix<f64>, path: &Path) -> Result<()> {
    for c in 0..m.cols {
        let column = (0..m.rows).map(|r| m.data[r * m.cols + c]);
        let first = m.data.get(c).copied().unwrap_or(0.0);
        if m.rows < 2 || column.clone().all(|v| v == first) {
            bail!(
                "{}: column {c} is constant (zero variance): its correlation is undefined",
                path.display()
            );
        }
        let max = column.fold(0.0f64, |a, v| a.max(v.abs()));
        for r in 0..m.rows {
            m.data[r * m.cols + c] /= max;
        }
    }
    Ok(())
}

/// `{"mcc": ..., "pairs": [[i, j], ...]}`.
pub fn mcc(truth: &Path, estimated: &Path, method: Method) -> Result<Value> {
    let (mut t, mut e) = (
        io::read_table(truth)?.to_f64(),
        io::read_table(estimated)?.to_f64(),
    );
    same_len(t.rows, e.rows, "true and estimated rows")?;
    if t.rows < 2 {
        bail!("too few samples: {} given, at least 2 needed", t.rows);
    }
    for (m, p) in [(&mut t, truth), (&mut e, estimated)] {
        check_finite(m, p)?;
        scale_columns(m, p)?;
    }
    // The correlation matrix and the cross-moments are d x d': check before allocating them.
    let cross = t
        .cols
        .checked_mul(e.cols)
        .and_then(|c| c.checked_mul(3 * 8));
    if cross.is_none_or(|b| b as u64 > crate::cmd::MAX_WORK_BYTES) {
        bail!(
            "{} x {} columns need more than the {} GiB working-memory limit for their \
             correlations",
            t.cols,
            e.cols,
            crate::cmd::MAX_WORK_BYTES >> 30
        );
    }
    let (lf, lu) = mcc::workspace_len(t.rows, t.cols, e.cols, method);
    let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; t.cols]);
    let score = mcc::mcc(
        &t.data, t.cols, &e.data, e.cols, method, &mut pairs, &mut wf, &mut wu,
    )?;
    let pairs: Vec<[usize; 2]> = pairs
        .iter()
        .enumerate()
        .filter(|(_, j)| **j != UNASSIGNED)
        .map(|(i, j)| [i, *j])
        .collect();
    Ok(json!({ "mcc": score, "pairs": pairs, "method": method.as_str() }))
}

/// `{"amari": ...}` of the unmixing `W` (`k x d`) and the mixing `A` (`d x k`).
pub fn amari(unmixing: &Path, mixing: &Path) -> Result<Value> {
    let (w, a) = (
        io::read_table(unmixing)?.to_f64(),
        io::read_table(mixing)?.to_f64(),
    );
    if w.cols != a.rows || w.rows != a.cols {
        bail!(
            "shapes do not compose: unmixing is {} x {}, mixing is {} x {} (expected k x d and d x k)",
            w.rows,
            w.cols,
            a.rows,
            a.cols
        );
    }
    check_finite(&w, unmixing)?;
    check_finite(&a, mixing)?;
    let index = metrics::amari_index(
        &w.data,
        &a.data,
        w.rows,
        w.cols,
        &mut vec![0.0; w.rows * w.rows],
    )?;
    Ok(json!({ "amari": index, "k": w.rows }))
}
