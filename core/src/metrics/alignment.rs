//! How well two representations of the same inputs align: the alignment errors of Nelson et al.
//! (Table 1), and ICA's efficiency.
//!
//! `A` (`n x da`) and `B` (`n x db`) hold the same `n` inputs, row by row. Each map sends `B` into
//! `A`'s space as `B_hat = mean_A + M (b - mean_B)` (every map includes the best translation), and
//! its error is the mean Euclidean distance `mean_t |a_t - B_hat_t|`, divided by the diameter of
//! `A`. The maps `M` (`da x db`):
//!
//! - [`MapKind::Permutation`]: the signed permutation matched by optimal assignment on
//!   |correlation|, each sign that of the correlation; with `da != db` the unmatched dimensions
//!   map to zero.
//! - [`MapKind::Rigid`]: orthogonal Procrustes, `M = U V'` from the SVD of the cross-covariance
//!   `C_AB = U S V'` (semi-orthogonal when `da != db`), with [`polar_factor`].
//! - [`MapKind::Linear`]: least squares, `M = C_AB C_BB^-1` (with the intercept, as
//!   `numpy.linalg.lstsq` on `[B, 1]`).
//! - [`MapKind::Ica`]: unsupervised. Whiten and run FastICA on `A` and on `B`, each on its own;
//!   match their sources by optimal assignment on |correlation| (signs from the correlation); map
//!   `B` to its sources, the sources to `A`'s matched ones, and those back through `A`'s mixing:
//!   `M = mixing_A P components_B`.
//!
//! **Diameter** of `A`: twice the largest distance from its centroid, `2 max_t |a_t - mean_A|`.
//! It needs one pass, lies between the true diameter and twice it, and is exact for point sets
//! symmetric about their centroid.
//!
//! **Efficiency** `= (permutation - ica) / (permutation - rigid) x 100`: the share of the gap
//! between the best signed permutation and the best rigid map that unsupervised ICA closes; NaN
//! when the two errors are equal (or so close that the share overflows).
//!
//! # Passes
//! The fits need only the joint mean and covariance of `[A, B]`: [`AlignmentMoments`] is a
//! mergeable reduction (`accumulate` chunks, `merge` partial results). The errors need a second
//! pass with the fitted maps: [`ErrorSums`], also mergeable. [`alignment`] runs both over rows in
//! memory and fits the two FastICA models in between.
//!
//! # Ordering
//! The linear map is optimal over all affine maps *in squared error*, so the root-mean-square
//! errors ([`Alignment::rms`]) always satisfy `rigid >= linear`. When `da >= db` the rigid map is
//! also optimal in squared error over all semi-orthogonal maps, signed permutations included, so
//! then `permutation >= rigid` in RMS too. (When `da < db`, `|M (b - mean_B)|` depends on which
//! rows of `B` the semi-orthogonal `M` keeps, and Procrustes maximises the correlation term only.)
//! The mean Euclidean distance, which the paper reports, usually follows the same order, but not
//! always: a least-squares fit may trade a larger mean distance for a smaller mean square. The
//! `wide` fixture of `harness/tests/crosscheck_identifiability.rs` is a counterexample computed
//! with scipy's own maps.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};
use crate::ica::{self, FastIcaBuf, FastIcaOptions, FastIcaView, WInit};
use crate::linalg::{polar_factor, polar_workspace_len, symmetric_eigen};
use crate::metrics::assignment::{self, UNASSIGNED, linear_sum_assignment};
use crate::moments::{BLOCK, MomentsBuf, MomentsRef, check_rows};

/// The four maps, in the order of every array of errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// Signed permutation.
    Permutation,
    /// Orthogonal (semi-orthogonal) map plus translation.
    Rigid,
    /// Affine map.
    Linear,
    /// Through independently fitted FastICA sources.
    Ica,
}

impl MapKind {
    /// All four, in storage order.
    pub const ALL: [MapKind; 4] = [
        MapKind::Permutation,
        MapKind::Rigid,
        MapKind::Linear,
        MapKind::Ica,
    ];
    fn index(self) -> usize {
        match self {
            MapKind::Permutation => 0,
            MapKind::Rigid => 1,
            MapKind::Linear => 2,
            MapKind::Ica => 3,
        }
    }
}

