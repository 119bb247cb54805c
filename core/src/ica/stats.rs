//! The statistics of one pass over the white samples, as mergeable reductions.
//!
//! - [`ParallelStats`]: `sum_t g(W z_t) z_t'` (k x k) and `sum_t g'(W z_t)` (k).
//! - [`DeflationStats`]: `sum_t z_t g(w' z_t)` (k) and `sum_t g'(w' z_t)`.
//! - [`SourceStats`]: power sums of the sources `y = W z` (for unit variance and the canonical form).
//!
//! # Determinism across chunkings and threads
//! Rows are summed into a partial sum that is folded into the total every [`CHUNK`] rows, counted
//! from the first row of the pass. The result is therefore the same bits however the caller splits
//! the rows into `accumulate` calls. Partial results of one chunk each (one per thread, say),
//! merged in row order, give the same bits as one sequential pass; partials of several chunks
//! each sum their chunks first, which changes the last bits.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::Sum;
use crate::ica::contrast::Contrast;
use crate::ica::kernel::{Kernel, Portable};
use crate::moments::check_rows;

/// Rows per chunk of every pass.
pub const CHUNK: usize = 4096;

/// Chunked sums of `len` values, in a caller's buffer.
#[derive(Debug)]
struct Sums<'a> {
    rows: u64,
    total: &'a mut [Sum],
    partial: &'a mut [Sum],
}

impl<'a> Sums<'a> {
    fn new(len: usize, buf: &'a mut [Sum]) -> Result<Self> {
        let buf = prefix_mut(buf, 2 * len)?;
        buf.fill(0.0);
        let (total, partial) = buf.split_at_mut(len);
        Ok(Self {
            rows: 0,
            total,
            partial,
        })
    }
    /// Sums over `rows` rows already in `buf` (as [`Sums::new`] left it), not zeroed.
    fn resume(len: usize, buf: &'a mut [Sum], rows: u64) -> Result<Self> {
        let buf = prefix_mut(buf, 2 * len)?;
        let (total, partial) = buf.split_at_mut(len);
        Ok(Self {
            rows,
            total,
            partial,
        })
    }
    #[inline]
    fn row_done(&mut self) {
        self.add_rows(1);
    }
    /// Counts `n` rows just added to `partial` (never crossing a chunk boundary).
    #[inline]
    fn add_rows(&mut self, n: u64) {
        self.rows += n;
        if self.rows % CHUNK as u64 == 0 {
            for (t, p) in self.total.iter_mut().zip(self.partial.iter_mut()) {
                *t += *p;
                *p = 0.0;
            }
        }
    }
    fn merge(&mut self, other: &Sums<'_>) -> Result<()> {
        if other.total.len() != self.total.len() {
            return Err(Error::DimensionMismatch {
                expected: self.total.len(),
                found: other.total.len(),
            });
        }
        for (t, o) in self.total.iter_mut().zip(other.total.iter()) {
            *t += *o;
        }
        for (p, o) in self.partial.iter_mut().zip(other.partial.iter()) {
            *p += *o;
        }
        self.rows += other.rows;
        Ok(())
    }
    /// `total + partial` into `out`; fails on overflow.
    fn finish(&self, out: &mut [Sum]) -> Result<u64> {
        for ((o, t), p) in out
            .iter_mut()
            .zip(self.total.iter())
            .zip(self.partial.iter())
        {
            *o = *t + *p;
            if !o.is_finite() {
                return Err(Error::Overflow);
            }
        }
        Ok(self.rows)
    }
    fn reset(&mut self) {
        self.rows = 0;
        self.total.fill(0.0);
        self.partial.fill(0.0);
    }
}

/// Converts row `r` of `z` to f64 in `out`.
#[inline]
fn load_row<T: Float>(z: &[T], out: &mut [Sum]) {
    for (o, v) in out.iter_mut().zip(z) {
        *o = v.to_sum();
    }
}

