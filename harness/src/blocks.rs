//! The parallel FastICA pass on row-major blocks: within each block of [`BLOCK_ROWS`] rows the
//! two products (`Y = Z W'`, `G = g(Y)' Z`) run on the GEMM and the contrast on `Y` in place, in
//! the data's own type; each block's sums are then added in `f64`, across blocks and chunks, as
//! the core's pass does. The core's pass gathers rows into feature-major blocks of `f64`; this
//! one multiplies the rows where they are (the gather was 8 % of a one-thread fit at
//! 2e4 x 256), and a chunk's two halves ([`HALF_CHUNK`]) carry their contrast with them to an
//! idle thread.
//!
//! - `f32` data take it at every `k`: twice the lanes per instruction and half the bytes. A
//!   block's sums carry `f32` rounding (about `1e-7` relative per product of 256 terms), never
//!   more, since nothing is summed in `f32` across blocks; `tests/simd.rs` and
//!   `tests/simd_fixtures.rs` hold the fits to the `f32` contract of the scikit-learn
//!   cross-checks (same `n_iter`, 1e-3; measured below 1e-6 against the core's `f64` sums).
//! - `f64` data take it at every `k` too; like the CLI's other GEMM products it agrees with the
//!   portable path to 1e-12 relative (`tests/simd.rs`, `tests/simd_fixtures.rs`).
//! - The contrast runs once along each row, its derivatives summed as they are made. Where the
//!   CPU has fused multiply-adds, `tanh` and `exp` are [`crate::vmath`]'s (the core's
//!   [`fastmath`](unmix::ica::fastmath) reduction in half the instructions, within 4 ulp):
//!   at 1e6 x 8 the core's contrast was about half of a one-thread iteration (perf), at 3.1 ns
//!   a value on the AVX2 path against 2.3 here (`cargo bench -p unmix-benches --bench
//!   contrast`). Where the CPU has AVX-512, the same contrast runs on its registers with the
//!   same bits, and each step prefetches the next block's rows. Without fused multiply-adds,
//!   the core's contrasts.
//!
//! Bits do not depend on the thread count: block boundaries are fixed from each chunk's first
//! row, and a chunk's two halves (from [`SPLIT_MIN_K`] components) are summed apart and added in
//! a fixed order, whoever computes them. `UNMIX_SIMD=portable` keeps the core's pass and bits.

use crate::simd::{
    GemmFloat, SPLIT_MIN_K, fused_multiply_add, gemm, portable_requested, uses_avx512,
};
use crate::widen::Widens;
use crate::{small8, vmath};
use std::any::Any;
use std::cell::RefCell;
use unmix::ica::{CHUNK, Contrast, ContrastKind, Cube, Exp, Pass, PassSpec, add_parallel_sums};
use unmix::{Error, Float, Result};

/// Rows per block: a divisor of the transforms' 256-row blocks and of the pieces the executor
/// hands over, so that every piece of a chunk starts a block (the bits then do not depend on
/// how the chunk arrives).
pub const BLOCK_ROWS: usize = 256;

/// From [`SPLIT_MIN_K`] components, the rows of each chunk's first and last `HALF_CHUNK` are
/// summed apart and added in that order: a fixed order, whoever runs them, in which two threads
/// can share a chunk. At 2e4 x 256 (five chunks) the fifth then runs on both threads in two
/// pieces of 2048 rows; shared a block's halves at a time, it ran only 1.34x faster than on
/// one thread.
pub const HALF_CHUNK: usize = CHUNK / 2;
const _: () = assert!(HALF_CHUNK.is_multiple_of(BLOCK_ROWS));

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
    /// Regions of a partial ([`region_len`] each): two from [`SPLIT_MIN_K`] components, where
    /// each chunk's halves are summed apart ([`HALF_CHUNK`]), else one.
    regions: usize,
    /// The unmixing as given, for [`Folded`]'s `W V`.
    w_sum: Vec<f64>,
    /// `W'` in the data's type, row-major ([`transposed`]): the layout in which the GEMM takes
    /// `Y = Z W'` without gathering `W` into panels with scalar loads each block (1.3 ms of a
    /// 95 ms one-thread iteration at 2e4 x 256), and [`BlockFloat::unmix8`]'s.
    wt: Vec<T>,
    contrast: ContrastKind,
}

impl<'p, P: Pass<T>, T: GemmFloat> BlockPass<'p, P, T> {
    /// Wraps `inner`.
    pub fn new(inner: &'p P) -> Self {
        let fast = match inner.spec() {
            Some(PassSpec::Parallel { k, w, contrast }) if !portable_requested() => {
                // W' in the data's type, once per pass.
                let w_sum = w;
                let wt = transposed(w, k, k, T::from_sum);
                Some(Fast {
                    k,
                    regions: if k >= SPLIT_MIN_K { 2 } else { 1 },
                    w_sum: w_sum.to_vec(),
                    wt,
                    contrast,
                })
            }
            _ => None,
        };
        Self { inner, fast }
    }
}

impl<T: GemmFloat, P: Pass<T>> BlockPass<'_, P, T> {
    /// `partial` cut into the two regions that the rows before and from the middle of their
    /// chunk ([`HALF_CHUNK`]) add to, where this pass sums a chunk's halves apart (the block path
    /// from [`SPLIT_MIN_K`] components); else `None`.
    pub fn regions<'a>(&self, partial: &'a mut [f64]) -> Option<(&'a mut [f64], &'a mut [f64])> {
        self.fast.as_ref()?.regions(partial)
    }

    /// Adds `rows` (from row `first` of the pass, all on one side of their chunk's middle) to
    /// `region`, the one of [`Self::regions`] for that side: what [`Pass::accumulate`] adds
    /// there, so that the two sides of a chunk can be added at once.
    #[inline(always)]
    pub fn accumulate_region(&self, region: &mut [f64], first: u64, rows: &[T]) -> Result<()> {
        match self.fast.as_ref().filter(|f| f.regions == 2) {
            Some(fast) => fast.in_scratch(region, first, rows),
            None => Err(Error::InvalidParameter("the pass has no regions")),
        }
    }
}

