//! The two dense products of a parallel FastICA pass, over a block of rows held
//! feature-major (column `j` at `j * stride ..`): `Y = W Z` and `G += g(Y) Z'`.
//!
//! Register-blocked, so that each value loaded feeds several multiply-adds, and written over
//! fixed-size arrays so that the compiler vectorises them for whatever the target offers. Every
//! output is summed in exactly the order of the plain loops (tested below), so the bits do not
//! depend on the blocking or the vector width. On x86-64 both are `inline(always)`, so that
//! they are compiled for whatever target features their caller enables (the CLI's AVX2 path).

use crate::float::Sum;
/// The dense products of a parallel FastICA pass over one block of rows held feature-major
/// (column `j` of a block at `j * stride ..`).
///
/// The driver takes one, so that a host can plug in kernels built for its CPU while firmware
/// keeps the portable one. Blocks hold [`Sum`] values; an implementation must give the same result
/// for every thread count (it sees one block at a time, so any fixed summation order does).
pub trait Kernel: Copy + Sync {
    /// Rows per block for `k` components: a divisor of [`CHUNK`](crate::ica::CHUNK). Larger
    /// blocks amortise a GEMM's packing; the portable kernel uses
    /// [`BLOCK_ROWS`](crate::ica::stats::BLOCK_ROWS).
    fn block_rows(&self, k: usize) -> usize {
        let _ = k;
        crate::ica::stats::BLOCK_ROWS
    }
    /// `y_i = sum_j w_ij z_j` for `i < k` over the first `n` lanes (`w` is `k x k` row-major);
    /// lanes from `n` up to the next multiple of 4 (at most `stride`) may be overwritten.
    fn unmix_block(&self, w: &[Sum], k: usize, z: &[Sum], y: &mut [Sum], stride: usize, n: usize);
    /// `out[i k + j] += <g_i, z_j>` over the first `n` lanes.
    #[allow(clippy::too_many_arguments)]
    fn gram_block(&self, g: &[Sum], z: &[Sum], k: usize, stride: usize, n: usize, out: &mut [Sum]);
    /// `m = w w'` for `w` `k x k` (both triangles): the first product of the parallel update's
    /// decorrelation ([`sym_decorrelation_with`](crate::ica::update::sym_decorrelation_with)).
    fn gram(&self, w: &[Sum], k: usize, m: &mut [Sum]) {
        crate::ica::update::gram_upper(w, k, m)
    }
    /// `out = P w` with `P = sum_l s_l v_l v_l'` over the rows `v_l` of `v` (all `k x k`; `p`
    /// is scratch for `P`): the decorrelation's other two products.
    fn decorrelate(
        &self,
        v: &[Sum],
        s: &[Sum],
        w: &[Sum],
        k: usize,
        p: &mut [Sum],
        out: &mut [Sum],
    ) {
        crate::ica::update::decorrelate(v, s, w, k, p, out)
    }
    /// The eigen-decomposition of the update's `W W'` (`k x k`) and of the whitening's covariance
    /// ([`WhitenerBuf::fit_with`](crate::whiten::WhitenerBuf::fit_with)), with the contract of
    /// [`linalg::symmetric_eigen`](crate::linalg::symmetric_eigen): descending eigenvalues in
    /// `values`, their unit eigenvectors as the rows of `m`, each with its first nonzero entry
    /// positive, `work` of `k` elements. The decorrelation depends only on `P = V' S V`, not on
    /// the choice of eigenvectors within a repeated eigenvalue, so another backward-stable solver
    /// changes only the last bits; the whitening's eigenvectors move by the rounding over the
    /// eigenvalue gap, as [`linalg::symmetric_eigen`](crate::linalg::symmetric_eigen)'s do.
    fn symmetric_eigen(
        &self,
        m: &mut [Sum],
        k: usize,
        values: &mut [Sum],
        work: &mut [Sum],
    ) -> crate::Result<()> {
        crate::linalg::symmetric_eigen(m, k, values, work)
    }
}

