//! The parallel FastICA pass on row-major blocks: within each block of [`BLOCK_ROWS`] rows the
//! two products (`Y = Z W'`, `G = g(Y)' Z`) run on the GEMM and the contrast on `Y` in place, in
//! the data's own type; each block's sums are then added in `f64`, across blocks and chunks, as
//! the core's pass does. The core's pass gathers rows into feature-major blocks of `f64`; this
//! one multiplies the rows where they are (the gather was 8 % of a one-thread fit at
//! 2e4 x 256), and a block's two halves carry their contrast with them to an idle thread.
//!
//! - `f32` data take it at every `k`: twice the lanes per instruction and half the bytes. A
//!   block's sums carry `f32` rounding (about `1e-7` relative per product of 256 terms), never
//!   more, since nothing is summed in `f32` across blocks; `tests/simd.rs` and
//!   `tests/simd_fixtures.rs` hold the fits to the `f32` contract of the scikit-learn
//!   cross-checks (same `n_iter`, 1e-3; measured below 1e-6 against the core's `f64` sums).
//!   The `f32` contrasts (`tanh`, `exp`) are the core's [`fastmath`](unmix::ica::fastmath)
//!   reduction carried out in `f32`: `expm1` of the reduced argument by its Taylor polynomial to
//!   degree 7 (truncation below `2e-8` relative), within 1.3 `f32` ulp (tested below).
//! - `f64` data take it at every `k` too, with the core's own contrasts
//!   ([`Contrast::eval_block`]); like the CLI's other GEMM products it agrees with the portable
//!   path to 1e-12 relative (`tests/simd.rs`, `tests/simd_fixtures.rs`).
//!
//! Bits do not depend on the thread count: block boundaries are fixed from each chunk's first
//! row, and a block's two halves (from [`SPLIT_MIN_K`] components) are added in a fixed order,
//! whoever computes them. `UNMIX_SIMD=portable` keeps the core's pass and bits.

use crate::simd::{GemmFloat, SPLIT_MIN_K, gemm, portable_requested};
use std::any::Any;
use std::cell::RefCell;
use unmix::ica::{Contrast, ContrastKind, Pass, PassSpec, add_parallel_sums};
use unmix::{Error, Float, Result};

/// Rows per block: a divisor of the transforms' 256-row blocks and of the pieces the executor
/// hands over, so that every piece of a chunk starts a block (the bits then do not depend on
/// how the chunk arrives).
pub const BLOCK_ROWS: usize = 256;

/// `inner` (a pass over rows of `T`), except that a parallel FastICA pass with a built-in contrast
/// runs on row-major blocks at every `k` (unless `UNMIX_SIMD=portable`): even at `k = 8` the
/// GEMM on row-major blocks beats the core's register tiles on gathered blocks (1e6 x 8, one
/// iteration on one thread: f64 57 against 66.5 ms, f32 28.6). Partial layout, merging and finishing are `inner`'s.
pub struct BlockPass<'p, P, T> {
    inner: &'p P,
    fast: Option<Fast<T>>,
}

struct Fast<T> {
    k: usize,
    w: Vec<T>,
    contrast: ContrastKind,
}

impl<'p, P: Pass<T>, T: GemmFloat> BlockPass<'p, P, T> {
    /// Wraps `inner`.
    pub fn new(inner: &'p P) -> Self {
        let fast = match inner.spec() {
            Some(PassSpec::Parallel { k, w, contrast }) if !portable_requested() => {
                Some(Fast {
                    k,
                    // The unmixing in the data's type, once per pass.
                    w: w.iter().map(|&v| T::from_sum(v)).collect(),
                    contrast,
                })
            }
            _ => None,
        };
        Self { inner, fast }
    }
}

impl<T: GemmFloat, P: Pass<T>> Pass<T> for BlockPass<'_, P, T> {
    fn partial_len(&self) -> usize {
        self.inner.partial_len()
    }
    #[inline(always)] // into the executor's AVX2 instance
    fn accumulate(&self, partial: &mut [f64], first: u64, rows: &[T]) -> Result<()> {
        match &self.fast {
            Some(fast) => fast.accumulate(partial, first, rows),
            None => self.inner.accumulate(partial, first, rows),
        }
    }
    fn merge(&self, total: &mut [f64], next: &[f64]) -> Result<()> {
        self.inner.merge(total, next)
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        self.inner.spec()
    }
}