impl<T: GemmFloat, P: Pass<T>> Pass<T> for BlockPass<'_, P, T> {
    /// The block path's [`region_len`] per region, else the inner pass's.
    fn partial_len(&self) -> usize {
        match &self.fast {
            Some(fast) => fast.regions * region_len(fast.k),
            None => self.inner.partial_len(),
        }
    }
    #[inline(always)] // into the executor's AVX2 instance
    fn accumulate(&self, partial: &mut [f64], first: u64, rows: &[T]) -> Result<()> {
        match &self.fast {
            Some(fast) => fast.accumulate(partial, first, rows),
            None => self.inner.accumulate(partial, first, rows),
        }
    }
    /// Adds each region's sums in order (`total` has the inner pass's layout).
    fn merge(&self, total: &mut [f64], next: &[f64]) -> Result<()> {
        let Some(fast) = &self.fast else {
            return self.inner.merge(total, next);
        };
        let k = fast.k;
        let len = region_len(k);
        if next.len() < fast.regions * len {
            return Err(Error::BufferTooSmall {
                needed: fast.regions * len,
                found: next.len(),
            });
        }
        for region in next.chunks_exact(len).take(fast.regions) {
            let (g, b) = region[1..].split_at(k * k);
            add_parallel_sums(total, k, region[0] as u64, g, b)?;
        }
        Ok(())
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        self.inner.spec()
    }
}

/// The `cols x rows` transpose of the row-major `rows x cols` matrix `m`, row-major, each value
/// converted by `to`.
fn transposed<A: Copy, T>(m: &[A], rows: usize, cols: usize, to: impl Fn(A) -> T) -> Vec<T> {
    (0..rows * cols)
        .map(|e| to(m[(e % rows) * cols + e / rows]))
        .collect()
}

/// Values of a region of the block path's partials: the rows, `G` (`k x k`) and `b` (`k`) summed
/// so far, the layout [`add_parallel_sums`] adds to. Only the totals the inner pass's partial
/// would hold, not its in-chunk sums, which the block path leaves at zero: a chunk's partial at
/// k = 256 is then 0.5 MB a region to clear and merge, not 1 MB.
fn region_len(k: usize) -> usize {
    1 + k * k + k
}

/// What the block path needs of the data's type: its contrast, its `tanh` and `exp` with fused
/// multiply-adds, and its 8-component products.
pub trait BlockFloat: Float + core::ops::AddAssign {
    /// `y <- g(y)` in place, `b[i] += g'(y[r k + i])` over the rows `r` of `y` (`k` wide):
    /// `contrast` (this module) with this type's values per step. `ahead` (the next block's
    /// rows, or empty) is asked into the cache meanwhile (a prefetch, which changes no value).
    /// Whether every value of `y` was finite.
    fn contrast(c: ContrastKind, y: &mut [Self], b: &mut [Self], k: usize, ahead: &[Self]) -> bool;
    /// [`crate::vmath`]'s `tanh` in this type.
    fn fused_tanh(x: Self) -> Self;
    /// [`crate::vmath`]'s `exp` (of `x <= 0`) in this type.
    fn fused_exp_nonpositive(x: Self) -> Self;
    /// `Y = Z W'` at [`small8::K`] components on [`crate::small8`]'s kernel (`wt = W'`), where
    /// the CPU has it; whether it ran.
    fn unmix8(wt: &[Self], z: &[Self], y: &mut [Self]) -> bool;
    /// `G = Y' Z` at [`small8::K`] components on [`crate::small8`]'s kernel; whether it ran.
    fn gram8(y: &[Self], z: &[Self], g: &mut [Self]) -> bool;
    /// `f64` sums as this type's values, where they are the same type (for `f64`, so that a
    /// block's `G` is added to them by its product).
    fn as_sums(sums: &mut [f64]) -> Option<&mut [Self]>;
}

