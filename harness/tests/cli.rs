//! The `unmix` binary end to end: inputs in every supported form, and every bad input giving a
//! clear error, a non-zero exit and no output file.

mod common;
use common::{stderr, unmix};
use harness::io::{Matrix, Table, read_npy};
use npyz::{Order, WriterBuilder};
use std::path::{Path, PathBuf};
use std::process::Output;

fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], order: Order, data: &[T]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .order(order)
        .writer(file)
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

/// 200 x 3 correlated, offset data, row-major.
fn sample_data() -> Vec<f64> {
    (0..200)
        .flat_map(|t| {
            let (a, b, c) = (
                (t as f64 * 0.37).sin(),
                (t as f64 * 0.91).cos(),
                ((t * t) % 17) as f64 / 17.0,
            );
            [5.0 + a + 0.3 * b, -2.0 + b - c, 100.0 + 2.0 * c + a]
        })
        .collect()
}

fn whiten(dir: &Path, input: &Path, extra: &[&str]) -> (Output, PathBuf, PathBuf) {
    let out = dir.join("z.npy");
    let model = dir.join("model.json");
    let mut args = vec![
        "whiten",
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ];
    args.extend(["--model", model.to_str().unwrap()]);
    args.extend(extra);
    (unmix(&args), out, model)
}

fn assert_white(z: &Matrix<f64>) {
    let mut buf = vec![0.0; unmix::moments::MomentsBuf::buffer_len(z.cols)];
    let mut m = unmix::moments::MomentsBuf::new(z.cols, &mut buf).unwrap();
    m.accumulate(&z.data).unwrap();
    let mut cov = vec![0.0; z.cols * z.cols];
    m.as_ref().covariance_into(0, &mut cov).unwrap();
    for i in 0..z.cols {
        for j in 0..z.cols {
            let e = if i == j { 1.0 } else { 0.0 };
            assert!(
                (cov[i * z.cols + j] - e).abs() < 1e-5,
                "cov(Z)[{i}][{j}] = {}",
                cov[i * z.cols + j]
            );
        }
    }
}

#[test]
fn every_input_form_gives_the_same_white_output() {
    let dir = tempfile::tempdir().unwrap();
    let x = sample_data();
    let c_path = dir.path().join("c.npy");
    write_npy(&c_path, &[200, 3], Order::C, &x);
    // Fortran order: the same matrix stored column by column.
    let xf: Vec<f64> = (0..3)
        .flat_map(|c| (0..200).map(move |r| (r, c)))
        .map(|(r, c)| x[r * 3 + c])
        .collect();
    let f_path = dir.path().join("f.npy");
    write_npy(&f_path, &[200, 3], Order::Fortran, &xf);
    let csv_path = dir.path().join("x.csv");
    let csv: String = x
        .chunks(3)
        .map(|r| format!("{:?},{:?},{:?}\n", r[0], r[1], r[2]))
        .collect();
    std::fs::write(&csv_path, format!("a,b,c\n{csv}")).unwrap();
    let bare_csv = dir.path().join("bare.csv");
    std::fs::write(&bare_csv, &csv).unwrap();

    let mut outputs = Vec::new();
    for input in [&c_path, &f_path, &csv_path, &bare_csv] {
        let (o, out, model) = whiten(dir.path(), input, &[]);
        assert!(o.status.success(), "{}: {}", input.display(), stderr(&o));
        let summary: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
        assert_eq!(summary["n_components"], 3);
        let model: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(model).unwrap()).unwrap();
        for key in ["mean", "whitening", "explained_variance", "n_samples"] {
            assert!(!model[key].is_null(), "model lacks {key}");
        }
        assert_eq!(model["whitening"].as_array().unwrap().len(), 3);
        let z = read_npy(&out).unwrap().to_f64();
        assert_eq!((z.rows, z.cols), (200, 3));
        assert_white(&z);
        outputs.push(z);
    }
    for z in &outputs[1..] {
        assert_eq!(z, &outputs[0], "every input form must give the same bits");
    }
}

