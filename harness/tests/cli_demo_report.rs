//! `unmix demo` and `unmix report` end to end, and their bad inputs.

mod common;
use common::*;
use harness::demo::microscopy;
use harness::io::{Matrix, write_npy};
use serde_json::Value;
use std::path::Path;

fn run_ok(args: &[&str]) -> String {
    let o = unmix(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

fn fails(args: &[&str], message: &str) {
    let o = unmix(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "expected failure: {args:?}");
    assert!(err.contains(message), "stderr {err:?} lacks {message:?}");
    assert!(!err.contains("panicked"), "{err}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn assert_svg(p: &Path) {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(
        text.starts_with("<svg") && text.contains("</svg>"),
        "{}",
        p.display()
    );
}

#[test]
fn demo_prints_tables_and_verdicts_and_writes_figures_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let (out, json) = (dir.path().join("figs"), dir.path().join("demo.json"));
    let stdout = run_ok(&[
        "demo",
        "--n-samples",
        "1500",
        "--seeds",
        "2",
        "--random-state",
        "3",
        "--out",
        s(&out),
        "--json",
        s(&json),
    ]);
    for heading in [
        "a. Microscopy-style",
        "b. Digits",
        "c. Alignment",
        "d. InfoMEC",
        "e. Cocktail party",
    ] {
        assert!(stdout.contains(heading), "{heading} missing:\n{stdout}");
    }
    assert!(stdout.contains("ceil(0.25 x 61) = 16 of 61 features (26.2 %)"));
    let report = read_json(&json);
    let claims = report["claims"].as_array().unwrap();
    let sections: Vec<&str> = claims
        .iter()
        .map(|c| c["section"].as_str().unwrap())
        .collect();
    for section in ["a", "b", "c", "d", "e"] {
        assert!(sections.contains(&section), "{sections:?}");
    }
    for c in claims {
        let verdict = if c["held"].as_bool().unwrap() {
            "[held]"
        } else {
            "[NOT HELD]"
        };
        let line = format!("{verdict} {}", c["claim"].as_str().unwrap());
        assert!(stdout.contains(&line), "{line} not printed");
    }
    // The recipe's core claims hold on this data: ICA recovers the factors and the sources.
    let held = |section: &str, start: &str| {
        claims.iter().any(|c| {
            c["section"] == section
                && c["claim"].as_str().unwrap().starts_with(start)
                && c["held"] == true
        })
    };
    assert!(held("a", "whitening + ICA recovers"), "{claims:?}");
    assert!(held("e", "FastICA separates"), "{claims:?}");
    // A random rotation after whitening does not give ICA's gains, on the digits too.
    assert!(held(
        "b",
        "a random rotation after whitening does not give ICA's concentration"
    ));
    assert!(held(
        "b",
        "a random rotation after whitening does not give ICA's split-fraction"
    ));
    assert!(
        report["b_digits"]["whitening_all_64_pixels"]
            .as_str()
            .unwrap()
            .contains("effective rank 61")
    );
    // Every seed's value is kept.
    let rows = report["a_synthetic"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        let c = &r["result"]["concentration"];
        assert_eq!(c["per_seed"].as_array().unwrap().len(), 2);
        assert!(c["std"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(report["options"]["random_state"], 3);
    for f in report["figures"].as_array().unwrap() {
        assert_svg(Path::new(f.as_str().unwrap()));
    }
    for name in [
        "cocktail.svg",
        "alignment.svg",
        "a_split_fractions.svg",
        "a_concentration.svg",
    ] {
        assert_svg(&out.join(name));
    }
}

/// Embeddings, labels and groups of section a's synthetic data, as .npy files.
fn synthetic_files(dir: &Path, n: usize) -> (String, String, String) {
    let data = microscopy::synthetic(n, 12, 0.2, 7).unwrap();
    let x = dir.join("x.npy");
    let y = dir.join("y.npy");
    let g = dir.join("g.npy");
    write_npy(&x, &data.embeddings.map(|v| v as f32)).unwrap();
    write_npy(&y, &Matrix::new(n, 1, data.label).unwrap()).unwrap();
    write_npy(&g, &Matrix::new(n, 1, data.batch).unwrap()).unwrap();
    (s(&x).into(), s(&y).into(), s(&g).into())
}

/// Runs `unmix report` on the synthetic files with `--n-components 8`, `extra` flags, and the
/// figures and JSON under `dir/name`; returns stdout and the JSON.
fn report_on(
    dir: &Path,
    files: &(String, String, String),
    name: &str,
    extra: &[&str],
) -> (String, Value) {
    let (out, json) = (dir.join(name), dir.join(format!("{name}.json")));
    let (x, y, g) = files;
    let mut args = vec![
        "report",
        "--embeddings",
        x,
        "--labels",
        y,
        "--groups",
        g,
        "--n-components",
        "8",
        "--out",
        s(&out),
        "--json",
        s(&json),
    ];
    args.extend_from_slice(extra);
    let stdout = run_ok(&args);
    (stdout, read_json(&json))
}

#[test]
fn report_gives_the_table_with_spread_figures_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let files = synthetic_files(dir.path(), 1200);
    let (stdout, first) = report_on(dir.path(), &files, "rep", &["--seeds", "2"]);
    assert!(stdout.contains("out-of-group AUROC"), "{stdout}");
    for row in ["| Base ", "| PCA ", "| PCA + ICA ", "| PCA + Rand "] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }
    assert!(stdout.contains("ceil(0.25 x 12) = 3 of 12 features"));
    let rows = first["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[2]["representation"], "PCA + ICA");
    let ica = &rows[2]["result"];
    assert_eq!(ica["n_features"], 8);
    assert_eq!(
        ica["concentration"]["per_seed"].as_array().unwrap().len(),
        2
    );
    assert_eq!(ica["runs"].as_array().unwrap().len(), 2);
    assert!(
        !ica["runs"][0]["held_out_groups"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let out = dir.path().join("rep");
    assert_svg(&out.join("split_fractions.svg"));
    assert_svg(&out.join("concentration.svg"));
    // Same input, options and seeds: the same numbers.
    let (_, again) = report_on(dir.path(), &files, "rep", &["--seeds", "2"]);
    assert_eq!(first["rows"], again["rows"]);
}

#[test]
fn report_samples_the_rows_the_trees_see_and_fits_on_all() {
    let dir = tempfile::tempdir().unwrap();
    let files = synthetic_files(dir.path(), 1200);
    let run = |max_rows: &str, name: &str| {
        report_on(
            dir.path(),
            &files,
            name,
            &["--seeds", "1", "--max-rows", max_rows],
        )
    };
    let (stdout, sampled) = run("500", "sampled");
    assert!(
        stdout.contains("fitted on all 1200 rows; the trees train and test on a sample of"),
        "{stdout}"
    );
    let n = sampled["scored_rows"]["n"].as_u64().unwrap();
    assert!((498..=502).contains(&n), "{n} rows kept for --max-rows 500");
    let run0 = &sampled["rows"][0]["result"]["runs"][0];
    assert_eq!(
        run0["n_train"].as_u64().unwrap() + run0["n_test"].as_u64().unwrap(),
        n
    );
    assert_eq!(sampled["n_samples"], 1200);
    // At or above the row count nothing is sampled: every row is scored.
    let (stdout, all) = run("1200", "all");
    assert!(!stdout.contains("a sample of"), "{stdout}");
    assert_eq!(all["scored_rows"]["n"], 1200);
    assert_eq!(all["scored_rows"]["rule"], "all rows");
    // The fits use every row either way: FastICA's iterations do not change with sampling.
    assert_eq!(sampled["fastica"], all["fastica"]);
}

#[test]
fn report_bad_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (x, y, g) = synthetic_files(d, 300);
    let out = d.join("out");
    let report = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["report".into(), "--out".into(), s(&out).into()];
        v.extend(extra.iter().map(|a| a.to_string()));
        v
    };
    let call = |args: Vec<String>, message: &str| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&refs, message);
    };
    call(
        report(&["--embeddings", &x, "--labels", &y, "--bogus"]),
        "unexpected argument '--bogus'",
    );
    let missing = s(&d.join("nope.npy")).to_string();
    call(
        report(&["--embeddings", &missing, "--labels", &y]),
        "nope.npy",
    );
    // Labels of the wrong length name the file and both lengths.
    let short = d.join("short.npy");
    write_npy(&short, &Matrix::new(299, 1, vec![0i64; 299]).unwrap()).unwrap();
    call(
        report(&["--embeddings", &x, "--labels", s(&short)]),
        "short.npy: 299 labels for 300 rows",
    );
    // A single class.
    let one = d.join("one.npy");
    write_npy(&one, &Matrix::new(300, 1, vec![2i64; 300]).unwrap()).unwrap();
    call(
        report(&["--embeddings", &x, "--labels", s(&one)]),
        "a single class (2); AUROC needs two",
    );
    // A single group where out-of-group AUROC needs two.
    call(
        report(&["--embeddings", &x, "--labels", &y, "--groups", s(&one)]),
        "a single group (2)",
    );
    // Non-finite embeddings: where.
    let mut m = microscopy::synthetic(300, 12, 0.2, 7).unwrap().embeddings;
    m.data[5 * 12 + 4] = f64::INFINITY;
    let bad = d.join("bad.npy");
    write_npy(&bad, &m).unwrap();
    call(
        report(&["--embeddings", s(&bad), "--labels", &y, "--groups", &g]),
        "bad.npy: non-finite value inf at row 5, column 4",
    );
    call(
        report(&["--embeddings", &x, "--labels", &y, "--seeds", "0"]),
        "--seeds must be at least 1",
    );
    call(
        report(&["--embeddings", &x, "--labels", &y, "--max-rows", "0"]),
        "--max-rows must be at least 1",
    );
    assert!(!out.exists(), "nothing is written when the input is bad");
}

#[test]
fn demo_bad_options_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    fails(
        &["demo", "--dim", "4", "--out", s(&out)],
        "--dim must be at least 8",
    );
    fails(
        &["demo", "--distortion", "-1", "--out", s(&out)],
        "--distortion must be a finite number >= 0",
    );
    fails(
        &["demo", "--frobnicate"],
        "unexpected argument '--frobnicate'",
    );
}