/// Rows per block of the parallel pass: rows are gathered feature-major so that `W z`, `g` and
/// `G += g z'` run as contiguous, vectorisable loops. Blocks start at multiples of `BLOCK_ROWS`
/// from the first row of the pass and divide [`CHUNK`].
///
/// This is the [`Portable`] kernel's block; the block is tunable through the kernel's
/// [`block_rows`](Kernel::block_rows): [`PortableRows<ROWS>`](crate::ica::PortableRows) is the
/// same kernel with `ROWS` rows, and [`FastIcaWorkspace<D, K, ROWS>`](crate::ica::FastIcaWorkspace)
/// holds the workspace it needs. The block costs `(2K + 1) ROWS` values of [`Sum`] in the
/// parallel pass's partial (4608 bytes of `f64` at K = 4, ROWS = 64; see
/// [`FastIca`](crate::ica::FastIca)'s memory table). The parallel pass's bits depend on it.
pub const BLOCK_ROWS: usize = 64;

/// `sum v` over four fixed lanes: vectorisable, and the same bits for the same input.
#[inline(always)]
fn sum_lanes(v: &[Sum]) -> Sum {
    let mut acc = [0.0 as Sum; 4];
    let chunks = v.chunks_exact(4);
    let tail: Sum = chunks.remainder().iter().sum();
    for c in chunks {
        for l in 0..4 {
            acc[l] += c[l];
        }
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + tail
}

const fn parallel_buffer_len(k: usize) -> usize {
    parallel_buffer_len_for(k, BLOCK_ROWS)
}

/// [`ParallelStats`] buffer for `k` components in blocks of `block_rows` rows.
pub const fn parallel_buffer_len_for(k: usize, block_rows: usize) -> usize {
    2 * (k * k + k) + k * k + 2 * k * block_rows + block_rows
}

/// Statistics of one parallel-FastICA pass: `G = sum g(W z) z'` and `b = sum g'(W z)`.
///
/// Rows are held back until a block of [`BLOCK_ROWS`] fills; [`flush`](Self::flush) processes the
/// rest (the driver does it before using the sums; call it before [`merge`](Self::merge)). Every
/// row of one pass must use the same `W`.
///
/// The two dense products of each block run on a [`Kernel`] (by default the core's [`Portable`]
/// one; see [`with_kernel`](Self::with_kernel)).
#[derive(Debug)]
pub struct ParallelStats<'a, K = Portable> {
    kernel: K,
    k: usize,
    block: usize,
    sums: Sums<'a>,
    w: &'a mut [Sum],
    zb: &'a mut [Sum],
    yb: &'a mut [Sum],
    gp: &'a mut [Sum],
    pending: usize,
}

impl<'a> ParallelStats<'a> {
    /// [`Sum`] elements of buffer needed for `k` components.
    pub const fn buffer_len(k: usize) -> usize {
        parallel_buffer_len(k)
    }
    /// Empty statistics for `k` components in `buf`, on the [`Portable`] kernel.
    pub fn new(k: usize, buf: &'a mut [Sum]) -> Result<Self> {
        Self::with_kernel(k, buf, Portable)
    }
}

