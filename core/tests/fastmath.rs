//! The accuracy contracts of `unmix::ica::fastmath`: against a 256-bit reference (astro-float's
//! `tanh` / `exp`, correctly rounded to f64), and against libm on many more points.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]

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

/// The f64 nearest to `reference`, found by walking from `guess` (libm's value, within an ulp or
/// two) one ulp at a time while a neighbour is closer. Exact: every comparison is in 256 bits.
fn correctly_rounded(reference: &astro_float::BigFloat, guess: f64) -> f64 {
    use astro_float::{BigFloat, RoundingMode};
    let distance = |v: f64| {
        BigFloat::from_f64(v, 320)
            .sub(reference, 320, RoundingMode::None)
            .abs()
    };
    let closer = |a: f64, b: f64| distance(a).cmp(&distance(b)) == Some(-1);
    let mut best = guess;
    for step in [f64::next_up, f64::next_down] {
        while closer(step(best), best) {
            best = step(best);
        }
    }
    best
}

/// A spread of points for the 256-bit reference (it costs microseconds a point): every scale
/// where the kernels do arithmetic, and the branch boundaries.
fn reference_points() -> Vec<f64> {
    points()
        .into_iter()
        .step_by(8)
        .filter(|x| x.abs() >= 2f64.powi(-30) && x.abs() <= 30.0)
        .collect()
}

#[test]
fn tanh_is_within_4_ulp_of_the_correctly_rounded_value() {
    use astro_float::{BigFloat, Consts, RoundingMode};
    let mut cc = Consts::new().unwrap();
    let mut worst = (0, 0.0);
    let points = reference_points();
    assert!(points.len() > 40_000);
    for x in points {
        let exact = BigFloat::from_f64(x, 256).tanh(256, RoundingMode::None, &mut cc);
        let e = ulps(fastmath::tanh(x), correctly_rounded(&exact, libm::tanh(x)));
        if e > worst.0 {
            worst = (e, x);
        }
    }
    assert!(worst.0 <= 4, "tanh: {} ulp at {:e}", worst.0, worst.1);
    // Outside the reference's range the correctly rounded value is known: x itself below 2^-30
    // (tanh x = x - x^3/3 + ...), and +-1 above 19.1 (1 - tanh x < 2^-54).
    for x in [2f64.powi(-31), 1e-10, 1e-300, 5e-324] {
        assert_eq!(fastmath::tanh(x), x);
    }
    for x in [19.2, 30.5, 1e10, f64::MAX] {
        assert_eq!(fastmath::tanh(x), 1.0);
    }
}

#[test]
fn exp_is_within_2_ulp_of_the_correctly_rounded_value() {
    use astro_float::{BigFloat, Consts, RoundingMode};
    let mut cc = Consts::new().unwrap();
    let mut worst = (0, 0.0);
    let points: Vec<f64> = points()
        .into_iter()
        .step_by(8)
        .map(|x| -x.abs())
        .filter(|x| *x >= -708.0 && *x <= -2f64.powi(-30))
        .collect();
    assert!(points.len() > 40_000);
    for x in points {
        let exact = BigFloat::from_f64(x, 256).exp(256, RoundingMode::None, &mut cc);
        let e = ulps(
            fastmath::exp_nonpositive(x),
            correctly_rounded(&exact, libm::exp(x)),
        );
        if e > worst.0 {
            worst = (e, x);
        }
    }
    assert!(worst.0 <= 2, "exp: {} ulp at {:e}", worst.0, worst.1);
}
