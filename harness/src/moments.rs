//! The mean and covariance of a table on a GEMM: the CLI's moments pass.
//!
//! The core's [`MomentsPass`](unmix::ica::MomentsPass) centres blocks of 32 rows and adds their
//! outer products one row at a time: portable and exact to the last bits on every target, but
//! 3-4 GFLOP/s. [`GemmMoments`] computes the same quantities as one product per block of
//! [`BLOCK_ROWS`] rows on the GEMM ([`crate::simd::gemm`], the `gemm` crate):
//!
//! - each block of [`BLOCK_ROWS`] rows is centred on its own mean (in `f64`, rows summed in
//!   order, whatever `T`) and its comoment is one product, the upper triangle only, in column
//!   panels of [`PANEL`];
//! - blocks are merged in row order into their [`CHUNK`] (chunks counted from the first row of
//!   the pass), which is summarised alone; chunks are merged in row order. Both merges are Chan,
//!   Golub and LeVeque's update `C = C_a + C_b + delta delta' n_a n_b / n`, the same additions as
//!   the core's merge.
//!
//! A chunk is one fixed computation and the merge order is the row order, so the bits do not
//! depend on the thread count (the same contract as every [`Pass`]). They differ from the core's
//! in the last bits (fused multiply-adds, another summation order): `tests/simd_fixtures.rs`
//! checks the two agree to 1e-12 relative. Centring each block on its own mean keeps the error
//! relative to the spread of the data, not to its offset, as the core's accuracy contract asks;
//! on data with few significant bits (the digits: small integers) the block means and centred
//! values are exact, as in the core's 32-row blocks, and the error is that of the merges.

use crate::simd::gemm;
use unmix::ica::{CHUNK, Pass};
use unmix::moments::MomentsRef;
use unmix::{Error, Float};

/// Rows per product: a divisor of [`CHUNK`]; 256 x 768 centred `f64` values (1.5 MB) per thread
/// at the widest embeddings.
pub const BLOCK_ROWS: usize = 256;

/// Columns per panel of the upper triangle: panel `p` is `C[..(p + 1) P, p P..(p + 1) P]`, so
/// the products cover a little more than half of `C` (9/16 at D = 256, 3/4 at D = 64) instead
/// of all of it. 32 rather than 64: one thread's moments at 1e5 x 64 took 16.8-17.4 ms against
/// 19.9-20.1, at 2e4 x 256 27.4 against 29.4-29.6, at 2e4 x 768 the same; 16, 24, 48 and wider
/// panels were slower (`benches/README.md`, "The moments in panels of 32 columns").
pub const PANEL: usize = 32;

/// The moments of `d` features as a [`Pass`] whose products run on the GEMM.
#[derive(Clone, Copy, Debug)]
pub struct GemmMoments {
    d: usize,
}

impl GemmMoments {
    /// Moments of `d >= 1` features.
    pub fn new(d: usize) -> unmix::Result<Self> {
        if d == 0 {
            return Err(Error::InvalidParameter(
                "number of features must be at least 1",
            ));
        }
        Ok(Self { d })
    }
    /// `[rows | mean (d) | comoment (d x d, upper triangle) | scratch]`: the scratch holds the
    /// mean and comoment of one chunk and of one block, and the block's centred rows.
    pub fn partial_len_for(d: usize) -> usize {
        1 + d + d * d + 2 * (d + d * d) + BLOCK_ROWS * d
    }
    /// The moments in a finished total.
    pub fn view<'a>(&self, total: &'a [f64]) -> unmix::Result<MomentsRef<'a>> {
        let d = self.d;
        if total.len() < 1 + d + d * d {
            return Err(Error::BufferTooSmall {
                needed: 1 + d + d * d,
                found: total.len(),
            });
        }
        MomentsRef::from_parts(
            total[0] as u64,
            d,
            &total[1..1 + d],
            &total[1 + d..1 + d + d * d],
        )
    }
}

