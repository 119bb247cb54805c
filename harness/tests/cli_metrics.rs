//! `unmix metric ...` end to end.

mod common;
use common::*;
use std::path::Path;

fn ok_json(args: &[&str]) -> serde_json::Value {
    let o = unmix(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

fn fails(args: &[&str], message: &str) {
    let o = unmix(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "expected failure: {args:?}");
    assert!(err.contains(message), "stderr {err:?} lacks {message:?}");
    assert!(!err.contains("panicked"), "{err}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn fixture(name: &str) -> String {
    fixtures_dir().join(name).to_str().unwrap().to_string()
}

#[test]
fn auroc_sparsity_mcc_amari_match_the_fixtures() {
    let m = manifest();
    for e in m["auroc"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] != "million")
    {
        let (sc, lb) = (
            fixture(e["scores"].as_str().unwrap()),
            fixture(e["labels"].as_str().unwrap()),
        );
        let mut args = vec!["metric", "auroc", "--scores", &sc, "--labels", &lb];
        let w = e.get("weights").map(|w| fixture(w.as_str().unwrap()));
        if let Some(w) = &w {
            args.extend(["--weights", w]);
        }
        let got = ok_json(&args)["auroc"].as_f64().unwrap();
        assert!(
            (got - e["auroc"].as_f64().unwrap()).abs() < 1e-12,
            "{}",
            e["name"]
        );
    }
    for e in m["hoyer"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] != "pair")
    {
        let got = ok_json(&[
            "metric",
            "sparsity",
            "--fractions",
            &fixture(e["vector"].as_str().unwrap()),
        ]);
        assert!(
            (got["sparsity"].as_f64().unwrap() - e["sparsity"].as_f64().unwrap()).abs() < 1e-12
        );
    }
    for e in m["mcc"].as_array().unwrap() {
        let (t, est) = (
            fixture(e["true"].as_str().unwrap()),
            fixture(e["estimated"].as_str().unwrap()),
        );
        for method in ["pearson", "spearman"] {
            let got = ok_json(&[
                "metric",
                "mcc",
                "--true",
                &t,
                "--estimated",
                &est,
                "--method",
                method,
            ]);
            assert!((got["mcc"].as_f64().unwrap() - e[method].as_f64().unwrap()).abs() < 1e-12);
            let expected: Vec<u64> = e[format!("{method}_pairs")]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let pairs: Vec<u64> = got["pairs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[1].as_u64().unwrap())
                .collect();
            if e["name"] != "ties" {
                assert_eq!(pairs, expected, "{} {method}", e["name"]);
            }
        }
    }
    for e in m["amari"].as_array().unwrap() {
        let (w, a) = (
            fixture(e["unmixing"].as_str().unwrap()),
            fixture(e["mixing"].as_str().unwrap()),
        );
        let got = ok_json(&["metric", "amari", "--unmixing", &w, "--mixing", &a]);
        assert!((got["amari"].as_f64().unwrap() - e["amari"].as_f64().unwrap()).abs() < 1e-12);
    }
}

#[test]
fn metric_inputs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let w = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let scores = w("s.csv", "0.1\n0.4\n0.35\n0.8\n");
    let labels = w("y.csv", "0\n0\n1\n1\n");
    let got = ok_json(&[
        "metric",
        "auroc",
        "--scores",
        s(&scores),
        "--labels",
        s(&labels),
    ]);
    assert_eq!(got["auroc"], 0.75);
    let three = w("y3.csv", "0\n1\n2\n1\n");
    fails(
        &[
            "metric",
            "auroc",
            "--scores",
            s(&scores),
            "--labels",
            s(&three),
        ],
        "exactly two classes",
    );
    let one = w("y1.csv", "1\n1\n1\n1\n");
    fails(
        &[
            "metric",
            "auroc",
            "--scores",
            s(&scores),
            "--labels",
            s(&one),
        ],
        "exactly two classes",
    );
    let short = w("short.csv", "0\n1\n");
    fails(
        &[
            "metric",
            "auroc",
            "--scores",
            s(&scores),
            "--labels",
            s(&short),
        ],
        "lengths differ",
    );
    let nan = w("nan.csv", "0.1\nnan\n0.3\n0.2\n");
    fails(
        &[
            "metric",
            "auroc",
            "--scores",
            s(&nan),
            "--labels",
            s(&labels),
        ],
        "non-finite value",
    );
    let frac = w("y.5.csv", "0\n0.5\n1\n1\n");
    fails(
        &[
            "metric",
            "auroc",
            "--scores",
            s(&scores),
            "--labels",
            s(&frac),
        ],
        "not an integer",
    );
    let empty = w("empty.csv", "score\n");
    fails(
        &[
            "metric",
            "auroc",
            "--scores",
            s(&empty),
            "--labels",
            s(&labels),
        ],
        "no data rows",
    );
    let neg = w("neg.csv", "1\n-1\n");
    fails(
        &["metric", "sparsity", "--fractions", s(&neg)],
        "split counts must be >= 0",
    );
    let zero = w("zero.csv", "0\n0\n");
    fails(
        &["metric", "sparsity", "--fractions", s(&zero)],
        "split counts are all zero",
    );
    let single = w("single.csv", "3\n");
    fails(
        &["metric", "sparsity", "--fractions", s(&single)],
        "too few features (sparsity needs a vector): 1 given, at least 2 needed",
    );
    let a = w("a.csv", "1,2\n3,4\n5,6\n");
    fails(
        &["metric", "amari", "--unmixing", s(&a), "--mixing", s(&a)],
        "shapes do not compose",
    );
    let c = w("c.csv", "1,2\n1,3\n1,5\n");
    fails(
        &["metric", "mcc", "--true", s(&c), "--estimated", s(&a)],
        "c.csv: column 0 is constant (zero variance)",
    );
}

/// 600 samples, 8 features; the label depends only on features 0 and 5.
fn concentrated(d: &Path) -> (String, String, String) {
    let mut g = unmix::random::Normals::new(4);
    let (mut x, mut y, mut groups) = (String::new(), String::new(), String::new());
    for r in 0..600 {
        let row: Vec<f64> = (0..8).map(|_| g.next_normal()).collect();
        let label = row[0] + 0.5 * row[5] + 0.3 * g.next_normal() > 0.0;
        x += &row
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",");
        x += "\n";
        y += if label { "1\n" } else { "0\n" };
        groups += &format!("{}\n", r % 6);
    }
    let paths = [("x.csv", x), ("y.csv", y), ("g.csv", groups)].map(|(n, t)| {
        let p = d.join(n);
        std::fs::write(&p, t).unwrap();
        p.to_str().unwrap().to_string()
    });
    let [a, b, c] = paths;
    (a, b, c)
}