/// `y <- g(y)`, `b[i] += g'(y_i)` for `eval(u) = (g(u), g'(u))`, `W` values at a time, the
/// derivatives summed as `S` values a step would sum them.
///
/// `S` independent values per step (four or more vectors) let their long dependency chains
/// (reduction, polynomial, division) overlap: one vector at a time is bound by latency, and
/// the contrast alone was then half of a one-thread iteration at 1e6 x 8 (a standalone loop
/// while profiling: 3.1 against 2.4 ns a value for `f64` on the AVX2 path; the `contrast` bench
/// has the block pass's figure). Where `k` divides `S`, a step spans several rows,
/// whose derivatives are summed per position and added to `b` at the end; otherwise each row
/// is cut into steps and a tail. The order of additions depends on `k`, `S` and the block only:
/// the AVX-512 instance takes steps of `W = 2 S` (four of its wider vectors) but adds into the
/// same `S` sums in the same order, so its bits are the AVX2 instance's.
/// Each wide step also asks for the cache lines of `ahead` at the step's offset ([`prefetch`]).
/// `eval` must be an `#[inline(always)]` closure, or it is compiled outside the caller's AVX2
/// instance.
///
/// Returns whether every value of `y` was finite, looked for as each value is read: a separate
/// scan of the block (in the cache after its product) was 1.8 % of a one-thread iteration at
/// 2e4 x 256.
#[inline(always)]
fn each_value<T: BlockFloat, const S: usize, const W: usize>(
    y: &mut [T],
    b: &mut [T],
    k: usize,
    ahead: &[T],
    eval: impl Fn(T) -> (T, T),
) -> bool {
    const { assert!(W.is_multiple_of(S)) };
    let mut finite = true;
    if k < S && S.is_multiple_of(k) {
        let mut sums = [T::ZERO; S];
        let mut wide = y.chunks_exact_mut(W);
        for (i, step) in (&mut wide).enumerate() {
            prefetch(ahead, i * W, W);
            finite &= each_in_step::<T, W, S>(step, &mut sums, &eval);
        }
        let mut steps = wide.into_remainder().chunks_exact_mut(S);
        for step in &mut steps {
            finite &= each_in_step::<T, S, S>(step, &mut sums, &eval);
        }
        // What is left is whole rows (k divides S and the block).
        for row in steps.into_remainder().chunks_exact_mut(k) {
            for (v, b) in row.iter_mut().zip(b.iter_mut()) {
                finite &= v.is_finite();
                let (g, d) = eval(*v);
                *v = g;
                *b += d;
            }
        }
        for (i, s) in sums.iter().enumerate() {
            b[i % k] += *s;
        }
    } else {
        // Each position of `b` takes one term per row, in row order, however the row is cut.
        for (r, row) in y.chunks_exact_mut(k).enumerate() {
            let (mut wide, mut bw) = (row.chunks_exact_mut(W), b.chunks_exact_mut(W));
            for (i, (step, bs)) in (&mut wide).zip(&mut bw).enumerate() {
                prefetch(ahead, r * k + i * W, W);
                finite &= each_in_step::<T, W, W>(step, bs, &eval);
            }
            let (row, b) = (wide.into_remainder(), bw.into_remainder());
            let (mut steps, mut bs) = (row.chunks_exact_mut(S), b.chunks_exact_mut(S));
            for (step, bs) in (&mut steps).zip(&mut bs) {
                finite &= each_in_step::<T, S, S>(step, bs, &eval);
            }
            let tail = steps.into_remainder().iter_mut();
            for (v, b) in tail.zip(bs.into_remainder()) {
                finite &= v.is_finite();
                let (g, d) = eval(*v);
                *v = g;
                *b += d;
            }
        }
    }
    finite
}

