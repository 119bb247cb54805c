//! Run-time selection of wider vector instructions for the core's hot loops.
//!
//! The core is compiled for the baseline of its target (SSE2 on x86-64) so that it runs on every
//! CPU and in firmware. Its loops are written to vectorise, and Rust's floating point is strict
//! IEEE (no reassociation, no contraction into fused multiply-adds), so compiling the same code
//! for AVX2 changes the speed, never the bits. [`fastest`] runs a closure compiled for AVX2 when
//! the CPU has it. Setting `UNMIX_SIMD=portable` forces the baseline build; `tests/simd.rs`
//! checks that both give the same bytes.

use crate::widen::Widens;
use std::sync::OnceLock;
use unmix::ica::{Kernel, Portable};

/// Runs `f`, compiled for AVX2 when this CPU supports it (and `UNMIX_SIMD` is not `portable`),
/// else as compiled.
///
/// `f` should call generic or `#[inline]` core code (the FastICA passes, the whitening
/// transform, the moments) so that it is compiled into the AVX2 instance, not called out of line.
#[inline(always)]
pub fn fastest<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if uses_avx2() {
            // SAFETY: `avx2` only requires the CPU to support AVX2 and FMA, which `uses_avx2`
            // checked.
            return unsafe { avx2(f) };
        }
    }
    f()
}

/// `a` and `b` under [`rayon::join`] when this is a thread of a rayon pool (so that an idle
/// thread of that pool can take one), else one after the other here: called outside a pool,
/// `rayon::join` would hand the work to rayon's global pool, as many threads as cores whatever
/// `--threads` asked. The halves are the same computations either way, so are the bits.
#[inline(always)]
pub fn join_in_pool<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if rayon::current_thread_index().is_some() {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

/// `a` and `b` under [`join_in_pool`] (the two halves of a block), each run by [`fastest`].
///
/// Pass `#[inline(always)]` closures: each side of a join is its own function, outside the
/// caller's AVX2 instance, and a closure not inlined into [`fastest`]'s runs the contrast on the
/// baseline's two lanes with every `mul_add` of `vmath` a library call (an f32 fit at 1e5 x 64
/// took 221 instead of 38 ms an iteration).
#[inline(always)]
pub fn join_fastest<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    join_in_pool(|| fastest(a), || fastest(b))
}

/// The index of the first NaN or infinity in `v`. Each group of 32 values is checked without a
/// branch, so that the check vectorises, and only a group that fails is searched: a search that
/// stops at every value ([`Iterator::position`]) runs one value a cycle (1.4 % of a fit at
/// 2e4 x 256, on each block of the pass).
#[inline(always)]
pub fn first_non_finite<T: unmix::Float>(v: &[T]) -> Option<usize> {
    const GROUP: usize = 32;
    let mut groups = v.chunks_exact(GROUP);
    let failed = |g: &[T]| !g.iter().fold(true, |ok, x| ok & x.is_finite());
    for (i, g) in (&mut groups).enumerate() {
        if failed(g) {
            return g.iter().position(|x| !x.is_finite()).map(|p| i * GROUP + p);
        }
    }
    let rest = groups.remainder();
    let start = v.len() - rest.len();
    rest.iter().position(|x| !x.is_finite()).map(|p| start + p)
}

/// Whether [`fastest`] takes the AVX2 path (AVX2 and FMA) in this process.
pub fn uses_avx2() -> bool {
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| {
        let portable = portable_requested();
        #[cfg(target_arch = "x86_64")]
        {
            !portable
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = portable;
            false
        }
    })
}

