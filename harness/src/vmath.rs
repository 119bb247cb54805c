//! `tanh` and `exp` for the block pass's contrasts ([`crate::blocks`]), in `f32` and `f64`, with
//! fused multiply-adds.
//!
//! They use the core's [`fastmath`](unmix::ica::fastmath) reduction `x = n ln2 + r`,
//! `|r| <= ln2 / 2` (`n` rounded by adding `1.5 * 2^52`, or `2^23` in `f32`, so it never leaves a
//! vector register), then `expm1(r) = r + r^2 p(r)` with `p` a near-minimax polynomial of degree
//! 10 (`f64`; relative truncation 8.6e-19) or 4 (`f32`; 2.3e-8), fitted by
//! `harness/reference/expm1_minimax.py`, by Horner's rule, written with
//! [`mul_add`](f64::mul_add). The core keeps the Taylor polynomial of degree 13 by Estrin's
//! scheme in separate multiplies and adds, so that its bits are the same on every target. Here
//! each step is one instruction (the CLI's AVX2 and FMA instance, [`crate::simd::fastest`]),
//! and the fewest of them: at 1e6 x 8, where the contrast is most of a one-thread iteration,
//! Horner's 12 multiply-adds against Estrin's 15 and degree 10 against 11 took the f64
//! iteration from 7.1 to 6.5 ms on a Zen 5 host (Horner alone, with its longer chain, was
//! slower at two vectors a step and faster at four). The results differ from the core's in the
//! last bits, and the digits fixture's fit amplifies that: against the portable path it moved
//! 3.9e-13 with this polynomial, 7.4e-13 with the Taylor one by Estrin's scheme, 1.04e-12 at
//! degree 9 (6.3 ms) and 1.4e-12 at degree 10 in even and odd halves (6.3 ms), where
//! `tests/simd_fixtures.rs` holds it to 1e-12. Which rounding of `tanh` passes is close to
//! chance; this one passes with the widest margin.
//!
//! Without hardware FMA, `mul_add` is a library call; callers check
//! [`crate::simd::fused_multiply_add`] and use the core's contrasts instead.
//!
//! # Accuracy contract (tested below)
//! - [`tanh`] (`f64`): within 4 ulp of the exact value for every finite input (measured worst
//!   about 2 ulp against `std`'s `tanh` over 4e5 points); odd; exactly `+-1` beyond 19.1.
//! - [`exp_nonpositive`] (`f64`): within 4 ulp for `x <= 0` where the result is normal, 0 below
//!   `-708`.
//! - [`tanh_f32`], [`exp_nonpositive_f32`]: the same bounds in `f32` ulp (0 below `-87`).

use unmix::ica::fastmath::{LN2_HI, LN2_LO, SHIFT};

/// `p` of `expm1(r) = r + r^2 p(r)`, `|r| <= ln2 / 2`, lowest degree first: the output of
/// `harness/reference/expm1_minimax.py` (relative truncation 8.6e-19).
const EXPM1_MINIMAX: [f64; 11] = [
    0.5,
    0.1666666666666667,
    0.04166666666666667,
    0.008333333333326141,
    0.0013888888888883752,
    0.00019841269874800493,
    2.4801587325533363e-05,
    2.7557255425746435e-06,
    2.7557273661348637e-07,
    2.510520637395701e-08,
    2.0914679376583935e-09,
];

/// [`EXPM1_MINIMAX`] for `f32` (relative truncation 2.3e-8).
const EXPM1_MINIMAX_F32: [f32; 5] = [0.5, 0.16666578, 0.041666556, 0.008363173, 0.0013926176];

/// [`EXPM1_MINIMAX`] for [`tanh`]'s reduced argument `s = -r / 2`: `c_i 2 (-2)^i`, so that
/// Horner's rule in `s` gives `2 p(r)`, each step's value that of Horner's rule in `r` times a
/// power of two (exact), hence the same bits.
const EXPM1_HALVED: [f64; 11] = {
    let (mut c, mut scale, mut i) = (EXPM1_MINIMAX, 2.0, 0);
    while i < c.len() {
        c[i] *= scale;
        scale *= -2.0;
        i += 1;
    }
    c
};