/// Eigenvalues of `C_BB` below this fraction of the largest make `B` rank-deficient for the
/// linear map (the whitening's default threshold).
pub const RANK_RTOL: Sum = 1e-10;

/// The joint mean and covariance of `[A, B]`: everything the fits need, as a mergeable reduction.
///
/// ```
/// use unmix::metrics::alignment::AlignmentMoments;
/// let mut buf = vec![0.0; AlignmentMoments::buffer_len(2, 1)];
/// let mut m = AlignmentMoments::new(2, 1, &mut buf)?;
/// m.accumulate(&[1.0f64, 2.0, 3.0, 4.0], &[5.0f64, 6.0])?; // two rows of A, two of B
/// assert_eq!(m.as_ref().n_samples(), 2);
/// assert_eq!(m.as_ref().mean(), &[2.0, 3.0, 5.5]);
/// # Ok::<(), unmix::Error>(())
/// ```
#[derive(Debug)]
pub struct AlignmentMoments<'a> {
    da: usize,
    db: usize,
    joint: MomentsBuf<'a>,
    rows: &'a mut [Sum],
}

impl<'a> AlignmentMoments<'a> {
    /// [`Sum`] elements of storage for `da` and `db` features.
    pub const fn buffer_len(da: usize, db: usize) -> usize {
        MomentsBuf::buffer_len(da + db) + BLOCK * (da + db)
    }
    /// Takes [`buffer_len`](Self::buffer_len) elements of `buf`; `da, db >= 1`.
    pub fn new(da: usize, db: usize, buf: &'a mut [Sum]) -> Result<Self> {
        if da == 0 || db == 0 {
            return Err(Error::InvalidParameter(
                "both representations need at least one dimension",
            ));
        }
        let buf = prefix_mut(buf, Self::buffer_len(da, db))?;
        let (mbuf, rows) = buf.split_at_mut(MomentsBuf::buffer_len(da + db));
        Ok(Self {
            da,
            db,
            joint: MomentsBuf::new(da + db, mbuf)?,
            rows,
        })
    }
    /// Adds paired rows: `a` (`m x da`) and `b` (`m x db`), row-major. On error nothing is added.
    pub fn accumulate<T: Float>(&mut self, a: &[T], b: &[T]) -> Result<()> {
        let (da, db) = (self.da, self.db);
        let first = self.joint.as_ref().n_samples();
        let na = check_rows(a, da, first)?;
        let nb = check_rows(b, db, first)?;
        if na != nb {
            return Err(Error::DimensionMismatch {
                expected: na,
                found: nb,
            });
        }
        let d = da + db;
        for (ca, cb) in a.chunks(BLOCK * da).zip(b.chunks(BLOCK * db)) {
            let m = ca.len() / da;
            for ((row, ra), rb) in self
                .rows
                .chunks_exact_mut(d)
                .zip(ca.chunks_exact(da))
                .zip(cb.chunks_exact(db))
            {
                for (o, x) in row.iter_mut().zip(ra.iter().chain(rb)) {
                    *o = x.to_sum();
                }
            }
            self.joint.accumulate(&self.rows[..m * d])?;
        }
        Ok(())
    }
    /// Adds the rows summarised by `other` (the [`as_ref`](Self::as_ref) of another
    /// accumulator of the same shape).
    pub fn merge(&mut self, other: MomentsRef<'_>) -> Result<()> {
        self.joint.merge(other)
    }
    /// The joint moments: features `0..da` are `A`'s, `da..da + db` are `B`'s.
    pub fn as_ref(&self) -> MomentsRef<'_> {
        self.joint.as_ref()
    }
}

/// [`Sum`] elements of a fitted set of maps: `mean_A` (`da`) | `mean_B` (`db`) | the four maps
/// (`da x db` each, row-major, in [`MapKind::ALL`] order).
pub const fn maps_len(da: usize, db: usize) -> usize {
    da + db + 4 * da * db
}

/// Fitted maps, read-only, over a [`maps_len`] slice.
#[derive(Clone, Copy, Debug)]
pub struct Maps<'a> {
    da: usize,
    db: usize,
    data: &'a [Sum],
}

