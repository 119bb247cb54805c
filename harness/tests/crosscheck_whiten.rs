//! Cross-checks of the eigensolver, the moments and the whitening against numpy / scikit-learn
//! outputs committed as fixtures. Tolerances come from the fixture manifest.
// Matrix code indexes (i, j) pairs; iterator chains would hide the maths.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use harness::pipeline::{WhitenJob, moments, whiten};
use unmix::linalg::symmetric_eigen;
use unmix::whiten::{Method, WhitenOptions};

fn entries(kind: &str) -> Vec<serde_json::Value> {
    let list = manifest()[kind].as_array().cloned().unwrap_or_default();
    assert!(!list.is_empty(), "no {kind} fixtures");
    list
}

#[test]
fn eigenvalues_and_vectors_match_numpy_eigh() {
    for e in entries("eigh") {
        let name = e["name"].as_str().unwrap();
        let a = load(e["matrix"].as_str().unwrap());
        let ref_values = load(e["values"].as_str().unwrap()).data;
        let ref_vectors = load(e["vectors"].as_str().unwrap());
        let n = a.rows;
        let (mut v, mut values, mut work) = (a.data.clone(), vec![0.0; n], vec![0.0; n]);
        symmetric_eigen(&mut v, n, &mut values, &mut work).unwrap();

        let norm = max_abs(&ref_values);
        let value_tol = e["value_tol_rel_to_norm"].as_f64().unwrap() * norm;
        let err = max_abs_diff(&values, &ref_values);
        assert!(
            err <= value_tol,
            "{name}: eigenvalue error {err:e} > {value_tol:e}"
        );

        // Eigenvectors: compare one by one where the eigenvalue is isolated (gap > 1e-6 of the
        // norm), and through the projector onto the cluster where eigenvalues (nearly) repeat.
        let vector_tol = e["vector_tol"].as_f64().unwrap();
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && ref_values[end - 1] - ref_values[end] <= 1e-6 * norm {
                end += 1;
            }
            let err = if end - start == 1 {
                max_abs_diff_up_to_sign(&v[start * n..(start + 1) * n], ref_vectors.row(start))
            } else {
                let projector = |m: &[f64]| -> Vec<f64> {
                    let mut p = vec![0.0; n * n];
                    for l in start..end {
                        for i in 0..n {
                            for j in 0..n {
                                p[i * n + j] += m[l * n + i] * m[l * n + j];
                            }
                        }
                    }
                    p
                };
                max_abs_diff(&projector(&v), &projector(&ref_vectors.data))
            };
            assert!(
                err <= vector_tol,
                "{name}: eigenvectors {start}..{end} differ by {err:e}"
            );
            start = end;
        }
        // Our sign convention: first nonzero entry positive.
        for row in v.chunks(n) {
            let first = row.iter().find(|x| **x != 0.0).unwrap();
            assert!(*first > 0.0, "{name}: sign convention violated");
        }
    }
}

#[test]
fn covariance_matches_numpy_cov() {
    for e in entries("covariance") {
        let x = load(e["data"].as_str().unwrap());
        let m = moments(&x, &harness::fastica::pool(2).unwrap()).unwrap();
        let tol = e["tol_rel"].as_f64().unwrap();
        let mean = load(e["mean"].as_str().unwrap()).data;
        assert!(max_abs_diff(m.view().mean(), &mean) <= tol * max_abs(&mean));
        for (ddof, key) in [(0, "cov_ddof0"), (1, "cov_ddof1")] {
            let reference = load(e[key].as_str().unwrap()).data;
            let mut cov = vec![0.0; x.cols * x.cols];
            m.view().covariance_into(ddof, &mut cov).unwrap();
            let err = max_abs_diff(&cov, &reference);
            assert!(err <= tol * max_abs(&reference), "ddof {ddof}: {err:e}");
        }
    }
}

#[test]
fn pca_whitening_matches_scikit_learn_pca_whiten_true() {
    for e in entries("pca") {
        let name = e["name"].as_str().unwrap();
        let x = data_of(&e);
        let k = e["n_components"].as_u64().unwrap() as usize;
        let tol = e["tol"].as_f64().unwrap();
        // scikit-learn's PCA divides by n - 1.
        let options = WhitenOptions {
            ddof: 1,
            ..WhitenOptions::DEFAULT
        };
        let out = whiten(
            &x,
            &WhitenJob {
                n_components: Some(k),
                options,
                threads: 2,
            },
        )
        .unwrap();
        let components = load(e["components"].as_str().unwrap());
        let ev = load(e["explained_variance"].as_str().unwrap()).data;
        let transformed = load(e["transformed"].as_str().unwrap());
        let ours_ev: Vec<f64> = out.model.explained_variance.clone();
        let err = max_abs_diff(&ours_ev, &ev);
        assert!(
            err <= tol * ev[0],
            "{name}: explained variance differs by {err:e}"
        );
        for i in 0..k {
            let row: Vec<f64> = out.model.whitening[i].clone();
            let reference: Vec<f64> = components.row(i).iter().map(|c| c / ev[i].sqrt()).collect();
            let err = max_abs_diff_up_to_sign(&row, &reference);
            assert!(
                err <= tol * max_abs(&reference),
                "{name}: whitening row {i} differs by {err:e}"
            );
            let err = max_abs_diff_up_to_sign(&column(&out.z, i), &column(&transformed, i));
            assert!(
                err <= tol * 10.0,
                "{name}: transformed column {i} differs by {err:e}"
            );
        }
    }
}

#[test]
fn pca_whitening_matches_fastica_eigh_whitening_including_sign() {
    for e in entries("fastica_whitening") {
        let name = e["name"].as_str().unwrap();
        let x = data_of(&e);
        let k = e["n_components"].as_u64().unwrap() as usize;
        let tol = e["tol"].as_f64().unwrap();
        let out = whiten(
            &x,
            &WhitenJob {
                n_components: Some(k),
                options: WhitenOptions::DEFAULT,
                threads: 1,
            },
        )
        .unwrap();
        let reference = load(e["whitening_times_sqrt_n"].as_str().unwrap());
        let mean = load(e["mean"].as_str().unwrap()).data;
        let ours_mean: Vec<f64> = out.model.mean.clone();
        assert!(max_abs_diff(&ours_mean, &mean) <= 1e-12 * max_abs(&mean).max(1.0));
        for i in 0..k {
            let row: Vec<f64> = out.model.whitening[i].clone();
            // Same sign convention: no sign freedom allowed here.
            let err = max_abs_diff(&row, reference.row(i));
            assert!(
                err <= tol * max_abs(reference.row(i)),
                "{name}: row {i} differs by {err:e}"
            );
        }
    }
}

#[test]
fn zca_whitening_is_symmetric_and_reconstructs_digits() {
    let x = digits();
    let x = x.select_columns(&harness::demo::nonconstant_columns(&x));
    let options = WhitenOptions {
        method: Method::Zca,
        ..WhitenOptions::DEFAULT
    };
    let out = whiten(
        &x,
        &WhitenJob {
            n_components: None,
            options,
            threads: 2,
        },
    )
    .unwrap();
    let d = x.cols;
    let w: Vec<Vec<f64>> = out.model.whitening.clone();
    let scale = w.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    for i in 0..d {
        for j in 0..d {
            assert!(
                (w[i][j] - w[j][i]).abs() <= 1e-10 * scale,
                "ZCA matrix not symmetric at {i},{j}"
            );
        }
    }
    assert!(
        out.max_cov_error < 1e-9,
        "cov(Z) - I = {:e}",
        out.max_cov_error
    );
}