/// The core's kernel: register-blocked plain Rust, vectorised for whatever the build targets,
/// the same bits on every target (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Portable;

impl Kernel for Portable {
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    fn unmix_block(&self, w: &[Sum], k: usize, z: &[Sum], y: &mut [Sum], stride: usize, n: usize) {
        unmix_block(w, k, z, y, stride, n)
    }
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    fn gram_block(&self, g: &[Sum], z: &[Sum], k: usize, stride: usize, n: usize, out: &mut [Sum]) {
        gram_block(g, z, k, stride, n, out)
    }
}

/// The portable kernel for firmware: `ROWS` rows per block instead of [`Portable`]'s
/// [`BLOCK_ROWS`](crate::ica::stats::BLOCK_ROWS) = 64, and plain loops instead of register tiles.
///
/// The block is most of a FastICA fit's workspace at small `K` (`(2K + 1) ROWS` values of the
/// parallel pass), so firmware short of RAM takes fewer rows. The loops sum in the tiles' order
/// (tested bit for bit), in a fraction of the code: on a Cortex-M4F (no vector unit, where the
/// tiles only spill registers) they are also faster. Measured by `firmware/` in QEMU at
/// `D = K = 4`, `ROWS = 16`, f32 sums: 23.9 KB of text for the whole fit-only program instead of
/// 27.2 KB, 4.9 M instructions per FastICA fit instead of 6.5 M. On a host with vector units
/// [`Portable`] is the faster one.
///
/// `ROWS` must be a multiple of 4 (the register tile) dividing [`CHUNK`](crate::ica::CHUNK) =
/// 4096, checked at compile time by [`new`](Self::new), the only constructor:
///
/// ```compile_fail
/// let k = unmix::ica::PortableRows::<6>::new(); // not a multiple of 4: does not compile
/// ```
///
/// # Bits
/// Deterministic for a given `ROWS`, but the parallel pass's sums are grouped by block (each
/// block's dot products are summed over four lanes, then added to the pass's partial), so a
/// different `ROWS` gives results that differ in the last bits. `PortableRows::<64>` gives
/// [`Portable`]'s bits exactly. The source pass ([`SourceStats`](crate::ica::SourceStats))
/// sums row by row and does not depend on `ROWS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortableRows<const ROWS: usize>(());

impl<const ROWS: usize> PortableRows<ROWS> {
    /// The kernel; `ROWS` is checked at compile time (see the type's docs).
    pub const fn new() -> Self {
        const {
            assert!(
                ROWS >= LANES && ROWS % LANES == 0 && crate::ica::stats::CHUNK % ROWS == 0,
                "ROWS must be a multiple of 4 that divides 4096"
            )
        };
        Self(())
    }
}

impl<const ROWS: usize> Default for PortableRows<ROWS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const ROWS: usize> Kernel for PortableRows<ROWS> {
    fn block_rows(&self, _k: usize) -> usize {
        ROWS
    }
    fn unmix_block(&self, w: &[Sum], k: usize, z: &[Sum], y: &mut [Sum], stride: usize, n: usize) {
        unmix_block_compact(w, k, z, y, stride, n)
    }
    fn gram_block(&self, g: &[Sum], z: &[Sum], k: usize, stride: usize, n: usize, out: &mut [Sum]) {
        gram_block_compact(g, z, k, stride, n, out)
    }
}

/// [`unmix_block`] as plain loops in the same order (each output from `0.0`, over `j` in order):
/// the same bits in a fraction of the code, for [`PortableRows`].
fn unmix_block_compact(w: &[Sum], k: usize, z: &[Sum], y: &mut [Sum], stride: usize, n: usize) {
    for (wi, yi) in w.chunks_exact(k).zip(y.chunks_mut(stride)).take(k) {
        for (r, out) in yi[..n].iter_mut().enumerate() {
            let mut acc = 0.0;
            for (j, wv) in wi.iter().enumerate() {
                acc += *wv * z[j * stride + r];
            }
            *out = acc;
        }
    }
}

