//! Correlation matrices between the columns of two sample matrices: Pearson (a streaming,
//! mergeable reduction through [`CrossMomentsBuf`]) and Spearman (Pearson on average ranks, so
//! ties get the mean of the ranks they span, as `scipy.stats.rankdata` and `spearmanr`).

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::Sum;
use crate::moments::{CrossMomentsBuf, check_rows};

/// Pearson or Spearman.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Method {
    /// Linear correlation: invariant to per-column affine maps.
    #[default]
    Pearson,
    /// Rank correlation: invariant to per-column strictly increasing maps.
    Spearman,
}

crate::names::option_names!(Method, "correlation method", {
    Method::Pearson => "pearson", Method::Pearson;
    Method::Spearman => "spearman", Method::Spearman;
});

/// `(f64, usize)` workspace lengths of [`correlation_matrix`] for `n` rows.
pub const fn workspace_len(n: usize, dx: usize, dy: usize, method: Method) -> (usize, usize) {
    let moments = CrossMomentsBuf::buffer_len(dx, dy);
    match method {
        Method::Pearson => (moments, 0),
        Method::Spearman => (moments + n * (dx + dy), n),
    }
}

/// Replaces each column of the `n x d` row-major `x` by its average ranks, into `out` (`n x d`).
pub fn rank_columns<T: Float>(
    x: &[T],
    d: usize,
    out: &mut [Sum],
    order: &mut [usize],
) -> Result<()> {
    let n = check_rows(x, d, 0)?;
    let out = prefix_mut(out, n * d)?;
    let order = prefix_mut(order, n)?;
    for j in 0..d {
        // Ranks of column j, written strided; -0.0 ties with +0.0.
        let value = |i: usize| x[i * d + j].to_sum() + 0.0;
        for (i, o) in order.iter_mut().enumerate() {
            *o = i;
        }
        order.sort_unstable_by(|&a, &b| value(a).total_cmp(&value(b)));
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && value(order[end]) == value(order[start]) {
                end += 1;
            }
            // Ranks start+1 ..= end share their mean.
            let rank = (start + 1 + end) as Sum / 2.0;
            for &i in &order[start..end] {
                out[i * d + j] = rank;
            }
            start = end;
        }
    }
    Ok(())
}

/// The `dx x dy` correlation matrix between the columns of `x` (`n x dx`) and `y` (`n x dy`)
/// into `out`. Constant columns are [`Error::ZeroVariance`]. Workspace: [`workspace_len`].
#[allow(clippy::too_many_arguments)]
pub fn correlation_matrix<T: Float>(
    x: &[T],
    dx: usize,
    y: &[T],
    dy: usize,
    method: Method,
    out: &mut [Sum],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<()> {
    let n = check_rows(x, dx, 0)?;
    let ny = check_rows(y, dy, 0)?;
    if n != ny {
        return Err(Error::DimensionMismatch {
            expected: n,
            found: ny,
        });
    }
    let (lf, lu) = workspace_len(n, dx, dy, method);
    let ws = prefix_mut(ws_f64, lf)?;
    let (mbuf, ranks) = ws.split_at_mut(CrossMomentsBuf::buffer_len(dx, dy));
    let mut m = CrossMomentsBuf::new(dx, dy, mbuf)?;
    match method {
        Method::Pearson => m.accumulate(x, y)?,
        Method::Spearman => {
            let order = prefix_mut(ws_usize, lu)?;
            let (rx, ry) = ranks.split_at_mut(n * dx);
            rank_columns(x, dx, rx, order)?;
            rank_columns(y, dy, ry, order)?;
            m.accumulate(rx, ry)?;
        }
    }
    m.as_ref().correlation_into(out)
}
