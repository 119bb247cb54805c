//! The statistics of one pass over the white samples, as mergeable reductions.
//!
//! - [`ParallelStats`]: `sum_t g(W z_t) z_t'` (k x k) and `sum_t g'(W z_t)` (k).
//! - [`DeflationStats`]: `sum_t z_t g(w' z_t)` (k) and `sum_t g'(w' z_t)`.
//! - [`SourceStats`]: power sums of the sources `y = W z` (for unit variance and the canonical form).
//!
//! # Determinism across chunkings and threads
//! Rows are summed into a partial sum that is folded into the total every [`CHUNK`] rows, counted
//! from the first row of the pass. The result is therefore the same bits however the caller splits
//! the rows into `accumulate` calls. Partial results that each start at a multiple of `CHUNK` rows
//! (one per thread, say) and are merged in row order give the same bits as one sequential pass.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::ica::contrast::Contrast;
use crate::moments::check_rows;

/// Rows per chunk of every pass.
pub const CHUNK: usize = 4096;

/// Chunked sums of `len` values, in a caller's buffer.
#[derive(Debug)]
struct Sums<'a> {
    rows: u64,
    total: &'a mut [f64],
    partial: &'a mut [f64],
}

impl<'a> Sums<'a> {
    fn new(len: usize, buf: &'a mut [f64]) -> Result<Self> {
        let buf = prefix_mut(buf, 2 * len)?;
        buf.fill(0.0);
        let (total, partial) = buf.split_at_mut(len);
        Ok(Self {
            rows: 0,
            total,
            partial,
        })
    }
    #[inline]
    fn row_done(&mut self) {
        self.rows += 1;
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
    fn finish(&self, out: &mut [f64]) -> Result<u64> {
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
fn load_row<T: Float>(z: &[T], out: &mut [f64]) {
    for (o, v) in out.iter_mut().zip(z) {
        *o = v.to_f64();
    }
}

/// Statistics of one parallel-FastICA pass: `G = sum g(W z) z'` and `b = sum g'(W z)`.
#[derive(Debug)]
pub struct ParallelStats<'a> {
    k: usize,
    sums: Sums<'a>,
    row: &'a mut [f64],
    y: &'a mut [f64],
}

impl<'a> ParallelStats<'a> {
    /// `f64` elements of buffer needed for `k` components.
    pub const fn buffer_len(k: usize) -> usize {
        2 * (k * k + k) + 2 * k
    }
    /// Empty statistics for `k` components in `buf`.
    pub fn new(k: usize, buf: &'a mut [f64]) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len(k))?;
        let (sums, rest) = buf.split_at_mut(2 * (k * k + k));
        let (row, y) = rest.split_at_mut(k);
        Ok(Self {
            k,
            sums: Sums::new(k * k + k, sums)?,
            row,
            y,
        })
    }
    /// Adds white rows `z` (`n x k`) at unmixing `w` (`k x k`).
    pub fn accumulate<T: Float, C: Contrast>(
        &mut self,
        w: &[f64],
        z: &[T],
        contrast: &C,
    ) -> Result<()> {
        let k = self.k;
        check_rows(z, k, self.sums.rows)?;
        if w.len() != k * k {
            return Err(Error::DimensionMismatch {
                expected: k * k,
                found: w.len(),
            });
        }
        for zr in z.chunks_exact(k) {
            load_row(zr, self.row);
            for (i, wr) in w.chunks_exact(k).enumerate() {
                let y: f64 = wr.iter().zip(self.row.iter()).map(|(a, b)| a * b).sum();
                let (g, gp) = contrast.eval(y);
                self.y[i] = g;
                self.sums.partial[k * k + i] += gp;
            }
            for (i, g) in self.y.iter().enumerate() {
                let p = &mut self.sums.partial[i * k..(i + 1) * k];
                for (acc, zj) in p.iter_mut().zip(self.row.iter()) {
                    *acc += g * zj;
                }
            }
            self.sums.row_done();
        }
        Ok(())
    }
    /// Adds statistics that continue this pass (see the module docs for when bits agree).
    pub fn merge(&mut self, other: &ParallelStats<'_>) -> Result<()> {
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
    /// `(G, b)` sums into `g` (`k x k`) and `b` (`k`); returns the row count.
    pub(crate) fn finish(&self, out: &mut [f64]) -> Result<u64> {
        self.sums.finish(out)
    }
}

/// Statistics of one deflation pass for one vector `w`: `s = sum z g(w'z)` and `b = sum g'(w'z)`.
#[derive(Debug)]
pub struct DeflationStats<'a> {
    k: usize,
    sums: Sums<'a>,
    row: &'a mut [f64],
}

impl<'a> DeflationStats<'a> {
    /// `f64` elements of buffer needed for `k` components.
    pub const fn buffer_len(k: usize) -> usize {
        2 * (k + 1) + k
    }
    /// Empty statistics in `buf`.
    pub fn new(k: usize, buf: &'a mut [f64]) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len(k))?;
        let (sums, row) = buf.split_at_mut(2 * (k + 1));
        Ok(Self {
            k,
            sums: Sums::new(k + 1, sums)?,
            row,
        })
    }
    /// Adds white rows `z` (`n x k`) for the unit vector `w` (`k`).
    pub fn accumulate<T: Float, C: Contrast>(
        &mut self,
        w: &[f64],
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
            let y: f64 = w.iter().zip(self.row.iter()).map(|(a, b)| a * b).sum();
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
    pub(crate) fn finish(&self, out: &mut [f64]) -> Result<u64> {
        self.sums.finish(out)
    }
}

/// Power sums `sum y`, `sum y^2`, `sum y^3`, `sum y^4` of the sources `y = W z`.
#[derive(Debug)]
pub struct SourceStats<'a> {
    k: usize,
    sums: Sums<'a>,
    row: &'a mut [f64],
}

impl<'a> SourceStats<'a> {
    /// `f64` elements of buffer needed for `k` components.
    pub const fn buffer_len(k: usize) -> usize {
        2 * 4 * k + k
    }
    /// Empty statistics in `buf`.
    pub fn new(k: usize, buf: &'a mut [f64]) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len(k))?;
        let (sums, row) = buf.split_at_mut(8 * k);
        Ok(Self {
            k,
            sums: Sums::new(4 * k, sums)?,
            row,
        })
    }
    /// Adds white rows `z` (`n x k`) unmixed by `w` (`k x k`).
    pub fn accumulate<T: Float>(&mut self, w: &[f64], z: &[T]) -> Result<()> {
        let k = self.k;
        check_rows(z, k, self.sums.rows)?;
        if w.len() != k * k {
            return Err(Error::DimensionMismatch {
                expected: k * k,
                found: w.len(),
            });
        }
        for zr in z.chunks_exact(k) {
            load_row(zr, self.row);
            for (i, wr) in w.chunks_exact(k).enumerate() {
                let y: f64 = wr.iter().zip(self.row.iter()).map(|(a, b)| a * b).sum();
                let y2 = y * y;
                let p = &mut self.sums.partial[4 * i..4 * i + 4];
                p[0] += y;
                p[1] += y2;
                p[2] += y2 * y;
                p[3] += y2 * y2;
            }
            self.sums.row_done();
        }
        Ok(())
    }
    /// Adds statistics that continue this pass.
    pub fn merge(&mut self, other: &SourceStats<'_>) -> Result<()> {
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
    pub(crate) fn finish(&self, out: &mut [f64]) -> Result<u64> {
        self.sums.finish(out)
    }
}
