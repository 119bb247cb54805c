//! The CLI compiles the core's hot loops for AVX2 when the CPU has it (`harness::simd`). IEEE
//! arithmetic without reassociation or contraction means the vector width cannot change a result:
//! these tests run the same jobs with `UNMIX_SIMD=portable` and without, and compare the bytes.
//! From 8 features the CLI's moments, from 8 outputs its transforms, and at every k its
//! parallel passes (`harness::blocks`), run on a GEMM with fused multiply-adds (`harness::simd::CliKernel`, `harness::moments`), which
//! changes the last bits: there the two must agree to 1e-12 relative (here, and on every
//! cross-check fixture in `tests/simd_fixtures.rs`). f32 data's parallel passes run in f32
//! blocks (`harness::blocks`), held to the f32 contract instead.

mod common;
use common::{run_simd, run_simd_env};
use std::path::{Path, PathBuf};

/// Runs `args` (which write `outputs` in `dir`) both ways and compares every output's bytes.
fn same_bytes(dir: &Path, args: &[&str], outputs: &[&str]) {
    let mut results = Vec::new();
    for portable in [true, false] {
        run_simd(args, portable);
        results.push(
            outputs
                .iter()
                .map(|o| std::fs::read(dir.join(o)).expect("an output"))
                .collect::<Vec<_>>(),
        );
    }
    for (name, (a, b)) in outputs.iter().zip(results[0].iter().zip(&results[1])) {
        assert!(
            a == b,
            "{args:?}: {name} differs between the portable and AVX2 builds"
        );
    }
}

#[test]
fn avx2_and_portable_give_the_same_bytes() {
    if !harness::simd::uses_avx2() {
        // Written to the process's stderr directly: libtest captures `eprintln!`, and a skip must
        // be seen in the test run's output, not pass silently.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED avx2_and_portable_give_the_same_bytes: this CPU has no AVX2 (or \
             UNMIX_SIMD=portable is set), so both runs would take the portable path"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 6 features: below `harness::simd::TRANSFORM_GEMM_MIN`, `harness::pipeline::MOMENTS_GEMM_MIN`
    // and `GEMM_MIN_K`, so the moments and transforms are the core's, compiled for AVX2 or not;
    // from 8 outputs (transforms), 8 features (moments) and 16 components (kernels) the GEMM
    // changes the last bits (see the test below).
    let mixed = d.join("x6.npy");
    write_mixed(&mixed, 3000, 6);
    let input = mixed.to_str().unwrap();
    let (model, sources, white) = (d.join("m.json"), d.join("s.npy"), d.join("z.npy"));
    let (model, sources, white) = (
        model.to_str().unwrap(),
        sources.to_str().unwrap(),
        white.to_str().unwrap(),
    );
    same_bytes(
        d,
        &[
            "whiten",
            "--input",
            input,
            "--n-components",
            "6",
            "--output",
            white,
        ],
        &["z.npy"],
    );
    // Parallel fits run their passes on the CLI's row-major GEMM blocks at every k
    // (`harness::blocks`), compared at 1e-12 and against the f32 contract below; deflation and
    // the sources' pass are the core's loops, compiled for AVX2 or not.
    for (algorithm, fun, dtype) in [
        ("deflation", "logcosh", "f64"),
        ("deflation", "exp", "f32"),
        ("deflation", "cube", "f64"),
        ("deflation", "exp", "f64"),
    ] {
        same_bytes(
            d,
            &[
                "fit",
                "--input",
                input,
                "--n-components",
                "6",
                "--algorithm",
                algorithm,
                "--fun",
                fun,
                "--dtype",
                dtype,
                "--max-iter",
                "50",
                "--random-state",
                "3",
                "--threads",
                "2",
                "--model",
                model,
                "--sources",
                sources,
            ],
            &["m.json", "s.npy"],
        );
    }
}