/// Whether the block pass's contrast and its 8-component products take their AVX-512 instances
/// ([`crate::blocks`], [`crate::small8`]): [`uses_avx2`] and AVX-512 F, VL and DQ. They compute
/// the same operations in the same order on wider registers, so the bits are the AVX2 path's.
pub fn uses_avx512() -> bool {
    static AVX512: OnceLock<bool> = OnceLock::new();
    *AVX512.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            uses_avx2()
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512dq")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Whether code run by [`fastest`] has fused multiply-add instructions, so that
/// [`f64::mul_add`] is one instruction rather than a library call: x86-64 in the AVX2 instance,
/// and AArch64 always.
pub fn fused_multiply_add() -> bool {
    cfg!(target_arch = "aarch64") || uses_avx2()
}

// FMA is enabled beside AVX2 for the explicit `mul_add`s of `crate::vmath` only: Rust never
// fuses a separate multiply and add, so the core's code compiled here keeps its bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Below this many components the core's register-blocked kernel beats a GEMM, whose packing
/// of both operands costs more than it saves on `k x k` by 64 products.
pub const GEMM_MIN_K: usize = 16;

/// The pass products the CLI uses: the `gemm` crate's (cache-blocked, with kernels for
/// AVX, FMA and AVX-512 picked at run time) from [`GEMM_MIN_K`] components up, the core's
/// [`Portable`] kernel below that or with `UNMIX_SIMD=portable`.
///
/// Fused multiply-adds and a different summation order change the last bits, so results then
/// differ from the portable build's (by about 1e-15 relative per product; `tests/simd.rs` and
/// `tests/simd_fixtures.rs` check agreement to 1e-12 on synthetic fits and on every cross-check
/// fixture). They never depend on the thread count: each block is one product (two from
/// [`SPLIT_MIN_K`], over halves of the output fixed by `k`) in a fixed order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliKernel {
    /// The core's kernel: the no_std core's bits.
    Portable,
    /// The GEMM ([`gemm()`]) for `k >= GEMM_MIN_K`.
    Gemm,
}

impl CliKernel {
    /// The fastest kernel for this CPU, or [`CliKernel::Portable`] with `UNMIX_SIMD=portable`.
    pub fn for_this_cpu() -> Self {
        if portable_requested() {
            Self::Portable
        } else {
            Self::Gemm
        }
    }
}

/// Whether `UNMIX_SIMD=portable` asks for the no_std core's bits (read once per process).
pub fn portable_requested() -> bool {
    static PORTABLE: OnceLock<bool> = OnceLock::new();
    *PORTABLE.get_or_init(|| std::env::var("UNMIX_SIMD").is_ok_and(|v| v == "portable"))
}

/// Rows per block for the GEMM: 256 x k blocks of `z` and `g(y)` (at most 512 KB each at
/// k = 256) stay in the L2 cache while amortising the packing of `W` over 256 rows.
const GEMM_BLOCK_ROWS: usize = 256;

