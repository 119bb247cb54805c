//! Branch-free `exp` and `tanh` for the contrasts, written so that a loop over a slice
//! vectorises (selects instead of branches, no calls, integer work in 64-bit lanes), in plain
//! IEEE arithmetic: the same bits on every target, like `libm`, and several times faster over a
//! block.
//!
//! Both reduce `x = n ln2 + r`, `|r| <= ln2 / 2`, with `n` rounded by adding `1.5 * 2^52` (so it
//! never leaves a vector register), and evaluate `expm1(r)` by its Taylor polynomial to degree 13
//! (truncation below 1e-18 relative).
//!
//! # Accuracy contract (tested against `libm` in `core/tests/fastmath.rs`)
//! - [`exp_nonpositive`]: for `x <= 0`, within 2 ulp of `libm::exp` where the result is normal;
//!   0 below `-708`.
//! - [`tanh`]: within 4 ulp of `libm::tanh` (itself within 2 ulp of the exact value) for every
//!   finite input; exactly `+-1` beyond `|x| = 19.1`; odd.

/// ln 2 split as in fdlibm: the high part has 32 trailing zero bits, so `n * LN2_HI` is exact
/// (the reduction's constants are public for the CLI's fused multiply-add variant of it).
pub const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
/// The low part of ln 2: `LN2_HI + LN2_LO` is ln 2 to about 2^-85.
pub const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const INV_LN2: f64 = core::f64::consts::LOG2_E;
/// Adding this rounds a double below 2^51 in magnitude to an integer held in the low mantissa
/// bits.
pub const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52

/// `1/k!` for k = 2..=13: the Taylor coefficients of `(expm1(r) - r) / r^2`.
const C: [f64; 12] = [
    0.5,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
];

/// `(expm1(r), 2^n)` for `x = n ln2 + r`, `-708 <= x <= 0`.
#[inline(always)]
fn reduce(x: f64) -> (f64, f64) {
    let kd = x * INV_LN2 + SHIFT;
    let n = kd - SHIFT;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    // expm1(r) = r + r^2 p(r), p(r) = 1/2 + r/6 + ... + r^11/13!, by Estrin's scheme: the same
    // work as Horner's rule but a dependency chain of 4 multiply-adds instead of 11, so that a
    // block of values keeps the vector units busy.
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let q0 = C[0] + C[1] * r;
    let q1 = C[2] + C[3] * r;
    let q2 = C[4] + C[5] * r;
    let q3 = C[6] + C[7] * r;
    let q4 = C[8] + C[9] * r;
    let q5 = C[10] + C[11] * r;
    let p = (q0 + q1 * r2) + (q2 + q3 * r2) * r4 + (q4 + q5 * r2) * r8;
    let em = r + r2 * p;
    // 2^n: n sits in the low bits of kd; add the exponent bias and shift into place.
    let scale = f64::from_bits(kd.to_bits().wrapping_add(1023) << 52);
    (em, scale)
}

/// `exp(x)` for `x <= 0` (0 below `-708`).
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    let (em, scale) = reduce(if x < -708.0 { -708.0 } else { x });
    let e = scale * em + scale;
    if x < -708.0 { 0.0 } else { e }
}

/// `tanh(x)`, branch-free: `tanh(a) = -m / (2 + m)` with `m = expm1(-2a)`, `a = |x|`.
#[inline(always)]
pub fn tanh(x: f64) -> f64 {
    tanh_finish(tanh_expm1(x), x)
}

/// The first half of [`tanh`]: `m = expm1(-2 min(|x|, 20))`. A block computes all of these, then
/// all the divisions, because two short dependency chains overlap in the pipeline better than one
/// long one.
#[inline(always)]
pub(crate) fn tanh_expm1(x: f64) -> f64 {
    let a = x.abs();
    let y = -2.0 * if a > 20.0 { 20.0 } else { a };
    let (em, scale) = reduce(y);
    // expm1(y) = 2^n expm1(r) + (2^n - 1); 2^n - 1 is exact for n in [-58, 0].
    scale * em + (scale - 1.0)
}

/// The second half of [`tanh`]: `tanh(x)` from `m = tanh_expm1(x)`.
#[inline(always)]
pub(crate) fn tanh_finish(m: f64, x: f64) -> f64 {
    let t = -m / (2.0 + m);
    t.copysign(x)
}
