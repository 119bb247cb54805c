//! FastICA's update equations, on [`Sum`] matrices in caller buffers (scikit-learn's conventions).
//!
//! Parallel: `W <- sym(E[g(W z) z'] - diag(E[g'(W z)]) W)` with `sym(M) = (M M')^(-1/2) M`; the
//! change is `max_i | |<w_i_new, w_i_old>| - 1 |`.
//! Deflation, for row `j`: `w <- E[z g(w'z)] - E[g'(w'z)] w`, Gram-Schmidt against rows `0..j`,
//! normalise; the change is `| |<w_new, w_old>| - 1 |`.

use crate::error::{Error, Result, prefix_mut};
use crate::float::{Sum, smath};
use crate::ica::kernel::{Kernel, Portable};
use crate::linalg::{dot, symmetric_eigen};

/// [`Sum`] workspace [`sym_decorrelation`] needs for `k x k`.
pub const fn sym_workspace_len(k: usize) -> usize {
    3 * k * k + 2 * k
}

/// `W <- (W W')^(-1/2) W`, the nearest matrix with orthonormal rows. Eigenvalues of `W W'` below
/// `f64::MIN_POSITIVE` are raised to it, as scikit-learn clips at `finfo.tiny`.
pub fn sym_decorrelation(w: &mut [Sum], k: usize, ws: &mut [Sum]) -> Result<()> {
    sym_decorrelation_with(w, k, ws, Portable)
}

/// [`sym_decorrelation`] with its three `k^3` products (`W W'`, `P = V' S V`, `P W`) and the
/// eigen-decomposition on `kernel` ([`Kernel::gram`], [`Kernel::decorrelate`],
/// [`Kernel::symmetric_eigen`]).
pub fn sym_decorrelation_with<K: Kernel>(
    w: &mut [Sum],
    k: usize,
    ws: &mut [Sum],
    kernel: K,
) -> Result<()> {
    let ws = prefix_mut(ws, sym_workspace_len(k))?;
    let (m, rest) = ws.split_at_mut(k * k);
    let (values, rest) = rest.split_at_mut(k);
    let (work, rest) = rest.split_at_mut(k);
    let (p, tmp) = rest.split_at_mut(k * k);
    let w = prefix_mut(w, k * k)?;
    kernel.gram(w, k, m);
    kernel.symmetric_eigen(m, k, values, work)?;
    for v in values.iter_mut() {
        *v = 1.0 / smath::sqrt(v.max(Sum::MIN_POSITIVE));
    }
    kernel.decorrelate(m, values, w, k, p, &mut tmp[..k * k]);
    w.copy_from_slice(&tmp[..k * k]);
    if w.iter().any(|v| !v.is_finite()) {
        return Err(Error::Overflow);
    }
    Ok(())
}

/// `out = P w` with `P = sum_l s_l v_l v_l'` for the rows `v_l` of `v` (`k x k` each; `p`
/// receives `P`): the portable [`Kernel::decorrelate`]. `P` accumulates over `l` in order; each
/// entry of `P w` sums over `l` in order from `-0.0` (as `Iterator::sum`), the inner loop running
/// along contiguous rows of `w` (it vectorises).
pub fn decorrelate(v: &[Sum], s: &[Sum], w: &[Sum], k: usize, p: &mut [Sum], out: &mut [Sum]) {
    let p = &mut p[..k * k];
    p.fill(0.0);
    for (v, inv) in v.chunks_exact(k).zip(s).take(k) {
        for i in 0..k {
            let vi = v[i] * *inv;
            for j in 0..k {
                p[i * k + j] += vi * v[j];
            }
        }
    }
    for (trow, prow) in out.chunks_exact_mut(k).zip(p.chunks_exact(k)).take(k) {
        trow.fill(-0.0);
        for (a, wrow) in prow.iter().zip(w.chunks_exact(k)) {
            for (t, x) in trow.iter_mut().zip(wrow) {
                *t += *a * *x;
            }
        }
    }
}