impl<'a, K: Kernel> ParallelStats<'a, K> {
    /// Empty statistics for `k` components in `buf` whose dense products run on `kernel`.
    /// `buf` needs [`buffer_len_with`](Self::buffer_len_with)`(k, kernel)` elements.
    pub fn with_kernel(k: usize, buf: &'a mut [Sum], kernel: K) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len_with(k, kernel))?;
        buf.fill(0.0);
        Self::resume(k, buf, 0, kernel)
    }
    /// [`Sum`] elements of buffer needed for `k` components on `kernel` (its
    /// [`block_rows`](Kernel::block_rows)).
    pub fn buffer_len_with(k: usize, kernel: K) -> usize {
        parallel_buffer_len_for(k, kernel.block_rows(k))
    }
    /// Statistics of `rows` flushed rows already in `buf` (as another `ParallelStats` left it).
    pub(crate) fn resume(k: usize, buf: &'a mut [Sum], rows: u64, kernel: K) -> Result<Self> {
        let block = kernel.block_rows(k);
        if block == 0 || CHUNK % block != 0 {
            return Err(Error::InvalidParameter(
                "a kernel's block rows must divide the chunk of 4096 rows",
            ));
        }
        let buf = prefix_mut(buf, Self::buffer_len_with(k, kernel))?;
        let (sums, rest) = buf.split_at_mut(2 * (k * k + k));
        let (w, rest) = rest.split_at_mut(k * k);
        let (zb, rest) = rest.split_at_mut(k * block);
        let (yb, gp) = rest.split_at_mut(k * block);
        Ok(Self {
            kernel,
            k,
            block,
            sums: Sums::resume(k * k + k, sums, rows)?,
            w,
            zb,
            yb,
            gp,
            pending: 0,
        })
    }
    /// Adds white rows `z` (`n x k`) at unmixing `w` (`k x k`).
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn accumulate<T: Float, C: Contrast>(
        &mut self,
        w: &[Sum],
        z: &[T],
        contrast: &C,
    ) -> Result<()> {
        let k = self.k;
        check_rows(z, k, self.sums.rows + self.pending as u64)?;
        if w.len() != k * k {
            return Err(Error::DimensionMismatch {
                expected: k * k,
                found: w.len(),
            });
        }
        let mut rest = z;
        while !rest.is_empty() {
            if self.pending == 0 {
                self.w.copy_from_slice(w);
            }
            // Gather as many rows as the block has room for, one feature column at a time.
            let take = (self.block - self.pending).min(rest.len() / k);
            let (head, tail) = rest.split_at(take * k);
            for (j, col) in self.zb.chunks_exact_mut(self.block).enumerate() {
                let col = &mut col[self.pending..self.pending + take];
                for (c, zr) in col.iter_mut().zip(head.chunks_exact(k)) {
                    *c = zr[j].to_sum();
                }
            }
            self.pending += take;
            rest = tail;
            if self.pending == self.block {
                self.process_block(contrast);
            }
        }
        Ok(())
    }
    /// Processes rows held back for an incomplete block.
    pub fn flush<C: Contrast>(&mut self, contrast: &C) {
        if self.pending > 0 {
            self.process_block(contrast);
        }
    }
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    fn process_block<C: Contrast>(&mut self, contrast: &C) {
        let (k, nb, block) = (self.k, self.pending, self.block);
        let col = |j: usize| j * block..j * block + nb;
        self.kernel
            .unmix_block(self.w, k, self.zb, self.yb, block, nb);
        let partial = &mut self.sums.partial;
        for i in 0..k {
            let yi = &mut self.yb[col(i)];
            contrast.eval_block(yi, &mut self.gp[..nb]);
            partial[k * k + i] += sum_lanes(&self.gp[..nb]);
        }
        self.kernel
            .gram_block(self.yb, self.zb, k, block, nb, &mut partial[..k * k]);
        self.sums.add_rows(nb as u64);
        self.pending = 0;
    }
    /// Adds statistics that continue this pass (see the module docs for when bits agree). Both
    /// must be flushed.
    pub fn merge<L>(&mut self, other: &ParallelStats<'_, L>) -> Result<()> {
        if self.pending > 0 || other.pending > 0 {
            return Err(Error::InvalidParameter(
                "flush parallel statistics before merging them",
            ));
        }
        self.sums.merge(&other.sums)
    }
    /// Rows accumulated (including rows held for the current block).
    pub fn rows(&self) -> u64 {
        self.sums.rows + self.pending as u64
    }
    /// Forgets all rows.
    pub fn reset(&mut self) {
        self.sums.reset();
        self.pending = 0;
    }
    /// `(G, b)` sums into `out` after a flush; returns the row count.
    pub(crate) fn finish<C: Contrast>(&mut self, contrast: &C, out: &mut [Sum]) -> Result<u64> {
        self.flush(contrast);
        self.sums.finish(out)
    }
}

