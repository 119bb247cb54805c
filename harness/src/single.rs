//! The parallel FastICA pass for `f32` data at `f32` speed: within each block of
//! [`BLOCK_ROWS`] rows the two products (`Y = Z W'`, `G = g(Y)' Z`) run on `sgemm` and the
//! contrast in `f32`; each block's sums are then added in `f64`, across blocks and chunks, as the
//! core's pass does. Twice the lanes per instruction and half the bytes of the `f64` path.
//!
//! Accuracy: a block's sums carry `f32` rounding (about `1e-7` relative per product of 256
//! terms), never more, since nothing is summed in `f32` across blocks. FastICA's statistics are
//! means over all rows, so this rounding stays at the level of the data's own `f32` precision;
//! `tests/single.rs` checks that fits agree with the core's `f64` sums (`UNMIX_SIMD=portable`)
//! within the `f32` contract of the scikit-learn cross-checks (1e-3 relative, the same number
//! of iterations). Bits do not depend on the thread count: block boundaries are fixed from each
//! chunk's first row, and a block's two halves (from [`SPLIT_MIN_K`] components) are added in a
//! fixed order, whoever computes them.
//!
//! The `f32` contrasts (`tanh`, `exp`) are the core's [`fastmath`](unmix::ica::fastmath)
//! reduction carried out in `f32`: `expm1` of the reduced argument by its Taylor polynomial to
//! degree 7 (truncation below `2e-8` relative), within a few `f32` ulp, branch-free so that a
//! block's loop vectorises.

use crate::simd::{SPLIT_MIN_K, gemm, portable_requested};
use unmix::ica::{ContrastKind, Pass, PassSpec, add_parallel_sums};
use unmix::{Error, Float, Result};

/// Rows per block: a divisor of the transforms' 256-row blocks and of the pieces the executor
/// hands over, so that every piece of a chunk starts a block (the bits then do not depend on
/// how the chunk arrives).
pub const BLOCK_ROWS: usize = 256;

/// A pass over `f32` rows that takes the `f32` path for a parallel FastICA pass with a built-in
/// contrast (unless `UNMIX_SIMD=portable`), and is `inner` otherwise. At every `k`: even at
/// `k = 8`, where the `f64` path keeps the core's kernel, `sgemm` and the 8-lane contrast are
/// faster (1e6 x 8: 28 against 66 ms an iteration on one thread). Partial layout, merging and finishing are `inner`'s.
pub struct SinglePass<'p, P> {
    inner: &'p P,
    fast: Option<Fast>,
}

struct Fast {
    k: usize,
    w: Vec<f32>,
    contrast: ContrastKind,
}

impl<'p, P> SinglePass<'p, P> {
    /// Wraps `inner` (the `f32` path applies when `T` is `f32`).
    pub fn new<T: Float + AsF32>(inner: &'p P) -> Self
    where
        P: Pass<T>,
    {
        let single = T::as_f32(&[]).is_some();
        let fast = match inner.spec() {
            Some(PassSpec::Parallel { k, w, contrast }) if single && !portable_requested() => {
                Some(Fast {
                    k,
                    // The unmixing rounded to f32 once per pass (the data are f32 already).
                    w: w.iter().map(|&v| v as f32).collect(),
                    contrast,
                })
            }
            _ => None,
        };
        Self { inner, fast }
    }
}

impl<T: Float + AsF32, P: Pass<T>> Pass<T> for SinglePass<'_, P> {
    fn partial_len(&self) -> usize {
        self.inner.partial_len()
    }
    #[inline(always)] // into the executor's AVX2 instance
    fn accumulate(&self, partial: &mut [f64], first: u64, rows: &[T]) -> Result<()> {
        match (&self.fast, T::as_f32(rows)) {
            (Some(fast), Some(z)) => fast.accumulate(partial, first, z),
            _ => self.inner.accumulate(partial, first, rows),
        }
    }
    fn merge(&self, total: &mut [f64], next: &[f64]) -> Result<()> {
        self.inner.merge(total, next)
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        self.inner.spec()
    }
}

