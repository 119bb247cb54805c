//! The accuracy contracts of `unmix::ica::fastmath`, against libm.

use unmix::ica::fastmath;
use unmix::random::Normals;

fn ulps(a: f64, b: f64) -> u64 {
    if a == b {
        return 0;
    }
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    key(a).abs_diff(key(b))
}

fn points() -> Vec<f64> {
    let mut g = Normals::new(17);
    let mut v: Vec<f64> = (0..400_000)
        .map(|i| g.next_normal() * [0.01, 0.3, 1.0, 5.0, 30.0][i % 5])
        .collect();
    // Every scale from subnormal to huge, and the branch boundaries.
    let mut s = 5e-324;
    while s < 1e300 {
        v.extend([s, -s, s * 1.5, -s * 0.75]);
        s *= 1.7;
    }
    for b in [
        0.3125,
        0.312_499_999,
        0.312_500_001,
        10.0,
        19.06,
        19.1,
        20.0,
        354.0,
        709.0,
    ] {
        v.extend([b, -b, b + 1e-12, b - 1e-12]);
    }
    v.extend([0.0, -0.0, f64::MIN_POSITIVE, f64::MAX, -f64::MAX]);
    v
}

#[test]
fn tanh_is_within_4_ulp_of_libm() {
    let mut worst = (0, 0.0);
    for x in points() {
        let e = ulps(fastmath::tanh(x), libm::tanh(x));
        if e > worst.0 {
            worst = (e, x);
        }
        assert_eq!(fastmath::tanh(-x), -fastmath::tanh(x), "odd at {x}");
    }
    assert!(worst.0 <= 4, "tanh: {} ulp at {:e}", worst.0, worst.1);
    assert_eq!(fastmath::tanh(19.2), 1.0);
    assert_eq!(fastmath::tanh(-1e300), -1.0);
}

#[test]
fn exp_is_within_2_ulp_of_libm() {
    let mut worst = (0, 0.0);
    for x in points()
        .into_iter()
        .map(|x| -x.abs())
        .filter(|x| *x >= -708.0)
    {
        let e = ulps(fastmath::exp_nonpositive(x), libm::exp(x));
        if e > worst.0 {
            worst = (e, x);
        }
    }
    assert!(worst.0 <= 2, "exp: {} ulp at {:e}", worst.0, worst.1);
    assert_eq!(fastmath::exp_nonpositive(-800.0), 0.0);
    assert_eq!(fastmath::exp_nonpositive(f64::NEG_INFINITY), 0.0);
}

/// Each contrast's block evaluation (the one the passes use) gives the bits of its scalar `eval`.
#[test]
fn block_evaluation_equals_scalar() {
    use unmix::ica::contrast::{Contrast, ContrastKind, LogCosh};
    let x = points();
    for c in [
        ContrastKind::LogCosh(LogCosh::DEFAULT),
        ContrastKind::LogCosh(LogCosh::new(1.37).unwrap()),
        ContrastKind::LogCosh(LogCosh::new(2.0).unwrap()),
        ContrastKind::Exp,
        ContrastKind::Cube,
    ] {
        let (mut g, mut gp) = (x.clone(), vec![0.0; x.len()]);
        c.eval_block(&mut g, &mut gp);
        for ((u, g), gp) in x.iter().zip(&g).zip(&gp) {
            let (want_g, want_gp) = c.eval(*u);
            assert_eq!(g.to_bits(), want_g.to_bits(), "{c:?} g({u})");
            assert_eq!(gp.to_bits(), want_gp.to_bits(), "{c:?} g'({u})");
        }
    }
}