#[test]
fn metric_concentration_scores_many_classes_one_vs_rest_over_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut g = unmix::random::Normals::new(11);
    let n = 450;
    let mut x = Vec::new();
    let mut y = Vec::new();
    for r in 0..n {
        let class = (r % 3) as i64;
        for j in 0..4 {
            x.push(g.next_normal() + if j == class as usize { 2.5 } else { 0.0 });
        }
        y.push(class);
    }
    let (xp, yp) = (d.join("x.npy"), d.join("y.npy"));
    write_npy(&xp, &Matrix::new(n, 4, x).unwrap()).unwrap();
    write_npy(&yp, &Matrix::new(n, 1, y).unwrap()).unwrap();
    let stdout = run_ok(&[
        "metric",
        "concentration",
        "--features",
        s(&xp),
        "--labels",
        s(&yp),
        "--seeds",
        "3",
    ]);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["positive_classes"], serde_json::json!([0, 1, 2]));
    assert_eq!(v["runs"].as_array().unwrap().len(), 9);
    assert_eq!(v["concentration"]["per_seed"].as_array().unwrap().len(), 3);
    assert!(
        v["top_rule"]
            .as_str()
            .unwrap()
            .contains("ceil(0.25 x 4) = 1 of 4 features (25.0 %)")
    );
    assert!(
        v["tie_rule"]
            .as_str()
            .unwrap()
            .contains("random permutation")
    );
    assert_eq!(v["classifier"]["gamma"], 0.001);
}