/// The phase names `UNMIX_PHASES` prints on stderr for `args`, in order (none without it), and
/// the bytes of the files `outs` the run wrote.
fn phases_of(args: &[&str], timed: bool, outs: &[&Path]) -> (Vec<String>, Vec<Vec<u8>>) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_unmix"));
    cmd.args(args).env_remove("UNMIX_PHASES");
    if timed {
        cmd.env("UNMIX_PHASES", "1");
    }
    let o = cmd.output().expect("run unmix");
    assert!(o.status.success(), "{}", stderr(&o));
    let mut last_peak = 0.0;
    let names = stderr(&o)
        .lines()
        .filter_map(|l| l.strip_prefix("phase "))
        .map(|l| {
            let (name, rest) = l.split_once(": ").expect("phase NAME: T ms, peak P MB");
            let (ms, peak) = match rest.split_once(", peak ") {
                Some((ms, peak)) => (ms, Some(peak)),
                None => (rest, None),
            };
            let ms: f64 = ms
                .strip_suffix(" ms")
                .expect("in ms")
                .parse()
                .expect("a time");
            assert!(ms >= 0.0, "{l}");
            // Linux has `VmHWM`: the peak so far, which never falls.
            assert_eq!(peak.is_some(), cfg!(target_os = "linux"), "{l}");
            if let Some(peak) = peak {
                let mb: f64 = peak
                    .strip_suffix(" MB")
                    .expect("in MB")
                    .parse()
                    .expect("a size");
                assert!(mb > 0.0 && mb >= last_peak, "{l}");
                last_peak = mb;
            }
            name.to_string()
        })
        .collect();
    let bytes = outs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    (names, bytes)
}

#[test]
fn phases_are_timed_on_request_and_change_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.npy");
    write_npy(&input, &[200, 3], Order::C, &sample_data());
    let (z, s, m) = (
        dir.path().join("z.npy"),
        dir.path().join("s.npy"),
        dir.path().join("m.json"),
    );
    let x = input.to_str().unwrap();
    let whiten = ["whiten", "--input", x, "--output", z.to_str().unwrap()];
    let fit = [
        "fit",
        "--input",
        x,
        "--model",
        m.to_str().unwrap(),
        "--sources",
        s.to_str().unwrap(),
    ];
    for (args, outs, expected) in [
        (
            &whiten[..],
            vec![z.as_path()],
            &[
                "read",
                "moments",
                "whitener",
                "self-check",
                "transform and write",
                "persist",
            ][..],
        ),
        (
            &fit[..],
            vec![m.as_path(), s.as_path()],
            &[
                "read",
                "setup",
                "moments",
                "whitener",
                "whitening the rows and iterating",
                "sources",
                "persist",
            ][..],
        ),
    ] {
        let (names, timed) = phases_of(args, true, &outs);
        assert_eq!(names, expected, "{}", args[0]);
        let (names, untimed) = phases_of(args, false, &outs);
        assert!(
            names.is_empty(),
            "{}: {names:?} without UNMIX_PHASES",
            args[0]
        );
        assert!(timed == untimed, "{}: timing changed an output", args[0]);
    }
}