/// `m = w w'` (`k x k`, both triangles): the portable [`Kernel::gram`]: each entry is [`dot`]'s sum (over `l` in order, from
/// `-0.0`), four entries of a row at a time so that their additions overlap. The same bits as a
/// `dot` per entry, in about a quarter of the time (a lone `dot` waits on each addition).
pub fn gram_upper(w: &[Sum], k: usize, m: &mut [Sum]) {
    for i in 0..k {
        let wi = &w[i * k..(i + 1) * k];
        let mut j = i;
        while j + 4 <= k {
            let rows = &w[j * k..(j + 4) * k];
            let mut acc = [-0.0 as Sum; 4];
            for (l, a) in wi.iter().enumerate() {
                for (q, s) in acc.iter_mut().enumerate() {
                    *s += *a * rows[q * k + l];
                }
            }
            for (q, v) in acc.into_iter().enumerate() {
                m[i * k + j + q] = v;
                m[(j + q) * k + i] = v;
            }
            j += 4;
        }
        for j in j..k {
            let v = dot(wi, &w[j * k..(j + 1) * k]);
            m[i * k + j] = v;
            m[j * k + i] = v;
        }
    }
}

/// Checks that `w` (`k x k`) is usable as a start: every row nonzero and `W W'` not singular
/// (smallest eigenvalue above `1e-12` of the largest).
pub fn check_start(w: &[Sum], k: usize, ws: &mut [Sum]) -> Result<()> {
    if w.len() != k * k {
        return Err(Error::DimensionMismatch {
            expected: k * k,
            found: w.len(),
        });
    }
    if w.iter().any(|v| !v.is_finite()) {
        return Err(Error::InvalidParameter("w_init contains NaN or infinity"));
    }
    let ws = prefix_mut(ws, sym_workspace_len(k))?;
    let (m, rest) = ws.split_at_mut(k * k);
    let (values, rest) = rest.split_at_mut(k);
    let work = &mut rest[..k];
    for i in 0..k {
        for j in 0..k {
            m[i * k + j] = dot(&w[i * k..(i + 1) * k], &w[j * k..(j + 1) * k]);
        }
    }
    symmetric_eigen(m, k, values, work)?;
    if values[k - 1].is_nan() || values[k - 1] <= 1e-12 * values[0] {
        return Err(Error::InvalidParameter("w_init is singular"));
    }
    Ok(())
}

/// One parallel step from the pass sums `gb` (`G` row-major `k x k`, then `b`, `k`) over `n` rows.
/// Replaces `w` and returns the change.
pub fn parallel_step(w: &mut [Sum], gb: &[Sum], n: u64, k: usize, ws: &mut [Sum]) -> Result<Sum> {
    parallel_step_with(w, gb, n, k, ws, Portable)
}

/// [`parallel_step`] with the decorrelation's products on `kernel`.
pub fn parallel_step_with<K: Kernel>(
    w: &mut [Sum],
    gb: &[Sum],
    n: u64,
    k: usize,
    ws: &mut [Sum],
    kernel: K,
) -> Result<Sum> {
    let ws = prefix_mut(ws, k * k + sym_workspace_len(k))?;
    let (w1, sym_ws) = ws.split_at_mut(k * k);
    let inv_n = 1.0 / n as Sum;
    for i in 0..k {
        let beta = gb[k * k + i] * inv_n;
        for j in 0..k {
            w1[i * k + j] = gb[i * k + j] * inv_n - beta * w[i * k + j];
        }
    }
    sym_decorrelation_with(w1, k, sym_ws, kernel)?;
    let mut change: Sum = 0.0;
    for i in 0..k {
        let c = dot(&w1[i * k..(i + 1) * k], &w[i * k..(i + 1) * k]);
        change = change.max((c.abs() - 1.0).abs());
    }
    w[..k * k].copy_from_slice(w1);
    Ok(change)
}