#[test]
fn concentration_finds_the_informative_features_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let (x, y, g) = concentrated(dir.path());
    let args = [
        "metric",
        "concentration",
        "--features",
        &x,
        "--labels",
        &y,
        "--random-state",
        "3",
    ];
    let first = ok_json(&args);
    assert_eq!(first, ok_json(&args), "not deterministic for a seed");
    let top: Vec<u64> = first["runs"][0]["top_features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(top, vec![0, 5], "top 25% of 8 features");
    let fractions: Vec<f64> = first["runs"][0]["split_fractions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!((fractions.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert!(
        first["sparsity"]["mean"].as_f64().unwrap() > 0.3,
        "{}",
        first["sparsity"]
    );
    assert!(first["auroc_top"]["mean"].as_f64().unwrap() > 0.9);
    assert_eq!(
        first["concentration"]["per_seed"].as_array().unwrap().len(),
        5
    );
    assert!(
        first["concentration"]["mean"].as_f64().unwrap() > 0.3,
        "{}",
        first["concentration"]
    );

    let grouped = ok_json(&[
        "metric",
        "concentration",
        "--features",
        &x,
        "--labels",
        &y,
        "--groups",
        &g,
    ]);
    let held: Vec<u64> = grouped["runs"][0]["held_out_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(held.len(), 2, "ceil(25% of 6 groups)");
    assert_eq!(grouped["runs"][0]["n_test"], 200);

    fails(
        &[
            "metric",
            "concentration",
            "--features",
            &x,
            "--labels",
            &y,
            "--top",
            "1.5",
        ],
        "the top fraction must be in (0, 1)",
    );
    let one_feature = dir.path().join("x1.csv");
    std::fs::write(
        &one_feature,
        (0..600).map(|i| format!("{i}\n")).collect::<String>(),
    )
    .unwrap();
    fails(
        &[
            "metric",
            "concentration",
            "--features",
            s(&one_feature),
            "--labels",
            &y,
        ],
        "too few features (a top group and the rest): 1 given",
    );
}
