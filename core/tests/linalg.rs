//! Regression tests for the eigensolver on inputs the fuzzer found (badly scaled matrices with
//! subnormal entries), checked against numpy.linalg.eigh's eigenvalues (printed by numpy 2.4.6).
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]

use unmix::linalg::symmetric_eigen;

fn check(a: &[f64], n: usize, reference: &[f64]) {
    let (mut v, mut values, mut work) = (a.to_vec(), vec![0.0; n], vec![0.0; n]);
    symmetric_eigen(&mut v, n, &mut values, &mut work).unwrap();
    let norm = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (got, want) in values.iter().zip(reference) {
        assert!(
            (got - want).abs() <= 1e-12 * norm,
            "eigenvalue {got:e} vs {want:e}"
        );
    }
    // Orthonormal eigenvectors, and A v = lambda v to rounding of the norm.
    for i in 0..n {
        for j in 0..n {
            let dot: f64 = (0..n).map(|l| v[i * n + l] * v[j * n + l]).sum();
            let expected = if i == j { 1.0 } else { 0.0 };
            assert!((dot - expected).abs() < 1e-12, "v{i} . v{j} = {dot}");
        }
        for r in 0..n {
            let av: f64 = (0..n).map(|c| a[r * n + c] * v[i * n + c]).sum();
            assert!((av - values[i] * v[i * n + r]).abs() <= 1e-12 * norm);
        }
    }
}

#[test]
fn subnormal_block_next_to_huge_entries() {
    let a = [
        [
            5.0,
            -3.428304378964654e+302,
            1.390671161889517e-309,
            0.0,
            0.0,
            5.421010862427522e-19,
        ],
        [
            -3.428304378964654e+302,
            2.168404344971009e-18,
            2.11366627e-314,
            0.0,
            0.0,
            0.0,
        ],
        [
            1.390671161889517e-309,
            2.11366627e-314,
            5.421010862427522e-19,
            2.168404344971009e-18,
            0.0,
            0.0,
        ],
        [0.0, 0.0, 2.168404344971009e-18, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [5.421010862427522e-19, 0.0, 0.0, 0.0, 0.0, 0.0],
    ];
    let reference = [
        3.4283043789646535e+302,
        2.4563298845822203e-18,
        0.0,
        0.0,
        -1.914228798339469e-18,
        -3.4283043789646535e+302,
    ];
    check(a.as_flattened(), 6, &reference);
}

#[test]
fn huge_and_zero_entries_without_overflow() {
    let h = -5.3140103725178076e+303;
    let s = 3.469446951953614e-18;
    let a = [
        [0.0, 0.0, 0.0, -2.0 * s, -2.0 * s, 0.0, s, s],
        [
            0.0,
            2.710505431213761e-18,
            s,
            s,
            s,
            -1.0842021724855044e-19,
            h,
            h,
        ],
        [0.0, s, h, h, h, h, 1.082134637866e-312, 0.0],
        [-2.0 * s, s, h, 0.0, 0.0, 0.0, 0.0, 0.0],
        [-2.0 * s, s, h, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, -1.0842021724855044e-19, h, 0.0, 0.0, 0.0, 0.0, 0.0],
        [s, h, 1.082134637866e-312, 0.0, 0.0, 0.0, 0.0, 0.0],
        [s, h, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ];
    let reference = [
        7.515145539405988e+303,
        6.922963251971322e+303,
        1.1952345315661611e+288,
        9.64760119778338e+285,
        0.0,
        -7.538761822700385e+286,
        -7.515145539405986e+303,
        -1.2236973624489127e+304,
    ];
    check(a.as_flattened(), 8, &reference);
}

#[test]
fn eigenvalues_beyond_f64_are_an_overflow_error() {
    let m = f64::MAX;
    let mut a = [m, m, m, m];
    let (mut values, mut work) = ([0.0; 2], [0.0; 2]);
    assert_eq!(
        symmetric_eigen(&mut a, 2, &mut values, &mut work),
        Err(unmix::Error::Overflow)
    );
}