/// Adds the moments `(nb, bmean, bcom)` of the rows that follow the `n` rows at `(mean, com)`;
/// `delta` is scratch. Returns the new row count. The additions of the core's merge.
fn merge_into(
    n: u64,
    mean: &mut [f64],
    com: &mut [f64],
    nb: u64,
    bmean: &[f64],
    bcom: &[f64],
    delta: &mut [f64],
) -> u64 {
    let d = mean.len();
    if nb == 0 {
        return n;
    }
    let n_new = n + nb;
    for ((dl, b), m) in delta.iter_mut().zip(bmean).zip(mean.iter()) {
        *dl = b - m;
    }
    let f = n as f64 * nb as f64 / n_new as f64;
    for i in 0..d {
        let di = delta[i] * f;
        let (crow, brow) = (
            &mut com[i * d + i..(i + 1) * d],
            &bcom[i * d + i..(i + 1) * d],
        );
        for ((c, b), dj) in crow.iter_mut().zip(brow).zip(&delta[i..]) {
            *c += b + di * dj;
        }
    }
    let w = nb as f64 / n_new as f64;
    for (m, dl) in mean.iter_mut().zip(delta.iter()) {
        *m += dl * w;
    }
    n_new
}

/// `c (upper triangle, d x d) = a' a` for the `nb x d` row-major block `a`, in column panels
/// (each entry of the upper triangle is written once; the strict lower triangle is left alone).
fn upper_gram(a: &[f64], nb: usize, d: usize, c: &mut [f64]) {
    let (a, c) = (&a[..nb * d], &mut c[..d * d]);
    let mut j0 = 0;
    while j0 < d {
        let j1 = (j0 + PANEL).min(d);
        // Rows 0..j1, columns j0..j1 of c += (the first j1 columns of a)' (columns j0..j1 of a).
        gemm(
            j1,
            nb,
            j1 - j0,
            a,
            (1, d),
            &a[j0..],
            (d, 1),
            &mut c[j0..],
            d,
            false,
        );
        j0 = j1;
    }
}

