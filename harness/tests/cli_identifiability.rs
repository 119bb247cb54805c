//! `unmix metric alignment` and `unmix metric infomec`: the JSON they print, agreement with the
//! fixtures through the command line, and a clear error (file and cause, non-zero exit, no panic)
//! for each bad input.

mod common;
use common::*;
use harness::io::{Matrix, write_npy};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    fixtures_dir().join(name).display().to_string()
}

fn ok_json(args: &[&str]) -> Value {
    let o = unmix(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

/// Runs a command that must fail cleanly and returns its stderr.
fn fails(args: &[&str], expected: &[&str]) -> String {
    let o = unmix(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} succeeded");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    for e in expected {
        assert!(err.contains(e), "{args:?}: {err:?} does not mention {e:?}");
    }
    err
}

fn npy(dir: &Path, name: &str, rows: usize, cols: usize, data: Vec<f64>) -> PathBuf {
    let p = dir.join(name);
    write_npy(&p, &Matrix::new(rows, cols, data).unwrap()).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn alignment_prints_the_issue_json_and_matches_the_fixtures() {
    for e in manifest()["alignment"].as_array().unwrap() {
        let (a, b) = (
            fixture(e["a"].as_str().unwrap()),
            fixture(e["b"].as_str().unwrap()),
        );
        let got = ok_json(&[
            "metric",
            "alignment",
            "--reference",
            &a,
            "--other",
            &b,
            "--random-state",
            "3",
        ]);
        let diameter = got["diameter"].as_f64().unwrap();
        assert!((diameter - e["diameter"].as_f64().unwrap()).abs() < 1e-12 * diameter);
        for key in ["permutation", "rigid", "linear"] {
            let raw = got["raw"][key].as_f64().unwrap();
            let want = e["raw"][key].as_f64().unwrap();
            assert!((raw - want).abs() <= 1e-8 * want, "{key}: {raw} vs {want}");
            assert!((got[key].as_f64().unwrap() - raw / diameter).abs() < 1e-12);
        }
        for key in ["ica", "efficiency"] {
            assert!(got[key].is_number(), "{key} in {got}");
        }
        assert!(got["raw"]["ica"].is_number());
        let (p, r, i) = (
            got["permutation"].as_f64().unwrap(),
            got["rigid"].as_f64().unwrap(),
            got["ica"].as_f64().unwrap(),
        );
        let eff = got["efficiency"].as_f64().unwrap();
        assert!((eff - (p - i) / (p - r) * 100.0).abs() < 1e-9 * eff.abs().max(1.0));
    }
}

#[test]
fn infomec_prints_the_issue_json_and_matches_the_fixtures() {
    let e = &manifest()["infomec"][0];
    let (f, z) = (
        fixture(e["factors"].as_str().unwrap()),
        fixture(e["latents"].as_str().unwrap()),
    );
    let got = ok_json(&[
        "metric",
        "infomec",
        "--factors",
        &f,
        "--latents",
        &z,
        "--n-neighbors",
        "10",
    ]);
    for key in ["infom", "infoc"] {
        let want = e[key].as_f64().unwrap();
        assert!((got[key].as_f64().unwrap() - want).abs() <= 1e-3, "{key}");
    }
    assert!((got["infoe"].as_f64().unwrap() - e["infoe"].as_f64().unwrap()).abs() <= 2e-2);
    assert_eq!(got["active"], e["active"]);
    let nmi = got["nmi"].as_array().unwrap();
    let expected = load(e["nmi"].as_str().unwrap());
    assert_eq!(nmi.len(), expected.rows);
    let flat: Vec<f64> = nmi.iter().flat_map(floats).collect();
    assert!(max_abs_diff(&flat, &expected.data) <= 1e-3);
}

#[test]
fn alignment_bad_input_names_the_file_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = npy(
        d,
        "a.npy",
        30,
        2,
        (0..60).map(|i| ((i * 37) % 11) as f64).collect(),
    );
    let short = npy(
        d,
        "short.npy",
        29,
        2,
        (0..58).map(|i| ((i * 13) % 7) as f64).collect(),
    );
    fails(
        &[
            "metric",
            "alignment",
            "--reference",
            s(&a),
            "--other",
            s(&short),
        ],
        &["a.npy", "short.npy", "30 rows", "29"],
    );
    let wide = npy(
        d,
        "wide.npy",
        4,
        5,
        (0..20).map(|i| ((i * 7) % 5) as f64).collect(),
    );
    let wide_b = npy(d, "wide_b.npy", 4, 2, (0..8).map(|i| i as f64).collect());
    fails(
        &[
            "metric",
            "alignment",
            "--reference",
            s(&wide),
            "--other",
            s(&wide_b),
        ],
        &["wide.npy", "4 samples for 5 dimensions"],
    );
    let mut data: Vec<f64> = (0..60).map(|i| ((i * 3) % 13) as f64).collect();
    data[9] = f64::NAN;
    let nan = npy(d, "nan.npy", 30, 2, data);
    fails(
        &[
            "metric",
            "alignment",
            "--reference",
            s(&a),
            "--other",
            s(&nan),
        ],
        &["nan.npy", "non-finite", "row 4, column 1"],
    );
    let flat = npy(
        d,
        "flat.npy",
        30,
        2,
        (0..60)
            .map(|i| if i % 2 == 0 { i as f64 } else { 1.0 })
            .collect(),
    );
    fails(
        &[
            "metric",
            "alignment",
            "--reference",
            s(&a),
            "--other",
            s(&flat),
        ],
        &["flat.npy", "rank-deficient"],
    );
    fails(
        &[
            "metric",
            "alignment",
            "--reference",
            s(&d.join("missing.npy")),
            "--other",
            s(&a),
        ],
        &["missing.npy"],
    );
}

#[test]
fn infomec_bad_input_names_the_file_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 40;
    let factors = npy(
        d,
        "s.npy",
        n,
        2,
        (0..2 * n).map(|i| (i % 3) as f64).collect(),
    );
    let latents = npy(
        d,
        "z.npy",
        n,
        2,
        (0..2 * n).map(|i| ((i * 17) % 23) as f64).collect(),
    );
    ok_json(&[
        "metric",
        "infomec",
        "--factors",
        s(&factors),
        "--latents",
        s(&latents),
    ]);
    let single = npy(
        d,
        "single.npy",
        n,
        2,
        (0..2 * n)
            .map(|i| if i % 2 == 1 { 4.0 } else { (i % 3) as f64 })
            .collect(),
    );
    fails(
        &[
            "metric",
            "infomec",
            "--factors",
            s(&single),
            "--latents",
            s(&latents),
        ],
        &["single.npy", "column) 1", "single level"],
    );
    let constant = npy(d, "const.npy", n, 2, vec![2.5; 2 * n]);
    fails(
        &[
            "metric",
            "infomec",
            "--factors",
            s(&factors),
            "--latents",
            s(&constant),
        ],
        &["const.npy", "none is active"],
    );
    let mut data: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
    data[5] = f64::INFINITY;
    let inf = npy(d, "inf.npy", n, 2, data);
    fails(
        &[
            "metric",
            "infomec",
            "--factors",
            s(&factors),
            "--latents",
            s(&inf),
        ],
        &["inf.npy", "non-finite", "row 2, column 1"],
    );
    let fractional = npy(
        d,
        "frac.npy",
        n,
        2,
        (0..2 * n)
            .map(|i| (i % 3) as f64 + if i == 7 { 0.5 } else { 0.0 })
            .collect(),
    );
    fails(
        &[
            "metric",
            "infomec",
            "--factors",
            s(&fractional),
            "--latents",
            s(&latents),
        ],
        &["frac.npy", "not an integer", "row 3, column 1"],
    );
    let short = npy(
        d,
        "short.npy",
        n - 1,
        2,
        (0..2 * n - 2).map(|i| i as f64).collect(),
    );
    fails(
        &[
            "metric",
            "infomec",
            "--factors",
            s(&factors),
            "--latents",
            s(&short),
        ],
        &["s.npy", "short.npy", "same samples"],
    );
    fails(
        &[
            "metric",
            "infomec",
            "--factors",
            s(&factors),
            "--latents",
            s(&latents),
            "--n-neighbors",
            "0",
        ],
        &["--n-neighbors"],
    );
}