/// Asks for the cache lines of `ahead[at..at + len]` (the part of it that exists) to be loaded
/// into the L2 cache, without waiting for them. While a block's contrast computes, the next
/// block's rows arrive: read only when that block was checked, they stalled a one-thread
/// iteration at 1e6 x 8 for a third of its time (64 MB a pass at 10 GB/s). A prefetch changes
/// no value. (Into L1 instead measured the same.)
#[inline(always)]
fn prefetch<T>(ahead: &[T], at: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(part) = ahead.get(at..(at + len).min(ahead.len())) {
        use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
        let p = part.as_ptr().cast::<i8>();
        for offset in (0..std::mem::size_of_val(part)).step_by(64) {
            // SAFETY: the address is inside `part`; a prefetch neither faults nor writes.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ahead, at, len);
}

/// One step of [`each_value`]: all `W` values evaluated, then stored, and their derivatives
/// added to the `S` sums in order (`sums[i] += d[i]`, then `d[S + i]`, ...); whether all `W`
/// were finite.
#[inline(always)]
fn each_in_step<T: BlockFloat, const W: usize, const S: usize>(
    step: &mut [T],
    sums: &mut [T],
    eval: &impl Fn(T) -> (T, T),
) -> bool {
    let (mut g, mut d) = ([T::ZERO; W], [T::ZERO; W]);
    let mut finite = true;
    for i in 0..W {
        finite &= step[i].is_finite();
        (g[i], d[i]) = eval(step[i]);
    }
    step[..W].copy_from_slice(&g);
    for part in d.chunks_exact(S) {
        for (s, d) in sums[..S].iter_mut().zip(part) {
            *s += *d;
        }
    }
    finite
}

impl BlockFloat for f32 {
    #[inline(always)]
    fn contrast(c: ContrastKind, y: &mut [f32], b: &mut [f32], k: usize, ahead: &[f32]) -> bool {
        contrast::<f32, 32, 64>(c, y, b, k, ahead) // four vectors a step: AVX2's 8 or AVX-512's 16
    }
    #[inline(always)]
    fn fused_tanh(x: f32) -> f32 {
        vmath::tanh_f32(x)
    }
    #[inline(always)]
    fn fused_exp_nonpositive(x: f32) -> f32 {
        vmath::exp_nonpositive_f32(x)
    }
    #[inline(always)]
    fn unmix8(wt: &[f32], z: &[f32], y: &mut [f32]) -> bool {
        small8::unmix_f32(wt, z, y)
    }
    #[inline(always)]
    fn gram8(y: &[f32], z: &[f32], g: &mut [f32]) -> bool {
        small8::gram_f32(y, z, g)
    }
    #[inline(always)]
    fn as_sums(_: &mut [f64]) -> Option<&mut [f32]> {
        None
    }
}

impl BlockFloat for f64 {
    #[inline(always)]
    fn contrast(c: ContrastKind, y: &mut [f64], b: &mut [f64], k: usize, ahead: &[f64]) -> bool {
        contrast::<f64, 16, 32>(c, y, b, k, ahead) // four vectors a step: AVX2's 4 or AVX-512's 8
    }
    #[inline(always)]
    fn fused_tanh(x: f64) -> f64 {
        vmath::tanh(x)
    }
    #[inline(always)]
    fn fused_exp_nonpositive(x: f64) -> f64 {
        vmath::exp_nonpositive(x)
    }
    #[inline(always)]
    fn unmix8(wt: &[f64], z: &[f64], y: &mut [f64]) -> bool {
        small8::unmix(wt, z, y)
    }
    #[inline(always)]
    fn gram8(y: &[f64], z: &[f64], g: &mut [f64]) -> bool {
        small8::gram(y, z, g)
    }
    #[inline(always)]
    fn as_sums(sums: &mut [f64]) -> Option<&mut [f64]> {
        Some(sums)
    }
}

/// The contrast of a block in the data's type, one loop along each row, the derivatives summed
/// as they are made (no block of them written and read back), `S` values a step
/// ([`each_value`]). Where the CPU has fused multiply-adds, [`in_type`] with `tanh` and `exp` at
/// half the core's work ([`crate::vmath`]), on AVX-512 registers where the CPU has them (`W`
/// values a step, the same bits); without them, the core's own contrasts, in
/// [`Sum`](unmix::float::Sum).
#[inline(always)]
fn contrast<T: BlockFloat, const S: usize, const W: usize>(
    c: ContrastKind,
    y: &mut [T],
    b: &mut [T],
    k: usize,
    ahead: &[T],
) -> bool {
    if fused_multiply_add() {
        #[cfg(target_arch = "x86_64")]
        return if uses_avx512() {
            // SAFETY: `uses_avx512` detected AVX-512 F, VL and DQ, AVX2 and FMA.
            unsafe { in_type_avx512::<T, S, W>(c, y, b, k, ahead) }
        } else {
            // SAFETY: on x86-64 `fused_multiply_add` is `uses_avx2`: AVX2 and FMA were
            // detected.
            unsafe { in_type_avx2::<T, S>(c, y, b, k, ahead) }
        };
        #[cfg(not(target_arch = "x86_64"))]
        return in_type::<T, S, S>(c, y, b, k, ahead);
    }
    match c {
        ContrastKind::LogCosh(c) => via_core::<T, S>(c, y, b, k, ahead),
        ContrastKind::Exp => via_core::<T, S>(Exp, y, b, k, ahead),
        ContrastKind::Cube => via_core::<T, S>(Cube, y, b, k, ahead),
    }
}

/// The contrast computed in `T` (the core's three, `unmix::ica::contrast`), `tanh` and `exp`
/// from [`BlockFloat`].
#[inline(always)]
fn in_type<T: BlockFloat, const S: usize, const W: usize>(
    c: ContrastKind,
    y: &mut [T],
    b: &mut [T],
    k: usize,
    ahead: &[T],
) -> bool {
    let (one, half, three) = (T::from_f64(1.0), T::from_f64(0.5), T::from_f64(3.0));
    match c {
        // At scikit-learn's default alpha = 1, without the two products by alpha (exact then, so
        // the same bits).
        ContrastKind::LogCosh(c) if c.alpha() == 1.0 => each_value::<_, S, W>(
            y,
            b,
            k,
            ahead,
            #[inline(always)]
            |u| {
                let t = T::fused_tanh(u);
                (t, one - t * t)
            },
        ),
        ContrastKind::LogCosh(c) => {
            let alpha = T::from_f64(c.alpha());
            each_value::<_, S, W>(
                y,
                b,
                k,
                ahead,
                #[inline(always)]
                |u| {
                    let t = T::fused_tanh(alpha * u);
                    (t, alpha * (one - t * t))
                },
            )
        }
        ContrastKind::Exp => each_value::<_, S, W>(
            y,
            b,
            k,
            ahead,
            #[inline(always)]
            |u| {
                let u2 = u * u;
                let e = T::fused_exp_nonpositive(-(half * u2));
                (u * e, (one - u2) * e)
            },
        ),
        ContrastKind::Cube => each_value::<_, S, W>(
            y,
            b,
            k,
            ahead,
            #[inline(always)]
            |u| {
                let u2 = u * u;
                (u2 * u, three * u2)
            },
        ),
    }
}

/// [`in_type`] compiled for AVX2 and FMA whatever instance the caller was compiled into: a
/// `mul_add` compiled without FMA is a call into the C library (an f32 fit at 1e5 x 64 took 221
/// instead of 38 ms an iteration when a closure around the block was not inlined into the AVX2
/// instance).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn in_type_avx2<T: BlockFloat, const S: usize>(
    c: ContrastKind,
    y: &mut [T],
    b: &mut [T],
    k: usize,
    ahead: &[T],
) -> bool {
    in_type::<T, S, S>(c, y, b, k, ahead)
}

/// [`in_type`] compiled for AVX-512, `W` values a step: the same operations on each value and
/// the same sums as [`in_type_avx2`], so the same bits (tested below), on registers twice as
/// wide (at 1e6 x 8 the contrast was two thirds of a one-thread iteration on the AVX2 path).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
fn in_type_avx512<T: BlockFloat, const S: usize, const W: usize>(
    c: ContrastKind,
    y: &mut [T],
    b: &mut [T],
    k: usize,
    ahead: &[T],
) -> bool {
    in_type::<T, S, W>(c, y, b, k, ahead)
}

/// The core's contrast `c` on each value, in [`Sum`](unmix::float::Sum): the path without
/// fused multiply-adds (for `f64`, the core's bits).
#[inline(always)]
fn via_core<T: BlockFloat, const S: usize>(
    c: impl Contrast,
    y: &mut [T],
    b: &mut [T],
    k: usize,
    ahead: &[T],
) -> bool {
    each_value::<_, S, S>(
        y,
        b,
        k,
        ahead,
        #[inline(always)]
        |u| {
            let (g, d) = c.eval(u.to_sum());
            (T::from_sum(g), T::from_sum(d))
        },
    )
}

impl<T: GemmFloat> Fast<T> {
    /// Adds the rows `z` (from row `first` of the pass) to `partial`. From [`SPLIT_MIN_K`]
    /// components the rows of each chunk's first and second [`HALF_CHUNK`] are summed into the
    /// partial's two regions, which `merge` adds in order; a piece with rows in both runs the
    /// two under [`crate::simd::join_fastest`], so an idle thread of the pool takes one.
    #[inline(always)]
    fn accumulate(&self, partial: &mut [f64], first: u64, z: &[T]) -> Result<()> {
        if self.regions == 1 {
            return self.in_scratch(partial, first, z);
        }
        let found = partial.len();
        let Some((pa, pb)) = self.regions(partial) else {
            return Err(Error::BufferTooSmall {
                needed: 2 * region_len(self.k),
                found,
            });
        };
        let k = self.k;
        let middle = first - first % CHUNK as u64 + HALF_CHUNK as u64;
        let before = usize::try_from(middle.saturating_sub(first))
            .unwrap_or(usize::MAX)
            .min(z.len() / k);
        let (za, zb) = z.split_at(before * k);
        let second = first + before as u64;
        if za.is_empty() {
            return self.in_scratch(pb, second, zb);
        }
        if zb.is_empty() {
            return self.in_scratch(pa, first, za);
        }
        let (a, b) = crate::simd::join_fastest(
            #[inline(always)]
            || self.in_scratch(pa, first, za),
            #[inline(always)]
            || self.in_scratch(pb, second, zb),
        );
        a.and(b)
    }

    /// `partial`'s two regions, where it has two ([`BlockPass::regions`]).
    fn regions<'a>(&self, partial: &'a mut [f64]) -> Option<(&'a mut [f64], &'a mut [f64])> {
        let len = region_len(self.k);
        (self.regions == 2 && partial.len() >= 2 * len)
            .then(|| partial[..2 * len].split_at_mut(len))
    }

    /// [`Self::run_blocks`] on one region of `partial` (its start), in this thread's block
    /// buffers: where every way in ([`Pass::accumulate`], [`BlockPass::accumulate_region`])
    /// checks the rows and the region.
    #[inline(always)]
    fn in_scratch(&self, partial: &mut [f64], first: u64, z: &[T]) -> Result<()> {
        let k = self.k;
        if !z.len().is_multiple_of(k) {
            return Err(Error::DimensionMismatch {
                expected: z.len().next_multiple_of(k),
                found: z.len(),
            });
        }
        let found = partial.len();
        let Some(partial) = partial.get_mut(..region_len(k)) else {
            return Err(Error::BufferTooSmall {
                needed: region_len(k),
                found,
            });
        };
        // No closure around the blocks: a closure not inlined would be compiled outside the
        // caller's AVX2 instance.
        let mut block = take_scratch(|b: &Block<T>| b.b.len() == k, || Block::new(k));
        let result = self.run_blocks(partial, first, z, &mut block);
        put_scratch(block);
        result
    }

    /// Each block's sums go straight into the partial, in row order, so that the additions are
    /// the same however the chunk's rows arrive (whole or in pieces). Non-finite values are
    /// looked for in each block's `Y` by the contrast as it reads it, not in the rows: checked
    /// first, the rows came from memory there (4 % of a one-thread iteration at 2e4 x 256, 3.5
    /// of 92.6 ms), and a separate scan of the chunk read them from memory twice (6 % at
    /// 1e6 x 8); only a block that fails has its rows searched, for the error's position.
    #[inline(always)]
    fn run_blocks(
        &self,
        partial: &mut [f64],
        first: u64,
        z: &[T],
        block: &mut Block<T>,
    ) -> Result<()> {
        let k = self.k;
        for (index, zb) in z.chunks(BLOCK_ROWS * k).enumerate() {
            // The next block's rows, asked into the cache during this block's contrast.
            let next = z.get((index + 1) * BLOCK_ROWS * k..).unwrap_or(&[]);
            let next = &next[..next.len().min(BLOCK_ROWS * k)];
            if !block.run(self, zb, next, partial) {
                // A non-finite value of `Z` makes its row of `Y` non-finite; a finite `Z`
                // whose `Y` is not has overflowed.
                return Err(match crate::simd::first_non_finite(zb) {
                    Some(pos) => Error::NonFinite {
                        row: first + (index * BLOCK_ROWS + pos / k) as u64,
                        col: pos % k,
                    },
                    None => Error::Overflow,
                });
            }
            block.add_to(partial, zb.len() / k);
        }
        Ok(())
    }
}

