//! No command destroys data, sizes are checked before allocating, and bad input gets a message
//! that names the right file and cause (issue 9's defects, one test each).

mod common;
use common::{stderr, unmix};
use harness::io::{Matrix, read_npy, write_npy};
use std::path::{Path, PathBuf};
use std::process::Output;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `n x d` heavy-tailed data from a fixed LCG (no Gaussian columns, so FastICA has work to do).
fn data(n: usize, d: usize) -> Matrix<f64> {
    let mut state = 12345u64;
    let values = (0..n * d)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let l = -(1.0 - u).ln(); // exponential
            if state & (1 << 7) == 0 { l } else { -l }
        })
        .collect();
    Matrix::new(n, d, values).unwrap()
}

fn save(dir: &Path, name: &str, m: &Matrix<f64>) -> PathBuf {
    let p = dir.join(name);
    write_npy(&p, m).unwrap();
    p
}

/// Fails with `message` in stderr, no panic, exit 1.
#[track_caller]
fn assert_error(o: &Output, message: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "expected exit 1: {err}");
    assert!(err.contains(message), "stderr {err:?} lacks {message:?}");
    assert!(!err.contains("panicked"), "panic: {err}");
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_failed_model_write_deletes_neither_the_input_nor_an_older_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = save(d, "x.npy", &data(300, 3));
    let x_bytes = std::fs::read(&x).unwrap();
    let old = d.join("old.npy");
    std::fs::write(&old, b"an older result").unwrap();
    std::fs::create_dir(d.join("a_directory")).unwrap();
    let missing_dir = d.join("nodir/m.json");
    // Defect 1: output = input with an unwritable model.
    let o = unmix(&[
        "whiten",
        "--input",
        s(&x),
        "--output",
        s(&x),
        "--model",
        s(&missing_dir),
    ]);
    assert_error(&o, "same file as --input");
    let o = unmix(&[
        "fit",
        "--input",
        s(&x),
        "--sources",
        s(&x),
        "--model",
        s(&missing_dir),
    ]);
    assert_error(&o, "same file as --input");
    // Defect 2: an older output and a model path that cannot be written.
    for model in [missing_dir.as_path(), d.join("a_directory").as_path()] {
        let o = unmix(&[
            "fit",
            "--input",
            s(&x),
            "--sources",
            s(&old),
            "--model",
            s(model),
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let o = unmix(&[
            "whiten",
            "--input",
            s(&x),
            "--output",
            s(&old),
            "--model",
            s(model),
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    }
    assert_error(
        &unmix(&["fit", "--input", s(&x), "--model", s(&missing_dir)]),
        "directory",
    );
    assert_error(
        &unmix(&[
            "fit",
            "--input",
            s(&x),
            "--model",
            s(&d.join("a_directory")),
        ]),
        "is a directory",
    );
    assert_eq!(std::fs::read(&x).unwrap(), x_bytes, "the input changed");
    assert_eq!(std::fs::read(&old).unwrap(), b"an older result");
    assert_eq!(listing(d), ["a_directory", "old.npy", "x.npy"]);
}

#[test]
fn no_output_may_name_an_input_or_another_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = save(d, "x.npy", &data(300, 3));
    let x_bytes = std::fs::read(&x).unwrap();
    let model = d.join("m.json");
    let fitted = unmix(&["fit", "--input", s(&x), "--model", s(&model)]);
    assert!(fitted.status.success(), "{}", stderr(&fitted));
    let model_bytes = std::fs::read(&model).unwrap();
    // The same file under another spelling, and through a hard link.
    let other_spelling = d.join(".").join("x.npy");
    let link = d.join("link.npy");
    std::fs::hard_link(&x, &link).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["whiten", "--input", s(&x), "--output", s(&other_spelling)],
            "same file as --input",
        ),
        (
            vec!["whiten", "--input", s(&x), "--output", s(&link)],
            "same file as --input",
        ),
        (
            vec![
                "whiten",
                "--input",
                s(&x),
                "--output",
                "z.npy",
                "--model",
                s(&x),
            ],
            "same file as --input",
        ),
        (
            vec!["fit", "--input", s(&x), "--model", s(&x)],
            "same file as --input",
        ),
        (
            vec![
                "fit",
                "--input",
                s(&x),
                "--model",
                s(&model),
                "--w-init",
                s(&model),
            ],
            "same file as --w-init",
        ),
        (
            vec![
                "transform",
                "--model",
                s(&model),
                "--input",
                s(&x),
                "--output",
                s(&x),
            ],
            "same file as --input",
        ),
        (
            vec![
                "transform",
                "--model",
                s(&model),
                "--input",
                s(&x),
                "--output",
                s(&model),
            ],
            "same file as --model",
        ),
        (
            vec![
                "inverse-transform",
                "--model",
                s(&model),
                "--input",
                s(&x),
                "--output",
                s(&x),
            ],
            "same file as --input",
        ),
    ];
    for (args, message) in cases {
        assert_error(&unmix(&args), message);
    }
    // Defect 4: two outputs on one path.
    let both = d.join("s.npy");
    let o = unmix(&[
        "fit",
        "--input",
        s(&x),
        "--model",
        s(&both),
        "--sources",
        s(&both),
    ]);
    assert_error(&o, "are the same file");
    let o = unmix(&[
        "whiten",
        "--input",
        s(&x),
        "--output",
        s(&both),
        "--model",
        s(&both),
    ]);
    assert_error(&o, "are the same file");
    assert!(!both.exists());
    assert_eq!(std::fs::read(&x).unwrap(), x_bytes);
    assert_eq!(std::fs::read(&model).unwrap(), model_bytes);
}

