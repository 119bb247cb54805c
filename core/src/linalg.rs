//! The few dense kernels the rest needs, on caller buffers, in [`Sum`] (`f64` unless the
//! `f32-sums` feature makes it `f32`).
//!
//! - [`symmetric_eigen`]: all eigenvalues and eigenvectors of a symmetric matrix by Householder
//!   tridiagonalisation and the implicit QL algorithm (the EISPACK `tred2`/`tql2` pair, as in
//!   JAMA). O(n^3), no allocation, a finite iteration cap.
//! - [`orthonormalize_rows`]: modified Gram-Schmidt, run twice for orthogonality to rounding.
//!
//! # Accuracy contract
//! `symmetric_eigen` is backward stable: each eigenvalue is within a small multiple of
//! `n * eps * max|lambda|` of the exact one (checked against LAPACK's `dsyevd` through
//! `numpy.linalg.eigh` at 1e-10 of the spectral norm for n up to 256). Eigenvectors of
//! well-separated eigenvalues agree with LAPACK's to 1e-8 up to sign; for repeated eigenvalues only
//! the spanned subspace is defined, and that is what the tests compare.

use crate::error::{Error, Result};
use crate::float::{Float, check_rows, first_non_finite};
use crate::float::{Sum, smath};

/// Iterations of the implicit QL step allowed per eigenvalue (LAPACK allows 30 on average).
pub const MAX_QL_ITERATIONS: usize = 60;

/// Eigen-decomposes the symmetric `n x n` row-major matrix in `a`.
///
/// On success `values[..n]` holds the eigenvalues in descending order and row `i` of `a` the
/// unit eigenvector of `values[i]`, its first nonzero entry made positive. `work` needs `n`
/// elements. Only symmetric input is meaningful; the upper and lower triangles are both read.
/// The matrix is first scaled by a power of two, so any finite input works; an eigenvalue beyond
/// the range of [`Sum`] is [`Error::Overflow`].
///
/// ```
/// let mut a = [2.0, 1.0, 1.0, 2.0];
/// let (mut values, mut work) = ([0.0; 2], [0.0; 2]);
/// unmix::linalg::symmetric_eigen(&mut a, 2, &mut values, &mut work)?;
/// assert!((values[0] - 3.0).abs() < 1e-15 && (values[1] - 1.0).abs() < 1e-15);
/// let s = core::f64::consts::FRAC_1_SQRT_2;
/// assert!((a[0] - s).abs() < 1e-15 && (a[1] - s).abs() < 1e-15);
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn symmetric_eigen(
    a: &mut [Sum],
    n: usize,
    values: &mut [Sum],
    work: &mut [Sum],
) -> Result<()> {
    for (len, needed) in [(a.len(), n * n), (values.len(), n), (work.len(), n)] {
        if len < needed {
            return Err(Error::BufferTooSmall { needed, found: len });
        }
    }
    if n == 0 {
        return Err(Error::InvalidParameter(
            "matrix dimension must be at least 1",
        ));
    }
    if let Some(pos) = a[..n * n].iter().position(|v| !v.is_finite()) {
        return Err(Error::NonFinite {
            row: (pos / n) as u64,
            col: pos % n,
        });
    }
    let (v, d, e) = (&mut a[..n * n], &mut values[..n], &mut work[..n]);
    // Scale by a power of two (exact) so that max |a| is in [0.5, 1): no intermediate can then
    // overflow or lose range to underflow, whatever the magnitude of the input.
    let amax = v.iter().fold(0.0 as Sum, |m, x| m.max(x.abs()));
    let (_, exponent) = smath::frexp(amax);
    if amax > 0.0 {
        for x in v.iter_mut() {
            *x = smath::ldexp(*x, -exponent);
            // Entries below the normal range are far below eps * norm (about 0.5 now) and have
            // too few significant bits to build accurate reflectors from: they are zero here.
            if x.abs() < Sum::MIN_POSITIVE {
                *x = 0.0;
            }
        }
    }
    tridiagonalize(v, n, d, e);
    ql_implicit(v, n, d, e)?;
    sort_descending(v, n, d);
    for x in d.iter_mut() {
        *x = smath::ldexp(*x, exponent);
        if !x.is_finite() {
            return Err(Error::Overflow);
        }
    }
    for row in v.chunks_exact_mut(n) {
        fix_sign(row);
    }
    Ok(())
}