impl<T: Float> Pass<T> for GemmMoments {
    fn partial_len(&self) -> usize {
        Self::partial_len_for(self.d)
    }
    fn accumulate(&self, partial: &mut [f64], first: u64, rows: &[T]) -> unmix::Result<()> {
        let d = self.d;
        if !rows.len().is_multiple_of(d) {
            return Err(Error::RaggedRows {
                len: rows.len(),
                width: d,
            });
        }
        let len = Self::partial_len_for(d);
        if partial.len() < len {
            return Err(Error::BufferTooSmall {
                needed: len,
                found: partial.len(),
            });
        }
        let (head, rest) = partial[..len].split_at_mut(1);
        let (mean, rest) = rest.split_at_mut(d);
        let (com, rest) = rest.split_at_mut(d * d);
        let (cmean, rest) = rest.split_at_mut(d);
        let (ccom, rest) = rest.split_at_mut(d * d);
        let (bmean, rest) = rest.split_at_mut(d);
        let (bcom, block) = rest.split_at_mut(d * d);
        // The chunk's running moments start from zero (a partial is zeroed before its rows).
        cmean.fill(0.0);
        ccom.fill(0.0);
        let mut n = head[0] as u64;
        for (i, chunk) in rows.chunks(CHUNK * d).enumerate() {
            let mut nc = 0;
            for (j, rows) in chunk.chunks(BLOCK_ROWS * d).enumerate() {
                let rb = rows.len() / d;
                bmean.fill(0.0);
                for row in rows.chunks_exact(d) {
                    for (m, x) in bmean.iter_mut().zip(row) {
                        *m += x.to_f64();
                    }
                }
                // A NaN or infinity in the rows makes their sum one, so the rows are searched
                // only then, for the error (finite values too large for the sum go on, as they
                // did when every block was searched first, a pass more over its rows).
                if bmean.iter().any(|m| !m.is_finite())
                    && let Some(pos) = crate::simd::first_non_finite(rows)
                {
                    return Err(Error::NonFinite {
                        row: first + (i * CHUNK + j * BLOCK_ROWS + pos / d) as u64,
                        col: pos % d,
                    });
                }
                let inv = 1.0 / rb as f64;
                for m in bmean.iter_mut() {
                    *m *= inv;
                }
                for (brow, row) in block.chunks_exact_mut(d).zip(rows.chunks_exact(d)) {
                    for ((b, x), m) in brow.iter_mut().zip(row).zip(bmean.iter()) {
                        *b = x.to_f64() - *m;
                    }
                }
                upper_gram(block, rb, d, bcom);
                // `block` is free again: its first d values take the merge's delta.
                nc = merge_into(nc, cmean, ccom, rb as u64, bmean, bcom, &mut block[..d]);
            }
            n = merge_into(n, mean, com, nc, cmean, ccom, &mut block[..d]);
            cmean.fill(0.0);
            ccom.fill(0.0);
        }
        head[0] = n as f64;
        Ok(())
    }
    fn merge(&self, total: &mut [f64], next: &[f64]) -> unmix::Result<()> {
        let d = self.d;
        let len = 1 + d + d * d;
        if total.len() < len + d || next.len() < len {
            return Err(Error::BufferTooSmall {
                needed: len + d,
                found: total.len().min(next.len()),
            });
        }
        let nb = next[0] as u64;
        let (head, rest) = total.split_at_mut(1);
        let (mean, rest) = rest.split_at_mut(d);
        let (com, rest) = rest.split_at_mut(d * d);
        let n = merge_into(
            head[0] as u64,
            mean,
            com,
            nb,
            &next[1..1 + d],
            &next[1 + d..len],
            &mut rest[..d],
        );
        head[0] = n as f64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unmix::moments::MomentsBuf;

    /// Rows with a large offset and features of very different scales.
    fn data(n: usize, d: usize) -> Vec<f64> {
        let mut normals = unmix::random::Normals::new(5);
        (0..n * d)
            .map(|i| 1e3 + (1 + i % d) as f64 * normals.next_normal())
            .collect()
    }

    fn core_moments(x: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
        let mut buf = vec![0.0; MomentsBuf::buffer_len(d)];
        let mut m = MomentsBuf::new(d, &mut buf).unwrap();
        m.accumulate(x).unwrap();
        let v = m.as_ref();
        (v.mean().to_vec(), v.comoment_upper().to_vec())
    }

    fn gemm_moments(x: &[f64], d: usize, pieces: &[usize]) -> (Vec<f64>, Vec<f64>) {
        let pass = GemmMoments::new(d).unwrap();
        let mut total = vec![0.0; GemmMoments::partial_len_for(d)];
        let mut start = 0;
        for &rows in pieces {
            let mut partial = vec![0.0; GemmMoments::partial_len_for(d)];
            let end = (start + rows * d).min(x.len());
            pass.accumulate(&mut partial, (start / d) as u64, &x[start..end])
                .unwrap();
            Pass::<f64>::merge(&pass, &mut total, &partial).unwrap();
            start = end;
        }
        assert_eq!(start, x.len());
        let v = pass.view(&total).unwrap();
        assert_eq!(v.n_samples() as usize, x.len() / d);
        (v.mean().to_vec(), v.comoment_upper().to_vec())
    }

    /// Upper triangles agree to `tol` relative to the largest entry.
    fn close_upper(a: &[f64], b: &[f64], d: usize, tol: f64) -> f64 {
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut worst = 0.0f64;
        for i in 0..d {
            for j in i..d {
                worst = worst.max((a[i * d + j] - b[i * d + j]).abs() / scale);
            }
        }
        assert!(worst < tol, "differ by {worst:e}");
        worst
    }

    #[test]
    fn agrees_with_the_core_and_does_not_depend_on_the_split() {
        for d in [1, 7, 64, 130] {
            let n = 2 * CHUNK + 777;
            let x = data(n, d);
            let (mean, com) = core_moments(&x, d);
            let whole = gemm_moments(&x, d, &[n]);
            let split = gemm_moments(&x, d, &[CHUNK, CHUNK, 777]);
            assert_eq!(whole, split, "d = {d}: the split changed the bits");
            close_upper(&whole.0, &mean, 1, 1e-14);
            close_upper(&whole.1, &com, d, 1e-12);
        }
    }

    /// `sum` with Neumaier's compensation: within a couple of roundings of the exact sum.
    fn compensated_sum(values: impl Iterator<Item = f64>) -> f64 {
        let (mut sum, mut c) = (0.0f64, 0.0f64);
        for v in values {
            let t = sum + v;
            c += if sum.abs() >= v.abs() {
                (sum - t) + v
            } else {
                (v - t) + sum
            };
            sum = t;
        }
        sum + c
    }

    /// Against a reference two orders more accurate (two passes with compensated sums) on
    /// offset data: the GEMM's comoment within 6e-15 of the largest entry, and no further than
    /// the core's (measured: 4.9e-15, 1.7e-15 and 2.1e-16 at d = 1, 7 and 64; the core's
    /// 5.7e-15, 2.9e-15 and 3.4e-15).
    #[test]
    fn is_accurate_on_offset_data() {
        for d in [1, 7, 64] {
            let n = 2 * CHUNK + 777;
            let x = data(n, d);
            let mean: Vec<f64> = (0..d)
                .map(|j| compensated_sum(x.iter().skip(j).step_by(d).copied()) / n as f64)
                .collect();
            let mut exact = vec![0.0; d * d];
            for i in 0..d {
                for j in i..d {
                    exact[i * d + j] = compensated_sum(
                        x.chunks_exact(d)
                            .map(|r| (r[i] - mean[i]) * (r[j] - mean[j])),
                    );
                }
            }
            let (gmean, gemm) = gemm_moments(&x, d, &[n]);
            let (_, core) = core_moments(&x, d);
            close_upper(&gmean, &mean, 1, 1e-15);
            let g = close_upper(&gemm, &exact, d, 6e-15);
            let c = close_upper(&core, &exact, d, 1e-14);
            assert!(g <= c, "d = {d}: GEMM {g:e} against the core's {c:e}");
            eprintln!("d = {d}: comoment error / max entry: GEMM {g:.1e}, core {c:.1e}");
        }
    }

    #[test]
    fn non_finite_rows_are_named() {
        let d = 3;
        let mut x = data(CHUNK + 10, d);
        x[(CHUNK + 4) * d + 2] = f64::NAN;
        let pass = GemmMoments::new(d).unwrap();
        let mut partial = vec![0.0; GemmMoments::partial_len_for(d)];
        let e = pass.accumulate(&mut partial, 100, &x).unwrap_err();
        assert_eq!(
            e,
            Error::NonFinite {
                row: 100 + CHUNK as u64 + 4,
                col: 2
            }
        );
        // Infinities of both signs in one column of a block: their sum is NaN, the first named.
        let mut x = data(CHUNK + 10, d);
        x[(CHUNK + 7) * d + 1] = f64::NEG_INFINITY;
        x[(CHUNK + 9) * d + 1] = f64::INFINITY;
        let e = pass.accumulate(&mut partial, 0, &x).unwrap_err();
        let expected = Error::NonFinite {
            row: CHUNK as u64 + 7,
            col: 1,
        };
        assert_eq!(e, expected);
        // Finite values whose sum overflows are not blamed on a row.
        let mut x = data(300, d);
        x[5 * d] = f64::MAX;
        x[6 * d] = f64::MAX;
        partial.fill(0.0);
        pass.accumulate(&mut partial, 0, &x).unwrap();
    }

    /// On the digits (small integers) the exact comoment is `(n S_ij - s_i s_j) / n` with the
    /// integer sums `S` and `s` exact in `f64`: one rounding. The GEMM's must be within 1e-15 of
    /// the largest entry (it is 1.9e-16; the core's 32-row blocks give 3.8e-16; centring on the
    /// 4096-row chunk's mean instead of each block's, an earlier version, gave 2.3e-15).
    #[test]
    fn is_accurate_on_the_digits() {
        let x = crate::demo::digits().unwrap();
        let x = x.select_columns(&crate::demo::nonconstant_columns(&x));
        let (n, d) = (x.rows, x.cols);
        let mut s = vec![0.0f64; d];
        let mut ss = vec![0.0f64; d * d];
        for r in x.data.chunks(d) {
            for i in 0..d {
                s[i] += r[i];
                for j in 0..d {
                    ss[i * d + j] += r[i] * r[j];
                }
            }
        }
        let exact: Vec<f64> = (0..d * d)
            .map(|ij| (n as f64 * ss[ij] - s[ij / d] * s[ij % d]) / n as f64)
            .collect();
        let (_, gemm) = gemm_moments(&x.data, d, &[n]);
        let (_, core) = core_moments(&x.data, d);
        let g = close_upper(&gemm, &exact, d, 1e-15);
        let c = close_upper(&core, &exact, d, 1e-15);
        eprintln!("digits comoment, error / max entry: GEMM {g:.1e}, core {c:.1e}");
    }
}