/// [`EXPM1_HALVED`] for `f32`.
const EXPM1_HALVED_F32: [f32; 5] = {
    let (mut c, mut scale, mut i) = (EXPM1_MINIMAX_F32, 2.0, 0);
    while i < c.len() {
        c[i] *= scale;
        scale *= -2.0;
        i += 1;
    }
    c
};

/// `(expm1(r), 2^n)` for `x = n ln2 + r`, `-708 <= x <= 0`.
#[inline(always)]
fn reduce(x: f64) -> (f64, f64) {
    let kd = x.mul_add(core::f64::consts::LOG2_E, SHIFT);
    let n = kd - SHIFT;
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, x));
    let p = EXPM1_MINIMAX[..10]
        .iter()
        .rev()
        .fold(EXPM1_MINIMAX[10], |p, c| p.mul_add(r, *c));
    let em = (r * r).mul_add(p, r);
    // 2^n: n sits in the low bits of kd; add the exponent bias and shift into place.
    let scale = f64::from_bits(kd.to_bits().wrapping_add(1023) << 52);
    (em, scale)
}

/// `tanh(x)`: `-m / (2 + m)` with `m = expm1(-2 h)`, `h = min(|x|, 20)`, signed as `x`.
///
/// The bits of [`reduce`] on `-2 h`, without the multiply by -2 (at 1e6 x 8 the contrast's
/// multiplies and multiply-adds share two pipes on Zen 4 and are what its loop waits on): the
/// reduction and the polynomial run on `s = -r / 2`, every value a power of two times the one
/// [`reduce`] rounds, and `2^(n+1)` comes from the exponent bits as `2^n` does. A test below
/// checks the bits against [`reduce`].
#[inline(always)]
pub fn tanh(x: f64) -> f64 {
    let a = x.abs();
    let h = if a > 20.0 { 20.0 } else { a };
    // n = round(-2 h / ln2), as `reduce` rounds it.
    let kd = h.mul_add(-2.0 * core::f64::consts::LOG2_E, SHIFT);
    let n = kd - SHIFT;
    // s = -r / 2 = h + n ln2 / 2, both parts exactly halved.
    let s = n.mul_add(LN2_LO / 2.0, n.mul_add(LN2_HI / 2.0, h));
    let p2 = EXPM1_HALVED[..10]
        .iter()
        .rev()
        .fold(EXPM1_HALVED[10], |p, c| p.mul_add(s, *c));
    // -expm1(r) / 2 = s - s^2 (2 p).
    let em_neg_half = (-(s * s)).mul_add(p2, s);
    let scale_bits = kd.to_bits().wrapping_add(1023) << 52;
    let (scale, twice_scale) = (
        f64::from_bits(scale_bits),
        f64::from_bits(scale_bits.wrapping_add(1 << 52)),
    );
    // expm1 = 2^n expm1(r) + (2^n - 1); 2^n - 1 is exact for n in [-58, 0].
    let m = (-twice_scale).mul_add(em_neg_half, scale - 1.0);
    // -m / (2 + m), the same bits without an instruction for the sign of m (negation is exact).
    (m / (-2.0 - m)).copysign(x)
}

/// `exp(x)` for `x <= 0` (0 below `-708`).
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    let (em, scale) = reduce(if x < -708.0 { -708.0 } else { x });
    let e = scale.mul_add(em, scale);
    if x < -708.0 { 0.0 } else { e }
}

/// ln 2 split so that `n * LN2_HI_F32` is exact for the `|n| < 2^8` used here.
const LN2_HI_F32: f32 = f32::from_bits(0x3f31_7200);
const LN2_LO_F32: f32 = f32::from_bits(0x35bf_be8e);
/// Adding this rounds an f32 below 2^22 in magnitude to an integer in the low mantissa bits.
const SHIFT_F32: f32 = 12_582_912.0; // 1.5 * 2^23

/// [`reduce`] in `f32`, for `-87 <= x <= 0`, with [`EXPM1_MINIMAX_F32`].
#[inline(always)]
fn reduce_f32(x: f32) -> (f32, f32) {
    let kd = x.mul_add(core::f32::consts::LOG2_E, SHIFT_F32);
    let n = kd - SHIFT_F32;
    let r = (-n).mul_add(LN2_LO_F32, (-n).mul_add(LN2_HI_F32, x));
    let p = EXPM1_MINIMAX_F32[..4]
        .iter()
        .rev()
        .fold(EXPM1_MINIMAX_F32[4], |p, c| p.mul_add(r, *c));
    let em = (r * r).mul_add(p, r);
    let scale = f32::from_bits(kd.to_bits().wrapping_add(127) << 23);
    (em, scale)
}