thread_local! {
    /// The buffers of this thread's last pass (a [`Block`] or a [`FoldScratch`]), kept between
    /// calls: a pass calls `accumulate` once per chunk (or per 1024-row piece), and fresh buffers
    /// each time (1.5 MB a block at k = 256) cost page faults and zeroing on the hot path.
    static SCRATCH: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// This thread's buffers of type `S`, taken out of its slot if they are `S` and `fit`, else
/// `new`: a call nested by work stealing (this thread running another chunk while it waits in
/// `rayon::join`) finds the slot empty and allocates its own, so buffers are never shared.
fn take_scratch<S: Any>(fit: impl FnOnce(&S) -> bool, new: impl FnOnce() -> S) -> Box<S> {
    SCRATCH
        .with(|slot| slot.borrow_mut().take())
        .and_then(|b| b.downcast::<S>().ok())
        .filter(|s| fit(s))
        .unwrap_or_else(|| Box::new(new()))
}

/// Puts buffers back into this thread's slot for the next call.
fn put_scratch<S: Any>(scratch: Box<S>) {
    SCRATCH.with(|slot| *slot.borrow_mut() = Some(scratch));
}

/// Scratch and results of one block: `y` (then `g(y)`), `G` and `b`.
struct Block<T> {
    y: Vec<T>,
    g: Vec<T>,
    b: Vec<T>,
    /// Whether the last [`Block::run`] added `G` to the region itself.
    g_added: bool,
}

impl<T: GemmFloat> Block<T> {
    fn new(k: usize) -> Self {
        Self {
            y: vec![T::ZERO; BLOCK_ROWS * k],
            g: vec![T::ZERO; k * k],
            b: vec![T::ZERO; k],
            g_added: false,
        }
    }

    /// `G = g(Z W')' Z` and `b = sum g'(Z W')` over the rows `z` (`nb x k`), asking for the
    /// rows `ahead` (the next block's) meanwhile; `false`, and `G` not computed, when
    /// `Y = Z W'` has a non-finite value (the contrast looks for one as it reads `Y`). In `f64`
    /// off the 8-component kernel the product adds `G` to the region's `G` itself (`region`,
    /// [`region_len`]) and [`Self::add_to`] adds the rest: one addition per entry, as `add_to`
    /// makes, without writing `G` and reading it back (2 % of a one-thread iteration at
    /// 2e4 x 256).
    #[inline(always)]
    fn run(&mut self, fast: &Fast<T>, z: &[T], ahead: &[T], region: &mut [f64]) -> bool {
        let k = fast.k;
        let nb = z.len() / k;
        let y = &mut self.y[..nb * k];
        let small = k == small8::K;
        // Y = Z W' (nb x k): A = Z (row stride k), B = W' (row-major `wt`).
        if !(small && T::unmix8(&fast.wt, z, y)) {
            gemm(nb, k, k, z, (k, 1), &fast.wt, (k, 1), y, k, false);
        }
        self.b.fill(T::ZERO);
        if !T::contrast(fast.contrast, y, &mut self.b, k, ahead) {
            return false;
        }
        // G = g(Y)' Z (k x k): A = g(Y)' (element (i, r) = y[r k + i]), B = Z (row stride k).
        self.g_added = false;
        if !(small && T::gram8(y, z, &mut self.g)) {
            match T::as_sums(&mut region[1..1 + k * k]) {
                Some(sums) => {
                    gemm(k, nb, k, y, (1, k), z, (k, 1), sums, k, true);
                    self.g_added = true;
                }
                None => gemm(k, nb, k, y, (1, k), z, (k, 1), &mut self.g, k, false),
            }
        }
        true
    }

    /// Adds this block's `G` (unless its product did), `b` and `rows` to `region`, in `f64`.
    fn add_to(&self, region: &mut [f64], rows: usize) {
        let k = self.b.len();
        region[0] += rows as f64;
        let (g, b) = region[1..region_len(k)].split_at_mut(k * k);
        if !self.g_added {
            for (t, s) in g.iter_mut().zip(&self.g) {
                *t += s.to_f64();
            }
        }
        for (t, s) in b.iter_mut().zip(&self.b) {
            *t += s.to_f64();
        }
    }
}

/// The parallel pass over rows that are not stored white, with the whitening folded in: in each
/// block of centred input rows `X`, `Y = X (W V)'` and `G_X = g(Y)' X` (`k x d`), and once per
/// chunk `G = G_X V'`. Per row that is `2 k d` multiply-adds against `k d + 2 k^2` for
/// whitening the row again and then the pass: a third fewer at `k = d` (at 2e4 x 256, where a
/// quarter of the white rows fit the memory bound, whitening the others again was a sixth of
/// an iteration's products).
///
/// `Z = V X` and `G = g(Y) Z'` carry the same rounding relative to their size either way: both
/// products see `V`'s conditioning once. The chunk's sums are added to the partial as one
/// block's are, so the bits do not depend on the thread count.
pub struct Folded<T> {
    k: usize,
    d: usize,
    contrast: ContrastKind,
    mean: Vec<T>,
    /// `(W V)'` (`d x k`, row-major), the layout of `wt` ([`Fast`]).
    wvt: Vec<T>,
    /// The whitening `V` (`k x d`), for `G = G_X V'` in `f64`.
    v: Vec<f64>,
}

impl<T: GemmFloat, P: Pass<T>> BlockPass<'_, P, T> {
    /// The pass with the whitening `v` (`k x d`, applied after subtracting `mean`) folded in,
    /// when it is a block pass ([`crate::fastica::folds_whitening`] says when to take it).
    pub fn folded(&self, mean: &[T], v: &[T], d: usize) -> Option<Folded<T>> {
        let fast = self.fast.as_ref()?;
        let k = fast.k;
        if v.len() != k * d || mean.len() != d {
            return None;
        }
        let v: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
        let mut wv64 = vec![0.0; k * d];
        gemm(
            k,
            k,
            d,
            &fast.w_sum,
            (k, 1),
            &v,
            (d, 1),
            &mut wv64,
            d,
            false,
        );
        let wvt = transposed(&wv64, k, d, T::from_f64);
        Some(Folded {
            k,
            d,
            contrast: fast.contrast,
            mean: mean.to_vec(),
            wvt,
            v,
        })
    }
}

