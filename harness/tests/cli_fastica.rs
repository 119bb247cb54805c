//! `unmix fit`, `transform`, `inverse-transform` end to end.

mod common;
use common::*;
use harness::io::read_npy;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_scikit_learn_case_through_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = manifest()["fastica"].as_array().cloned().unwrap();
    let mut failures = Vec::new();
    for e in &cases {
        let name = e["name"].as_str().unwrap();
        let (model, sources) = (dir.path().join("m.json"), dir.path().join("s.npy"));
        let data = fixtures_dir().join(e["data"].as_str().unwrap());
        let w_init = fixtures_dir().join(e["w_init"].as_str().unwrap());
        let k = e["n_components"].to_string();
        let (max_iter, tol, alpha) = (
            e["max_iter"].to_string(),
            e["tol"].to_string(),
            e["alpha"].to_string(),
        );
        let args = [
            "fit",
            "--input",
            s(&data),
            "--n-components",
            &k,
            "--algorithm",
            e["algorithm"].as_str().unwrap(),
            "--fun",
            e["fun"].as_str().unwrap(),
            "--alpha",
            &alpha,
            "--whiten",
            e["whiten"].as_str().unwrap(),
            "--max-iter",
            &max_iter,
            "--tol",
            &tol,
            "--w-init",
            s(&w_init),
            "--threads",
            "2",
            "--model",
            s(&model),
            "--sources",
            s(&sources),
        ];
        let o = unmix(&args);
        if !o.status.success() {
            failures.push(format!("{name}: {}", stderr(&o)));
            continue;
        }
        let got = read_npy(&sources).unwrap().to_f64().data;
        let reference = load(e["sources"].as_str().unwrap()).data;
        let err = max_abs_diff(&got, &reference) / max_abs(&reference);
        if err.is_nan() || err > e["rtol"].as_f64().unwrap() {
            failures.push(format!("{name}: sources differ by {err:.2e}"));
        }
        let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        if summary["n_iter"] != e["n_iter"] {
            failures.push(format!(
                "{name}: n_iter {} vs {}",
                summary["n_iter"], e["n_iter"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Laplace and uniform sources, mixed: 20 000 rows (five chunks), 4 features.
fn write_mixed(path: &Path, n: usize) -> Vec<f64> {
    let mut normals = unmix::random::Normals::new(5);
    let mut x = Vec::with_capacity(n * 4);
    for _ in 0..n {
        let (a, b) = (normals.next_normal(), normals.next_normal());
        let lap = a * b; // heavy-tailed
        let uni = (normals.next_normal() * 1e3).sin();
        let uni2 = (normals.next_normal() * 7e2).cos();
        let g = normals.next_normal();
        x.extend([
            lap + 0.3 * uni,
            uni - 0.2 * g + 0.5 * uni2,
            2.0 * uni2 + lap,
            g + 0.1 * lap,
        ]);
    }
    let file = std::fs::File::create(path).unwrap();
    use npyz::WriterBuilder;
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[n as u64, 4])
        .writer(file)
        .begin_nd()
        .unwrap();
    w.extend(x.iter().copied()).unwrap();
    w.finish().unwrap();
    x
}

#[test]
fn thread_count_never_changes_a_bit_and_transforms_agree() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x_path = d.join("x.npy");
    let x = write_mixed(&x_path, 20_000);
    let mut outputs = Vec::new();
    for (threads, algorithm) in [
        ("1", "parallel"),
        ("2", "parallel"),
        ("5", "parallel"),
        ("1", "deflation"),
        ("3", "deflation"),
    ] {
        let (m, src) = (
            d.join(format!("m{threads}{algorithm}.json")),
            d.join(format!("s{threads}{algorithm}.npy")),
        );
        let o = unmix(&[
            "fit",
            "--input",
            s(&x_path),
            "--threads",
            threads,
            "--algorithm",
            algorithm,
            "--model",
            s(&m),
            "--sources",
            s(&src),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            !stderr(&o).contains("iterations,"),
            "progress bar drawn on a non-terminal"
        );
        outputs.push((
            algorithm,
            std::fs::read(&src).unwrap(),
            std::fs::read_to_string(&m).unwrap(),
        ));
    }
    for pair in outputs.windows(2).filter(|p| p[0].0 == p[1].0) {
        assert!(pair[0].1 == pair[1].1, "sources depend on the thread count");
        assert!(pair[0].2 == pair[1].2, "model depends on the thread count");
    }
    // transform reproduces the fit's sources exactly; inverse-transform restores the input.
    let (m, src) = (d.join("m1parallel.json"), d.join("s1parallel.npy"));
    let t = d.join("t.npy");
    let o = unmix(&[
        "transform",
        "--model",
        s(&m),
        "--input",
        s(&x_path),
        "--output",
        s(&t),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&t).unwrap(), std::fs::read(&src).unwrap());
    let back = d.join("back.npy");
    let o = unmix(&[
        "inverse-transform",
        "--model",
        s(&m),
        "--input",
        s(&t),
        "--output",
        s(&back),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let back = read_npy(&back).unwrap().to_f64().data;
    assert!(max_abs_diff(&back, &x) < 1e-10 * max_abs(&x));
    // Unit-variance sources.
    let sources = read_npy(&src).unwrap().to_f64();
    for c in 0..4 {
        let col = column(&sources, c);
        let mean = col.iter().sum::<f64>() / col.len() as f64;
        let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / col.len() as f64;
        assert!(
            (var - 1.0).abs() < 1e-9 && mean.abs() < 1e-9,
            "source {c}: mean {mean}, var {var}"
        );
    }
}

#[test]
fn canonical_form_makes_different_starts_agree() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x_path = d.join("x.npy");
    write_mixed(&x_path, 20_000);
    let run = |seed: &str, canonical: bool| {
        let (m, src) = (d.join("m.json"), d.join(format!("s{seed}{canonical}.npy")));
        let mut args = vec![
            "fit",
            "--input",
            s(&x_path),
            "--random-state",
            seed,
            "--tol",
            "1e-10",
            "--model",
            s(&m),
            "--sources",
            s(&src),
        ];
        if canonical {
            args.push("--canonical");
        }
        let o = unmix(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        read_npy(&src).unwrap().to_f64().data
    };
    let (a, b) = (run("1", true), run("2", true));
    assert!(
        max_abs_diff(&a, &b) < 1e-5,
        "canonical sources differ by {:e}",
        max_abs_diff(&a, &b)
    );
    let (c, e) = (run("1", false), run("2", false));
    assert!(
        max_abs_diff(&c, &e) > 0.1,
        "starts 1 and 2 agree without canonical form: choose other seeds"
    );
}

#[test]
fn non_convergence_is_reported_not_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x_path = d.join("x.npy");
    write_mixed(&x_path, 5000);
    let m = d.join("m.json");
    let o = unmix(&[
        "fit",
        "--input",
        s(&x_path),
        "--max-iter",
        "2",
        "--tol",
        "0",
        "--model",
        s(&m),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("did not converge in 2 iterations"),
        "{}",
        stderr(&o)
    );
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["converged"], false);
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
    assert_eq!(model["converged"], false);
    assert!(model["last_change"].as_f64().unwrap() > 0.0);
}

fn assert_fails(args: &[&str], message: &str, outputs: &[&Path]) {
    let o = unmix(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "expected failure: {args:?}");
    assert!(err.contains(message), "stderr {err:?} lacks {message:?}");
    assert!(!err.contains("panicked"), "{err}");
    for p in outputs {
        assert!(!p.exists(), "{} left behind", p.display());
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x_path = d.join("x.npy");
    write_mixed(&x_path, 500);
    let (m, src) = (d.join("m.json"), d.join("s.npy"));
    let x = s(&x_path);
    let base = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = ["fit", "--input", x, "--model", s(&m), "--sources", s(&src)]
            .iter()
            .map(|a| a.to_string())
            .collect();
        v.extend(extra.iter().map(|a| a.to_string()));
        v
    };
    let check = |extra: &[&'static str], message: &str| {
        let args = base(extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_fails(&refs, message, &[&m, &src]);
    };
    check(&["--alpha", "3"], "alpha must be in [1, 2]");
    check(&["--tol", "-1"], "tol must be a number >= 0");
    check(&["--max-iter", "0"], "max_iter must be at least 1");
    check(&["--n-components", "5"], "invalid number of components 5");
    let w_bad = d.join("w_bad.csv");
    std::fs::write(&w_bad, "1,0,0\n0,1,0\n0,0,1\n").unwrap();
    let w_bad_s: &'static str = Box::leak(s(&w_bad).to_string().into_boxed_str());
    check(
        &["--w-init", w_bad_s],
        "w_init has shape 3 x 3, expected 4 x 4",
    );
    let w_sing = d.join("w_sing.csv");
    std::fs::write(&w_sing, "1,0,0,0\n0,1,0,0\n1,1,0,0\n0,0,0,1\n").unwrap();
    let w_sing_s: &'static str = Box::leak(s(&w_sing).to_string().into_boxed_str());
    check(&["--w-init", w_sing_s], "w_init is singular");

    let rank = d.join("rank.csv");
    std::fs::write(
        &rank,
        (0..50)
            .map(|i| format!("{i},{},{}\n", 2 * i, (i * i) % 7))
            .collect::<String>(),
    )
    .unwrap();
    assert_fails(
        &["fit", "--input", s(&rank), "--model", s(&m)],
        "keep at most 2 components",
        &[&m],
    );
    let nan = d.join("nan.csv");
    std::fs::write(&nan, "1,2\n3,nan\n5,6\n").unwrap();
    assert_fails(
        &["fit", "--input", s(&nan), "--model", s(&m)],
        "row 1, column 1",
        &[&m],
    );
    let one = d.join("one.csv");
    std::fs::write(&one, "1,2\n").unwrap();
    assert_fails(
        &["fit", "--input", s(&one), "--model", s(&m)],
        "too few samples",
        &[&m],
    );
    assert_fails(
        &[
            "fit",
            "--input",
            s(&one),
            "--whiten",
            "false",
            "--model",
            s(&m),
        ],
        "too few samples",
        &[&m],
    );

    // A model applied to data of the wrong width.
    let o = unmix(&["fit", "--input", x, "--model", s(&m)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = d.join("out.npy");
    assert_fails(
        &[
            "transform",
            "--model",
            s(&m),
            "--input",
            s(&rank),
            "--output",
            s(&out),
        ],
        "3 columns, but the FastICA model",
        &[&out],
    );
    assert_fails(
        &[
            "transform",
            "--model",
            s(&d.join("none.json")),
            "--input",
            x,
            "--output",
            s(&out),
        ],
        "cannot open",
        &[&out],
    );
    std::fs::write(d.join("bad.json"), "{\"format\": \"something else\"}").unwrap();
    assert_fails(
        &[
            "transform",
            "--model",
            s(&d.join("bad.json")),
            "--input",
            x,
            "--output",
            s(&out),
        ],
        "not an unmix model (whitener or FastICA)",
        &[&out],
    );
}

/// A non-finite value met by `transform` / `inverse-transform` on two threads is reported with
/// its row in the whole file (not within a thread's chunk) and the file's name, and no output is
/// left behind.
#[test]
fn transforms_name_the_file_and_the_global_row_of_a_non_finite_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (x_path, m) = (d.join("x.npy"), d.join("m.json"));
    let x = write_mixed(&x_path, 9000);
    let o = unmix(&["fit", "--input", s(&x_path), "--model", s(&m)]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (inverse, row, col) in [(false, 7000usize, 2usize), (true, 8999, 0)] {
        let mut bad = x.clone();
        bad[row * 4 + col] = if inverse { f64::INFINITY } else { f64::NAN };
        let bad_path = d.join(format!("bad{inverse}.npy"));
        let matrix = harness::io::Matrix::new(9000, 4, bad).unwrap();
        harness::io::write_npy(&bad_path, &matrix).unwrap();
        let out = d.join("out.npy");
        let command = if inverse {
            "inverse-transform"
        } else {
            "transform"
        };
        let o = unmix(&[
            command,
            "--model",
            s(&m),
            "--input",
            s(&bad_path),
            "--output",
            s(&out),
            "--threads",
            "2",
        ]);
        let err = stderr(&o);
        assert!(!o.status.success(), "{command} accepted a non-finite value");
        assert!(
            err.contains(&format!("row {row}, column {col}")),
            "{command}: {err}"
        );
        assert!(
            err.contains(s(&bad_path)),
            "{command} does not name the file: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists(), "{command} left {} behind", out.display());
    }
}

/// `fit --dtype f64` on an f32 `.npy` widens the rows as each pass reads them, without an f64
/// copy of the file: the model and the sources are the bytes of a fit of the same values
/// stored as f64 (a CSV, read into memory, so that its fit may fold the whitening in as the
/// widened one does), with the whitening folded in or not, without whitening, on 1 and 2
/// threads, over several chunks of rows.
#[test]
fn an_f32_file_fitted_in_f64_has_the_bits_of_its_f64_values() {
    let extras: [&[&str]; 3] = [&[], &["--n-components", "16"], &["--whiten", "false"]];
    widened_fit_has_the_bits_of_its_f64_values(5000, 24, &extras);
}

/// The same with 128 features, a file large enough to be mapped (2.6 MB): its pages are
/// released once read, by each folded pass too (from `fastica::RELEASE_MIN_K` components).
#[test]
fn a_mapped_f32_file_fitted_in_f64_has_the_bits_of_its_f64_values() {
    let (n, d) = (5000, harness::fastica::RELEASE_MIN_K);
    assert!((n * d * 4) as u64 >= harness::io::MAP_MIN_BYTES);
    widened_fit_has_the_bits_of_its_f64_values(n, d, &[&[]]);
}

fn widened_fit_has_the_bits_of_its_f64_values(n: usize, d: usize, extras: &[&[&str]]) {
    let dir = tempfile::tempdir().unwrap();
    let x: Vec<f32> = (0..n * d)
        .map(|i| {
            let (r, c) = (i / d, i % d);
            let u = ((r * 7919 + c * 104_729) % 10_007) as f32 / 10_007.0 - 0.5;
            u * u * u * 8.0 + (c as f32) * 0.01 + ((r * (c + 3)) % 13) as f32 * 0.05
        })
        .collect();
    let x32 = dir.path().join("x32.npy");
    {
        use npyz::WriterBuilder;
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[n as u64, d as u64])
            .writer(std::fs::File::create(&x32).unwrap())
            .begin_nd()
            .unwrap();
        w.extend(x.iter().copied()).unwrap();
        w.finish().unwrap();
    }
    let x64 = dir.path().join("x64.csv");
    let csv: String = x
        .chunks(d)
        .map(|r| {
            let row: Vec<String> = r.iter().map(|&v| format!("{:?}", f64::from(v))).collect();
            row.join(",") + "\n"
        })
        .collect();
    std::fs::write(&x64, csv).unwrap();
    let fit = |input: &Path, dtype: &[&str], extra: &[&str], fold: &str, threads: &str| {
        let (m, src) = (dir.path().join("m.json"), dir.path().join("s.npy"));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_unmix"))
            .args([
                "fit",
                "--input",
                s(input),
                "--model",
                s(&m),
                "--sources",
                s(&src),
            ])
            .args(["--max-iter", "30", "--tol", "0", "--random-state", "3"])
            .args(["--threads", threads])
            .args(dtype)
            .args(extra)
            .env("UNMIX_FOLD", fold)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let model: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
        (model, std::fs::read(&src).unwrap())
    };
    for &extra in extras {
        for fold in ["always", "never"] {
            for threads in ["1", "2"] {
                let widened = fit(&x32, &["--dtype", "f64"], extra, fold, threads);
                let copied = fit(&x64, &[], extra, fold, threads);
                assert_eq!(widened.0["dtype"], "float64", "{extra:?}");
                assert!(
                    widened == copied,
                    "{extra:?}, UNMIX_FOLD={fold}, {threads} threads: the widened fit differs"
                );
            }
        }
    }
}