impl<'a> Maps<'a> {
    /// Views `data` laid out as [`maps_len`] describes.
    pub fn from_parts(da: usize, db: usize, data: &'a [Sum]) -> Result<Self> {
        if data.len() < maps_len(da, db) {
            return Err(Error::BufferTooSmall {
                needed: maps_len(da, db),
                found: data.len(),
            });
        }
        Ok(Self { da, db, data })
    }
    /// `A`'s mean.
    pub fn mean_a(&self) -> &'a [Sum] {
        &self.data[..self.da]
    }
    /// `B`'s mean.
    pub fn mean_b(&self) -> &'a [Sum] {
        &self.data[self.da..self.da + self.db]
    }
    /// The `da x db` matrix of one map.
    pub fn map(&self, kind: MapKind) -> &'a [Sum] {
        let size = self.da * self.db;
        let start = self.da + self.db + kind.index() * size;
        &self.data[start..start + size]
    }
}

/// `(f64, usize)` workspace of [`fit_maps`].
pub const fn fit_workspace_len(da: usize, db: usize) -> (usize, usize) {
    let (af, au) = assignment::workspace_len(da, db);
    let polar = polar_workspace_len(da, db);
    let scratch = if af > polar { af } else { polar };
    let m = if da > db { da } else { db };
    (3 * da * db + db * db + 2 * db + scratch, au + m)
}

