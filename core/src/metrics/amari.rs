//! The Amari index of `P = W A`: how far the estimated unmixing `W` (`k x d`, whitening included,
//! i.e. FastICA's `components`) is from inverting the true mixing `A` (`d x k`) up to a scaled
//! permutation. Amari, Cichocki and Yang (1996), normalised by `2k(k - 1)` to [0, 1]:
//!
//! `[sum_i (sum_j |p_ij| / max_l |p_il| - 1) + sum_j (sum_i |p_ij| / max_l |p_lj| - 1)] / (2k(k-1))`
//!
//! 0 exactly when `P` is a scaled permutation. (Other papers divide by `2k`, or square the
//! entries as python-picard does: compare normalisations before comparing numbers.)

use crate::error::{Error, Result, prefix_mut};
use crate::float::Sum;

/// Amari index of `W` (`k x d`) and `A` (`d x k`); `p` is `k x k` scratch (receives `W A`).
///
/// ```
/// // W = I, A = [[1, 2], [3, 4]]: 0.5208333333333333 (the classic index normalised to [0, 1]).
/// let mut p = [0.0; 4];
/// let index = unmix::metrics::amari_index(&[1.0, 0.0, 0.0, 1.0], &[1.0, 2.0, 3.0, 4.0], 2, 2, &mut p)?;
/// assert!((index - 0.5208333333333333).abs() < 1e-15);
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn amari_index(w: &[Sum], a: &[Sum], k: usize, d: usize, p: &mut [Sum]) -> Result<Sum> {
    if w.len() != k * d {
        return Err(Error::DimensionMismatch {
            expected: k * d,
            found: w.len(),
        });
    }
    if a.len() != d * k {
        return Err(Error::DimensionMismatch {
            expected: d * k,
            found: a.len(),
        });
    }
    if k < 2 {
        return Err(too_few(k));
    }
    // Non-finite entries are reported where they are in `W` (then `A`), not in the product.
    for (m, width) in [(w, d), (a, k)] {
        if let Some(i) = m.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                row: (i / width) as u64,
                col: i % width,
            });
        }
    }
    // The index is invariant to scaling W and A, so scale both to max |entry| = 1 first: finite
    // matrices near 1e300 then give a finite product.
    let scale = |m: &[Sum]| {
        let s = m.iter().fold(0.0 as Sum, |s, v| s.max(v.abs()));
        if s > 0.0 { s } else { 1.0 }
    };
    let (sw, sa) = (scale(w), scale(a));
    let p = prefix_mut(p, k * k)?;
    for i in 0..k {
        for j in 0..k {
            p[i * k + j] = (0..d)
                .map(|l| (w[i * d + l] / sw) * (a[l * k + j] / sa))
                .sum();
        }
    }
    amari_index_of_product(p, k)
}

fn too_few(k: usize) -> Error {
    Error::TooFew {
        what: "components",
        found: k,
        needed: 2,
    }
}

/// Amari index of a given `k x k` product `P`.
pub fn amari_index_of_product(p: &[Sum], k: usize) -> Result<Sum> {
    if p.len() != k * k {
        return Err(Error::DimensionMismatch {
            expected: k * k,
            found: p.len(),
        });
    }
    if k < 2 {
        return Err(too_few(k));
    }
    if let Some(i) = p.iter().position(|v| !v.is_finite()) {
        return Err(Error::NonFinite {
            row: (i / k) as u64,
            col: i % k,
        });
    }
    // Scale so that sums of magnitudes cannot overflow (the index is scale invariant).
    let scale = p.iter().fold(0.0 as Sum, |m, v| m.max(v.abs()));
    if scale == 0.0 {
        return Err(Error::InvalidParameter("P = W A is zero"));
    }
    let at = |i: usize, j: usize| p[i * k + j].abs() / scale;
    let mut total = 0.0;
    for i in 0..k {
        let (sum, max) = (0..k).fold((0.0, 0.0 as Sum), |(s, m), j| {
            (s + at(i, j), m.max(at(i, j)))
        });
        if max == 0.0 {
            return Err(Error::InvalidParameter("P = W A has a zero row"));
        }
        total += sum / max - 1.0;
    }
    for j in 0..k {
        let (sum, max) = (0..k).fold((0.0, 0.0 as Sum), |(s, m), i| {
            (s + at(i, j), m.max(at(i, j)))
        });
        if max == 0.0 {
            return Err(Error::InvalidParameter("P = W A has a zero column"));
        }
        total += sum / max - 1.0;
    }
    Ok((total / (2.0 * k as Sum * (k as Sum - 1.0))).clamp(0.0, 1.0))
}