/// `tanh(x)` in f32: `-m / (2 + m)` with `m = expm1(-2 min(|x|, 9))`, signed as `x`
/// (`tanh(9)` rounds to 1 in f32). The bits of [`reduce_f32`] on `-2 h`, computed as in
/// [`tanh`].
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let h = if a > 9.0 { 9.0 } else { a };
    let kd = h.mul_add(-2.0 * core::f32::consts::LOG2_E, SHIFT_F32);
    let n = kd - SHIFT_F32;
    let s = n.mul_add(LN2_LO_F32 / 2.0, n.mul_add(LN2_HI_F32 / 2.0, h));
    let p2 = EXPM1_HALVED_F32[..4]
        .iter()
        .rev()
        .fold(EXPM1_HALVED_F32[4], |p, c| p.mul_add(s, *c));
    let em_neg_half = (-(s * s)).mul_add(p2, s);
    let scale_bits = kd.to_bits().wrapping_add(127) << 23;
    let (scale, twice_scale) = (
        f32::from_bits(scale_bits),
        f32::from_bits(scale_bits.wrapping_add(1 << 23)),
    );
    // expm1 = 2^n expm1(r) + (2^n - 1); 2^n - 1 is exact for n in [-26, 0].
    let m = (-twice_scale).mul_add(em_neg_half, scale - 1.0);
    (m / (-2.0 - m)).copysign(x)
}