/// Fits the four maps from the joint moments of `[A, B]` and the two FastICA models (fitted on
/// `A` and on `B` alone, with `da` and `db` inputs), into `out` ([`maps_len`]). Workspace:
/// [`fit_workspace_len`].
///
/// Fewer than `max(da, db) + 1` samples is [`Error::TooFewSamples`]; a `B` whose covariance is
/// singular is [`Error::RankDeficient`] (the linear map is not unique).
#[allow(clippy::too_many_arguments)]
pub fn fit_maps<T: Float>(
    moments: MomentsRef<'_>,
    da: usize,
    db: usize,
    ica_a: &FastIcaView<'_, T>,
    ica_b: &FastIcaView<'_, T>,
    out: &mut [Sum],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<()> {
    if moments.dim() != da + db {
        return Err(Error::DimensionMismatch {
            expected: da + db,
            found: moments.dim(),
        });
    }
    for (view, d) in [(ica_a, da), (ica_b, db)] {
        if view.n_features() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                found: view.n_features(),
            });
        }
    }
    let n = moments.n_samples();
    let needed = da.max(db) as u64 + 1;
    if n < needed {
        return Err(Error::TooFewSamples { n, needed });
    }
    let out = prefix_mut(out, maps_len(da, db))?;
    let (lf, lu) = fit_workspace_len(da, db);
    let ws = prefix_mut(ws_f64, lf)?;
    let wu = prefix_mut(ws_usize, lu)?;
    let (pairs, wu) = wu.split_at_mut(da.max(db));
    let (cab, ws) = ws.split_at_mut(da * db);
    let (tmp, ws) = ws.split_at_mut(da * db);
    let (corr, ws) = ws.split_at_mut(da * db);
    let (cbb, ws) = ws.split_at_mut(db * db);
    let (values, ws) = ws.split_at_mut(db);
    let (work, scratch) = ws.split_at_mut(db);

    let (means, maps) = out.split_at_mut(da + db);
    means.copy_from_slice(moments.mean());
    let (m_perm, rest) = maps.split_at_mut(da * db);
    let (m_rigid, rest) = rest.split_at_mut(da * db);
    let (m_lin, m_ica) = rest.split_at_mut(da * db);
    // Comoments (sums of centred products): every map below is invariant to their common scale.
    let com = |i: usize, j: usize| moments.comoment(i, j);
    for i in 0..da {
        for j in 0..db {
            cab[i * db + j] = com(i, da + j);
        }
    }

    // Permutation: assignment on |correlation|, signs from it.
    for i in 0..da {
        for j in 0..db {
            let v = smath::sqrt(com(i, i) * com(da + j, da + j));
            corr[i * db + j] = if v > 0.0 { cab[i * db + j] / v } else { 0.0 };
            tmp[i * db + j] = corr[i * db + j].abs();
        }
    }
    match_abs(&tmp[..da * db], da, db, pairs, scratch, wu)?;
    m_perm.fill(0.0);
    for (i, &j) in pairs[..da].iter().enumerate() {
        if j != UNASSIGNED {
            m_perm[i * db + j] = if corr[i * db + j] < 0.0 { -1.0 } else { 1.0 };
        }
    }

    // Rigid: the polar factor of the cross-covariance.
    polar_factor(cab, da, db, m_rigid, scratch)?;

    // Linear: C_AB C_BB^-1 through the eigen-decomposition of C_BB.
    for i in 0..db {
        for j in 0..db {
            cbb[i * db + j] = com(da + i, da + j);
        }
    }
    symmetric_eigen(cbb, db, values, work)?;
    let rank = values
        .iter()
        .filter(|&&v| v > RANK_RTOL * values[0])
        .count();
    if values[0] <= 0.0 || rank < db {
        return Err(Error::RankDeficient {
            rank: if values[0] > 0.0 { rank } else { 0 },
            requested: db,
        });
    }
    // tmp[i][k] = (C_AB row i . v_k) / lambda_k; M[i][j] = sum_k tmp[i][k] v_k[j].
    for i in 0..da {
        for k in 0..db {
            let v = &cbb[k * db..(k + 1) * db];
            let dotv: Sum = cab[i * db..(i + 1) * db]
                .iter()
                .zip(v)
                .map(|(x, y)| x * y)
                .sum();
            tmp[i * db + k] = dotv / values[k];
        }
        for j in 0..db {
            let mut s = 0.0;
            for k in 0..db {
                s += tmp[i * db + k] * cbb[k * db + j];
            }
            m_lin[i * db + j] = s;
        }
    }

    // ICA: correlations of A's sources with B's, from the same moments.
    let (ka, kb) = (ica_a.n_components(), ica_b.n_components());
    let (ca, cb, mix_a) = (ica_a.components(), ica_b.components(), ica_a.mixing());
    // tmp (da x kb) = C_AB cB'.
    for p in 0..da {
        for j in 0..kb {
            let mut s = 0.0;
            for q in 0..db {
                s += cab[p * db + q] * cb[j * db + q].to_sum();
            }
            tmp[p * kb + j] = s;
        }
    }
    let variance = |c: &[T], d: usize, offset: usize, i: usize| -> Sum {
        let row = &c[i * d..(i + 1) * d];
        let mut s = 0.0;
        for p in 0..d {
            for q in 0..d {
                s += row[p].to_sum() * com(offset + p, offset + q) * row[q].to_sum();
            }
        }
        s
    };
    // corr (ka x kb): the sources' correlations.
    for i in 0..ka {
        let vi = variance(ca, da, 0, i);
        for j in 0..kb {
            let mut s = 0.0;
            for p in 0..da {
                s += ca[i * da + p].to_sum() * tmp[p * kb + j];
            }
            corr[i * kb + j] = s;
        }
        for j in 0..kb {
            let v = smath::sqrt(vi * variance(cb, db, da, j));
            corr[i * kb + j] = if v > 0.0 { corr[i * kb + j] / v } else { 0.0 };
        }
    }
    for (t, c) in tmp[..ka * kb].iter_mut().zip(&corr[..ka * kb]) {
        *t = c.abs();
    }
    match_abs(&tmp[..ka * kb], ka, kb, pairs, scratch, wu)?;
    m_ica.fill(0.0);
    for (i, &j) in pairs[..ka].iter().enumerate() {
        if j == UNASSIGNED {
            continue;
        }
        let sign = if corr[i * kb + j] < 0.0 { -1.0 } else { 1.0 };
        // M += mixing_A[:, i] * sign * cB[j, :].
        for r in 0..da {
            let f = sign * mix_a[r * ka + i].to_sum();
            for (m, c) in m_ica[r * db..(r + 1) * db]
                .iter_mut()
                .zip(&cb[j * db..(j + 1) * db])
            {
                *m += f * c.to_sum();
            }
        }
    }
    if maps.iter().any(|v| !v.is_finite()) {
        return Err(Error::Overflow);
    }
    Ok(())
}