/// `f32` rows seen as such (`None` for `f64`), so that generic code can take the `f32` path.
pub trait AsF32: Sized {
    /// `rows` as `f32`, if they are.
    fn as_f32(rows: &[Self]) -> Option<&[f32]>;
}

impl AsF32 for f32 {
    fn as_f32(rows: &[Self]) -> Option<&[f32]> {
        Some(rows)
    }
}

impl AsF32 for f64 {
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }
}

impl Fast {
    #[inline(always)]
    fn accumulate(&self, partial: &mut [f64], first: u64, z: &[f32]) -> Result<()> {
        let k = self.k;
        if z.len() % k != 0 {
            return Err(Error::DimensionMismatch {
                expected: z.len().next_multiple_of(k),
                found: z.len(),
            });
        }
        if let Some(pos) = z.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                row: first + (pos / k) as u64,
                col: pos % k,
            });
        }
        let n = z.len() / k;
        // `G` then `b` of these rows, in f64; per block in f32.
        let mut sums = vec![0.0f64; k * k + k];
        let half = BLOCK_ROWS / 2;
        let mut blocks = [Block::new(k, half), Block::new(k, half)];
        for zb in z.chunks(BLOCK_ROWS * k) {
            let nb = zb.len() / k;
            if k >= SPLIT_MIN_K && nb > half {
                // Two halves of the block, one of which an idle thread of the pool can take.
                let (za, zc) = zb.split_at(half * k);
                let [a, c] = &mut blocks;
                rayon::join(|| a.run(self, za), || c.run(self, zc));
                a.add_to(&mut sums);
                c.add_to(&mut sums);
            } else {
                blocks[0].run(self, zb);
                blocks[0].add_to(&mut sums);
            }
        }
        if sums.iter().any(|v| !v.is_finite()) {
            return Err(Error::Overflow);
        }
        add_parallel_sums(partial, k, n as u64, &sums)
    }
}

/// Scratch and results of one block: `y` (then `g(y)`), `G` and `b` in f32.
struct Block {
    y: Vec<f32>,
    g: Vec<f32>,
    b: Vec<f32>,
}

impl Block {
    fn new(k: usize, rows: usize) -> Self {
        Self {
            y: vec![0.0; rows.max(BLOCK_ROWS) * k],
            g: vec![0.0; k * k],
            b: vec![0.0; k],
        }
    }

    /// `G = g(Z W')' Z` and `b = sum g'(Z W')` over the rows `z` (`nb x k`).
    #[inline(always)]
    fn run(&mut self, fast: &Fast, z: &[f32]) {
        let k = fast.k;
        let nb = z.len() / k;
        let y = &mut self.y[..nb * k];
        // Y = Z W' (nb x k): A = Z (row stride k), B = W' (element (j, i) = w[i k + j]).
        gemm(nb, k, k, z, (k, 1), &fast.w, (1, k), y, k, false);
        self.b.fill(0.0);
        match fast.contrast {
            ContrastKind::LogCosh(c) => {
                let alpha = c.alpha() as f32;
                for row in y.chunks_exact_mut(k) {
                    for (v, b) in row.iter_mut().zip(self.b.iter_mut()) {
                        let t = tanh(alpha * *v);
                        *v = t;
                        *b += alpha * (1.0 - t * t);
                    }
                }
            }
            ContrastKind::Exp => {
                for row in y.chunks_exact_mut(k) {
                    for (v, b) in row.iter_mut().zip(self.b.iter_mut()) {
                        let u = *v;
                        let u2 = u * u;
                        let e = exp_nonpositive(-0.5 * u2);
                        *v = u * e;
                        *b += (1.0 - u2) * e;
                    }
                }
            }
            ContrastKind::Cube => {
                for row in y.chunks_exact_mut(k) {
                    for (v, b) in row.iter_mut().zip(self.b.iter_mut()) {
                        let u = *v;
                        *v = u * u * u;
                        *b += 3.0 * u * u;
                    }
                }
            }
        }
        // G = g(Y)' Z (k x k): A = g(Y)' (element (i, r) = y[r k + i]), B = Z (row stride k).
        gemm(k, nb, k, y, (1, k), z, (k, 1), &mut self.g, k, false);
    }