impl<T: GemmFloat> Folded<T> {
    /// Adds the pass over the input rows `x` (`d` wide, one chunk at most) to `partial`; rows
    /// stored in a narrower type `S` are widened as they are centred.
    #[inline(always)]
    pub fn accumulate<S: Widens<T>>(&self, partial: &mut [f64], x: &[S]) -> Result<()> {
        let (k, d) = (self.k, self.d);
        if !x.len().is_multiple_of(d) {
            return Err(Error::DimensionMismatch {
                expected: x.len().next_multiple_of(d),
                found: x.len(),
            });
        }
        let mut scratch = take_scratch(
            |s: &FoldScratch<T>| s.gx.len() == k * d && s.g.len() == k * k + k,
            || FoldScratch {
                blocks: [FoldBlock::new(k, d), FoldBlock::new(k, d)],
                gx: vec![0.0; k * d],
                g: vec![0.0; k * k + k],
            },
        );
        let result = self.run_blocks(partial, x, &mut scratch);
        put_scratch(scratch);
        result
    }

    #[inline(always)]
    fn run_blocks<S: Widens<T>>(
        &self,
        partial: &mut [f64],
        x: &[S],
        s: &mut FoldScratch<T>,
    ) -> Result<()> {
        let (k, d) = (self.k, self.d);
        let half = BLOCK_ROWS / 2;
        let (gx, g) = (&mut s.gx, &mut s.g);
        gx.fill(0.0);
        g[k * k..].fill(0.0);
        for xb in x.chunks(BLOCK_ROWS * d) {
            let nb = xb.len() / d;
            if k >= SPLIT_MIN_K && nb > half {
                let (xa, xc) = xb.split_at(half * d);
                let [a, c] = &mut s.blocks;
                let (ra, rc) = crate::simd::join_fastest(
                    #[inline(always)]
                    || a.run(self, xa),
                    #[inline(always)]
                    || c.run(self, xc),
                );
                ra?;
                rc?;
                a.add_to(gx, &mut g[k * k..]);
                c.add_to(gx, &mut g[k * k..]);
            } else {
                s.blocks[0].run(self, xb)?;
                s.blocks[0].add_to(gx, &mut g[k * k..]);
            }
        }
        // G = G_X V' (k x k): B = V' read from the k x d row-major V.
        gemm(
            k,
            d,
            k,
            gx,
            (d, 1),
            &self.v,
            (1, d),
            &mut g[..k * k],
            k,
            false,
        );
        let (g, b) = g.split_at(k * k);
        add_parallel_sums(partial, k, (x.len() / d) as u64, g, b)
    }
}

