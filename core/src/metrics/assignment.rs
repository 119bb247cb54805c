//! Linear sum assignment: a one-to-one matching of rows to columns of minimum (or maximum) total
//! cost, for rectangular matrices.
//!
//! The algorithm is the shortest augmenting path method of Crouse, "On implementing 2D
//! rectangular assignment algorithms" (IEEE TAES 52(4), 2016), which scipy's
//! `linear_sum_assignment` also uses: O(n^3), dual variables, one Dijkstra-like search per row.
//! As in scipy: a wide matrix assigns every row, a tall one every column (it is solved transposed);
//! NaN, or -inf (after negation when maximising), is [`Error::InvalidParameter`]; +inf marks a
//! forbidden pair, and if no complete assignment avoids them the result is [`Error::Infeasible`].
//! When several assignments are optimal, the one found may differ from scipy's; the total does not.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Sum;

/// No column: the row is unassigned (only for tall matrices).
pub const UNASSIGNED: usize = usize::MAX;

/// `(f64, usize)` workspace lengths for an `nr x nc` problem.
pub const fn workspace_len(nr: usize, nc: usize) -> (usize, usize) {
    let m = if nr > nc { nr } else { nc };
    (3 * m + nr * nc, 6 * m)
}

/// The solver's state over caller slices; `nr <= nc`.
struct Work<'a> {
    u: &'a mut [Sum],
    v: &'a mut [Sum],
    spc: &'a mut [Sum],
    path: &'a mut [usize],
    col4row: &'a mut [usize],
    row4col: &'a mut [usize],
    remaining: &'a mut [usize],
    sr: &'a mut [usize],
    sc: &'a mut [usize],
}

/// Solves for `nr <= nc` with `cost(i, j)` (already negated when maximising). Writes `col4row`.
/// `cost` is `nr x nc` row-major, already negated when maximising.
fn solve(cost: &[Sum], nr: usize, nc: usize, w: Work<'_>) -> Result<()> {
    w.u[..nr].fill(0.0);
    w.v[..nc].fill(0.0);
    w.col4row[..nr].fill(UNASSIGNED);
    w.row4col[..nc].fill(UNASSIGNED);
    for cur_row in 0..nr {
        // Shortest augmenting path from cur_row.
        let mut min_val = 0.0;
        let mut num_remaining = nc;
        for it in 0..nc {
            w.remaining[it] = nc - it - 1;
        }
        w.sr[..nr].fill(0);
        w.sc[..nc].fill(0);
        w.spc[..nc].fill(Sum::INFINITY);
        let mut i = cur_row;
        let (v, spc, path, row4col) = (
            &mut w.v[..nc],
            &mut w.spc[..nc],
            &mut w.path[..nc],
            &mut w.row4col[..nc],
        );
        let sink = loop {
            let mut index = UNASSIGNED;
            let mut lowest = Sum::INFINITY;
            w.sr[i] = 1;
            let (crow, ui) = (&cost[i * nc..(i + 1) * nc], w.u[i]);
            for (it, &j) in w.remaining[..num_remaining].iter().enumerate() {
                // Same order of operations as scipy's rectangular_lsap.
                let r = min_val + crow[j] - ui - v[j];
                if r < spc[j] {
                    path[j] = i;
                    spc[j] = r;
                }
                if spc[j] < lowest || (spc[j] == lowest && row4col[j] == UNASSIGNED) {
                    lowest = spc[j];
                    index = it;
                }
            }
            min_val = lowest;
            if min_val == Sum::INFINITY || index == UNASSIGNED {
                return Err(Error::Infeasible);
            }
            let j = w.remaining[index];
            w.sc[j] = 1;
            num_remaining -= 1;
            w.remaining[index] = w.remaining[num_remaining];
            if row4col[j] == UNASSIGNED {
                break j;
            }
            i = row4col[j];
        };
        // Update the dual variables.
        w.u[cur_row] += min_val;
        for r in 0..nr {
            if w.sr[r] == 1 && r != cur_row {
                w.u[r] += min_val - spc[w.col4row[r]];
            }
        }
        for c in 0..nc {
            if w.sc[c] == 1 {
                v[c] -= min_val - spc[c];
            }
        }
        // Augment along the path.
        let mut j = sink;
        loop {
            let r = path[j];
            row4col[j] = r;
            core::mem::swap(&mut w.col4row[r], &mut j);
            if r == cur_row {
                break;
            }
        }
    }
    Ok(())
}

fn check_costs(cost: &[Sum], maximize: bool) -> Result<()> {
    let bad = |c: &Sum| {
        c.is_nan()
            || *c
                == if maximize {
                    Sum::INFINITY
                } else {
                    Sum::NEG_INFINITY
                }
    };
    if cost.iter().any(bad) {
        return Err(Error::InvalidParameter(
            "cost matrix contains NaN or an infinity of the wrong sign",
        ));
    }
    Ok(())
}