    /// Adds this block's `G` and `b` to `sums` in f64.
    fn add_to(&self, sums: &mut [f64]) {
        let (g, b) = sums.split_at_mut(self.g.len());
        for (s, v) in g.iter_mut().zip(&self.g) {
            *s += f64::from(*v);
        }
        for (s, v) in b.iter_mut().zip(&self.b) {
            *s += f64::from(*v);
        }
    }
}

// The f32 contrasts: the core's `fastmath` reduction `x = n ln2 + r`, `|r| <= ln2 / 2`, in f32.

/// ln 2 split so that `n * LN2_HI` is exact for the `|n| < 2^8` used here.
const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
/// Adding this rounds an f32 below 2^22 in magnitude to an integer in the low mantissa bits.
const SHIFT: f32 = 12_582_912.0; // 1.5 * 2^23

/// `(expm1(r), 2^n)` for `x = n ln2 + r`, `-87 <= x <= 0`.
#[inline(always)]
fn reduce(x: f32) -> (f32, f32) {
    let kd = x * core::f32::consts::LOG2_E + SHIFT;
    let n = kd - SHIFT;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    // expm1(r) = r + r^2 (1/2 + r/6 + r^2/24 + r^3/120 + r^4/720 + r^5/5040), by Estrin.
    let r2 = r * r;
    let p = (0.5 + r * (1.0 / 6.0))
        + (1.0 / 24.0 + r * (1.0 / 120.0)) * r2
        + (1.0 / 720.0 + r * (1.0 / 5040.0)) * (r2 * r2);
    let em = r + r2 * p;
    let scale = f32::from_bits(kd.to_bits().wrapping_add(127) << 23);
    (em, scale)
}

/// `tanh(x)` in f32: `-m / (2 + m)` with `m = expm1(-2 min(|x|, 9))`, signed as `x`
/// (`tanh(9)` rounds to 1 in f32).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = x.abs();
    let (em, scale) = reduce(-2.0 * if a > 9.0 { 9.0 } else { a });
    // expm1 = 2^n expm1(r) + (2^n - 1); 2^n - 1 is exact for n in [-26, 0].
    let m = scale * em + (scale - 1.0);
    (-m / (2.0 + m)).copysign(x)
}

/// `exp(x)` in f32 for `x <= 0` (0 below `-87`).
#[inline(always)]
pub fn exp_nonpositive(x: f32) -> f32 {
    let (em, scale) = reduce(if x < -87.0 { -87.0 } else { x });
    let e = scale * em + scale;
    if x < -87.0 { 0.0 } else { e }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f32 in [-12, 12] stepped by 2^-12 and a sweep of magnitudes down to 1e-30: within
    /// 4 f32 ulp of the f64 `tanh` rounded (or 1e-45 absolute near 0).
    #[test]
    fn tanh_is_within_4_ulp() {
        let mut worst = 0.0f64;
        let xs = (-12 * 4096..=12 * 4096)
            .map(|i| i as f32 / 4096.0)
            .chain((0..300).map(|i| 10f32.powf(-(i as f32) / 10.0)));
        for x in xs {
            for x in [x, -x] {
                let exact = f64::from(x).tanh();
                let got = f64::from(tanh(x));
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
        eprintln!("f32 tanh: worst {worst:.2} ulp");
    }

    /// `exp` for x in [-100, 0]: within 4 f32 ulp where the result is normal, 0 below -87.
    #[test]
    fn exp_is_within_4_ulp() {
        let mut worst = 0.0f64;
        for i in 0..=100 * 4096 {
            let x = -(i as f32) / 4096.0;
            let exact = f64::from(x).exp();
            let got = f64::from(exp_nonpositive(x));
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
        eprintln!("f32 exp: worst {worst:.2} ulp");
    }
}