impl Kernel for CliKernel {
    fn block_rows(&self, k: usize) -> usize {
        if *self == Self::Portable || k < GEMM_MIN_K {
            Portable.block_rows(k)
        } else {
            GEMM_BLOCK_ROWS
        }
    }
    #[inline(always)]
    fn unmix_block(&self, w: &[f64], k: usize, z: &[f64], y: &mut [f64], stride: usize, n: usize) {
        if *self == Self::Portable || k < GEMM_MIN_K || n == 0 {
            return Portable.unmix_block(w, k, z, y, stride, n);
        }
        // Bounds that make the raw reads and writes below stay inside the slices.
        let (w, z) = (&w[..k * k], &z[..(k - 1) * stride + n]);
        let y = &mut y[..(k - 1) * stride + n];
        if k < SPLIT_MIN_K {
            return unmix_rows(w, k, k, z, y, stride, n);
        }
        // Output rows 0..h and h..k (h < k); h depends on k only.
        let h = split_rows(k);
        let (y0, y1) = y.split_at_mut(h * stride);
        let (w0, w1) = w.split_at(h * k);
        join_in_pool(
            || unmix_rows(w0, h, k, z, y0, stride, n),
            || unmix_rows(w1, k - h, k, z, y1, stride, n),
        );
    }
    #[inline(always)]
    fn gram_block(&self, g: &[f64], z: &[f64], k: usize, stride: usize, n: usize, out: &mut [f64]) {
        if *self == Self::Portable || k < GEMM_MIN_K || n == 0 {
            return Portable.gram_block(g, z, k, stride, n, out);
        }
        let (g, z) = (&g[..(k - 1) * stride + n], &z[..(k - 1) * stride + n]);
        let out = &mut out[..k * k];
        if k < SPLIT_MIN_K {
            return gram_rows(g, k, z, k, stride, n, out);
        }
        let h = split_rows(k);
        let (o0, o1) = out.split_at_mut(h * k);
        let (g0, g1) = g.split_at(h * stride);
        join_in_pool(
            || gram_rows(g0, h, z, k, stride, n, o0),
            || gram_rows(g1, k - h, z, k, stride, n, o1),
        );
    }
    fn gram(&self, w: &[f64], k: usize, m: &mut [f64]) {
        if !self.gemm(k) {
            return Portable.gram(w, k, m);
        }
        // W W' = W (W')': B = W' read from W's rows.
        let m = &mut m[..k * k];
        gemm_halves(k, k, k, w, (k, 1), w, (1, k), m, k);
        // Exactly symmetric, as the eigen-decomposition assumes.
        for i in 0..k {
            for j in i + 1..k {
                m[j * k + i] = m[i * k + j];
            }
        }
    }
    fn decorrelate(
        &self,
        v: &[f64],
        s: &[f64],
        w: &[f64],
        k: usize,
        p: &mut [f64],
        out: &mut [f64],
    ) {
        if !self.gemm(k) {
            return Portable.decorrelate(v, s, w, k, p, out);
        }
        // P = V' (S V), with S V in `out` for the moment; then out = P W.
        let out = &mut out[..k * k];
        for ((orow, vrow), sl) in out.chunks_exact_mut(k).zip(v.chunks_exact(k)).zip(s) {
            for (o, x) in orow.iter_mut().zip(vrow) {
                *o = *x * *sl;
            }
        }
        gemm_halves(k, k, k, v, (1, k), out, (k, 1), p, k);
        gemm_halves(k, k, k, p, (k, 1), w, (k, 1), out, k);
    }
    fn symmetric_eigen(
        &self,
        m: &mut [f64],
        k: usize,
        values: &mut [f64],
        work: &mut [f64],
    ) -> unmix::Result<()> {
        if *self == Self::Portable || k < EIGEN_MIN_K {
            return unmix::linalg::symmetric_eigen(m, k, values, work);
        }
        if symmetric_eigen_faer(m, k, values)? {
            Ok(())
        } else {
            unmix::linalg::symmetric_eigen(m, k, values, work)
        }
    }
}

/// From this many components (features, for the whitening's covariance) the update's and the
/// whitening's eigen-decompositions run on faer (divide and conquer on a blocked
/// tridiagonalisation) instead of the core's QL: at k = 64 0.34 against 0.42 ms, at 256 8.2
/// against 20 ms (Zen 2, one thread).
pub const EIGEN_MIN_K: usize = 64;

/// [`unmix::linalg::symmetric_eigen`]'s contract (descending eigenvalues, unit eigenvectors as
/// rows, each with its first nonzero entry positive; the same errors) on faer's sequential
/// self-adjoint eigensolver. The matrix is scaled by a power of two first, as the core does, so
/// that no intermediate overflows. `Ok(false)`, `m` untouched, leaves the matrix to the core's
/// solver: a scale beyond the normal range, or faer reporting no convergence.
fn symmetric_eigen_faer(m: &mut [f64], k: usize, values: &mut [f64]) -> unmix::Result<bool> {
    for (len, needed) in [(m.len(), k * k), (values.len(), k)] {
        if len < needed {
            return Err(unmix::Error::BufferTooSmall { needed, found: len });
        }
    }
    let (m, values) = (&mut m[..k * k], &mut values[..k]);
    if let Some(pos) = m.iter().position(|v| !v.is_finite()) {
        return Err(unmix::Error::NonFinite {
            row: (pos / k) as u64,
            col: pos % k,
        });
    }
    let amax = m.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    // max |m| 2^-e in [0.5, 1); 2^-e exact while e stays well inside the exponent range.
    let exponent = if amax > 0.0 {
        amax.log2().floor() as i32 + 1
    } else {
        0
    };
    if exponent.abs() > 1000 {
        return Ok(false);
    }
    let scale = 2f64.powi(-exponent);
    let a = faer::Mat::<f64>::from_fn(k, k, |i, j| m[i * k + j] * scale);
    let Ok(evd) = a.self_adjoint_eigen(faer::Side::Lower) else {
        return Ok(false);
    };
    let (u, s) = (evd.U(), evd.S().column_vector());
    // faer's eigenvalues ascend: row i of `m` is column k - 1 - i of U.
    for i in 0..k {
        let col = k - 1 - i;
        values[i] = s[col] / scale;
        let sign = match (0..k).map(|r| u[(r, col)]).find(|x| *x != 0.0) {
            Some(x) if x < 0.0 => -1.0,
            _ => 1.0,
        };
        for (r, v) in m[i * k..(i + 1) * k].iter_mut().enumerate() {
            *v = sign * u[(r, col)];
        }
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(unmix::Error::Overflow);
    }
    Ok(true)
}