/// Makes the first nonzero entry of `v` positive (a zero vector is left alone).
pub fn fix_sign(v: &mut [Sum]) {
    if let Some(first) = v.iter().copied().find(|x| *x != 0.0) {
        if first < 0.0 {
            for x in v.iter_mut() {
                *x = -*x;
            }
        }
    }
}

/// Householder reduction of `v` (symmetric, row-major) to tridiagonal form: diagonal in `d`,
/// subdiagonal in `e[1..]`, and `v` replaced by the orthogonal transformation with its vectors
/// as rows.
///
/// This is EISPACK's `tred2` run on the transpose: `at(r, c)` addresses element `(c, r)`. The
/// input is symmetric, so the result is the same arithmetic, bit for bit, but every inner loop
/// (which in `tred2` walks down a column) now walks along a contiguous row, and the
/// transformation comes out already transposed for the QL sweep.
fn tridiagonalize(v: &mut [Sum], n: usize, d: &mut [Sum], e: &mut [Sum]) {
    tridiagonalize_with(v, n, d, e, reduce_side_by_side, accumulate_side_by_side);
}

/// `e[..i] = A d[..i]` for the leading `i x i` block of the symmetric `A`, read from its lower
/// triangle (`e[..i]` zero on entry), and `d[..i]` saved as column `i` (`v[at(j, i)] = d[j]`):
/// the reduction's product of `tred2`.
type Reduce = fn(v: &mut [Sum], n: usize, i: usize, d: &[Sum], e: &mut [Sum]);

/// Each of the columns `cols` (`n` wide; entries `..=i`) minus `d` times its dot product with
/// `next`: the accumulation's update of `tred2`.
type Accumulate = fn(cols: &mut [Sum], n: usize, i: usize, next: &[Sum], d: &[Sum]);

/// [`tridiagonalize`] with its two O(n^3) loops given: the tests run it with one column at a
/// time (the textbook loops) to check that the side-by-side ones give the same bits.
#[inline(always)]
fn tridiagonalize_with(
    v: &mut [Sum],
    n: usize,
    d: &mut [Sum],
    e: &mut [Sum],
    reduce: Reduce,
    accumulate: Accumulate,
) {
    let at = |r: usize, c: usize| c * n + r;
    for j in 0..n {
        d[j] = v[at(n - 1, j)];
    }
    for i in (1..n).rev() {
        let scale: Sum = d[..i].iter().map(|x| x.abs()).sum();
        let mut h = 0.0;
        // A column below the normal range is negligible against the (scaled) matrix norm and
        // too imprecise to reflect: treat it as zero.
        if scale < Sum::MIN_POSITIVE {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = v[at(i - 1, j)];
                v[at(i, j)] = 0.0;
                v[at(j, i)] = 0.0;
            }
        } else {
            for x in d[..i].iter_mut() {
                *x /= scale;
                h += *x * *x;
            }
            let mut f = d[i - 1];
            let mut g = smath::sqrt(h);
            if f > 0.0 {
                g = -g;
            }
            e[i] = scale * g;
            h -= f * g;
            d[i - 1] = f - g;
            e[..i].fill(0.0);
            reduce(v, n, i, d, e);
            f = 0.0;
            for j in 0..i {
                e[j] /= h;
                f += e[j] * d[j];
            }
            let hh = f / (h + h);
            for j in 0..i {
                e[j] -= hh * d[j];
            }
            for j in 0..i {
                f = d[j];
                g = e[j];
                let col = &mut v[at(j, j)..at(i, j)];
                for ((x, ek), dk) in col.iter_mut().zip(&e[j..i]).zip(&d[j..i]) {
                    *x -= f * ek + g * dk;
                }
                d[j] = v[at(i - 1, j)];
                v[at(i, j)] = 0.0;
            }
        }
        d[i] = h;
    }
    // Accumulate the transformations.
    for i in 0..n - 1 {
        v[at(n - 1, i)] = v[at(i, i)];
        v[at(i, i)] = 1.0;
        let h = d[i + 1];
        // Columns j <= i and column i + 1 (contiguous runs of the transposed storage).
        let (cols, rest) = v.split_at_mut(at(0, i + 1));
        let next = &mut rest[..=i];
        if h != 0.0 {
            for (dk, x) in d[..=i].iter_mut().zip(next.iter()) {
                *dk = x / h;
            }
            accumulate(cols, n, i, next, &d[..=i]);
        }
        next.fill(0.0);
    }
    for j in 0..n {
        d[j] = v[at(n - 1, j)];
        v[at(n - 1, j)] = 0.0;
    }
    v[at(n - 1, n - 1)] = 1.0;
    e[0] = 0.0;
}