/// [`gram_block`] as one [`dot_lanes`] per output: the same bits in a fraction of the code, for
/// [`PortableRows`].
fn gram_block_compact(g: &[Sum], z: &[Sum], k: usize, stride: usize, n: usize, out: &mut [Sum]) {
    for (i, orow) in out.chunks_exact_mut(k).enumerate().take(k) {
        let gi = &g[i * stride..i * stride + n];
        for (j, o) in orow.iter_mut().enumerate() {
            *o += dot_lanes(gi, &z[j * stride..j * stride + n]);
        }
    }
}

/// Lanes per register tile: rows `r, r + 1, r + 2, r + 3` of the block.
const LANES: usize = 4;

/// `y_i = sum_j w_ij z_j` (summed over `j` in order, from `0.0`) for `i < k` and the first `n`
/// lanes rounded up to a multiple of [`LANES`] (the extra lanes are scratch); `stride` is a
/// multiple of [`LANES`], at least `n`.
#[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
pub(crate) fn unmix_block(w: &[Sum], k: usize, z: &[Sum], y: &mut [Sum], stride: usize, n: usize) {
    let lanes = n.div_ceil(LANES) * LANES;
    let mut i = 0;
    while i < k {
        // Tiles of four output rows, then two, then one.
        let rows = match k - i {
            1 => 1,
            2 | 3 => 2,
            _ => 4,
        };
        match rows {
            1 => unmix_tile::<1>(w, k, i, z, y, stride, lanes),
            2 => unmix_tile::<2>(w, k, i, z, y, stride, lanes),
            _ => unmix_tile::<4>(w, k, i, z, y, stride, lanes),
        }
        i += rows;
    }
}

#[inline(always)]
fn unmix_tile<const R: usize>(
    w: &[Sum],
    k: usize,
    i0: usize,
    z: &[Sum],
    y: &mut [Sum],
    stride: usize,
    lanes: usize,
) {
    let w = &w[i0 * k..(i0 + R) * k];
    for r in (0..lanes).step_by(LANES) {
        let mut acc = [[0.0 as Sum; LANES]; R];
        for j in 0..k {
            let zj: &[Sum; LANES] = z[j * stride + r..][..LANES].try_into().expect("a tile");
            for (a, acc) in acc.iter_mut().enumerate() {
                let wv = w[a * k + j];
                for l in 0..LANES {
                    acc[l] += wv * zj[l];
                }
            }
        }
        for (a, acc) in acc.iter().enumerate() {
            y[(i0 + a) * stride + r..][..LANES].copy_from_slice(acc);
        }
    }
}