/// Maximum-|correlation| assignment of the `nr x nc` `abs_corr`: each row's column (or
/// [`UNASSIGNED`]) into `pairs`.
fn match_abs(
    abs_corr: &[Sum],
    nr: usize,
    nc: usize,
    pairs: &mut [usize],
    scratch: &mut [Sum],
    wu: &mut [usize],
) -> Result<()> {
    linear_sum_assignment(abs_corr, nr, nc, true, &mut pairs[..nr], scratch, wu)?;
    Ok(())
}

/// The second pass: sums of the four maps' distances and of their squares, and the largest
/// distance of `A` from its centroid. Mergeable: [`merge`](Self::merge) adds partial sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorSums {
    n: u64,
    sum: [Sum; 4],
    sum_sq: [Sum; 4],
    max_radius_sq: Sum,
}

/// One number per map.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Errors {
    /// Signed permutation.
    pub permutation: Sum,
    /// Orthogonal Procrustes plus translation.
    pub rigid: Sum,
    /// Least-squares affine map.
    pub linear: Sum,
    /// Through FastICA's matched sources.
    pub ica: Sum,
}

impl Errors {
    fn from_array(v: [Sum; 4]) -> Self {
        Self {
            permutation: v[0],
            rigid: v[1],
            linear: v[2],
            ica: v[3],
        }
    }
    /// The error of one map.
    pub fn get(&self, kind: MapKind) -> Sum {
        match kind {
            MapKind::Permutation => self.permutation,
            MapKind::Rigid => self.rigid,
            MapKind::Linear => self.linear,
            MapKind::Ica => self.ica,
        }
    }
}

/// The alignment of two representations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Alignment {
    /// Mean Euclidean distance divided by [`diameter`](Self::diameter): the paper's numbers.
    pub normalized: Errors,
    /// Mean Euclidean distance, in `A`'s units.
    pub raw: Errors,
    /// Root-mean-square distance, in `A`'s units (`rigid >= linear` always, and
    /// `permutation >= rigid` when `da >= db`; see the module's "Ordering").
    pub rms: Errors,
    /// `(permutation - ica) / (permutation - rigid) x 100`, from the normalised errors; NaN when
    /// the permutation and rigid errors are equal, or so close that the share overflows.
    pub efficiency: Sum,
    /// `2 max_t |a_t - mean_A|`.
    pub diameter: Sum,
    /// Rows in the error pass.
    pub n_samples: u64,
}