/// Largest |a - b| over the largest |a|, for two `.npy` files of floats.
fn relative_difference(a: &Path, b: &Path) -> f64 {
    let (a, b) = (
        harness::io::read_npy(a).unwrap().to_f64(),
        harness::io::read_npy(b).unwrap().to_f64(),
    );
    assert_eq!((a.rows, a.cols), (b.rows, b.cols));
    let scale = a.data.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .data
        .iter()
        .zip(&b.data)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// `n` samples of `d` heavy-tailed independent sources (products of two normals) mixed by
/// `I + 0.3 M` with normal `M`, written to `path`.
fn write_mixed(path: &Path, n: usize, d: usize) {
    let mut normals = unmix::random::Normals::new(9);
    let mix: Vec<f64> = (0..d * d)
        .map(|i| f64::from(u8::from(i % (d + 1) == 0)) + 0.3 * normals.next_normal())
        .collect();
    let mut x = vec![0.0; n * d];
    let mut s = vec![0.0; d];
    for row in x.chunks_exact_mut(d) {
        for v in s.iter_mut() {
            *v = normals.next_normal() * normals.next_normal();
        }
        for (i, out) in row.iter_mut().enumerate() {
            *out = (0..d).map(|j| mix[i * d + j] * s[j]).sum();
        }
    }
    harness::io::write_npy(path, &harness::io::Matrix::new(n, d, x).unwrap()).unwrap();
}

/// `unmix fit --input x ARGS` on 2 threads, with `UNMIX_SIMD=portable` and without: each run's
/// model and sources file (written in `dir`).
fn fit_both_ways(dir: &Path, x: &Path, args: &[&str]) -> Vec<(serde_json::Value, PathBuf)> {
    [true, false]
        .into_iter()
        .map(|portable| {
            let (m, s) = (
                dir.join(format!("m{portable}.json")),
                dir.join(format!("s{portable}.npy")),
            );
            let mut full = vec!["fit", "--input", x.to_str().unwrap(), "--threads", "2"];
            full.extend_from_slice(args);
            full.extend([
                "--model",
                m.to_str().unwrap(),
                "--sources",
                s.to_str().unwrap(),
            ]);
            run_simd(&full, portable);
            let model = serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
            (model, s)
        })
        .collect()
}

/// The GEMM paths (the parallel pass's row-major blocks at every k, transforms from 8 outputs,
/// the other products from k = 16; from k = 64 split in two halves) and the portable one agree to 1e-12 relative on the
/// sources of converged fits (parallel and deflation, f64, k = 8 to 64). (Runs that do not converge, e.g.
/// the digits at k = 20, follow chaotic paths on which any rounding grows to O(1), whatever the
/// kernel: they hit max_iter at different points.)
#[test]
fn gemm_and_portable_kernels_agree_to_1e_12() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let digits = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits_x.npy");
    let white: Vec<_> = [true, false]
        .iter()
        .map(|&portable| {
            let z = d.join(format!("z{portable}.npy"));
            let args = ["whiten", "--input", digits, "--n-components", "40"];
            run_simd(
                &[&args[..], &["--output", z.to_str().unwrap()]].concat(),
                portable,
            );
            z
        })
        .collect();
    let r = relative_difference(&white[0], &white[1]);
    assert!(r < 1e-12, "whitening, k = 40: differs by {r:e}");
    for (algorithm, k) in [
        ("parallel", 8),
        ("parallel", 16),
        ("parallel", 48),
        ("parallel", 64),
        ("deflation", 24),
    ] {
        let x = d.join(format!("x{k}.npy"));
        write_mixed(&x, 6000, k);
        let runs = fit_both_ways(
            d,
            &x,
            &[
                "--algorithm",
                algorithm,
                "--tol",
                "1e-10",
                "--random-state",
                "3",
            ],
        );
        for (model, _) in &runs {
            assert_eq!(model["converged"], true, "{algorithm} k = {k}");
        }
        let r = relative_difference(&runs[0].1, &runs[1].1);
        assert!(r < 1e-12, "{algorithm} k = {k}: sources differ by {r:e}");
        eprintln!("{algorithm} k = {k}: GEMM vs portable sources differ by {r:.1e} relative");
    }
}