/// Solves the `nr x nc` row-major `cost` problem. `col_for_row` (`nr`) receives each row's column
/// (or [`UNASSIGNED`] when `nr > nc`); returns the total cost of the assignment. Workspace:
/// [`workspace_len`].
///
/// ```
/// use unmix::metrics::assignment::{linear_sum_assignment, workspace_len};
/// let cost = [4.0, 1.0, 3.0, 2.0, 0.0, 5.0, 3.0, 2.0, 2.0];
/// let (lf, lu) = workspace_len(3, 3);
/// let (mut wf, mut wu, mut cols) = (vec![0.0; lf], vec![0; lu], [0; 3]);
/// let total = linear_sum_assignment(&cost, 3, 3, false, &mut cols, &mut wf, &mut wu)?;
/// assert_eq!((cols, total), ([1, 0, 2], 5.0)); // as scipy.optimize.linear_sum_assignment
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn linear_sum_assignment(
    cost: &[Sum],
    nr: usize,
    nc: usize,
    maximize: bool,
    col_for_row: &mut [usize],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<Sum> {
    if cost.len() != nr * nc {
        return Err(Error::DimensionMismatch {
            expected: nr * nc,
            found: cost.len(),
        });
    }
    check_costs(cost, maximize)?;
    let col_for_row = prefix_mut(col_for_row, nr)?;
    col_for_row.fill(UNASSIGNED);
    if nr == 0 || nc == 0 {
        return Ok(0.0);
    }
    let (lf, lu) = workspace_len(nr, nc);
    let (f, u) = (prefix_mut(ws_f64, lf)?, prefix_mut(ws_usize, lu)?);
    let sign = if maximize { -1.0 } else { 1.0 };
    let transposed = nr > nc;
    let (r, c) = if transposed { (nc, nr) } else { (nr, nc) };
    let m = r.max(c);
    let (prepared, f) = f.split_at_mut(nr * nc);
    // The solver's rows are the shorter side; costs are negated when maximising.
    for i in 0..r {
        for j in 0..c {
            prepared[i * c + j] = sign
                * if transposed {
                    cost[j * nc + i]
                } else {
                    cost[i * nc + j]
                };
        }
    }
    let (fu, rest) = f.split_at_mut(m);
    let (fv, fspc) = rest.split_at_mut(m);
    let (path, rest) = u.split_at_mut(m);
    let (col4row, rest) = rest.split_at_mut(m);
    let (row4col, rest) = rest.split_at_mut(m);
    let (remaining, rest) = rest.split_at_mut(m);
    let (sr, sc) = rest.split_at_mut(m);
    let work = Work {
        u: fu,
        v: fv,
        spc: fspc,
        path,
        col4row,
        row4col,
        remaining,
        sr,
        sc,
    };
    solve(prepared, r, c, work)?;
    if transposed {
        // Rows of the transposed problem are our columns.
        for (col, &row) in u[m..m + r].iter().enumerate() {
            col_for_row[row] = col;
        }
    } else {
        col_for_row.copy_from_slice(&u[m..m + r]);
    }
    let mut total = 0.0;
    for (i, &j) in col_for_row.iter().enumerate() {
        if j != UNASSIGNED {
            total += cost[i * nc + j];
        }
    }
    Ok(total)
}

/// Fixed-size square form: the assignment of an `N x N` cost matrix, all state on the stack.
/// Same solver, same result as [`linear_sum_assignment`].
pub fn linear_sum_assignment_square<const N: usize>(
    cost: &[[Sum; N]; N],
    maximize: bool,
) -> Result<([usize; N], Sum)> {
    check_costs(cost.as_flattened(), maximize)?;
    let mut cols = [UNASSIGNED; N];
    if N == 0 {
        return Ok((cols, 0.0));
    }
    let (mut fu, mut fv, mut fspc) = ([0.0; N], [0.0; N], [0.0; N]);
    let (mut path, mut col4row, mut row4col) = ([0; N], [0; N], [0; N]);
    let (mut remaining, mut sr, mut sc) = ([0; N], [0; N], [0; N]);
    let work = Work {
        u: &mut fu,
        v: &mut fv,
        spc: &mut fspc,
        path: &mut path,
        col4row: &mut col4row,
        row4col: &mut row4col,
        remaining: &mut remaining,
        sr: &mut sr,
        sc: &mut sc,
    };
    let sign = if maximize { -1.0 } else { 1.0 };
    let prepared = cost.map(|row| row.map(|c| sign * c));
    solve(prepared.as_flattened(), N, N, work)?;
    cols.copy_from_slice(&col4row);
    let total = cols.iter().enumerate().map(|(i, &j)| cost[i][j]).sum();
    Ok((cols, total))
}