/// What the block path needs of the data's type: the contrast in that type.
pub trait BlockFloat: Float {
    /// Whether [`contrast`](Self::contrast) writes the derivatives into `gp` (a block of them is
    /// allocated only then).
    const KEEPS_DERIVATIVES: bool;
    /// `y <- g(y)` in place, `b[i] += g'(y[r k + i])` over the rows `r` of `y` (`k` wide).
    fn contrast(c: ContrastKind, y: &mut [Self], gp: &mut [Self], b: &mut [Self], k: usize);
}

/// `y <- g(y)`, `b[i] += g'(y_i)` row by row for `eval(u) = (g(u), g'(u))`: one loop along each
/// row (it vectorises over the components). `eval` must be an `#[inline(always)]` closure, or it
/// is compiled outside the caller's AVX2 instance.
#[inline(always)]
fn each_value(y: &mut [f32], b: &mut [f32], k: usize, eval: impl Fn(f32) -> (f32, f32)) {
    for row in y.chunks_exact_mut(k) {
        for (v, b) in row.iter_mut().zip(b.iter_mut()) {
            let (g, d) = eval(*v);
            *v = g;
            *b += d;
        }
    }
}

impl BlockFloat for f32 {
    const KEEPS_DERIVATIVES: bool = false;
    #[inline(always)]
    fn contrast(c: ContrastKind, y: &mut [f32], _: &mut [f32], b: &mut [f32], k: usize) {
        // The core's three contrasts (`unmix::ica::contrast`), in f32.
        match c {
            ContrastKind::LogCosh(c) => {
                let alpha = c.alpha() as f32;
                each_value(
                    y,
                    b,
                    k,
                    #[inline(always)]
                    |u| {
                        let t = tanh(alpha * u);
                        (t, alpha * (1.0 - t * t))
                    },
                );
            }
            ContrastKind::Exp => each_value(
                y,
                b,
                k,
                #[inline(always)]
                |u| {
                    let u2 = u * u;
                    let e = exp_nonpositive(-0.5 * u2);
                    (u * e, (1.0 - u2) * e)
                },
            ),
            ContrastKind::Cube => each_value(
                y,
                b,
                k,
                #[inline(always)]
                |u| {
                    let u2 = u * u;
                    (u2 * u, 3.0 * u2)
                },
            ),
        }
    }
}

impl BlockFloat for f64 {
    const KEEPS_DERIVATIVES: bool = true;
    #[inline(always)]
    fn contrast(c: ContrastKind, y: &mut [f64], gp: &mut [f64], b: &mut [f64], k: usize) {
        // The core's contrast over the whole block (its vectorised two-loop form), then the
        // derivatives summed per component.
        c.eval_block(y, gp);
        for row in gp.chunks_exact(k) {
            for (s, v) in b.iter_mut().zip(row) {
                *s += *v;
            }
        }
    }
}

impl<T: GemmFloat> Fast<T> {
    #[inline(always)]
    fn accumulate(&self, partial: &mut [f64], first: u64, z: &[T]) -> Result<()> {
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
        // No closure around the blocks: a closure not inlined would be compiled outside the
        // caller's AVX2 instance.
        let mut scratch = take_scratch::<T>(k);
        let result = self.run_blocks(partial, z, &mut scratch.blocks, &mut scratch.sums);
        put_scratch(scratch);
        result
    }

    /// Each block's (half-block's) sums go straight into the partial, in row order, so that the
    /// additions are the same however the chunk's rows arrive (whole or in pieces).
    #[inline(always)]
    fn run_blocks(
        &self,
        partial: &mut [f64],
        z: &[T],
        blocks: &mut [Block<T>; 2],
        sums: &mut [f64],
    ) -> Result<()> {
        let k = self.k;
        let half = BLOCK_ROWS / 2;
        for zb in z.chunks(BLOCK_ROWS * k) {
            let nb = zb.len() / k;
            if k >= SPLIT_MIN_K && nb > half {
                // Two halves of the block, one of which an idle thread of the pool can take.
                let (za, zc) = zb.split_at(half * k);
                let [a, c] = blocks;
                // Each closure is its own function, outside the caller's AVX2 instance: enter it
                // again (the contrast otherwise runs on the baseline's two lanes).
                rayon::join(
                    || crate::simd::fastest(|| a.run(self, za)),
                    || crate::simd::fastest(|| c.run(self, zc)),
                );
                a.add_to(partial, sums, half)?;
                c.add_to(partial, sums, nb - half)?;
            } else {
                blocks[0].run(self, zb);
                blocks[0].add_to(partial, sums, nb)?;
            }
        }
        Ok(())
    }
}

