//! Area under the ROC curve, exact with ties.
//!
//! AUROC = P(score of a random positive > score of a random negative) + P(equal) / 2, which equals
//! scikit-learn's trapezoid `roc_auc_score` exactly, ties included (a tie group is one diagonal
//! segment of the curve). With weights: `sum_{i pos, j neg} w_i w_j [1(s_i > s_j) + 1(s_i = s_j)/2]
//! / (W+ W-)`. Sums are in `f64`; O(n log n) through an in-place sort of caller scratch.
//!
//! A single class (or a class of zero total weight) is [`Error::SingleClass`]: scikit-learn 1.6+
//! returns NaN with a warning instead, and earlier versions raised; our contract is the error.
//! `-0.0` and `+0.0` are the same score.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;

/// An order-preserving `u64` key of a finite float (`-0.0` keyed as `+0.0`).
#[inline]
fn key(x: f64) -> u64 {
    let bits = (x + 0.0).to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn check_inputs<T: Float>(scores: &[T], labels: &[bool]) -> Result<()> {
    if scores.len() != labels.len() {
        return Err(Error::DimensionMismatch {
            expected: scores.len(),
            found: labels.len(),
        });
    }
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        return Err(Error::NonFinite {
            row: i as u64,
            col: 0,
        });
    }
    Ok(())
}

/// AUROC of `scores` for binary `labels` (`true` = positive). `scratch` needs `scores.len()`
/// elements.
///
/// ```
/// let (y, s) = ([false, true, false, true, true, false], [0.5, 0.5, 0.2, 0.9, 0.5, 0.5]);
/// let auc = unmix::metrics::auroc(&s, &y, &mut [0u64; 6])?;
/// assert!((auc - 0.7777777777777778).abs() < 1e-15); // scikit-learn's roc_auc_score
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn auroc<T: Float>(scores: &[T], labels: &[bool], scratch: &mut [u64]) -> Result<f64> {
    check_inputs(scores, labels)?;
    let n = scores.len();
    let scratch = prefix_mut(scratch, n)?;
    let n_pos = labels.iter().filter(|l| **l).count();
    let n_neg = n - n_pos;
    if n_pos == 0 || n_neg == 0 {
        return Err(Error::SingleClass);
    }
    let (mut p, mut q) = (0, n_pos);
    for (s, l) in scores.iter().zip(labels) {
        if *l {
            scratch[p] = key(s.to_f64());
            p += 1;
        } else {
            scratch[q] = key(s.to_f64());
            q += 1;
        }
    }
    let (pos, neg) = scratch.split_at_mut(n_pos);
    pos.sort_unstable();
    neg.sort_unstable();
    // For each positive: negatives strictly below, plus half of those equal.
    let (mut below, mut equal_end, mut twice_u) = (0usize, 0usize, 0u128);
    for &k in pos.iter() {
        while below < n_neg && neg[below] < k {
            below += 1;
        }
        equal_end = equal_end.max(below);
        while equal_end < n_neg && neg[equal_end] == k {
            equal_end += 1;
        }
        twice_u += (2 * below + (equal_end - below)) as u128;
    }
    Ok(twice_u as f64 / (2.0 * n_pos as f64 * n_neg as f64))
}

/// Weighted AUROC: `weights` are finite and `>= 0` (zero-weight samples count for nothing, as in
/// scikit-learn). `scratch` needs `scores.len()` elements.
///
/// ```
/// let y = [false, true, false, true, true, false];
/// let s = [0.5, 0.5, 0.2, 0.9, 0.5, 0.5];
/// let w = [1.0, 2.0, 1.0, 1.0, 3.0, 0.5];
/// let auc = unmix::metrics::auroc_weighted(&s, &y, &w, &mut [0usize; 6])?;
/// assert!((auc - 0.75).abs() < 1e-15);
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn auroc_weighted<T: Float>(
    scores: &[T],
    labels: &[bool],
    weights: &[T],
    scratch: &mut [usize],
) -> Result<f64> {
    check_inputs(scores, labels)?;
    if weights.len() != scores.len() {
        return Err(Error::DimensionMismatch {
            expected: scores.len(),
            found: weights.len(),
        });
    }
    if weights.iter().any(|w| !w.is_finite() || *w < T::ZERO) {
        return Err(Error::InvalidParameter("weights must be finite and >= 0"));
    }
    let n = scores.len();
    // The index is invariant to scaling the weights: divide by the largest so no sum overflows.
    let wmax = weights.iter().fold(0.0f64, |m, w| m.max(w.to_f64()));
    if wmax == 0.0 {
        return Err(Error::SingleClass);
    }
    let weight = |i: usize| weights[i].to_f64() / wmax;
    let order = prefix_mut(scratch, n)?;
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    order.sort_unstable_by_key(|&i| key(scores[i].to_f64()));
    let (mut w_pos, mut w_neg, mut below, mut area) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut start = 0;
    while start < n {
        let k = key(scores[order[start]].to_f64());
        let (mut p, mut q, mut end) = (0.0, 0.0, start);
        while end < n && key(scores[order[end]].to_f64()) == k {
            let i = order[end];
            if labels[i] {
                p += weight(i);
            } else {
                q += weight(i);
            }
            end += 1;
        }
        area += p * (below + 0.5 * q);
        below += q;
        w_pos += p;
        w_neg += q;
        start = end;
    }
    if w_pos <= 0.0 || w_neg <= 0.0 {
        return Err(Error::SingleClass);
    }
    // The exact value is in [0, 1]; summation rounding can step past the ends by an ulp.
    Ok((area / (w_pos * w_neg)).clamp(0.0, 1.0))
}
