//! `unmix.metrics`: the core's metrics (and the harness's, where they need `std`: concentration's
//! tree ensemble, InfoE's logistic regression) on numpy arrays, the GIL released.

use crate::{rows, slice1, value_error};
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use unmix::metrics::{self, alignment, correlation::Method, infomec, mcc, sparsity};

/// Held-out-free AUROC of `scores` against boolean `labels` (optionally weighted): the
/// probability that a positive outscores a negative, ties counting half.
#[pyfunction]
#[pyo3(name = "auroc")]
#[pyo3(signature = (scores, labels, weights=None))]
fn py_auroc(
    py: Python<'_>,
    scores: PyReadonlyArray1<'_, f64>,
    labels: PyReadonlyArray1<'_, bool>,
    weights: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<f64> {
    let (s, y) = (slice1(&scores)?, slice1(&labels)?);
    let w = weights.as_ref().map(slice1).transpose()?;
    py.detach(|| match w {
        Some(w) => metrics::auroc_weighted(s, y, w, &mut vec![0; s.len()]),
        None => metrics::auroc(s, y, &mut vec![0; s.len()]),
    })
    .map_err(value_error)
}

/// Hoyer sparsity of split counts or fractions (normalised first).
#[pyfunction]
#[pyo3(name = "sparsity")]
fn py_sparsity(counts: PyReadonlyArray1<'_, f64>) -> PyResult<f64> {
    let c = slice1(&counts)?;
    let mut f = vec![0.0; c.len()];
    sparsity::split_fractions(c, &mut f).map_err(value_error)?;
    metrics::hoyer_sparsity(&f).map_err(value_error)
}

/// Each column divided by its largest magnitude (correlations unchanged; the core's sums then
/// neither overflow nor underflow); a constant column is an error.
fn scaled(a: &PyReadonlyArray2<'_, f64>, what: &str) -> PyResult<(Vec<f64>, usize, usize)> {
    let (s, n, d) = rows(a)?;
    let mut m = s.to_vec();
    for c in 0..d {
        let first = m.get(c).copied().unwrap_or(0.0);
        if n < 2 || (0..n).all(|r| m[r * d + c] == first) {
            return Err(PyValueError::new_err(format!(
                "{what}: column {c} is constant (zero variance): its correlation is undefined"
            )));
        }
        let max = (0..n).fold(0.0f64, |a, r| a.max(m[r * d + c].abs()));
        for r in 0..n {
            m[r * d + c] /= max;
        }
    }
    Ok((m, n, d))
}

/// Mean absolute correlation of matched columns (Pearson or Spearman) after the optimal
/// one-to-one matching; returns `(mcc, pairs)`.
#[pyfunction]
#[pyo3(name = "mcc")]
fn py_mcc(
    py: Python<'_>,
    truth: PyReadonlyArray2<'_, f64>,
    estimate: PyReadonlyArray2<'_, f64>,
    method: &str,
) -> PyResult<(f64, Vec<(usize, usize)>)> {
    let method: Method = method.parse().map_err(value_error)?;
    let (t, n, dt) = scaled(&truth, "true factors")?;
    let (e, ne, de) = scaled(&estimate, "estimate")?;
    if n != ne {
        return Err(PyValueError::new_err(format!(
            "true factors have {n} rows but the estimate has {ne}"
        )));
    }
    let (lf, lu) = mcc::workspace_len(n, dt, de, method);
    let mut pairs = vec![0; dt];
    let score = py
        .detach(|| {
            mcc::mcc(
                &t,
                dt,
                &e,
                de,
                method,
                &mut pairs,
                &mut vec![0.0; lf],
                &mut vec![0; lu],
            )
        })
        .map_err(value_error)?;
    let pairs = pairs
        .iter()
        .enumerate()
        .filter(|(_, j)| **j != metrics::assignment::UNASSIGNED)
        .map(|(i, j)| (i, *j))
        .collect();
    Ok((score, pairs))
}

/// Amari index of the unmixing `w` (`k x d`) against the mixing `a` (`d x k`).
#[pyfunction]
#[pyo3(name = "amari")]
fn py_amari(w: PyReadonlyArray2<'_, f64>, a: PyReadonlyArray2<'_, f64>) -> PyResult<f64> {
    let (w, k, d) = rows(&w)?;
    let (a, da, ka) = rows(&a)?;
    if da != d || ka != k {
        return Err(PyValueError::new_err(format!(
            "shapes do not compose: unmixing is {k} x {d}, mixing is {da} x {ka} (expected k x d and d x k)"
        )));
    }
    metrics::amari_index(w, a, k, d, &mut vec![0.0; k * k]).map_err(value_error)
}

/// Alignment errors of `b` mapped into `a` (permutation, rigid, linear, ICA), normalised by
/// `a`'s diameter, the ICA efficiency, and the raw errors.
#[pyfunction]
#[pyo3(name = "alignment")]
fn py_alignment<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    b: PyReadonlyArray2<'py, f64>,
    random_state: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let (a, n, da) = rows(&a)?;
    let (b, nb, db) = rows(&b)?;
    if n != nb {
        return Err(PyValueError::new_err(format!(
            "reference has {n} rows but other has {nb}: the two representations must hold the same inputs, row by row"
        )));
    }
    let opts = alignment::AlignmentOptions {
        random_state,
        ..alignment::AlignmentOptions::DEFAULT
    };
    let (lf, lu, lt) = alignment::workspace_len(n, da, db);
    let al = py
        .detach(|| {
            alignment::alignment(
                a,
                da,
                b,
                db,
                &opts,
                &mut vec![0.0; lf],
                &mut vec![0; lu],
                &mut vec![0.0; lt],
            )
        })
        .map_err(value_error)?;
    let errors = |e: &alignment::Errors| -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("permutation", e.permutation)?;
        d.set_item("rigid", e.rigid)?;
        d.set_item("linear", e.linear)?;
        d.set_item("ica", e.ica)?;
        Ok(d)
    };
    // The normalised errors at the top level, beside the efficiency and the other scales.
    let out = errors(&al.normalized)?;
    out.set_item("efficiency", al.efficiency)?;
    out.set_item("diameter", al.diameter)?;
    out.set_item("raw", errors(&al.raw)?)?;
    out.set_item("rms", errors(&al.rms)?)?;
    Ok(out)
}

