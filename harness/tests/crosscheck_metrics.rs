//! The metrics against scikit-learn's roc_auc_score, scipy's linear_sum_assignment, the
//! identifiability papers' MCC (numpy corrcoef / scipy spearmanr + linear_sum_assignment), the
//! Amari index and Hoyer sparsity, on committed fixtures.

mod common;
use common::*;
use harness::io::read_labels;
use unmix::metrics::assignment::{UNASSIGNED, linear_sum_assignment, workspace_len};
use unmix::metrics::{
    amari_index, auroc, auroc_weighted, correlation::Method, hoyer_sparsity, mcc,
};

fn entries(kind: &str) -> Vec<serde_json::Value> {
    let list = manifest()[kind].as_array().cloned().unwrap_or_default();
    assert!(!list.is_empty(), "no {kind} fixtures");
    list
}

#[test]
fn auroc_matches_roc_auc_score() {
    for e in entries("auroc") {
        let name = e["name"].as_str().unwrap();
        let labels: Vec<bool> = read_labels(&fixtures_dir().join(e["labels"].as_str().unwrap()))
            .unwrap()
            .iter()
            .map(|l| *l == 1)
            .collect();
        let scores = load(e["scores"].as_str().unwrap()).data;
        let expected = e["auroc"].as_f64().unwrap();
        let got = match e.get("weights") {
            Some(w) => {
                let w = load(w.as_str().unwrap()).data;
                auroc_weighted(&scores, &labels, &w, &mut vec![0; scores.len()]).unwrap()
            }
            None => auroc(&scores, &labels, &mut vec![0; scores.len()]).unwrap(),
        };
        // scikit-learn sums trapezoids in floating point; ours counts exactly: rounding apart.
        assert!(
            (got - expected).abs() <= 1e-12,
            "{name}: {got} vs {expected}"
        );
    }
}

#[test]
fn assignment_matches_scipy() {
    for e in entries("assignment") {
        let name = e["name"].as_str().unwrap();
        let cost = load(e["cost"].as_str().unwrap());
        let maximize = e["maximize"].as_bool().unwrap();
        let (nr, nc) = (cost.rows, cost.cols);
        let (lf, lu) = workspace_len(nr, nc);
        let (mut wf, mut wu, mut cols) = (vec![0.0; lf], vec![0; lu], vec![0; nr]);
        let got = linear_sum_assignment(&cost.data, nr, nc, maximize, &mut cols, &mut wf, &mut wu);
        match e.get("error") {
            Some(msg) => {
                let err = got.expect_err(name);
                let expected = if msg.as_str().unwrap().contains("infeasible") {
                    matches!(err, unmix::Error::Infeasible)
                } else {
                    matches!(err, unmix::Error::InvalidParameter(_))
                };
                assert!(expected, "{name}: {err} for scipy's {msg}");
            }
            None => {
                let total = got.unwrap();
                let expected = e["total"].as_f64().unwrap();
                // Ties may pick another optimum: compare the total, and check a valid matching.
                assert!(
                    (total - expected).abs() <= 1e-9 * expected.abs().max(1.0),
                    "{name}: {total} vs {expected}"
                );
                let assigned: Vec<usize> =
                    cols.iter().copied().filter(|c| *c != UNASSIGNED).collect();
                assert_eq!(assigned.len(), nr.min(nc), "{name}");
                let mut seen = assigned.clone();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), assigned.len(), "{name}: a column used twice");
                if name == "golden3" || name.starts_with("wide") || name.starts_with("tall") {
                    let scipy: Vec<usize> = e["cols"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_u64().unwrap() as usize)
                        .collect();
                    let rows: Vec<usize> = e["rows"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_u64().unwrap() as usize)
                        .collect();
                    for (r, c) in rows.iter().zip(&scipy) {
                        assert_eq!(cols[*r], *c, "{name}: unique optimum differs from scipy");
                    }
                }
            }
        }
    }
}

#[test]
fn mcc_matches_the_papers_recipe() {
    for e in entries("mcc") {
        let name = e["name"].as_str().unwrap();
        let (t, s) = (
            load(e["true"].as_str().unwrap()),
            load(e["estimated"].as_str().unwrap()),
        );
        for method in [Method::Pearson, Method::Spearman] {
            let key = method.as_str();
            let (lf, lu) = mcc::workspace_len(t.rows, t.cols, s.cols, method);
            let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; t.cols]);
            let got = mcc::mcc(
                &t.data, t.cols, &s.data, s.cols, method, &mut pairs, &mut wf, &mut wu,
            )
            .unwrap();
            let expected = e[key].as_f64().unwrap();
            assert!(
                (got - expected).abs() <= 1e-12,
                "{name} {key}: {got} vs {expected}"
            );
        }
    }
}

#[test]
fn amari_and_hoyer_match_their_definitions() {
    for e in entries("amari") {
        let (w, a) = (
            load(e["unmixing"].as_str().unwrap()),
            load(e["mixing"].as_str().unwrap()),
        );
        let mut p = vec![0.0; w.rows * w.rows];
        let got = amari_index(&w.data, &a.data, w.rows, w.cols, &mut p).unwrap();
        let expected = e["amari"].as_f64().unwrap();
        assert!(
            (got - expected).abs() <= 1e-12,
            "{}: {got} vs {expected}",
            e["name"]
        );
    }
    for e in entries("hoyer") {
        let got = hoyer_sparsity(&load(e["vector"].as_str().unwrap()).data).unwrap();
        let expected = e["sparsity"].as_f64().unwrap();
        assert!(
            (got - expected).abs() <= 1e-12,
            "{}: {got} vs {expected}",
            e["name"]
        );
    }
}