impl CliKernel {
    /// Whether the products for `k` components run on the GEMM.
    fn gemm(&self, k: usize) -> bool {
        *self == Self::Gemm && k >= GEMM_MIN_K
    }
}

/// `c = a b`, or `c += a b` when `accumulate`, for `a` (`m x kk`, row and column strides `rsa`,
/// `csa`), `b` (`kk x n`, strides `rsb`, `csb`) and `c` (`m x n`, row stride `rsc`, contiguous
/// rows), on the `gemm` crate's kernels for this CPU (AVX2/FMA, AVX-512), on this thread.
///
/// The one place the CLI multiplies matrices. Each operand is first cut to the last element its
/// strides address (a call outside a slice panics here rather than reading out of bounds).
/// Every output element sums over `kk` in an order fixed by the call's shape, so the same call
/// gives the same bits whichever thread runs it.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn gemm<T: GemmFloat>(
    m: usize,
    kk: usize,
    n: usize,
    a: &[T],
    (rsa, csa): (usize, usize),
    b: &[T],
    (rsb, csb): (usize, usize),
    c: &mut [T],
    rsc: usize,
    accumulate: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    let c = &mut c[..=(m - 1) * rsc + (n - 1)];
    if kk == 0 {
        if !accumulate {
            for row in c.chunks_mut(rsc.max(1)) {
                let len = n.min(row.len());
                row[..len].fill(T::ZERO);
            }
        }
        return;
    }
    let a = &a[..=(m - 1) * rsa + (kk - 1) * csa];
    let b = &b[..=(kk - 1) * rsb + (n - 1) * csb];
    // SAFETY: A (m x kk), B (kk x n) and C (m x n) with these strides address elements up to
    // the offsets the slices were just cut to, so every read and write is inside them; C is a
    // `&mut` distinct from A and B. `alpha` (the weight of C's old value) is read only with
    // `read_dst`, `beta` weighs the product; no conjugation (real types); one thread.
    unsafe {
        ::gemm::gemm(
            m,
            n,
            kk,
            c.as_mut_ptr(),
            1,
            rsc as isize,
            accumulate,
            a.as_ptr(),
            csa as isize,
            rsa as isize,
            b.as_ptr(),
            csb as isize,
            rsb as isize,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            ::gemm::Parallelism::None,
        );
    }
}