/// The reduction of [`tridiagonalize`] ([`Reduce`]) with columns j and j + 1 side by side.
fn reduce_side_by_side(v: &mut [Sum], n: usize, i: usize, d: &[Sum], e: &mut [Sum]) {
    let at = |r: usize, c: usize| c * n + r;
    // Columns j and j + 1 together: two independent sums (`g0`, `g1`), so the additions'
    // latency overlaps, each in the order of one column at a time, and every `e[k]`
    // gets column j's term before column j + 1's, as one at a time: the same bits.
    let mut j = 0;
    while j + 1 < i {
        let (f0, f1) = (d[j], d[j + 1]);
        v[at(j, i)] = f0;
        v[at(j + 1, i)] = f1;
        let mut g0 = e[j] + v[at(j, j)] * f0;
        // Column j's first term, which column j + 1's sum starts from.
        let x = v[at(j + 1, j)];
        g0 += x * d[j + 1];
        e[j + 1] += x * f0;
        let mut g1 = e[j + 1] + v[at(j + 1, j + 1)] * f1;
        // Elements (k, j) and (k, j + 1), k in j+2..i: contiguous runs of the
        // transposed storage.
        let col0 = &v[at(j + 2, j)..at(i, j)];
        let col1 = &v[at(j + 2, j + 1)..at(i, j + 1)];
        for (((x0, x1), dk), ek) in col0
            .iter()
            .zip(col1)
            .zip(&d[j + 2..i])
            .zip(&mut e[j + 2..i])
        {
            g0 += x0 * dk;
            *ek += x0 * f0;
            g1 += x1 * dk;
            *ek += x1 * f1;
        }
        e[j] = g0;
        e[j + 1] = g1;
        j += 2;
    }
    if j < i {
        // The last column alone: no elements below its diagonal remain (k in j+1..i).
        let f = d[j];
        v[at(j, i)] = f;
        e[j] += v[at(j, j)] * f;
    }
}

/// The accumulation of [`tridiagonalize`] ([`Accumulate`]) with four columns side by side.
fn accumulate_side_by_side(cols: &mut [Sum], n: usize, i: usize, next: &[Sum], d: &[Sum]) {
    // Four columns at a time: four independent sums, each in the order of one, so the
    // additions' latency overlaps and the bits are those of one column at a time.
    let mut quads = cols.chunks_exact_mut(4 * n);
    for quad in &mut quads {
        let (c0, rest) = quad.split_at_mut(n);
        let (c1, rest) = rest.split_at_mut(n);
        let (c2, c3) = rest.split_at_mut(n);
        let (c0, c1, c2, c3) = (&mut c0[..=i], &mut c1[..=i], &mut c2[..=i], &mut c3[..=i]);
        let (mut g0, mut g1, mut g2, mut g3) = (0.0, 0.0, 0.0, 0.0);
        for ((((x, y0), y1), y2), y3) in next.iter().zip(&*c0).zip(&*c1).zip(&*c2).zip(&*c3) {
            g0 += x * y0;
            g1 += x * y1;
            g2 += x * y2;
            g3 += x * y3;
        }
        for (col, g) in [(c0, g0), (c1, g1), (c2, g2), (c3, g3)] {
            for (x, dk) in col.iter_mut().zip(&d[..=i]) {
                *x -= g * dk;
            }
        }
    }
    for col in quads.into_remainder().chunks_exact_mut(n) {
        let col = &mut col[..=i];
        let mut g = 0.0;
        for (x, y) in next.iter().zip(col.iter()) {
            g += x * y;
        }
        for (x, dk) in col.iter_mut().zip(&d[..=i]) {
            *x -= g * dk;
        }
    }
}