/// InfoM, InfoE, InfoC of latents (`n x l`) against integer factors (`n x f`), the NMI matrix
/// and the active latents.
#[pyfunction]
#[pyo3(name = "infomec")]
fn py_infomec<'py>(
    py: Python<'py>,
    factors: PyReadonlyArray2<'py, i64>,
    latents: PyReadonlyArray2<'py, f64>,
    n_neighbors: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let (fac, n, f) = rows(&factors)?;
    let (z, nz, l) = rows(&latents)?;
    if n != nz {
        return Err(PyValueError::new_err(format!(
            "factors have {n} rows but latents have {nz}: they must describe the same samples"
        )));
    }
    if n_neighbors == 0 {
        return Err(PyValueError::new_err("n_neighbors must be at least 1"));
    }
    for i in 0..f {
        if n > 0 && (0..n).all(|t| fac[t * f + i] == fac[i]) {
            return Err(PyValueError::new_err(format!(
                "factor (column) {i} has a single level ({}): its NMI is undefined",
                fac[i]
            )));
        }
    }
    let (lf, lu) = infomec::workspace_len(n);
    let mut nmi = vec![0.0; f * l];
    let mut active = vec![false; l];
    let (scores, infoe) = py.detach(|| -> PyResult<_> {
        let scores = infomec::infomec(
            fac,
            f,
            z,
            l,
            n_neighbors,
            &mut nmi,
            &mut active,
            &mut vec![0.0; lf],
            &mut vec![0; lu],
        )
        .map_err(value_error)?;
        let m = harness::io::Matrix::new(n, l, z.to_vec()).map_err(value_error)?;
        let infoe = harness::identifiability::infoe(fac, f, &m).map_err(value_error)?;
        Ok((scores, infoe))
    })?;
    let out = PyDict::new(py);
    out.set_item("infom", scores.infom)?;
    out.set_item("infoe", infoe)?;
    out.set_item("infoc", scores.infoc)?;
    out.set_item("nmi", nmi)?;
    out.set_item("active", active)?;
    out.set_item("n_active", scores.n_active)?;
    Ok(out)
}

/// The concentration pipeline (gradient-boosted trees over seeds, the CLI's
/// `unmix metric concentration`): returns its JSON report as a string.
#[pyfunction]
#[pyo3(name = "concentration")]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (x, labels, groups, top, random_state, n_seeds, test_fraction))]
fn py_concentration(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    labels: PyReadonlyArray1<'_, i64>,
    groups: Option<PyReadonlyArray1<'_, i64>>,
    top: f64,
    random_state: u64,
    n_seeds: usize,
    test_fraction: f64,
) -> PyResult<String> {
    let (xs, n, d) = rows(&x)?;
    let labels = slice1(&labels)?;
    let groups = groups.as_ref().map(slice1).transpose()?;
    let job = harness::concentration::ConcentrationJob {
        top,
        random_state,
        n_seeds,
        test_fraction,
        ..Default::default()
    };
    py.detach(|| {
        let m = harness::io::Matrix::new(n, d, xs.to_vec())?;
        let c = harness::concentration::concentration(&m, labels, groups, &job, &|| {})?;
        anyhow::Ok(c.to_json(&job).to_string())
    })
    .map_err(|e| PyValueError::new_err(format!("{e:#}")))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_auroc, m)?)?;
    m.add_function(wrap_pyfunction!(py_sparsity, m)?)?;
    m.add_function(wrap_pyfunction!(py_mcc, m)?)?;
    m.add_function(wrap_pyfunction!(py_amari, m)?)?;
    m.add_function(wrap_pyfunction!(py_alignment, m)?)?;
    m.add_function(wrap_pyfunction!(py_infomec, m)?)?;
    m.add_function(wrap_pyfunction!(py_concentration, m)?)?;
    Ok(())
}
