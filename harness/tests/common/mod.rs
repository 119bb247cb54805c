//! Loading the committed reference fixtures (see harness/reference/generate.py).
#![allow(dead_code)]

use harness::io::{Matrix, read_npy};
use serde_json::Value;
use std::path::PathBuf;

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("reference/fixtures")
}

pub fn manifest() -> Value {
    let text =
        std::fs::read_to_string(fixtures_dir().join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("valid manifest")
}

/// A fixture array as f64 (1-D arrays come back as one column).
pub fn load(name: &str) -> Matrix<f64> {
    read_npy(&fixtures_dir().join(name))
        .unwrap_or_else(|e| panic!("{name}: {e:#}"))
        .to_f64()
}

pub fn digits() -> Matrix<f64> {
    harness::demo::digits().expect("bundled digits")
}

/// The data a fixture entry names.
pub fn data_of(entry: &Value) -> Matrix<f64> {
    match entry["data"].as_str().expect("data") {
        "digits" => digits(),
        "digits_nonconst" => {
            let x = digits();
            x.select_columns(&harness::demo::nonconstant_columns(&x))
        }
        file => load(file),
    }
}

pub fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

pub fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

/// Max difference of two vectors that may differ by a sign.
pub fn max_abs_diff_up_to_sign(a: &[f64], b: &[f64]) -> f64 {
    let plus = max_abs_diff(a, b);
    let minus = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x + y).abs()));
    plus.min(minus)
}

pub fn column(m: &Matrix<f64>, c: usize) -> Vec<f64> {
    (0..m.rows).map(|r| m.data[r * m.cols + c]).collect()
}

/// Runs the `unmix` binary built for this test run.
pub fn unmix(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_unmix"))
        .args(args)
        .output()
        .expect("run unmix")
}

/// A command's stderr as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A JSON array of numbers as `f64`s.
pub fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// Runs `unmix args` on the fastest kernels for this CPU, or with `UNMIX_SIMD=portable` (the
/// no_std core's bits), and asserts that it succeeded.
pub fn run_simd<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S], portable: bool) {
    run_simd_env(args, portable, &[]);
}

/// [`run_simd`] with the variables `envs` set (e.g. `UNMIX_FOLD`).
pub fn run_simd_env<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    args: &[S],
    portable: bool,
    envs: &[(&str, &str)],
) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_unmix"));
    cmd.args(args).envs(envs.iter().copied());
    if portable {
        cmd.env("UNMIX_SIMD", "portable");
    } else {
        cmd.env_remove("UNMIX_SIMD");
    }
    let out = cmd.output().expect("run unmix");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
