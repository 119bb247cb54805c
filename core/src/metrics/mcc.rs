//! Mean correlation coefficient (MCC), the identifiability papers' score of recovered sources:
//! the mean |correlation| between true and estimated sources after the one-to-one matching that
//! maximises the total |correlation| (Khemakhem et al. 2020; Hyvarinen and Morioka).
//!
//! With `d_true != d_est` the matching has `min(d_true, d_est)` pairs and the mean is over them.

use crate::error::{Result, prefix_mut};
use crate::float::Float;
use crate::float::Sum;
use crate::metrics::assignment::{self, UNASSIGNED, linear_sum_assignment};
use crate::metrics::correlation::{self, Method, correlation_matrix};

/// `(f64, usize)` workspace lengths of [`mcc`].
pub const fn workspace_len(
    n: usize,
    d_true: usize,
    d_est: usize,
    method: Method,
) -> (usize, usize) {
    let (cf, cu) = correlation::workspace_len(n, d_true, d_est, method);
    let (af, au) = assignment::workspace_len(d_true, d_est);
    let f = if cf > af { cf } else { af };
    let u = if cu > au { cu } else { au };
    (f + d_true * d_est, u)
}

/// MCC of `estimate` (`n x d_est`) against `truth` (`n x d_true`). `pairs` (`d_true`) receives the
/// estimated column matched to each true column ([`UNASSIGNED`] if none).
///
/// ```
/// use unmix::metrics::{correlation::Method, mcc};
/// // The estimate is the truth with columns swapped, one negated and rescaled.
/// let truth = [1.0, 5.0, 2.0, 3.0, 3.0, 4.0, 4.0, 0.0];
/// let est = [-10.0, 0.5, -6.0, 1.0, -8.0, 1.5, 0.0, 2.0];
/// let (lf, lu) = mcc::workspace_len(4, 2, 2, Method::Pearson);
/// let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], [0; 2]);
/// let score = mcc::mcc(&truth, 2, &est, 2, Method::Pearson, &mut pairs, &mut wf, &mut wu)?;
/// assert!((score - 1.0).abs() < 1e-12 && pairs == [1, 0]);
/// # Ok::<(), unmix::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn mcc<T: Float>(
    truth: &[T],
    d_true: usize,
    estimate: &[T],
    d_est: usize,
    method: Method,
    pairs: &mut [usize],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<Sum> {
    let ws = prefix_mut(
        ws_f64,
        workspace_len(truth.len() / d_true.max(1), d_true, d_est, method).0,
    )?;
    let (corr, rest) = ws.split_at_mut(d_true * d_est);
    correlation_matrix(truth, d_true, estimate, d_est, method, corr, rest, ws_usize)?;
    for c in corr.iter_mut() {
        *c = c.abs();
    }
    mcc_from_correlation(corr, d_true, d_est, pairs, rest, ws_usize)
}

/// MCC from a `d_true x d_est` matrix of |correlations|.
pub fn mcc_from_correlation(
    abs_corr: &[Sum],
    d_true: usize,
    d_est: usize,
    pairs: &mut [usize],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<Sum> {
    linear_sum_assignment(abs_corr, d_true, d_est, true, pairs, ws_f64, ws_usize)?;
    let matched = pairs
        .iter()
        .take(d_true)
        .filter(|&&j| j != UNASSIGNED)
        .count();
    let total: Sum = pairs
        .iter()
        .take(d_true)
        .enumerate()
        .filter(|(_, j)| **j != UNASSIGNED)
        .map(|(i, &j)| abs_corr[i * d_est + j])
        .sum();
    Ok(if matched == 0 {
        0.0
    } else {
        total / matched as Sum
    })
}