/// Statistics of one deflation pass for one vector `w`: `s = sum z g(w'z)` and `b = sum g'(w'z)`.
#[derive(Debug)]
pub struct DeflationStats<'a> {
    k: usize,
    sums: Sums<'a>,
    row: &'a mut [Sum],
}

impl<'a> DeflationStats<'a> {
    /// [`Sum`] elements of buffer needed for `k` components.
    pub const fn buffer_len(k: usize) -> usize {
        2 * (k + 1) + k
    }
    /// Empty statistics in `buf`.
    pub fn new(k: usize, buf: &'a mut [Sum]) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len(k))?;
        let (sums, row) = buf.split_at_mut(2 * (k + 1));
        Ok(Self {
            k,
            sums: Sums::new(k + 1, sums)?,
            row,
        })
    }
    /// Statistics of `rows` rows already in `buf` (as another `DeflationStats` left it).
    pub(crate) fn resume(k: usize, buf: &'a mut [Sum], rows: u64) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len(k))?;
        let (sums, row) = buf.split_at_mut(2 * (k + 1));
        Ok(Self {
            k,
            sums: Sums::resume(k + 1, sums, rows)?,
            row,
        })
    }
    /// Adds white rows `z` (`n x k`) for the unit vector `w` (`k`).
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn accumulate<T: Float, C: Contrast>(
        &mut self,
        w: &[Sum],
        z: &[T],
        contrast: &C,
    ) -> Result<()> {
        let k = self.k;
        check_rows(z, k, self.sums.rows)?;
        if w.len() != k {
            return Err(Error::DimensionMismatch {
                expected: k,
                found: w.len(),
            });
        }
        for zr in z.chunks_exact(k) {
            load_row(zr, self.row);
            let y: Sum = w.iter().zip(self.row.iter()).map(|(a, b)| a * b).sum();
            let (g, gp) = contrast.eval(y);
            for (acc, zj) in self.sums.partial[..k].iter_mut().zip(self.row.iter()) {
                *acc += zj * g;
            }
            self.sums.partial[k] += gp;
            self.sums.row_done();
        }
        Ok(())
    }
    /// Adds statistics that continue this pass.
    pub fn merge(&mut self, other: &DeflationStats<'_>) -> Result<()> {
        self.sums.merge(&other.sums)
    }
    /// Rows accumulated.
    pub fn rows(&self) -> u64 {
        self.sums.rows
    }
    /// Forgets all rows.
    pub fn reset(&mut self) {
        self.sums.reset();
    }
    pub(crate) fn finish(&self, out: &mut [Sum]) -> Result<u64> {
        self.sums.finish(out)
    }
}

/// Power sums `sum y`, `sum y^2`, `sum y^3`, `sum y^4` of the sources `y = W z`.
///
/// Rows are gathered feature-major in blocks (never across a [`CHUNK`] boundary) and unmixed on
/// a [`Kernel`]; each source's sums take the rows in order, as one row at a time would.
#[derive(Debug)]
pub struct SourceStats<'a, K = Portable> {
    kernel: K,
    k: usize,
    block: usize,
    sums: Sums<'a>,
    w: &'a mut [Sum],
    zb: &'a mut [Sum],
    yb: &'a mut [Sum],
}

/// [`SourceStats`] buffer for `k` components in blocks of `block_rows` rows.
pub(crate) const fn source_buffer_len_for(k: usize, block_rows: usize) -> usize {
    2 * 4 * k + k * k + 2 * k * block_rows
}