#[test]
fn f32_and_integer_inputs_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let x: Vec<f32> = sample_data().iter().map(|v| *v as f32).collect();
    let p = dir.path().join("x32.npy");
    write_npy(&p, &[200, 3], Order::C, &x);
    let (o, out, _) = whiten(
        dir.path(),
        &p,
        &[
            "--n-components",
            "2",
            "--rotation",
            "random",
            "--random-state",
            "3",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let z = read_npy(&out).unwrap();
    assert!(matches!(z, Table::F32(_)), "float32 in, float32 out");
    assert_eq!(z.shape(), (200, 2));
    assert_white(&z.to_f64());

    let ints: Vec<i32> = (0..300)
        .map(|t| ((t * 7919) % 101) - 50 + if t % 3 == 2 { t % 5 } else { 0 })
        .collect();
    let p = dir.path().join("int.npy");
    write_npy(&p, &[100, 3], Order::C, &ints);
    let (o, out, _) = whiten(dir.path(), &p, &["--method", "zca", "--threads", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_white(&read_npy(&out).unwrap().to_f64());

    // Deterministic: same input and seed, same bytes; thread count does not matter.
    let p = dir.path().join("c.npy");
    write_npy(&p, &[200, 3], Order::C, &sample_data());
    let (_, out, _) = whiten(dir.path(), &p, &["--rotation", "random", "--threads", "1"]);
    let first = std::fs::read(&out).unwrap();
    let (_, out, _) = whiten(dir.path(), &p, &["--rotation", "random", "--threads", "7"]);
    assert_eq!(first, std::fs::read(&out).unwrap());
}

/// Runs a failing command and checks the error message and that no output appeared.
fn assert_fails(input: &Path, extra: &[&str], message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (o, out, model) = whiten(dir.path(), input, extra);
    let err = stderr(&o);
    assert!(
        !o.status.success(),
        "expected failure for {}",
        input.display()
    );
    assert!(err.contains(message), "stderr {err:?} lacks {message:?}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(!out.exists() && !model.exists(), "output left behind");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        leftovers.is_empty(),
        "temporary files left behind: {leftovers:?}"
    );
}

#[test]
fn bad_input_is_a_clear_error_with_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = d.join("good.npy");
    write_npy(&good, &[200, 3], Order::C, &sample_data());

    let mut x = sample_data();
    x[7 * 3 + 2] = f64::NAN;
    let nan = d.join("nan.npy");
    write_npy(&nan, &[200, 3], Order::C, &x);
    assert_fails(&nan, &[], "row 7, column 2");

    let one = d.join("one.npy");
    write_npy(&one, &[1, 3], Order::C, &[1.0f64, 2.0, 3.0]);
    assert_fails(&one, &[], "too few samples");

    assert_fails(
        &good,
        &["--n-components", "0"],
        "invalid number of components 0",
    );
    assert_fails(
        &good,
        &["--n-components", "4"],
        "invalid number of components 4",
    );
    assert_fails(
        &good,
        &["--method", "zca", "--n-components", "2"],
        "invalid number of components 2",
    );

    let mut r = sample_data();
    for row in r.chunks_mut(3) {
        row[2] = row[0] - row[1];
    }
    let rank2 = d.join("rank2.npy");
    write_npy(&rank2, &[200, 3], Order::C, &r);
    assert_fails(&rank2, &[], "effective rank 2");

    let ragged = d.join("ragged.csv");
    std::fs::write(&ragged, "1,2,3\n4,5\n").unwrap();
    assert_fails(&ragged, &[], "ragged");
    let text = d.join("text.csv");
    std::fs::write(&text, "a,b\n1,2\n3,x\n").unwrap();
    assert_fails(&text, &[], "line 3, column 1");
    let empty = d.join("empty.csv");
    std::fs::write(&empty, "a,b\n").unwrap();
    assert_fails(&empty, &[], "no data rows");

    let cube = d.join("cube.npy");
    write_npy(&cube, &[2, 2, 2], Order::C, &[0.0f64; 8]);
    assert_fails(&cube, &[], "expected a 1-D or 2-D array");
    let complex = d.join("complex.npy");
    write_raw_npy(&complex, "<c16", "(2,)", &[0u8; 32]);
    assert_fails(&complex, &[], "unsupported dtype");
    let garbage = d.join("garbage.npy");
    std::fs::write(&garbage, b"not an npy file at all").unwrap();
    assert_fails(&garbage, &[], "not a valid .npy file");

    assert_fails(&d.join("missing.npy"), &[], "cannot open");
    assert_fails(&d.join("data.txt"), &[], "unsupported extension");
}

/// A version-1 `.npy` written byte by byte, for dtypes the writer crate does not produce.
fn write_raw_npy(path: &Path, descr: &str, shape: &str, payload: &[u8]) {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(payload);
    std::fs::write(path, bytes).unwrap();
}