/// A thread's buffers for [`Folded`]: two blocks (a block's halves) and the chunk's `f64` sums
/// (`G_X`, then `G` and `b`).
struct FoldScratch<T> {
    blocks: [FoldBlock<T>; 2],
    gx: Vec<f64>,
    g: Vec<f64>,
}

/// One block of [`Folded`]: the centred rows, `Y` (then `g(Y)`), `G_X` and `b`.
struct FoldBlock<T> {
    x: Vec<T>,
    y: Vec<T>,
    gx: Vec<T>,
    b: Vec<T>,
}

impl<T: GemmFloat> FoldBlock<T> {
    fn new(k: usize, d: usize) -> Self {
        Self {
            x: vec![T::ZERO; BLOCK_ROWS * d],
            y: vec![T::ZERO; BLOCK_ROWS * k],
            gx: vec![T::ZERO; k * d],
            b: vec![T::ZERO; k],
        }
    }

    /// `G_X = g(X (W V)')' X` and `b = sum g'(X (W V)')` over the centred rows `x` (`nb x d`).
    #[inline(always)]
    fn run<S: Widens<T>>(&mut self, f: &Folded<T>, x: &[S]) -> Result<()> {
        let (k, d) = (f.k, f.d);
        let nb = x.len() / d;
        let xc = &mut self.x[..nb * d];
        for (crow, row) in xc.chunks_exact_mut(d).zip(x.chunks_exact(d)) {
            for ((c, v), mu) in crow.iter_mut().zip(row).zip(&f.mean) {
                *c = v.widen() - *mu;
            }
        }
        let y = &mut self.y[..nb * k];
        let small = k == small8::K && d == small8::K;
        if !(small && T::unmix8(&f.wvt, xc, y)) {
            gemm(nb, d, k, xc, (d, 1), &f.wvt, (k, 1), y, k, false);
        }
        self.b.fill(T::ZERO);
        if !T::contrast(f.contrast, y, &mut self.b, k, &[]) {
            // What whitening these rows would have reported.
            return Err(Error::Overflow);
        }
        if !(small && T::gram8(y, xc, &mut self.gx)) {
            gemm(k, nb, d, y, (1, k), xc, (d, 1), &mut self.gx, d, false);
        }
        Ok(())
    }

    /// Adds this block's `G_X` and `b` to the chunk's `f64` sums.
    fn add_to(&self, gx: &mut [f64], b: &mut [f64]) {
        for (s, v) in gx.iter_mut().zip(&self.gx) {
            *s += v.to_f64();
        }
        for (s, v) in b.iter_mut().zip(&self.b) {
            *s += v.to_f64();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unmix::ica::LogCosh;

    /// The three contrasts, log-cosh at the default alpha (its own path) and at another.
    fn every_contrast() -> [ContrastKind; 4] {
        [
            ContrastKind::LogCosh(LogCosh::new(1.0).unwrap()),
            ContrastKind::LogCosh(LogCosh::new(1.7).unwrap()),
            ContrastKind::Exp,
            ContrastKind::Cube,
        ]
    }

    /// A chunk's rows given whole, or in pieces of whole blocks (some cutting across the middle
    /// of the chunk, where the second region starts), give the same partial, bit for bit: at
    /// k = 64 (two regions) and k = 8 (one), in `f64` (`G` added by the product) and `f32`.
    #[test]
    fn a_chunk_in_pieces_has_the_bits_of_the_whole_chunk() {
        fn check<T: GemmFloat>(k: usize) {
            let z: Vec<T> = (0..CHUNK * k)
                .map(|i| T::from_f64(((i * 7919 % 2003) as f64 - 1001.0) / 400.0))
                .collect();
            let w: Vec<f64> = (0..k * k)
                .map(|i| {
                    ((i * 31 % 17) as f64 - 8.0) / (8.0 * k as f64) + f64::from(i % (k + 1) == 0)
                })
                .collect();
            let contrast = LogCosh::new(1.0).unwrap();
            let kernel = crate::simd::CliKernel::for_this_cpu();
            let inner = unmix::ica::ParallelPass::new(&w, k, &contrast, kernel).unwrap();
            let pass = BlockPass::new(&inner);
            let first = 3 * CHUNK; // a later chunk: rows are placed from their own number
            let mut whole = vec![0.0; pass.partial_len()];
            pass.accumulate(&mut whole, first as u64, &z).unwrap();
            assert!(whole.iter().any(|v| *v != 0.0));
            for piece in [BLOCK_ROWS, 3 * BLOCK_ROWS, 5 * BLOCK_ROWS, 1024] {
                let mut parts = vec![0.0; pass.partial_len()];
                for (i, rows) in z.chunks(piece * k).enumerate() {
                    pass.accumulate(&mut parts, (first + i * piece) as u64, rows)
                        .unwrap();
                }
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&parts), bits(&whole), "k {k}, pieces of {piece} rows");
            }
        }
        for k in [8, 64] {
            check::<f64>(k);
            check::<f32>(k);
        }
    }