/// Sends `signal` to `child` once a temporary file has appeared in `dir`, and checks that the
/// command removed it, wrote nothing, and left the older output alone.
#[cfg(unix)]
fn interrupt_mid_command(signal: &str) {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Large enough that the fit runs for a while: 200 000 x 8, no early stop.
    let x = save(d, "x.npy", &data(200_000, 8));
    let out = tempfile::tempdir().unwrap();
    let (model, sources) = (out.path().join("m.json"), out.path().join("s.npy"));
    std::fs::write(&sources, b"older sources").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_unmix"))
        .args([
            "fit",
            "--input",
            s(&x),
            "--model",
            s(&model),
            "--sources",
            s(&sources),
        ])
        .args(["--tol", "0", "--max-iter", "100000", "--threads", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !listing(out.path()).iter().any(|n| n.ends_with(".tmp")) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no temporary file appeared"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the command ended early"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    let kill = Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{signal}: {}", stderr(&o));
    assert_eq!(listing(out.path()), ["s.npy"], "{signal}: left behind");
    assert_eq!(std::fs::read(&sources).unwrap(), b"older sources");
}

#[cfg(unix)]
#[test]
fn sigterm_and_sigint_remove_the_temporary_files() {
    interrupt_mid_command("-TERM");
    interrupt_mid_command("-INT");
}

#[test]
fn sizes_are_checked_before_anything_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = save(d, "x.npy", &data(100, 4));
    let z = d.join("z.npy");
    for k in ["18446744073709551615", "50000"] {
        let o = unmix(&[
            "whiten",
            "--input",
            s(&x),
            "--output",
            s(&z),
            "--n-components",
            k,
        ]);
        assert_error(&o, &format!("invalid number of components {k}"));
        let o = unmix(&[
            "fit",
            "--input",
            s(&x),
            "--model",
            s(&d.join("m.json")),
            "--n-components",
            k,
        ]);
        assert_error(&o, &format!("invalid number of components {k}"));
    }
    // 1 x 100000 (800 KB): too few samples, not an 80 GB covariance.
    let wide = save(
        d,
        "wide.npy",
        &Matrix::new(1, 100_000, vec![1.0; 100_000]).unwrap(),
    );
    assert_error(
        &unmix(&["whiten", "--input", s(&wide), "--output", s(&z)]),
        "too few samples",
    );
    assert_error(
        &unmix(&["fit", "--input", s(&wide), "--model", s(&d.join("m.json"))]),
        "too few samples",
    );
    assert_error(
        &unmix(&["metric", "mcc", "--true", s(&wide), "--estimated", s(&wide)]),
        "too few samples",
    );
    // 3 x 20000 CSV: 3 samples cannot be whitened to 20000 components; with 2 components the
    // 20000 x 20000 covariance is over the memory limit.
    let csv = d.join("wide.csv");
    let row = |r: usize| {
        (0..20_000)
            .map(|c| ((r * 7 + c) % 13).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    std::fs::write(&csv, format!("{}\n{}\n{}\n", row(0), row(1), row(2))).unwrap();
    assert_error(
        &unmix(&["fit", "--input", s(&csv), "--model", s(&d.join("m.json"))]),
        "rank at most 2",
    );
    assert_error(
        &unmix(&[
            "fit",
            "--input",
            s(&csv),
            "--model",
            s(&d.join("m.json")),
            "--n-components",
            "2",
        ]),
        "working memory",
    );
    // A .npy whose header promises more than the file holds.
    let bytes = std::fs::read(&x).unwrap();
    let truncated = d.join("truncated.npy");
    std::fs::write(&truncated, &bytes[..bytes.len() - 8]).unwrap();
    for args in [
        vec!["whiten", "--input", s(&truncated), "--output", s(&z)],
        vec!["metric", "sparsity", "--fractions", s(&truncated)],
    ] {
        let o = unmix(&args);
        assert_error(&o, "truncated.npy: truncated");
    }
    // A model that claims 1e10 features but holds 4.
    let model = d.join("m.json");
    assert!(
        unmix(&["fit", "--input", s(&x), "--model", s(&model)])
            .status
            .success()
    );
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&model).unwrap()).unwrap();
    v["n_features"] = serde_json::json!(10_000_000_000u64);
    let huge = d.join("huge.json");
    std::fs::write(&huge, v.to_string()).unwrap();
    let o = unmix(&[
        "transform",
        "--model",
        s(&huge),
        "--input",
        s(&x),
        "--output",
        s(&z),
    ]);
    assert_error(&o, "huge.json: mean: expected 10000000000 values, found 4");
    assert!(!z.exists());
}

#[test]
fn model_shapes_are_checked_row_by_row() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = save(d, "x.npy", &data(100, 4));
    let model = d.join("m.json");
    assert!(
        unmix(&["fit", "--input", s(&x), "--model", s(&model)])
            .status
            .success()
    );
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&model).unwrap()).unwrap();
    // Rows of 5, 3, 4, 4 values: 16 in all, as many as 4 x 4.
    let rows = v["components"].as_array_mut().unwrap();
    let moved = rows[1].as_array_mut().unwrap().pop().unwrap();
    rows[0].as_array_mut().unwrap().push(moved);
    let bad = d.join("bad.json");
    std::fs::write(&bad, v.to_string()).unwrap();
    let o = unmix(&[
        "transform",
        "--model",
        s(&bad),
        "--input",
        s(&x),
        "--output",
        s(&d.join("o.npy")),
    ]);
    assert_error(
        &o,
        "bad.json: components: expected 4 rows of 4, but row 0 has 5 values",
    );
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&model).unwrap()).unwrap();
    v["format"] = serde_json::json!("something-else");
    std::fs::write(&bad, v.to_string()).unwrap();
    let o = unmix(&[
        "transform",
        "--model",
        s(&bad),
        "--input",
        s(&x),
        "--output",
        s(&d.join("o.npy")),
    ]);
    assert_error(&o, "bad.json: not an unmix model");
}