impl<'a> SourceStats<'a> {
    /// [`Sum`] elements of buffer needed for `k` components (portable kernel).
    pub const fn buffer_len(k: usize) -> usize {
        source_buffer_len_for(k, BLOCK_ROWS)
    }
    /// Empty statistics in `buf`, on the [`Portable`] kernel.
    pub fn new(k: usize, buf: &'a mut [Sum]) -> Result<Self> {
        Self::with_kernel(k, buf, Portable)
    }
}

impl<'a, K: Kernel> SourceStats<'a, K> {
    /// Empty statistics in `buf` ([`buffer_len_with`](Self::buffer_len_with) elements), unmixing
    /// on `kernel`.
    pub fn with_kernel(k: usize, buf: &'a mut [Sum], kernel: K) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len_with(k, kernel))?;
        buf.fill(0.0);
        Self::resume(k, buf, 0, kernel)
    }
    /// [`Sum`] elements of buffer needed for `k` components on `kernel`.
    pub fn buffer_len_with(k: usize, kernel: K) -> usize {
        source_buffer_len_for(k, kernel.block_rows(k))
    }
    /// Statistics of `rows` rows already in `buf` (as another `SourceStats` left it).
    pub(crate) fn resume(k: usize, buf: &'a mut [Sum], rows: u64, kernel: K) -> Result<Self> {
        let block = kernel.block_rows(k);
        if block == 0 || CHUNK % block != 0 {
            return Err(Error::InvalidParameter(
                "a kernel's block rows must divide the chunk of 4096 rows",
            ));
        }
        let buf = prefix_mut(buf, Self::buffer_len_with(k, kernel))?;
        let (sums, rest) = buf.split_at_mut(2 * 4 * k);
        let (w, rest) = rest.split_at_mut(k * k);
        let (zb, yb) = rest.split_at_mut(k * block);
        Ok(Self {
            kernel,
            k,
            block,
            sums: Sums::resume(4 * k, sums, rows)?,
            w,
            zb,
            yb,
        })
    }
    /// Adds white rows `z` (`n x k`) unmixed by `w` (`k x k`).
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn accumulate<T: Float>(&mut self, w: &[Sum], z: &[T]) -> Result<()> {
        let (k, block) = (self.k, self.block);
        check_rows(z, k, self.sums.rows)?;
        if w.len() != k * k {
            return Err(Error::DimensionMismatch {
                expected: k * k,
                found: w.len(),
            });
        }
        self.w.copy_from_slice(w);
        let mut rest = z;
        while !rest.is_empty() {
            let room = CHUNK - (self.sums.rows % CHUNK as u64) as usize;
            let n = (rest.len() / k).min(room).min(block);
            let (rows, tail) = rest.split_at(n * k);
            for (j, col) in self.zb.chunks_exact_mut(block).enumerate() {
                for (c, zr) in col[..n].iter_mut().zip(rows.chunks_exact(k)) {
                    *c = zr[j].to_sum();
                }
            }
            self.kernel
                .unmix_block(self.w, k, self.zb, self.yb, block, n);
            for i in 0..k {
                let p = &mut self.sums.partial[4 * i..4 * i + 4];
                for &y in &self.yb[i * block..i * block + n] {
                    let y2 = y * y;
                    p[0] += y;
                    p[1] += y2;
                    p[2] += y2 * y;
                    p[3] += y2 * y2;
                }
            }
            self.sums.add_rows(n as u64);
            rest = tail;
        }
        Ok(())
    }
    /// Adds statistics that continue this pass.
    pub fn merge<L>(&mut self, other: &SourceStats<'_, L>) -> Result<()> {
        self.sums.merge(&other.sums)
    }
    /// Rows accumulated.
    pub fn rows(&self) -> u64 {
        self.sums.rows
    }
    /// Forgets all rows.
    pub fn reset(&mut self) {
        self.sums.reset();
    }
    pub(crate) fn finish(&self, out: &mut [Sum]) -> Result<u64> {
        self.sums.finish(out)
    }
}