    /// A NaN or an infinity among the rows is reported at its row and column of the pass, and
    /// an unmixing that overflows on finite rows as an overflow: found by the contrast as it
    /// reads `Y` (no separate scan), in every part of its loop (steps spanning several rows at
    /// k = 8, whole steps at k = 64, steps and tails at k = 40), for each contrast and type. An
    /// infinity matters: `tanh` of it is finite.
    #[test]
    fn non_finite_rows_and_overflow_are_reported_where_they_are() {
        if portable_requested() {
            eprintln!("SKIPPED block pass checks: UNMIX_SIMD=portable takes the core's pass");
            return;
        }
        fn check<T: GemmFloat>(k: usize, c: ContrastKind) {
            let rows = 3 * BLOCK_ROWS + 17;
            let z: Vec<T> = (0..rows * k)
                .map(|i| T::from_f64(((i * 7919 % 2003) as f64 - 1001.0) / 700.0))
                .collect();
            let w: Vec<f64> = (0..k * k)
                .map(|i| f64::from(i % (k + 1) == 0) + ((i * 31 % 17) as f64 - 8.0) / 100.0)
                .collect();
            let kernel = crate::simd::CliKernel::for_this_cpu();
            let first = 5 * CHUNK as u64;
            let pass_on = |w: &[f64], z: &[T]| -> Result<()> {
                macro_rules! with {
                    ($contrast:expr) => {{
                        let inner = unmix::ica::ParallelPass::new(w, k, &$contrast, kernel)?;
                        let pass = BlockPass::new(&inner);
                        assert!(pass.fast.is_some());
                        pass.accumulate(&mut vec![0.0; pass.partial_len()], first, z)
                    }};
                }
                match c {
                    ContrastKind::LogCosh(l) => with!(l),
                    ContrastKind::Exp => with!(Exp),
                    ContrastKind::Cube => with!(Cube),
                }
            };
            pass_on(&w, &z).unwrap();
            let positions = [
                (0, 0),
                (BLOCK_ROWS - 1, k - 1),
                (BLOCK_ROWS + 3, k / 2),
                (rows - 1, k - 1),
            ];
            for (row, col) in positions {
                for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    let mut zb = z.clone();
                    zb[row * k + col] = T::from_f64(bad);
                    let err = pass_on(&w, &zb).unwrap_err();
                    let want = Error::NonFinite {
                        row: first + row as u64,
                        col,
                    };
                    assert_eq!(err, want, "k {k} {c:?}: {bad} at ({row}, {col})");
                }
            }
            // Finite rows whose unmixing overflows in one value: a large row against a large
            // weight on the diagonal (the row's other values stay finite), so that each part of
            // the contrast's loop must find it.
            let big = if size_of::<T>() == 4 { 1e30 } else { 1e300 };
            for (row, col) in positions {
                let mut zb = z.clone();
                zb[row * k..][..k].fill(T::from_f64(big));
                let mut wb = w.clone();
                wb[col * k + col] = big;
                let err = pass_on(&wb, &zb).unwrap_err();
                assert_eq!(err, Error::Overflow, "k {k} {c:?}: ({row}, {col})");
            }
        }
        for c in every_contrast() {
            for k in [8, 40, 64] {
                check::<f64>(k, c);
                check::<f32>(k, c);
            }
        }
    }

    /// The AVX-512 instance of the contrast against the AVX2 one, bit for bit: `g(y)` and the
    /// derivative sums, for the three contrasts, in `f64` and `f32`, at every `k` from 1 to 40
    /// and some wider, on blocks whose row counts leave every kind of tail.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_contrast_has_the_avx2_bits() {
        if !crate::simd::uses_avx2() || !uses_avx512() {
            eprintln!("SKIPPED contrast instances: no AVX-512 here");
            return;
        }
        fn check<T: BlockFloat, const S: usize, const W: usize>(c: ContrastKind, k: usize) {
            for rows in [1, 3, 7, 64, 255] {
                let y: Vec<T> = (0..rows * k)
                    .map(|i| T::from_f64(((i * 7919 % 2001) as f64 - 1000.0) / 180.0))
                    .collect();
                let b0: Vec<T> = (0..k).map(|i| T::from_f64(i as f64 / 3.0)).collect();
                let (mut y2, mut b2) = (y.clone(), b0.clone());
                let ahead = y.clone();
                let (mut y5, mut b5) = (y, b0);
                // SAFETY: `uses_avx512` checked AVX-512 F, VL and DQ, AVX2 and FMA.
                unsafe {
                    in_type_avx2::<T, S>(c, &mut y2, &mut b2, k, &[]);
                    in_type_avx512::<T, S, W>(c, &mut y5, &mut b5, k, &ahead);
                }
                let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y2), bits(&y5), "{c:?} k {k} rows {rows}: g(y)");
                assert_eq!(bits(&b2), bits(&b5), "{c:?} k {k} rows {rows}: sums");
            }
        }
        for c in every_contrast() {
            for k in (1..=40).chain([48, 63, 64, 65, 96, 256]) {
                check::<f64, 16, 32>(c, k);
                check::<f32, 32, 64>(c, k);
            }
        }
    }
}