/// `c = a b` ([`gemm()`]) for the update's `k^3` products, from [`SPLIT_MIN_K`] output rows as
/// two GEMMs over halves of them under [`join_in_pool`]: the update runs between passes with
/// the fit's pool otherwise idle (`fastica::fit_then` runs the fit inside the pool), so a
/// second thread takes one half; outside a pool both halves run on the caller's thread. The split depends on `m` only, so the bits do not depend on
/// the thread count.
#[allow(clippy::too_many_arguments)]
fn gemm_halves(
    m: usize,
    kk: usize,
    n: usize,
    a: &[f64],
    (rsa, csa): (usize, usize),
    b: &[f64],
    (rsb, csb): (usize, usize),
    c: &mut [f64],
    rsc: usize,
) {
    if m < SPLIT_MIN_K {
        return gemm(m, kk, n, a, (rsa, csa), b, (rsb, csb), c, rsc, false);
    }
    let h = split_rows(m);
    let (c0, c1) = c.split_at_mut(h * rsc);
    let a1 = &a[h * rsa..];
    join_in_pool(
        || gemm(h, kk, n, a, (rsa, csa), b, (rsb, csb), c0, rsc, false),
        || gemm(m - h, kk, n, a1, (rsa, csa), b, (rsb, csb), c1, rsc, false),
    );
}

/// From this many components the CLI's pass products are two GEMMs, one per half of the output
/// rows, that an idle thread of the pool can take ([`rayon::join`]): a pass has one chunk of 4096
/// rows per thread at most, so at 2e4 rows (5 chunks) one thread would otherwise run the last
/// chunk alone. The split depends on `k` only, never on the thread count, and each output is
/// the same GEMM arithmetic whoever runs it: the bits do not depend on the threads. (The
/// CLI's parallel passes on row-major blocks share a lone chunk by its halves instead:
/// [`crate::blocks::HALF_CHUNK`].)
pub const SPLIT_MIN_K: usize = 64;

/// The first half's output rows, for `k >= SPLIT_MIN_K`: half of `k` rounded up to a multiple
/// of 8 (whole register tiles of the GEMM), below `k`.
fn split_rows(k: usize) -> usize {
    (k / 2).next_multiple_of(8).min(k - 1)
}

/// `y (m x n, row stride `stride`) = w (m x k) z (k x n, row stride `stride`)`.
fn unmix_rows(w: &[f64], m: usize, k: usize, z: &[f64], y: &mut [f64], stride: usize, n: usize) {
    gemm(m, k, n, w, (k, 1), z, (stride, 1), y, stride, false);
}

/// `out (m x k, row stride k) += g (m x n, row stride `stride`) z' (n x k)`, `z` being k x n.
#[allow(clippy::too_many_arguments)]
fn gram_rows(g: &[f64], m: usize, z: &[f64], k: usize, stride: usize, n: usize, out: &mut [f64]) {
    gemm(m, n, k, g, (stride, 1), z, (1, stride), out, k, true);
}

/// The float types the CLI multiplies on [`gemm()`]: `f32` and `f64`.
pub trait GemmFloat: unmix::Float + crate::blocks::BlockFloat + 'static {}
impl GemmFloat for f32 {}
impl GemmFloat for f64 {}

/// From this many outputs [`centred_product`] runs on the GEMM: at 8 outputs it is about 4x
/// the core's four-row kernel, whose sums along each row do not vectorise (1e6 x 8: a fit's
/// whitening 0.35 -> 0.18 s, and 11 -> 3 ms an iteration for the rows whitened again).
pub const TRANSFORM_GEMM_MIN: usize = 8;

