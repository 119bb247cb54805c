//! The paper's identifiability measures against committed fixtures: the rigid map against
//! scipy's `orthogonal_procrustes`, the linear map against numpy's `lstsq`, the signed permutation
//! against numpy's `corrcoef` + scipy's `linear_sum_assignment`; NMI, InfoM and InfoC against
//! Hsu et al.'s formulas over scikit-learn's `mutual_info_classif(n_neighbors=10)` and
//! `mutual_info_score`; InfoE against scikit-learn's `LogisticRegression`.

mod common;
use common::*;
use harness::identifiability;
use unmix::metrics::alignment::{
    AlignmentOptions, MapKind, Maps, alignment_with_maps, maps_len, workspace_len,
};
use unmix::metrics::infomec;

fn entries(kind: &str) -> Vec<serde_json::Value> {
    let list = manifest()[kind].as_array().cloned().unwrap_or_default();
    assert!(!list.is_empty(), "no {kind} fixtures");
    list
}

fn max_rel_diff(got: &[f64], expected: &[f64]) -> f64 {
    max_abs_diff(got, expected) / max_abs(expected).max(f64::MIN_POSITIVE)
}

#[test]
fn alignment_maps_match_procrustes_lstsq_and_assignment() {
    for e in entries("alignment") {
        let name = e["name"].as_str().unwrap();
        let (a, b) = (
            load(e["a"].as_str().unwrap()),
            load(e["b"].as_str().unwrap()),
        );
        let (da, db) = (a.cols, b.cols);
        let (lf, lu, lt) = workspace_len(a.rows, da, db);
        let (mut wf, mut wu, mut wt) = (vec![0.0; lf], vec![0; lu], vec![0.0; lt]);
        let mut maps = vec![0.0; maps_len(da, db)];
        let al = alignment_with_maps(
            &a.data,
            da,
            &b.data,
            db,
            &AlignmentOptions::DEFAULT,
            &mut maps,
            &mut wf,
            &mut wu,
            &mut wt,
        )
        .unwrap();
        let maps = Maps::from_parts(da, db, &maps).unwrap();
        let rtol = e["rtol"].as_f64().unwrap();
        for (kind, key) in [
            (MapKind::Rigid, "rigid"),
            (MapKind::Linear, "linear"),
            (MapKind::Permutation, "permutation"),
        ] {
            let expected = load(e[format!("{key}_map")].as_str().unwrap());
            assert_eq!((expected.rows, expected.cols), (da, db), "{name} {key}");
            let diff = max_rel_diff(maps.map(kind), &expected.data);
            assert!(diff <= rtol, "{name}: {key} map off by {diff:e} relative");
            let raw = e["raw"][key].as_f64().unwrap();
            let got = al.raw.get(kind);
            assert!(
                (got - raw).abs() <= rtol * raw,
                "{name}: raw {key} error {got} vs {raw}"
            );
            let normalized = al.normalized.get(kind) * al.diameter;
            assert!((normalized - got).abs() <= 1e-12 * got, "{name} {key}");
        }
        let diameter = e["diameter"].as_f64().unwrap();
        assert!(
            (al.diameter - diameter).abs() <= 1e-12 * diameter,
            "{name}: diameter {} vs {diameter}",
            al.diameter
        );
        // Squared error is what the fits minimise: linear <= rigid always, and rigid <=
        // permutation when da >= db (then |B M'| does not depend on the semi-orthogonal M).
        if da >= db {
            assert!(al.rms.permutation >= al.rms.rigid * (1.0 - 1e-12), "{name}");
        }
        assert!(al.rms.rigid >= al.rms.linear * (1.0 - 1e-12), "{name}");
    }
}

/// The issue asks for permutation >= rigid in mean distance "always"; scipy's own maps on the
/// `wide` fixture say otherwise (the property tests check the order where it is a theorem: the
/// RMS error, with da >= db for permutation >= rigid).
#[test]
fn mean_distance_order_can_fail_for_least_squares_maps() {
    let wide = entries("alignment")
        .into_iter()
        .find(|e| e["name"] == "wide")
        .unwrap();
    let (p, r) = (
        wide["raw"]["permutation"].as_f64().unwrap(),
        wide["raw"]["rigid"].as_f64().unwrap(),
    );
    assert!(p < r, "scipy's maps: permutation {p}, rigid {r}");
}

#[test]
fn nmi_infom_infoc_match_scikit_learn() {
    for e in entries("infomec") {
        let name = e["name"].as_str().unwrap();
        let factors = load(e["factors"].as_str().unwrap());
        let latents = load(e["latents"].as_str().unwrap());
        let (f, l, n) = (factors.cols, latents.cols, latents.rows);
        let labels: Vec<i64> = factors.data.iter().map(|v| *v as i64).collect();
        let (lf, lu) = infomec::workspace_len(n);
        let (mut nmi, mut active) = (vec![0.0; f * l], vec![false; l]);
        let s = infomec::infomec(
            &labels,
            f,
            &latents.data,
            l,
            10,
            &mut nmi,
            &mut active,
            &mut vec![0.0; lf],
            &mut vec![0; lu],
        )
        .unwrap();
        let tol = e["tol"].as_f64().unwrap();
        let expected = load(e["nmi"].as_str().unwrap());
        let diff = max_abs_diff(&nmi, &expected.data);
        assert!(
            diff <= tol,
            "{name}: NMI off by {diff:e}\n{nmi:?}\n{:?}",
            expected.data
        );
        let expected_active: Vec<bool> = e["active"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_bool().unwrap())
            .collect();
        assert_eq!(active, expected_active, "{name}");
        for (got, key) in [(s.infom, "infom"), (s.infoc, "infoc")] {
            let want = e[key].as_f64().unwrap();
            let got = got.unwrap();
            assert!((got - want).abs() <= tol, "{name}: {key} {got} vs {want}");
        }
    }
}

#[test]
fn infoe_matches_logistic_regression() {
    for e in entries("infomec") {
        let name = e["name"].as_str().unwrap();
        let factors = load(e["factors"].as_str().unwrap());
        let latents = load(e["latents"].as_str().unwrap());
        let labels: Vec<i64> = factors.data.iter().map(|v| *v as i64).collect();
        let got = identifiability::infoe(&labels, factors.cols, &latents).unwrap();
        let want = e["infoe"].as_f64().unwrap();
        let tol = e["infoe_tol"].as_f64().unwrap();
        assert!((got - want).abs() <= tol, "{name}: InfoE {got} vs {want}");
    }
}