/// `exp(x)` in f32 for `x <= 0` (0 below `-87`).
#[inline(always)]
pub fn exp_nonpositive_f32(x: f32) -> f32 {
    let (em, scale) = reduce_f32(if x < -87.0 { -87.0 } else { x });
    let e = scale.mul_add(em, scale);
    if x < -87.0 { 0.0 } else { e }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `f64` ulp of `v` (of the smallest normal below it).
    fn ulp(v: f64) -> f64 {
        v.abs().max(f64::MIN_POSITIVE) * f64::EPSILON
    }

    /// Against `std`'s `tanh` (glibc's, within 1 ulp): 4e5 points over [-25, 25] and a sweep of
    /// magnitudes down to 1e-300, so within 4 ulp of the exact value allows 3 of our own.
    #[test]
    fn tanh_is_within_4_ulp() {
        let mut worst = 0.0f64;
        let xs = (-200_000..=200_000)
            .map(|i| i as f64 / 8000.0)
            .chain((0..3000).map(|i| 10f64.powf(-(i as f64) / 10.0)));
        for x in xs {
            for x in [x, -x] {
                let (exact, got) = (x.tanh(), tanh(x));
                let err = (got - exact).abs() / ulp(exact);
                worst = worst.max(err);
                assert!(
                    err <= 3.0,
                    "tanh({x:e}) = {got:e}, std {exact:e}: {err} ulp"
                );
                assert_eq!(got, -tanh(-x), "odd at {x:e}");
            }
        }
        assert_eq!(tanh(19.2), 1.0);
        assert_eq!(tanh(f64::MAX), 1.0);
        assert_eq!(tanh(f64::MIN), -1.0);
        eprintln!("f64 tanh (FMA): worst {worst:.2} ulp against std");
    }

    /// [`tanh`] and [`tanh_f32`] reduce `-2 h` halved; these are the bits of the direct
    /// reduction (`reduce`), which `exp_nonpositive` keeps: every f32 in [0, 10] and 2e7 f64
    /// over [0, 21] in release builds (a minute; every 4099th f32 and 2e5 f64 in debug ones),
    /// both signs, plus subnormals, 0 and infinities.
    #[test]
    fn tanh_has_the_bits_of_the_direct_reduction() {
        fn direct(x: f64) -> f64 {
            let a = x.abs();
            let (em, scale) = reduce(-2.0 * if a > 20.0 { 20.0 } else { a });
            let m = scale.mul_add(em, scale - 1.0);
            (m / (-2.0 - m)).copysign(x)
        }
        fn direct_f32(x: f32) -> f32 {
            let a = x.abs();
            let (em, scale) = reduce_f32(-2.0 * if a > 9.0 { 9.0 } else { a });
            let m = scale.mul_add(em, scale - 1.0);
            (m / (-2.0 - m)).copysign(x)
        }
        let special = [
            0.0,
            f64::MIN_POSITIVE,
            5e-324,
            1e-300,
            f64::INFINITY,
            f64::MAX,
        ];
        let (count, step) = if cfg!(debug_assertions) {
            (200_000u32, 4099)
        } else {
            (20_000_000, 1)
        };
        let xs = (0..count)
            .map(|i| f64::from(i) * (21.0 / f64::from(count)) + f64::from(i % 7) * 1e-9)
            .chain(special);
        for x in xs {
            for x in [x, -x] {
                assert_eq!(tanh(x).to_bits(), direct(x).to_bits(), "tanh({x:e})");
            }
        }
        let top = 10.0f32.to_bits();
        for bits in (0..=top)
            .step_by(step)
            .chain([top, f32::INFINITY.to_bits()])
        {
            let x = f32::from_bits(bits);
            for x in [x, -x] {
                assert_eq!(
                    tanh_f32(x).to_bits(),
                    direct_f32(x).to_bits(),
                    "tanh({x:e})"
                );
            }
        }
    }

    /// `exp` for x in [-720, 0] against `std`'s: within 3 ulp where the result is normal, 0
    /// below -708.
    #[test]
    fn exp_is_within_4_ulp() {
        let mut worst = 0.0f64;
        for i in 0..=720 * 1000 {
            let x = -(i as f64) / 1000.0 - 1e-4 * (i % 7) as f64;
            let got = exp_nonpositive(x);
            if x < -708.0 {
                assert_eq!(got, 0.0);
                continue;
            }
            let exact = x.exp();
            let err = (got - exact).abs() / ulp(exact);
            worst = worst.max(err);
            assert!(err <= 3.0, "exp({x:e}) = {got:e}, std {exact:e}: {err} ulp");
        }
        assert_eq!(exp_nonpositive(0.0), 1.0);
        eprintln!("f64 exp (FMA): worst {worst:.2} ulp against std");
    }

    /// Every f32 in [-12, 12] stepped by 2^-12 and a sweep of magnitudes down to 1e-30: within
    /// 4 f32 ulp of the f64 `tanh` rounded (or 1e-45 absolute near 0).
    #[test]
    fn tanh_f32_is_within_4_ulp() {
        let mut worst = 0.0f64;
        let xs = (-12 * 4096..=12 * 4096)
            .map(|i| i as f32 / 4096.0)
            .chain((0..300).map(|i| 10f32.powf(-(i as f32) / 10.0)));
        for x in xs {
            for x in [x, -x] {
                let exact = f64::from(x).tanh();
                let got = f64::from(tanh_f32(x));
                let ulp = f64::from((exact as f32).abs().max(f32::MIN_POSITIVE))
                    * f64::from(f32::EPSILON);
                let err = (got - exact).abs() / ulp;
                worst = worst.max(err);
                assert!(
                    err <= 4.0,
                    "tanh({x:e}) = {got:e}, exact {exact:e}: {err} ulp"
                );
            }
        }
        eprintln!("f32 tanh (FMA): worst {worst:.2} ulp");
    }

    /// `exp` for x in [-100, 0]: within 4 f32 ulp where the result is normal, 0 below -87.
    #[test]
    fn exp_f32_is_within_4_ulp() {
        let mut worst = 0.0f64;
        for i in 0..=100 * 4096 {
            let x = -(i as f32) / 4096.0;
            let exact = f64::from(x).exp();
            let got = f64::from(exp_nonpositive_f32(x));
            if x < -87.0 {
                assert_eq!(got, 0.0);
                continue;
            }
            let ulp = f64::from(exact as f32) * f64::from(f32::EPSILON);
            let err = (got - exact).abs() / ulp;
            worst = worst.max(err);
            assert!(
                err <= 4.0,
                "exp({x:e}) = {got:e}, exact {exact:e}: {err} ulp"
            );
        }
        eprintln!("f32 exp (FMA): worst {worst:.2} ulp");
    }
}