/// `out = (x - mean) m'` for rows `x` (`in_w` wide) and `m` (`out_w x in_w`): the whitening and
/// source transforms of the CLI. On a GEMM from [`TRANSFORM_GEMM_MIN`] outputs (centring in
/// `T` as the core does, then one product per call), else (or with `UNMIX_SIMD=portable`) `core`, the
/// core's transform. The choice depends only on the sizes and `UNMIX_SIMD`, so `fit` and
/// `transform` give the same bytes. Errors as the core's: a non-finite input names its row and
/// column, a non-finite output is [`unmix::Error::Overflow`]. Rows stored in a narrower type
/// `S` are widened as they are centred (exact: the bits of a converted copy), or, for the core,
/// a piece at a time.
pub fn centred_product<S: Widens<T>, T: GemmFloat>(
    x: &[S],
    in_w: usize,
    mean: &[T],
    m: &[T],
    out: &mut [T],
    out_w: usize,
    core: impl FnOnce(&[T], &mut [T]) -> unmix::Result<()>,
) -> unmix::Result<()> {
    if portable_requested()
        || out_w < TRANSFORM_GEMM_MIN
        || in_w == 0
        || !x.len().is_multiple_of(in_w)
    {
        return core(crate::widen::widened(x, &mut Vec::new()), out);
    }
    let n = x.len() / in_w;
    if out.len() != n * out_w || m.len() != out_w * in_w || mean.len() != in_w {
        return Err(unmix::Error::DimensionMismatch {
            expected: n * out_w,
            found: out.len(),
        });
    }
    // Blocks of rows centred into a small buffer that stays in the cache (no copy of the whole
    // input); each output row is the same product whatever the blocking, since the GEMM's sums
    // run over the `in_w` inputs only.
    let rows = TRANSFORM_BLOCK_ROWS.min(n);
    let mut centred: Vec<T> = vec![T::ZERO; rows * in_w];
    for (b, (xb, ob)) in x
        .chunks(TRANSFORM_BLOCK_ROWS * in_w)
        .zip(out.chunks_mut(TRANSFORM_BLOCK_ROWS * out_w))
        .enumerate()
    {
        let nb = xb.len() / in_w;
        let cb = &mut centred[..nb * in_w];
        for (crow, row) in cb.chunks_exact_mut(in_w).zip(xb.chunks_exact(in_w)) {
            for ((c, v), mu) in crow.iter_mut().zip(row).zip(mean) {
                *c = v.widen() - *mu;
            }
        }
        // out = centred m': B = m' read from the out_w x in_w row-major `m`.
        gemm(
            nb,
            in_w,
            out_w,
            cb,
            (in_w, 1),
            m,
            (1, in_w),
            ob,
            out_w,
            false,
        );
        // A NaN or infinity among a row's inputs makes every output of the row one (an
        // infinity times a zero is NaN), so the inputs are searched only when an output is not
        // finite, for the error they would have given first; else the product overflowed. (The
        // search before the centring read each block from memory once more.)
        if first_non_finite(ob).is_some() {
            return Err(match first_non_finite(xb) {
                Some(pos) => unmix::Error::NonFinite {
                    row: (b * TRANSFORM_BLOCK_ROWS + pos / in_w) as u64,
                    col: pos % in_w,
                },
                None => unmix::Error::Overflow,
            });
        }
    }
    Ok(())
}

/// Rows per product of [`centred_product`]: 256 centred rows (1.5 MB at 768 f64 features). It
/// divides [`crate::fastica::MAP_ROWS`], so that the products are the same for any split.
pub const TRANSFORM_BLOCK_ROWS: usize = 256;
const _: () = assert!(crate::fastica::MAP_ROWS.is_multiple_of(TRANSFORM_BLOCK_ROWS));

#[cfg(test)]
mod tests {
    use super::*;

    /// `centred_product` on the GEMM names the first non-finite input of the first block that
    /// has one (row of the whole input, column), even where its weights are zero, and reports
    /// finite inputs whose product overflows as `Overflow`.
    #[test]
    fn centred_product_names_non_finite_inputs() {
        let (in_w, out_w, n) = (16, TRANSFORM_GEMM_MIN, 3 * TRANSFORM_BLOCK_ROWS + 5);
        let x: Vec<f64> = (0..n * in_w)
            .map(|i| ((i * 7919) % 101) as f64 / 50.0)
            .collect();
        let mean = vec![0.5; in_w];
        let mut out = vec![0.0; n * out_w];
        let run = |x: &[f64], m: &[f64], out: &mut [f64]| {
            centred_product(x, in_w, &mean, m, out, out_w, |_, _| {
                unreachable!("core path")
            })
        };
        let weights: Vec<f64> = (0..out_w * in_w).map(|i| (i % 13) as f64 - 6.0).collect();
        run(&x, &weights, &mut out).unwrap();
        // Column 3 weighs nothing in any output.
        let mut zero_col = weights.clone();
        for row in zero_col.chunks_exact_mut(in_w) {
            row[3] = 0.0;
        }
        for (m, bad, at) in [
            (&weights, f64::NAN, [(600, 9), (700, 2)]),
            (
                &zero_col,
                f64::INFINITY,
                [(2 * TRANSFORM_BLOCK_ROWS + 1, 3), (n - 1, 0)],
            ),
            (&zero_col, f64::NEG_INFINITY, [(5, 3), (6, 3)]),
        ] {
            let mut x = x.clone();
            for (row, col) in at {
                x[row * in_w + col] = bad;
            }
            let (row, col) = at[0];
            let e = run(&x, m, &mut out).unwrap_err();
            assert_eq!(
                e,
                unmix::Error::NonFinite {
                    row: row as u64,
                    col
                },
                "{bad}"
            );
        }
        let mut x = x.clone();
        x[300 * in_w] = f64::MAX;
        assert_eq!(run(&x, &weights, &mut out), Err(unmix::Error::Overflow));
    }