/// `out[i k + j] += <g_i, z_j>` over the first `n` lanes, each dot product summed as
/// [`dot_lanes`]: four lane accumulators, combined pairwise, then the tail.
#[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
pub(crate) fn gram_block(g: &[Sum], z: &[Sum], k: usize, stride: usize, n: usize, out: &mut [Sum]) {
    for i in (0..k).step_by(2) {
        for j in (0..k).step_by(2) {
            match (k - i >= 2, k - j >= 2) {
                (true, true) => gram_tile::<2, 2>(g, z, k, i, j, stride, n, out),
                (true, false) => gram_tile::<2, 1>(g, z, k, i, j, stride, n, out),
                (false, true) => gram_tile::<1, 2>(g, z, k, i, j, stride, n, out),
                (false, false) => gram_tile::<1, 1>(g, z, k, i, j, stride, n, out),
            }
        }
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gram_tile<const A: usize, const B: usize>(
    g: &[Sum],
    z: &[Sum],
    k: usize,
    i0: usize,
    j0: usize,
    stride: usize,
    n: usize,
    out: &mut [Sum],
) {
    #[inline(always)]
    fn col(m: &[Sum], c: usize, stride: usize, n: usize) -> &[Sum] {
        &m[c * stride..c * stride + n]
    }
    let full = n - n % LANES;
    let gc: [&[Sum]; A] = core::array::from_fn(|a| &col(g, i0 + a, stride, n)[..full]);
    let zc: [&[Sum]; B] = core::array::from_fn(|b| &col(z, j0 + b, stride, n)[..full]);
    let mut acc = [[[0.0 as Sum; LANES]; B]; A];
    for r in (0..full).step_by(LANES) {
        let gv: [[Sum; LANES]; A] =
            core::array::from_fn(|a| core::array::from_fn(|l| gc[a][r + l]));
        let zv: [[Sum; LANES]; B] =
            core::array::from_fn(|b| core::array::from_fn(|l| zc[b][r + l]));
        for (acc, gv) in acc.iter_mut().zip(&gv) {
            for (acc, zv) in acc.iter_mut().zip(&zv) {
                for l in 0..LANES {
                    acc[l] += gv[l] * zv[l];
                }
            }
        }
    }
    for (a, acc) in acc.iter().enumerate() {
        for (b, acc) in acc.iter().enumerate() {
            let tail = dot_tail(
                &col(g, i0 + a, stride, n)[full..],
                &col(z, j0 + b, stride, n)[full..],
            );
            out[(i0 + a) * k + j0 + b] += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + tail;
        }
    }
}

#[inline(always)]
fn dot_tail(a: &[Sum], b: &[Sum]) -> Sum {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `sum a * b` over four fixed lanes, pairwise, then the tail: the reference order.
fn dot_lanes(a: &[Sum], b: &[Sum]) -> Sum {
    let mut acc = [0.0 as Sum; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail = dot_tail(ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + tail
}

#[cfg(all(test, not(feature = "f32-sums")))]
mod tests {
    use super::*;
    use crate::random::Normals;

    /// The blocked kernels give the plain loops' bits, and so do the compact ones of
    /// `PortableRows`, for every `k` and tail length.
    #[test]
    fn same_bits_as_plain_loops() {
        let stride = 64;
        let mut rng = Normals::new(7);
        for k in 1..=11 {
            let mut w = [0.0; 121];
            let mut z = [0.0; 11 * 64];
            let mut g = [0.0; 11 * 64];
            for v in w.iter_mut().chain(z.iter_mut()).chain(g.iter_mut()) {
                // Mixed magnitudes make any change of summation order visible in the bits.
                *v = rng.next_normal() * libm::exp2(rng.next_normal() * 8.0);
            }
            let mut y = [0.0; 11 * 64];
            let mut y_compact = [0.0; 11 * 64];
            unmix_block(&w, k, &z, &mut y, stride, stride);
            for n in [1, 5, 37, 64] {
                unmix_block_compact(&w, k, &z, &mut y_compact, stride, n);
                for i in 0..k {
                    for r in 0..n {
                        let (a, b) = (y[i * stride + r], y_compact[i * stride + r]);
                        assert_eq!(a.to_bits(), b.to_bits(), "compact: k {k} n {n}");
                    }
                }
            }
            for i in 0..k {
                for r in 0..stride {
                    let mut want = 0.0;
                    for j in 0..k {
                        want += w[i * k + j] * z[j * stride + r];
                    }
                    assert_eq!(y[i * stride + r].to_bits(), want.to_bits(), "k {k} i {i}");
                }
            }
            for n in [0, 1, 3, 4, 5, 37, 63, 64] {
                let mut out = [0.5; 121];
                gram_block(&g, &z, k, stride, n, &mut out);
                let mut compact = [0.5; 121];
                gram_block_compact(&g, &z, k, stride, n, &mut compact);
                assert_eq!(
                    out.map(Sum::to_bits),
                    compact.map(Sum::to_bits),
                    "compact: k {k} n {n}"
                );
                for i in 0..k {
                    for j in 0..k {
                        let (gi, zj) = (&g[i * stride..][..n], &z[j * stride..][..n]);
                        let want = 0.5 + dot_lanes(gi, zj);
                        assert_eq!(out[i * k + j].to_bits(), want.to_bits(), "k {k} n {n}");
                    }
                }
            }
        }
    }
}