/// Implicit QL on the tridiagonal (`d`, `e[1..]`); `vt` holds the transformation with vectors as
/// rows, and every plane rotation is applied to two contiguous rows.
fn ql_implicit(vt: &mut [Sum], n: usize, d: &mut [Sum], e: &mut [Sum]) -> Result<()> {
    for i in 1..n {
        e[i - 1] = e[i];
    }
    e[n - 1] = 0.0;
    let mut f = 0.0;
    // Deflate against the norm of the whole tridiagonal (not a running maximum), so a tiny
    // leading block is not iterated on at a precision it does not have. Same accuracy contract:
    // absolute, relative to the norm.
    let tst1 = (0..n)
        .map(|i| d[i].abs() + e[i].abs())
        .fold(0.0 as Sum, Sum::max);
    let eps = Sum::EPSILON;
    for l in 0..n {
        let mut m = l;
        while m < n - 1 && e[m].abs() > eps * tst1 {
            m += 1;
        }
        if m > l {
            let mut iterations = 0;
            loop {
                iterations += 1;
                if iterations > MAX_QL_ITERATIONS {
                    return Err(Error::NoConvergence {
                        iterations: MAX_QL_ITERATIONS,
                    });
                }
                let g = d[l];
                let mut p = (d[l + 1] - g) / (2.0 * e[l]);
                let mut r = smath::hypot(p, 1.0);
                if p < 0.0 {
                    r = -r;
                }
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                let dl1 = d[l + 1];
                let mut h = g - d[l];
                for x in d[l + 2..n].iter_mut() {
                    *x -= h;
                }
                f += h;
                p = d[m];
                let (mut c, mut c2, mut c3) = (1.0, 1.0, 1.0);
                let el1 = e[l + 1];
                let (mut s, mut s2) = (0.0, 0.0);
                for i in (l..m).rev() {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    let g = c * e[i];
                    h = c * p;
                    r = smath::hypot(p, e[i]);
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    let (lo, hi) = vt.split_at_mut((i + 1) * n);
                    let (row_i, row_i1) = (&mut lo[i * n..], &mut hi[..n]);
                    for (a, b) in row_i.iter_mut().zip(row_i1.iter_mut()) {
                        let hb = *b;
                        *b = s * *a + c * hb;
                        *a = c * *a - s * hb;
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
                if e[l].abs() <= eps * tst1 {
                    break;
                }
            }
        }
        d[l] += f;
        e[l] = 0.0;
    }
    Ok(())
}

/// Sorts eigenvalues descending (stable on ties: lower index first), rows of `vt` alongside.
fn sort_descending(vt: &mut [Sum], n: usize, d: &mut [Sum]) {
    for i in 0..n {
        let mut best = i;
        for j in i + 1..n {
            if d[j] > d[best] {
                best = j;
            }
        }
        if best != i {
            d.swap(i, best);
            let (lo, hi) = vt.split_at_mut(best * n);
            lo[i * n..(i + 1) * n].swap_with_slice(&mut hi[..n]);
        }
    }
}

/// Orthonormalises the `k` rows (length `len`) of `q` in place by modified Gram-Schmidt, twice.
///
/// The result equals the Q of a QR factorisation with positive diagonal: applied to a matrix of
/// independent standard normals it gives a Haar-distributed orthogonal matrix (Mezzadri 2007).
/// Fails if a row is (numerically) in the span of the rows before it.
pub fn orthonormalize_rows(q: &mut [Sum], k: usize, len: usize) -> Result<()> {
    if q.len() < k * len {
        return Err(Error::BufferTooSmall {
            needed: k * len,
            found: q.len(),
        });
    }
    for i in 0..k {
        let (done, rest) = q.split_at_mut(i * len);
        let row = &mut rest[..len];
        let norm0 = smath::sqrt(dot(row, row));
        for _pass in 0..2 {
            for prev in done.chunks_exact(len) {
                let p = dot(prev, row);
                for (x, y) in row.iter_mut().zip(prev) {
                    *x -= p * y;
                }
            }
        }
        let norm = smath::sqrt(dot(row, row));
        if norm.is_nan() || norm <= 1e-10 * norm0 {
            return Err(Error::RankDeficient {
                rank: i,
                requested: k,
            });
        }
        for x in row.iter_mut() {
            *x /= norm;
        }
    }
    Ok(())
}

/// Dot product of two equally long slices.
pub fn dot(a: &[Sum], b: &[Sum]) -> Sum {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `out_r = m (in_r - mean)`, or with `add_mean` `out_r = m in_r + mean`, for every row `r`;
/// `m` is `out_w x in_w`. Each output is summed over `j` in order (from 0, or from `mean_i`).
/// Fails with [`Error::Overflow`] (leaving `out` written) if a result is not finite.
///
/// The whitening transforms and FastICA's source maps all run here.
#[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
pub(crate) fn affine_rows<T: Float>(
    input: &[T],
    in_w: usize,
    mean: &[T],
    m: &[T],
    out: &mut [T],
    out_w: usize,
    add_mean: bool,
) -> Result<()> {
    let n = check_rows(input, in_w, 0)?;
    if out.len() != n * out_w || m.len() != out_w * in_w || out_w == 0 {
        return Err(Error::DimensionMismatch {
            expected: n * out_w,
            found: out.len(),
        });
    }
    // Four rows at a time: four independent sums per output overlap in the pipeline, and each
    // row of `m` is read once per four samples.
    const R: usize = 4;
    for (ins, outs) in input.chunks(R * in_w).zip(out.chunks_mut(R * out_w)) {
        for (i, mr) in m.chunks_exact(in_w).enumerate() {
            let mut acc = [if add_mean { mean[i] } else { T::ZERO }; R];
            for (j, a) in mr.iter().enumerate() {
                for (acc, ir) in acc.iter_mut().zip(ins.chunks_exact(in_w)) {
                    *acc += *a * if add_mean { ir[j] } else { ir[j] - mean[j] };
                }
            }
            for (acc, or) in acc.iter().zip(outs.chunks_exact_mut(out_w)) {
                or[i] = *acc;
            }
        }
    }
    if first_non_finite(out).is_some() {
        return Err(Error::Overflow);
    }
    Ok(())
}

/// Sweeps of [`polar_factor`]'s one-sided Jacobi SVD allowed (it needs about 6 to 12 in practice).
pub const MAX_JACOBI_SWEEPS: usize = 60;

/// [`Sum`] workspace [`polar_factor`] needs for a `rows x cols` matrix.
pub const fn polar_workspace_len(rows: usize, cols: usize) -> usize {
    let (m, p) = if rows >= cols {
        (rows, cols)
    } else {
        (cols, rows)
    };
    p * m + p * p + p
}

/// The orthogonal polar factor of the `rows x cols` row-major `c`: `q = U V'` from the thin SVD
/// `c = U S V'` (`rows x cols`; orthonormal columns when `rows >= cols`, orthonormal rows
/// otherwise). It is the semi-orthogonal matrix nearest to `c` and the one that maximises
/// `trace(q' c)`: the solution of the orthogonal Procrustes problem (Schonemann 1966), as
/// `scipy.linalg.orthogonal_procrustes` computes it.
///
/// The SVD is one-sided Jacobi (Hestenes), which is accurate to rounding in every singular
/// vector whose singular value is not tiny; no cross-product matrix `c'c` is formed, so the
/// condition number is not squared. Singular vectors of zero singular values are not unique: they
/// are completed to an orthonormal set deterministically (the polar factor is then one of the
/// optimal maps). `ws` needs [`polar_workspace_len`] elements; non-finite input is an error.
///
/// ```
/// // A rotation by 90 degrees, scaled: its polar factor is the rotation.
/// let c = [0.0, -2.0, 3.0, 0.0];
/// let (mut q, mut ws) = ([0.0; 4], [0.0; unmix::linalg::polar_workspace_len(2, 2)]);
/// unmix::linalg::polar_factor(&c, 2, 2, &mut q, &mut ws)?;
/// assert_eq!(q, [0.0, -1.0, 1.0, 0.0]);
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn polar_factor(
    c: &[Sum],
    rows: usize,
    cols: usize,
    q: &mut [Sum],
    ws: &mut [Sum],
) -> Result<()> {
    let len = rows * cols;
    for (found, needed) in [
        (c.len(), len),
        (q.len(), len),
        (ws.len(), polar_workspace_len(rows, cols)),
    ] {
        if found < needed {
            return Err(Error::BufferTooSmall { needed, found });
        }
    }
    if len == 0 {
        return Err(Error::InvalidParameter(
            "matrix dimensions must be at least 1",
        ));
    }
    if let Some(pos) = first_non_finite(&c[..len]) {
        return Err(Error::NonFinite {
            row: (pos / cols) as u64,
            col: pos % cols,
        });
    }
    // Work on the tall orientation X (m x p, m >= p), stored as G = X' (p rows of length m) so
    // that every rotation combines two contiguous rows.
    let tall = rows >= cols;
    let (m, p) = if tall { (rows, cols) } else { (cols, rows) };
    let (g, rest) = ws.split_at_mut(p * m);
    let (vt, rest) = rest.split_at_mut(p * p);
    let norms = &mut rest[..p];
    for i in 0..p {
        for r in 0..m {
            // X = c when tall (G row i = column i of c), X = c' otherwise (G row i = row i of c).
            g[i * m + r] = if tall {
                c[r * cols + i]
            } else {
                c[i * cols + r]
            };
        }
    }
    // Scale by a power of two so that squared norms cannot overflow or underflow.
    let amax = g.iter().fold(0.0 as Sum, |a, x| a.max(x.abs()));
    if amax > 0.0 {
        let (_, exponent) = smath::frexp(amax);
        for x in g.iter_mut() {
            *x = smath::ldexp(*x, -exponent);
        }
    }
    jacobi_orthogonalize(g, vt, m, p)?;
    // U: the normalised rows of G; rows of (numerically) zero norm are completed below.
    for (i, n) in norms.iter_mut().enumerate() {
        *n = smath::sqrt(dot(&g[i * m..(i + 1) * m], &g[i * m..(i + 1) * m]));
    }
    let smax = norms.iter().fold(0.0 as Sum, |a, &x| a.max(x));
    let tiny = smax * Sum::EPSILON * m as Sum;
    for (i, n) in norms.iter_mut().enumerate() {
        let row = &mut g[i * m..(i + 1) * m];
        if *n > tiny {
            for x in row.iter_mut() {
                *x /= *n;
            }
        } else {
            row.fill(0.0);
            *n = 0.0;
        }
    }
    for i in 0..p {
        if norms[i] == 0.0 {
            complete_row(g, m, p, i, norms);
        }
    }
    // Q (m x p) = U V', element (r, s) = sum_i U[r][i] V[s][i] = sum_i g[i][r] vt[i][s].
    for r in 0..m {
        for s in 0..p {
            let mut v = 0.0;
            for i in 0..p {
                v += g[i * m + r] * vt[i * p + s];
            }
            // q is rows x cols: Q itself when tall, Q' otherwise.
            if tall {
                q[r * cols + s] = v;
            } else {
                q[s * cols + r] = v;
            }
        }
    }
    Ok(())
}

/// One-sided Jacobi: rotates pairs of rows of `g` (`p x m`) until they are mutually orthogonal,
/// accumulating the rotations in `vt` (`p x p`, rows = columns of V).
fn jacobi_orthogonalize(g: &mut [Sum], vt: &mut [Sum], m: usize, p: usize) -> Result<()> {
    vt.fill(0.0);
    for i in 0..p {
        vt[i * p + i] = 1.0;
    }
    let tol = Sum::EPSILON * m as Sum;
    for _sweep in 0..MAX_JACOBI_SWEEPS {
        let mut rotated = false;
        for i in 0..p {
            for j in i + 1..p {
                let (lo, hi) = g.split_at_mut(j * m);
                let (gi, gj) = (&mut lo[i * m..(i + 1) * m], &mut hi[..m]);
                let alpha = dot(gi, gi);
                let beta = dot(gj, gj);
                let gamma = dot(gi, gj);
                if gamma == 0.0 || gamma.abs() <= tol * smath::sqrt(alpha * beta) {
                    continue;
                }
                rotated = true;
                // The rotation that zeroes gamma (Rutishauser's formulas).
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = smath::copysign(1.0, zeta) / (zeta.abs() + smath::hypot(1.0, zeta));
                let cs = 1.0 / smath::hypot(1.0, t);
                let sn = cs * t;
                for (a, b) in gi.iter_mut().zip(gj.iter_mut()) {
                    let (x, y) = (*a, *b);
                    *a = cs * x - sn * y;
                    *b = sn * x + cs * y;
                }
                let (lo, hi) = vt.split_at_mut(j * p);
                let (vi, vj) = (&mut lo[i * p..(i + 1) * p], &mut hi[..p]);
                for (a, b) in vi.iter_mut().zip(vj.iter_mut()) {
                    let (x, y) = (*a, *b);
                    *a = cs * x - sn * y;
                    *b = sn * x + cs * y;
                }
            }
        }
        if !rotated {
            return Ok(());
        }
    }
    Err(Error::NoConvergence {
        iterations: MAX_JACOBI_SWEEPS,
    })
}

/// Sets row `i` of `g` (`p x m`, the other rows orthonormal or zero) to the unit vector of the
/// standard basis, orthogonalised against the rows kept so far, with the largest residual.
fn complete_row(g: &mut [Sum], m: usize, p: usize, i: usize, norms: &mut [Sum]) {
    let mut best = (0usize, -1.0 as Sum);
    for e in 0..m {
        // Residual norm^2 of e_e after projecting out the kept rows: 1 - sum_k g[k][e]^2.
        let used: Sum = (0..p)
            .filter(|&k| k != i && norms[k] > 0.0)
            .map(|k| g[k * m + e] * g[k * m + e])
            .sum();
        if 1.0 - used > best.1 {
            best = (e, 1.0 - used);
        }
    }
    let (lo, rest) = g.split_at_mut(i * m);
    let (row, hi) = rest.split_at_mut(m);
    row.fill(0.0);
    row[best.0] = 1.0;
    for _pass in 0..2 {
        for (k, other) in lo.chunks_exact(m).chain(hi.chunks_exact(m)).enumerate() {
            let k = if k < i { k } else { k + 1 };
            if norms[k] > 0.0 {
                let d = dot(other, row);
                for (x, y) in row.iter_mut().zip(other) {
                    *x -= d * y;
                }
            }
        }
    }
    let n = smath::sqrt(dot(row, row));
    for x in row.iter_mut() {
        *x /= n;
    }
    norms[i] = 1.0;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reduction one column at a time (`tred2`'s loop).
    fn reduce_one_at_a_time(v: &mut [Sum], n: usize, i: usize, d: &[Sum], e: &mut [Sum]) {
        let at = |r: usize, c: usize| c * n + r;
        for j in 0..i {
            let f = d[j];
            v[at(j, i)] = f;
            let mut g = e[j] + v[at(j, j)] * f;
            for k in j + 1..i {
                g += v[at(k, j)] * d[k];
                e[k] += v[at(k, j)] * f;
            }
            e[j] = g;
        }
    }

    /// The accumulation one column at a time (`tred2`'s loop).
    fn accumulate_one_at_a_time(cols: &mut [Sum], n: usize, i: usize, next: &[Sum], d: &[Sum]) {
        for col in cols.chunks_exact_mut(n) {
            let mut g = 0.0;
            for k in 0..=i {
                g += next[k] * col[k];
            }
            for k in 0..=i {
                col[k] -= g * d[k];
            }
        }
    }

    /// The sums run side by side (two columns of the reduction, four of the accumulation) give
    /// the bits of one column at a time: every size up to 40 (both parities of every loop's
    /// remainder), random and with every third row and column zero (the reflector-free branch).
    #[test]
    fn tridiagonalization_has_the_bits_of_one_column_at_a_time() {
        let mut normals = crate::random::Normals::new(11);
        for n in 1..=40 {
            for zero_every_third in [false, true] {
                let mut a: [Sum; 1600] = [0.0; 1600];
                for i in 0..n {
                    for j in 0..=i {
                        let zero = zero_every_third && (i % 3 == 0 || j % 3 == 0);
                        let x = if zero {
                            0.0
                        } else {
                            normals.next_normal() as Sum
                        };
                        a[i * n + j] = x;
                        a[j * n + i] = x;
                    }
                }
                let mut b = a;
                let (mut d, mut e, mut d2, mut e2) = ([0.0; 40], [0.0; 40], [0.0; 40], [0.0; 40]);
                tridiagonalize(&mut a[..n * n], n, &mut d[..n], &mut e[..n]);
                tridiagonalize_with(
                    &mut b[..n * n],
                    n,
                    &mut d2[..n],
                    &mut e2[..n],
                    reduce_one_at_a_time,
                    accumulate_one_at_a_time,
                );
                for (what, x, y) in [
                    ("vectors", &a[..n * n], &b[..n * n]),
                    ("diagonal", &d[..n], &d2[..n]),
                    ("off-diagonal", &e[..n], &e2[..n]),
                ] {
                    for (i, (x, y)) in x.iter().zip(y).enumerate() {
                        assert_eq!(x.to_bits(), y.to_bits(), "{what}[{i}], n = {n}: {x} vs {y}");
                    }
                }
            }
        }
    }
}