    /// The grouped search finds what `position` finds: every non-finite kind, in a group, at
    /// a group's edges and in the remainder, with earlier ones masking later ones, in f32 and
    /// f64; and `None` on finite values, the extremes included.
    #[test]
    fn first_non_finite_is_position() {
        fn check<T: unmix::Float + std::fmt::Debug>(bad: [T; 3], big: T) {
            for len in [0, 1, 31, 32, 33, 64, 100, 1000] {
                let clean: Vec<T> = (0..len)
                    .map(|i| if i % 7 == 0 { big } else { T::ZERO })
                    .collect();
                assert_eq!(first_non_finite(&clean), None, "len {len}");
                for at in [0, 1, 30, 31, 32, 33, 63, 64, 65, 98, 99, 500, 999] {
                    if at >= len {
                        continue;
                    }
                    for b in bad {
                        let mut v = clean.clone();
                        v[at] = b;
                        let want = v.iter().position(|x| !x.is_finite());
                        assert_eq!(first_non_finite(&v), want, "len {len} at {at} {b:?}");
                        if at + 5 < len {
                            v[at + 5] = bad[0];
                            assert_eq!(first_non_finite(&v), Some(at));
                        }
                    }
                }
            }
        }
        check([f64::NAN, f64::INFINITY, f64::NEG_INFINITY], f64::MAX);
        check([f32::NAN, f32::INFINITY, f32::NEG_INFINITY], -f32::MAX);
    }

    /// The GEMM's decorrelation products against the core's (which `UNMIX_SIMD=portable` runs):
    /// `W W'` exactly symmetric and, like `P = V' S V` and `P W`, within 1e-13 of the largest
    /// entry, below and above the split and the GEMM threshold.
    #[test]
    fn decorrelation_products_agree_with_the_core() {
        let mut normals = unmix::random::Normals::new(4);
        for k in [3, 16, 33, 70] {
            let mut draw =
                |n: usize| -> Vec<f64> { (0..n).map(|_| normals.next_normal()).collect() };
            let (w, v) = (draw(k * k), draw(k * k));
            let s: Vec<f64> = draw(k).iter().map(|x| x.abs() + 0.1).collect();
            let (mut m0, mut m1) = (vec![0.0; k * k], vec![0.0; k * k]);
            Portable.gram(&w, k, &mut m0);
            CliKernel::Gemm.gram(&w, k, &mut m1);
            let (mut p, mut o0, mut o1) = (vec![0.0; k * k], vec![0.0; k * k], vec![0.0; k * k]);
            Portable.decorrelate(&v, &s, &w, k, &mut p, &mut o0);
            CliKernel::Gemm.decorrelate(&v, &s, &w, k, &mut p, &mut o1);
            for (name, a, b) in [("W W'", &m0, &m1), ("P W", &o0, &o1)] {
                let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let diff = a
                    .iter()
                    .zip(b)
                    .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
                assert!(
                    diff <= 1e-13 * scale,
                    "k = {k}, {name}: {diff:e} of {scale:e}"
                );
            }
            for i in 0..k {
                for j in 0..k {
                    assert_eq!(m1[i * k + j].to_bits(), m1[j * k + i].to_bits());
                }
            }
        }
    }
}