impl ErrorSums {
    /// No rows yet.
    pub const fn new() -> Self {
        Self {
            n: 0,
            sum: [0.0; 4],
            sum_sq: [0.0; 4],
            max_radius_sq: 0.0,
        }
    }
    /// Adds paired rows `a` (`m x da`) and `b` (`m x db`) under the fitted `maps`. On error
    /// nothing is added.
    pub fn accumulate<T: Float>(&mut self, maps: &Maps<'_>, a: &[T], b: &[T]) -> Result<()> {
        let (da, db) = (maps.da, maps.db);
        let na = check_rows(a, da, self.n)?;
        let nb = check_rows(b, db, self.n)?;
        if na != nb {
            return Err(Error::DimensionMismatch {
                expected: na,
                found: nb,
            });
        }
        let (mean_a, mean_b) = (maps.mean_a(), maps.mean_b());
        let ms = MapKind::ALL.map(|k| maps.map(k));
        let mut next = *self;
        for (ra, rb) in a.chunks_exact(da).zip(b.chunks_exact(db)) {
            let mut sq = [0.0; 4];
            let mut radius_sq = 0.0;
            for i in 0..da {
                let centred = ra[i].to_sum() - mean_a[i];
                radius_sq += centred * centred;
                for (s, m) in sq.iter_mut().zip(&ms) {
                    let mut r = centred;
                    for ((mv, bv), mb) in m[i * db..(i + 1) * db].iter().zip(rb).zip(mean_b) {
                        r -= mv * (bv.to_sum() - mb);
                    }
                    *s += r * r;
                }
            }
            for ((sum, sum_sq), s) in next.sum.iter_mut().zip(&mut next.sum_sq).zip(sq) {
                *sum += smath::sqrt(s);
                *sum_sq += s;
            }
            next.max_radius_sq = next.max_radius_sq.max(radius_sq);
            next.n += 1;
        }
        if !next.is_finite() {
            return Err(Error::Overflow);
        }
        *self = next;
        Ok(())
    }
    /// Whether every sum, and the squared radius, fits: rows near 1e154 overflow the radius
    /// while their distances to the maps' predictions, being smaller, may not; shards that fit
    /// one by one may overflow once merged.
    fn is_finite(&self) -> bool {
        let sums = self.sum.iter().chain(&self.sum_sq);
        sums.chain([&self.max_radius_sq]).all(|v| v.is_finite())
    }
    /// Adds another partial result.
    pub fn merge(&mut self, other: &ErrorSums) {
        self.n += other.n;
        for (s, o) in self.sum.iter_mut().zip(other.sum) {
            *s += o;
        }
        for (s, o) in self.sum_sq.iter_mut().zip(other.sum_sq) {
            *s += o;
        }
        self.max_radius_sq = self.max_radius_sq.max(other.max_radius_sq);
    }
    /// The errors. No rows is [`Error::TooFewSamples`]; an `A` with every row equal (diameter 0)
    /// is [`Error::ZeroVariance`]; sums that [`merge`](Self::merge) overflowed, or errors that
    /// overflow when divided by the diameter, are [`Error::Overflow`].
    pub fn finish(&self) -> Result<Alignment> {
        if self.n == 0 {
            return Err(Error::TooFewSamples { n: 0, needed: 1 });
        }
        let n = self.n as Sum;
        if !self.is_finite() {
            return Err(Error::Overflow);
        }
        let diameter = 2.0 * smath::sqrt(self.max_radius_sq);
        if diameter <= 0.0 {
            return Err(Error::ZeroVariance { col: 0 });
        }
        let raw = self.sum.map(|s| s / n);
        let normalized = raw.map(|r| r / diameter);
        // A tiny diameter under large errors (B far off A's near-constant rows).
        if normalized.iter().any(|v| !v.is_finite()) {
            return Err(Error::Overflow);
        }
        let rms = self.sum_sq.map(|s| smath::sqrt(s / n));
        let gap = normalized[0] - normalized[1];
        let efficiency = (normalized[0] - normalized[3]) / gap * 100.0;
        // A gap so small that the share overflows says no more than an empty gap.
        let efficiency = if efficiency.is_finite() {
            efficiency
        } else {
            Sum::NAN
        };
        Ok(Alignment {
            normalized: Errors::from_array(normalized),
            raw: Errors::from_array(raw),
            rms: Errors::from_array(rms),
            efficiency,
            diameter,
            n_samples: self.n,
        })
    }
}

/// Options of [`alignment`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlignmentOptions {
    /// The FastICA fits (all components of each representation are kept).
    pub ica: FastIcaOptions,
    /// Seed of FastICA's start (the same for both representations).
    pub random_state: u64,
}

impl AlignmentOptions {
    /// scikit-learn's FastICA defaults, seed 0.
    pub const DEFAULT: Self = Self {
        ica: FastIcaOptions::DEFAULT,
        random_state: 0,
    };
}

impl Default for AlignmentOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// `(f64, usize, T)` workspace lengths of [`alignment`] for `n` rows.
pub const fn workspace_len(n: usize, da: usize, db: usize) -> (usize, usize, usize) {
    let (ff, fu) = fit_workspace_len(da, db);
    let (ia, ib) = (
        ica::fit_workspace_len(da, da),
        ica::fit_workspace_len(db, db),
    );
    let ica_ws = if ia > ib { ia } else { ib };
    let scratch = if ff > ica_ws { ff } else { ica_ws };
    let (sa, sb) = (
        ica::fit_scratch_len(n, da, da),
        ica::fit_scratch_len(n, db, db),
    );
    let fit_scratch = if sa > sb { sa } else { sb };
    (
        AlignmentMoments::buffer_len(da, db) + maps_len(da, db) + scratch,
        fu,
        ica::model_len(da, da) + ica::model_len(db, db) + fit_scratch,
    )
}