#[test]
fn a_whitener_model_applies_to_new_data_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = save(d, "x.npy", &data(400, 5));
    let (z, model) = (d.join("z.npy"), d.join("w.json"));
    let args = [
        "whiten",
        "--input",
        s(&x),
        "--output",
        s(&z),
        "--model",
        s(&model),
    ];
    let o = unmix(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = d.join("t.npy");
    let o = unmix(&[
        "transform",
        "--model",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&t),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&t).unwrap(),
        std::fs::read(&z).unwrap(),
        "transform = whiten"
    );
    let back = d.join("back.npy");
    let o = unmix(&[
        "inverse-transform",
        "--model",
        s(&model),
        "--input",
        s(&t),
        "--output",
        s(&back),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (x0, x1) = (
        read_npy(&x).unwrap().to_f64(),
        read_npy(&back).unwrap().to_f64(),
    );
    let err = x0
        .data
        .iter()
        .zip(&x1.data)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(err < 1e-12, "inverse-transform is off by {err}");
}

#[test]
fn threads_are_capped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = save(d, "x.npy", &data(300, 3));
    let start = std::time::Instant::now();
    let o = unmix(&[
        "fit",
        "--input",
        s(&x),
        "--model",
        s(&d.join("m.json")),
        "--threads",
        "18446744073709551615",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--threads 18446744073709551615 is more than 4 x"),
        "{}",
        stderr(&o)
    );
    // Not a timing assertion on speed: 2^64 - 1 threads would never finish at all.
    assert!(start.elapsed() < std::time::Duration::from_secs(120));
}

#[test]
fn messages_name_the_right_file_and_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("o.npy");
    let good = data(300, 3);
    let x = save(d, "x.npy", &good);
    // int64 is logged as int64, not as the float64 it is read as.
    let ints = d.join("ints.npy");
    {
        let file = std::fs::File::create(&ints).unwrap();
        use npyz::WriterBuilder;
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[300, 3])
            .writer(file)
            .begin_nd()
            .unwrap();
        w.extend(good.data.iter().map(|v| (v * 1000.0) as i64))
            .unwrap();
        w.finish().unwrap();
    }
    let o = unmix(&[
        "whiten",
        "--input",
        s(&ints),
        "--output",
        s(&d.join("z.npy")),
    ]);
    assert!(
        stderr(&o).contains("read 300 x 3 (int64)"),
        "{}",
        stderr(&o)
    );
    // mcc: the column in its own file; scaled data are fine.
    let mut constant = data(300, 3);
    for r in 0..300 {
        constant.data[r * 3 + 2] = 7.0;
    }
    let c = save(d, "const.npy", &constant);
    let o = unmix(&["metric", "mcc", "--true", s(&x), "--estimated", s(&c)]);
    assert_error(&o, "const.npy: column 2 is constant");
    for scale in [1e307, 1e-310] {
        let scaled = save(d, "scaled.npy", &good.map(|v| v * scale));
        let o = unmix(&["metric", "mcc", "--true", s(&x), "--estimated", s(&scaled)]);
        assert!(o.status.success(), "x {scale}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["mcc"].as_f64().unwrap() > 0.999, "x {scale}: {v}");
    }
    // amari: positions in the file; finite matrices near 1e300 are fine.
    let w = save(
        d,
        "w.npy",
        &Matrix::new(2, 2, vec![1e300, 0.0, 0.0, 1e300]).unwrap(),
    );
    let a = save(
        d,
        "a.npy",
        &Matrix::new(2, 2, vec![0.0, 1e300, 1e300, 0.0]).unwrap(),
    );
    let o = unmix(&["metric", "amari", "--unmixing", s(&w), "--mixing", s(&a)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let nan = save(
        d,
        "nan.npy",
        &Matrix::new(2, 2, vec![1.0, 0.0, f64::NAN, 1.0]).unwrap(),
    );
    let o = unmix(&["metric", "amari", "--unmixing", s(&w), "--mixing", s(&nan)]);
    assert_error(&o, "nan.npy: non-finite value at row 1, column 0");
    // 1 x 1 inputs.
    let one = save(d, "one.npy", &Matrix::new(1, 1, vec![1.0]).unwrap());
    let o = unmix(&[
        "metric",
        "amari",
        "--unmixing",
        s(&one),
        "--mixing",
        s(&one),
    ]);
    assert_error(&o, "too few components: 1 given, at least 2 needed");
    let o = unmix(&["metric", "sparsity", "--fractions", s(&one)]);
    assert_error(&o, "too few features");
    // Labels {0, 2^62} are integers.
    let labels = d.join("y.npy");
    {
        let file = std::fs::File::create(&labels).unwrap();
        use npyz::WriterBuilder;
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[4])
            .writer(file)
            .begin_nd()
            .unwrap();
        w.extend([0i64, 1 << 62, 0, 1 << 62]).unwrap();
        w.finish().unwrap();
    }
    let scores = save(
        d,
        "s.npy",
        &Matrix::new(4, 1, vec![0.1, 0.9, 0.2, 0.8]).unwrap(),
    );
    let o = unmix(&[
        "metric",
        "auroc",
        "--scores",
        s(&scores),
        "--labels",
        s(&labels),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A huge --w-init is the start matrix's business, and FastICA does not depend on its scale.
    let w_init = save(d, "w_init.npy", &data(3, 3).map(|v| v * 1e300));
    let o = unmix(&[
        "fit",
        "--input",
        s(&x),
        "--model",
        s(&d.join("m.json")),
        "--w-init",
        s(&w_init),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut bad_init = data(3, 3);
    bad_init.data[4] = f64::INFINITY;
    let bad_init = save(d, "bad_init.npy", &bad_init);
    let o = unmix(&[
        "fit",
        "--input",
        s(&x),
        "--model",
        s(&d.join("m.json")),
        "--w-init",
        s(&bad_init),
    ]);
    assert_error(
        &o,
        "bad_init.npy: --w-init has a non-finite value at row 1, column 1",
    );
    // Underflow is not "rank 0".
    let tiny = save(d, "tiny.npy", &good.map(|v| v * 1e-200));
    let o = unmix(&["whiten", "--input", s(&tiny), "--output", s(&out)]);
    assert_error(&o, "covariance underflows");
    // ZCA with K < D names ZCA.
    let o = unmix(&[
        "whiten",
        "--input",
        s(&x),
        "--output",
        s(&out),
        "--method",
        "zca",
        "--n-components",
        "2",
    ]);
    assert_error(&o, "ZCA keeps every feature");
    // Concentration's options are checked before the data.
    let o = unmix(&[
        "metric",
        "concentration",
        "--features",
        s(&x),
        "--labels",
        s(&labels),
        "--learning-rate",
        "inf",
    ]);
    assert_error(&o, "--learning-rate must be a finite number > 0");
    assert!(!out.exists());
}

#[test]
fn every_flag_has_help_text() {
    let commands: [&[&str]; 10] = [
        &["whiten"],
        &["fit"],
        &["transform"],
        &["inverse-transform"],
        &["demo"],
        &["metric", "auroc"],
        &["metric", "sparsity"],
        &["metric", "mcc"],
        &["metric", "amari"],
        &["metric", "concentration"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("-h");
        let o = unmix(&args);
        assert!(o.status.success());
        let help = String::from_utf8_lossy(&o.stdout).into_owned();
        // clap prints a flag with no doc comment as the flag, its value name, and at most
        // "[default: ...]" / "[possible values: ...]".
        for line in help.lines().filter(|l| l.trim_start().starts_with("--")) {
            let words = line.split(" [").next().unwrap().split_whitespace().count();
            assert!(
                words > 2 || line.contains("--help") || line.contains("--version"),
                "{command:?}: no help text for {line:?}"
            );
        }
    }
}

/// Outputs are staged in private temporary files, but the files they become get the mode a
/// plain create would give them (0666 less the umask), not the temporary file's 0600.
#[cfg(unix)]
#[test]
fn outputs_get_the_mode_of_a_plain_create() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = save(d, "x.npy", &data(300, 3));
    let (sources, model) = (d.join("s.npy"), d.join("m.json"));
    let o = unmix(&[
        "fit",
        "--input",
        s(&x),
        "--sources",
        s(&sources),
        "--model",
        s(&model),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plain = d.join("plain");
    std::fs::File::create(&plain).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sources), mode(&plain), "sources");
    assert_eq!(mode(&model), mode(&plain), "model");
}

/// A closed stdout (`unmix ... | head`) ends the command quietly, not with a panic.
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let fractions = save(
        dir.path(),
        "f.npy",
        &Matrix::new(1, 3, vec![1.0, 2.0, 3.0]).unwrap(),
    );
    // The reader is closed before the command starts, so its first write meets a broken pipe.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_unmix"))
        .args(["metric", "sparsity", "--fractions", s(&fractions)])
        .stdout(writer)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "panic: {err}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        o.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {err}",
        o.status
    );
}
