//! FastICA against scikit-learn's `FastICA(whiten_solver="eigh")` with the same `w_init`:
//! sources, components and mixing to the fixture's relative tolerance (1e-6 in f64, 1e-3 in f32),
//! and the same number of iterations.

mod common;
use common::*;
use harness::io::{Table, read_npy};
use serde_json::Value;
use unmix::Float;
use unmix::ica::{
    Algorithm, ContrastKind, FastIcaBuf, FastIcaOptions, IcaOptions, LogCosh, WInit, WhitenMode,
    fit_workspace_len, model_len,
};

pub fn options_of(e: &Value) -> FastIcaOptions {
    // Through the core's one table of names: an unknown name fails the test.
    let name = |key: &str| {
        e[key]
            .as_str()
            .unwrap_or_else(|| panic!("fixture lacks {key}"))
    };
    let contrast = match name("fun").parse().unwrap() {
        ContrastKind::LogCosh(_) => {
            ContrastKind::LogCosh(LogCosh::new(e["alpha"].as_f64().unwrap()).unwrap())
        }
        other => other,
    };
    let whiten: WhitenMode = name("whiten").parse().unwrap();
    let algorithm: Algorithm = name("algorithm").parse().unwrap();
    FastIcaOptions {
        ica: IcaOptions {
            algorithm,
            max_iter: e["max_iter"].as_u64().unwrap() as usize,
            tol: e["tol"].as_f64().unwrap(),
        },
        contrast,
        whiten,
        ..FastIcaOptions::DEFAULT
    }
}

fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    max_abs_diff(a, b) / max_abs(b)
}

struct Fit {
    sources: Vec<f64>,
    components: Vec<f64>,
    mixing: Vec<f64>,
    n_iter: usize,
    converged: bool,
}

fn fit<T: Float>(x: &[T], d: usize, k: usize, opts: &FastIcaOptions, w_init: &[f64]) -> Fit {
    let n = x.len() / d;
    let mut storage = vec![T::ZERO; model_len(d, k)];
    let mut model = FastIcaBuf::new(d, k, &mut storage).unwrap();
    let mut z = vec![T::ZERO; unmix::ica::fit_scratch_len(n, d, k)];
    let mut ws = vec![0.0; fit_workspace_len(d, k)];
    let info = model
        .fit(x, opts, WInit::Matrix(w_init), &mut z, &mut ws)
        .unwrap();
    let view = model.view();
    let mut s = vec![T::ZERO; n * k];
    view.transform_rows(x, &mut s).unwrap();
    let f = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    Fit {
        sources: f(&s),
        components: f(view.components()),
        mixing: f(view.mixing()),
        n_iter: info.n_iter,
        converged: info.converged,
    }
}

#[test]
fn fastica_matches_scikit_learn() {
    let cases = manifest()["fastica"].as_array().cloned().unwrap();
    assert!(cases.len() >= 80);
    let mut failures = Vec::new();
    for e in &cases {
        let name = e["name"].as_str().unwrap();
        let opts = options_of(e);
        let k = e["n_components"].as_u64().unwrap() as usize;
        let w_init = load(e["w_init"].as_str().unwrap()).data;
        let table = read_npy(&fixtures_dir().join(e["data"].as_str().unwrap())).unwrap();
        let (_, d) = table.shape();
        let got = match &table {
            Table::F32(m) => fit(&m.data, d, k, &opts, &w_init),
            Table::F64(m) => fit(&m.data, d, k, &opts, &w_init),
        };
        let rtol = e["rtol"].as_f64().unwrap();
        let sources = load(e["sources"].as_str().unwrap()).data;
        let components = load(e["components"].as_str().unwrap()).data;
        let mixing = load(e["mixing"].as_str().unwrap()).data;
        let errs = [
            ("sources", rel_err(&got.sources, &sources)),
            ("components", rel_err(&got.components, &components)),
            ("mixing", rel_err(&got.mixing, &mixing)),
        ];
        for (what, err) in errs {
            if err.is_nan() || err > rtol {
                failures.push(format!(
                    "{name}: {what} differ by {err:.2e} (rtol {rtol:e})"
                ));
            }
        }
        let n_iter = e["n_iter"].as_u64().unwrap() as usize;
        if got.n_iter != n_iter {
            failures.push(format!(
                "{name}: n_iter {} vs scikit-learn {n_iter}",
                got.n_iter
            ));
        }
        if e["algorithm"] == "parallel"
            && got.converged == e["convergence_warning"].as_bool().unwrap()
        {
            failures.push(format!(
                "{name}: converged = {} but scikit-learn warned = {}",
                got.converged, e["convergence_warning"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches over {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