/// One deflation step for row `j` of `w` from the pass sums `sb` (`s`, `k`, then `b`) over `n`
/// rows; rows `0..j` are the components already found. Returns the change.
pub fn deflation_step(
    w: &mut [Sum],
    j: usize,
    sb: &[Sum],
    n: u64,
    k: usize,
    ws: &mut [Sum],
) -> Result<Sum> {
    let w1 = prefix_mut(ws, k)?;
    let inv_n = 1.0 / n as Sum;
    let beta = sb[k] * inv_n;
    let (done, rest) = w.split_at_mut(j * k);
    let current = &mut rest[..k];
    for i in 0..k {
        w1[i] = sb[i] * inv_n - beta * current[i];
    }
    gram_schmidt(w1, done, k);
    let norm = smath::sqrt(dot(w1, w1));
    if norm.is_nan() || norm <= 0.0 || !norm.is_finite() {
        return Err(Error::Overflow);
    }
    for x in w1.iter_mut() {
        *x /= norm;
    }
    let change = (dot(w1, current).abs() - 1.0).abs();
    current.copy_from_slice(w1);
    Ok(change)
}

/// `w <- w - (w W') W` for orthonormal rows `W`: scikit-learn's `_gs_decorrelation`, in the
/// modified form (equal in exact arithmetic for orthonormal rows, and at least as accurate).
pub fn gram_schmidt(w: &mut [Sum], rows: &[Sum], k: usize) {
    for prev in rows.chunks_exact(k) {
        let p = dot(w, prev);
        for (x, y) in w.iter_mut().zip(prev) {
            *x -= p * y;
        }
    }
}

#[cfg(all(test, not(feature = "f32-sums")))]
mod tests {
    use super::*;

    /// The decorrelation as it was written before its loops were reordered: a `dot` per entry
    /// of `W W'`, an iterator sum per entry of `P W`.
    fn reference(w: &mut [Sum], k: usize) {
        let mut m = [0.0; 400];
        let (mut values, mut work) = ([0.0; 20], [0.0; 20]);
        for i in 0..k {
            for j in i..k {
                let v = dot(&w[i * k..(i + 1) * k], &w[j * k..(j + 1) * k]);
                m[i * k + j] = v;
                m[j * k + i] = v;
            }
        }
        symmetric_eigen(&mut m[..k * k], k, &mut values[..k], &mut work[..k]).unwrap();
        let mut p = [0.0; 400];
        for (l, v) in m[..k * k].chunks_exact(k).enumerate() {
            let inv = 1.0 / smath::sqrt(values[l].max(Sum::MIN_POSITIVE));
            for i in 0..k {
                let vi = v[i] * inv;
                for j in 0..k {
                    p[i * k + j] += vi * v[j];
                }
            }
        }
        let mut tmp = [0.0; 400];
        for i in 0..k {
            for j in 0..k {
                tmp[i * k + j] = (0..k).map(|l| p[i * k + l] * w[l * k + j]).sum();
            }
        }
        w[..k * k].copy_from_slice(&tmp[..k * k]);
    }

    #[test]
    fn reordered_loops_give_the_same_bits() {
        for k in [1, 3, 4, 7, 20] {
            let mut w = [0.0; 400];
            for (i, v) in w[..k * k].iter_mut().enumerate() {
                *v = libm::sin(i as Sum * 0.7 + 0.3) + if i % (k + 1) == 0 { 2.0 } else { 0.0 };
            }
            if k > 3 {
                w[1] = -0.0;
                w[k + 2] = 0.0;
            }
            let mut expected = w;
            reference(&mut expected, k);
            let mut ws = [0.0; 3 * 400 + 40];
            sym_decorrelation(&mut w[..k * k], k, &mut ws).unwrap();
            for (i, (a, b)) in w[..k * k].iter().zip(&expected[..k * k]).enumerate() {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "k = {k}, entry {i}: {a:e} vs {b:e}"
                );
            }
        }
    }
}