/// The GEMM paths (moments from 8 features, transforms from 8 outputs, pass products from 16,
/// the pass products and the update's products split in halves from 64) give the same bytes
/// on 1, 2 and 3 threads:
/// `whiten` and `fit` on 9000 rows (3 chunks) of 64 features and of 8; and so does the fit with the
/// whitening folded into its passes (`UNMIX_FOLD=always`, which `unmix` chooses by itself
/// for inputs too large for a test).
#[test]
fn gemm_paths_do_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for features in [64, 8] {
        let x = d.join(format!("x{features}.npy"));
        write_mixed(&x, 9000, features);
        let x = x.to_str().unwrap();
        for fold in ["never", "always"] {
            same_bytes_on_1_2_3_threads(d, x, fold);
        }
    }
}

fn same_bytes_on_1_2_3_threads(d: &Path, x: &str, fold: &str) {
    let envs = [("UNMIX_FOLD", fold)];
    let mut results = Vec::new();
    for threads in ["1", "2", "3"] {
        let (z, m, s) = (d.join("z.npy"), d.join("m.json"), d.join("s.npy"));
        let (zs, ms, ss) = (
            z.to_str().unwrap(),
            m.to_str().unwrap(),
            s.to_str().unwrap(),
        );
        run_simd_env(
            &["whiten", "--input", x, "--threads", threads, "--output", zs],
            false,
            &envs,
        );
        run_simd_env(
            &[
                "fit",
                "--input",
                x,
                "--max-iter",
                "30",
                "--tol",
                "0",
                "--random-state",
                "2",
                "--threads",
                threads,
                "--model",
                ms,
                "--sources",
                ss,
            ],
            false,
            &envs,
        );
        results.push([z, m, s].map(|p| std::fs::read(p).unwrap()));
    }
    for (threads, r) in ["2", "3"].iter().zip(&results[1..]) {
        for (name, (a, b)) in ["whitened", "model", "sources"]
            .iter()
            .zip(results[0].iter().zip(r))
        {
            assert!(
                a == b,
                "{name}: {threads} threads differ from 1 (fold {fold})"
            );
        }
    }
}

/// f32 data take the f32 block path in parallel fits (`harness::blocks`: products on the GEMM,
/// the contrast in f32, sums in f64 across blocks). Against the core's f64 sums
/// (`UNMIX_SIMD=portable`) the fits keep the f32 contract of the scikit-learn cross-checks:
/// converged in the same number of iterations, sources, components and mixing within 1e-3
/// relative (each contrast, below and above the GEMM threshold; k = 64 also splits every block in
/// halves). Measured: below 1e-6.
#[test]
fn f32_blocks_keep_the_f32_contract() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (fun, k) in [("logcosh", 8), ("exp", 24), ("cube", 24), ("logcosh", 64)] {
        let x = d.join(format!("x{k}.npy"));
        write_mixed(&x, 9000, k);
        let args = ["--dtype", "f32", "--fun", fun, "--random-state", "5"];
        let runs = fit_both_ways(d, &x, &args);
        for (model, _) in &runs {
            assert_eq!(model["converged"], true, "{fun} k = {k}");
        }
        let (portable, fast) = (&runs[0].0, &runs[1].0);
        assert_eq!(portable["n_iter"], fast["n_iter"], "{fun} k = {k}");
        let r = relative_difference(&runs[0].1, &runs[1].1);
        assert!(r < 1e-3, "{fun} k = {k}: sources differ by {r:e}");
        // f32 rounding shows: the f32 path ran (it does not depend on the CPU's features).
        assert!(r > 0.0, "{fun} k = {k}: the f32 path was not taken");
        for key in ["components", "mixing"] {
            let rows = |m: &serde_json::Value| -> Vec<f64> {
                let rows = m[key].as_array().expect("rows");
                rows.iter().flat_map(common::floats).collect()
            };
            let (a, b) = (rows(portable), rows(fast));
            let rk = common::max_abs_diff(&a, &b) / common::max_abs(&a);
            assert!(rk < 1e-3, "{fun} k = {k}: {key} differ by {rk:e}");
        }
        eprintln!("f32 {fun} k = {k}: f32 blocks vs f64 sums: sources differ by {r:.1e} relative");
    }
}
