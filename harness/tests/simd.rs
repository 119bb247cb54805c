//! The CLI compiles the core's hot loops for AVX2 when the CPU has it (`harness::simd`). IEEE
//! arithmetic without reassociation or contraction means the vector width cannot change a result:
//! these tests run the same jobs with `UNMIX_SIMD=portable` and without, and compare the bytes.

use std::path::Path;
use std::process::Command;

fn run(args: &[&str], portable: bool) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_unmix"));
    cmd.args(args);
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

/// Runs `args` (which write `outputs` in `dir`) both ways and compares every output's bytes.
fn same_bytes(dir: &Path, args: &[&str], outputs: &[&str]) {
    let mut results = Vec::new();
    for portable in [true, false] {
        run(args, portable);
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
    let digits = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits_x.npy");
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
            digits,
            "--n-components",
            "20",
            "--output",
            white,
        ],
        &["z.npy"],
    );
    for (algorithm, fun, dtype) in [
        ("parallel", "logcosh", "f64"),
        ("parallel", "exp", "f32"),
        ("parallel", "cube", "f64"),
        ("deflation", "logcosh", "f64"),
    ] {
        same_bytes(
            d,
            &[
                "fit",
                "--input",
                digits,
                "--n-components",
                "12",
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