/// The alignment of `b` (`n x db`) to `a` (`n x da`), both row-major, in memory: the moments
/// pass, FastICA on each, the fits, the error pass. Workspace: [`workspace_len`].
///
/// ```
/// use unmix::metrics::alignment::{alignment, workspace_len, AlignmentOptions};
/// // B is A rotated by 90 degrees and shifted: rigid and linear maps align it exactly.
/// let n = 200;
/// let a: Vec<f64> = (0..2 * n).map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0).collect();
/// let b: Vec<f64> = a.chunks(2).flat_map(|r| [-r[1] + 3.0, r[0] - 1.0]).collect();
/// let (lf, lu, lt) = workspace_len(n, 2, 2);
/// let (mut wf, mut wu, mut wt) = (vec![0.0; lf], vec![0; lu], vec![0.0; lt]);
/// let al = alignment(&a, 2, &b, 2, &AlignmentOptions::DEFAULT, &mut wf, &mut wu, &mut wt)?;
/// assert!(al.normalized.rigid < 1e-12 && al.normalized.linear < 1e-12);
/// assert!(al.normalized.permutation < 1e-12); // a signed permutation too
/// # Ok::<(), unmix::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn alignment<T: Float>(
    a: &[T],
    da: usize,
    b: &[T],
    db: usize,
    opts: &AlignmentOptions,
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
    ws_t: &mut [T],
) -> Result<Alignment> {
    let ws = prefix_mut(ws_f64, workspace_len(a.len() / da.max(1), da, db).0)?;
    let (maps, ws) = ws.split_at_mut(maps_len(da, db));
    alignment_with_maps(a, da, b, db, opts, maps, ws, ws_usize, ws_t)
}

/// [`alignment`], also leaving the fitted maps in `maps` ([`maps_len`]; view them with
/// [`Maps::from_parts`]). The workspace may be [`maps_len`] shorter than [`workspace_len`] says.
#[allow(clippy::too_many_arguments)]
pub fn alignment_with_maps<T: Float>(
    a: &[T],
    da: usize,
    b: &[T],
    db: usize,
    opts: &AlignmentOptions,
    maps: &mut [Sum],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
    ws_t: &mut [T],
) -> Result<Alignment> {
    let n = check_rows(a, da, 0)?;
    let nb = check_rows(b, db, 0)?;
    if n != nb {
        return Err(Error::DimensionMismatch {
            expected: n,
            found: nb,
        });
    }
    let needed = da.max(db) as u64 + 1;
    if (n as u64) < needed {
        return Err(Error::TooFewSamples {
            n: n as u64,
            needed,
        });
    }
    let (lf, lu, lt) = workspace_len(n, da, db);
    let ws = prefix_mut(ws_f64, lf - maps_len(da, db))?;
    let wu = prefix_mut(ws_usize, lu)?;
    let wt = prefix_mut(ws_t, lt)?;
    let maps_buf = prefix_mut(maps, maps_len(da, db))?;
    let (mbuf, scratch) = ws.split_at_mut(AlignmentMoments::buffer_len(da, db));
    let (store_a, wt) = wt.split_at_mut(ica::model_len(da, da));
    let (store_b, z) = wt.split_at_mut(ica::model_len(db, db));

    let mut moments = AlignmentMoments::new(da, db, mbuf)?;
    moments.accumulate(a, b)?;
    let init = WInit::Seed(opts.random_state);
    let mut ica_a = FastIcaBuf::new(da, da, store_a)?;
    ica_a.fit(
        a,
        &opts.ica,
        init,
        &mut z[..ica::fit_scratch_len(n, da, da)],
        scratch,
    )?;
    let mut ica_b = FastIcaBuf::new(db, db, store_b)?;
    ica_b.fit(
        b,
        &opts.ica,
        init,
        &mut z[..ica::fit_scratch_len(n, db, db)],
        scratch,
    )?;
    fit_maps(
        moments.as_ref(),
        da,
        db,
        &ica_a.view(),
        &ica_b.view(),
        maps_buf,
        scratch,
        wu,
    )?;
    let maps = Maps::from_parts(da, db, maps_buf)?;
    let mut sums = ErrorSums::new();
    sums.accumulate(&maps, a, b)?;
    sums.finish()
}