/// A thread's buffers for [`Fast::run_blocks`]: two blocks (a block's halves) and the f64 sums.
struct Scratch<T> {
    blocks: [Block<T>; 2],
    sums: Vec<f64>,
}

thread_local! {
    /// The buffers of this thread's last pass, kept between calls: a pass calls `accumulate`
    /// once per chunk (or per 1024-row piece), and fresh buffers each time (1.5 MB a block at
    /// k = 256) cost page faults and zeroing on the hot path.
    static SCRATCH: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// This thread's buffers for `k` components of `T`, taken out of its slot (or new): a call nested
/// by work stealing (this thread running another chunk while it waits in `rayon::join`) finds
/// the slot empty and allocates its own, so buffers are never shared.
fn take_scratch<T: GemmFloat>(k: usize) -> Box<Scratch<T>> {
    match SCRATCH
        .with(|slot| slot.borrow_mut().take())
        .map(|b| b.downcast::<Scratch<T>>())
    {
        Some(Ok(s)) if s.sums.len() == k * k + k => s,
        _ => Box::new(Scratch {
            blocks: [Block::new(k), Block::new(k)],
            sums: vec![0.0; k * k + k],
        }),
    }
}

/// Puts buffers back into this thread's slot for the next call.
fn put_scratch<T: GemmFloat>(scratch: Box<Scratch<T>>) {
    SCRATCH.with(|slot| *slot.borrow_mut() = Some(scratch));
}

/// Scratch and results of one block: `y` (then `g(y)`), `g'(y)` (f64 only), `G` and `b`.
struct Block<T> {
    y: Vec<T>,
    gp: Vec<T>,
    g: Vec<T>,
    b: Vec<T>,
}

impl<T: GemmFloat> Block<T> {
    fn new(k: usize) -> Self {
        Self {
            y: vec![T::ZERO; BLOCK_ROWS * k],
            gp: vec![
                T::ZERO;
                if T::KEEPS_DERIVATIVES {
                    BLOCK_ROWS * k
                } else {
                    0
                }
            ],
            g: vec![T::ZERO; k * k],
            b: vec![T::ZERO; k],
        }
    }

    /// `G = g(Z W')' Z` and `b = sum g'(Z W')` over the rows `z` (`nb x k`).
    #[inline(always)]
    fn run(&mut self, fast: &Fast<T>, z: &[T]) {
        let k = fast.k;
        let nb = z.len() / k;
        let y = &mut self.y[..nb * k];
        // Y = Z W' (nb x k): A = Z (row stride k), B = W' (element (j, i) = w[i k + j]).
        gemm(nb, k, k, z, (k, 1), &fast.w, (1, k), y, k, false);
        self.b.fill(T::ZERO);
        let gp = &mut self.gp[..if T::KEEPS_DERIVATIVES { nb * k } else { 0 }];
        T::contrast(fast.contrast, y, gp, &mut self.b, k);
        // G = g(Y)' Z (k x k): A = g(Y)' (element (i, r) = y[r k + i]), B = Z (row stride k).
        gemm(k, nb, k, y, (1, k), z, (k, 1), &mut self.g, k, false);
    }

    /// Adds this block's `G` and `b` (of `rows` rows) to `partial`, in f64 through `sums`.
    fn add_to(&self, partial: &mut [f64], sums: &mut [f64], rows: usize) -> Result<()> {
        let (g, b) = sums.split_at_mut(self.g.len());
        for (s, v) in g.iter_mut().zip(&self.g) {
            *s = v.to_f64();
        }
        for (s, v) in b.iter_mut().zip(&self.b) {
            *s = v.to_f64();
        }
        add_parallel_sums(partial, self.b.len(), rows as u64, sums)
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
