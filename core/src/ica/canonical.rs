//! The moments of the sources and the canonical form they define (order by |excess kurtosis|,
//! sign to positive skewness).

use crate::error::{Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};
use crate::ica::driver::{Executor, Rows, SourcePass, rows_at_least_two};
use crate::ica::kernel::Kernel;

/// [`Sum`] workspace [`source_moments`] needs for `k` components on `kernel`.
pub(crate) fn source_moments_workspace_len<K: Kernel>(k: usize, kernel: K) -> usize {
    SourcePass::partial_len_with(k, kernel) + 4 * k
}

/// Standard deviation (ddof 0), skewness and excess kurtosis of each source `y = W z`, from one
/// pass over the white rows, into `out` (`3k`: all deviations, then all skewnesses, then all
/// kurtoses).
pub(crate) fn source_moments<T: Float, E: Executor<T>, K: Kernel>(
    exec: &mut E,
    kernel: K,
    w: &[Sum],
    k: usize,
    ws: &mut [Sum],
    out: &mut [Sum],
) -> Result<()> {
    let ws = prefix_mut(ws, source_moments_workspace_len(k, kernel))?;
    let (total, sums) = ws.split_at_mut(SourcePass::partial_len_with(k, kernel));
    let pass = SourcePass::new(w, k, kernel)?;
    total.fill(0.0);
    exec.pass(Rows::White, &pass, total)?;
    let n = rows_at_least_two(pass.finish(total, sums)?)? as Sum;
    let out = prefix_mut(out, 3 * k)?;
    for i in 0..k {
        let m = |p: usize| sums[4 * i + p] / n;
        let (m1, m2, m3, m4) = (m(0), m(1), m(2), m(3));
        let var = (m2 - m1 * m1).max(0.0);
        let mu3 = m3 - 3.0 * m1 * m2 + 2.0 * m1 * m1 * m1;
        let mu4 = m4 - 4.0 * m1 * m3 + 6.0 * m1 * m1 * m2 - 3.0 * m1 * m1 * m1 * m1;
        out[i] = smath::sqrt(var);
        let (skew, kurt) = if var > 0.0 {
            (mu3 / (var * smath::sqrt(var)), mu4 / (var * var) - 3.0)
        } else {
            (0.0, 0.0)
        };
        out[k + i] = skew;
        out[2 * k + i] = kurt;
    }
    Ok(())
}

/// The canonical form: rows of `w` ordered by decreasing |excess kurtosis| (ties keep their
/// order) and signed so that each source's skewness is >= 0. `moments` (deviations, skewnesses,
/// kurtoses, `k` each) are permuted and signed alongside.
pub fn canonicalize(w: &mut [Sum], k: usize, moments: &mut [Sum]) {
    for i in 0..k {
        if moments[k + i] < 0.0 {
            for x in w[i * k..(i + 1) * k].iter_mut() {
                *x = -*x;
            }
            moments[k + i] = -moments[k + i];
        }
    }
    // Insertion sort: stable, no allocation, k is small.
    for i in 1..k {
        let mut j = i;
        while j > 0 && smath::fabs(moments[2 * k + j]) > smath::fabs(moments[2 * k + j - 1]) {
            for block in 0..3 {
                moments.swap(block * k + j, block * k + j - 1);
            }
            for c in 0..k {
                w.swap(j * k + c, (j - 1) * k + c);
            }
            j -= 1;
        }
    }
}
