//! FastICA: find the rotation of white data whose components are most non-Gaussian.
//!
//! This follows scikit-learn's `FastICA` (1.9) exactly, with the whitening of
//! `whiten_solver="eigh"`:
//!
//! - **parallel** (default): `W <- sym(E[g(W z) z'] - diag(E[g'(W z)]) W)`, starting from
//!   `sym(w_init)`, stopping when `max_i | |<w_i_new, w_i_old>| - 1 | < tol`;
//! - **deflation**: one row at a time, `w <- E[z g(w'z)] - E[g'(w'z)] w`, Gram-Schmidt against the
//!   rows found, normalised, starting from `w_init[j] / |w_init[j]|`; `n_iter` is the largest
//!   count over the rows;
//! - contrasts [`LogCosh`] (`alpha` in [1, 2]), [`Exp`], [`Cube`], or any [`Contrast`];
//! - `whiten`: [`WhitenMode::UnitVariance`] (sources have unit variance, ddof 0),
//!   [`WhitenMode::ArbitraryVariance`] (scikit-learn's bookkeeping: variance `1/n`), or
//!   [`WhitenMode::None`] (data already white: no centring, `components = W`).
//!
//! Non-convergence is not an error: [`IcaInfo`] says `converged = false` and gives the last change.
//!
//! # Passes
//! Each iteration is one pass over the samples, a mergeable reduction ([`stats`]). The driver
//! [`unmix`] asks a [`Passes`] implementation to run each pass: [`RowPasses`] runs them over rows in
//! memory, one after the other; the `unmix` command runs the same chunks on several threads and
//! merges them in order. Either way the result is the same bits.
//!
//! # The model
//! A fitted model is a whitener (mean, whitening, unwhitening, explained variance; see
//! [`whiten`](crate::whiten)) followed by `unmixing` (`k x k`), `components = unmixing *
//! whitening` (`k x d`) and `mixing` (`d x k`, the pseudo-inverse of `components`). Sources are
//! `components (x - mean)`. `components` and `mixing` equal scikit-learn's `components_` and
//! `mixing_`; unlike its `whitening_`, ours is the true whitening (scikit-learn's is ours divided
//! by `sqrt(n)`, and its `_unmixing` ours times `sqrt(n)`).

pub mod contrast;
pub mod fastmath;
mod kernel;
pub mod stats;
pub mod update;

pub use contrast::{Contrast, ContrastKind, Cube, Exp, LogCosh};
pub use stats::{CHUNK, DeflationStats, ParallelStats, SourceStats};

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::linalg;
use crate::moments::{MomentsBuf, check_rows};
use crate::random::Normals;
use crate::whiten::{self, Method, Rotation, WhitenOptions, Whitener, WhitenerView};

/// Parallel (symmetric) or deflation (one component at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// All rows at once with symmetric decorrelation (scikit-learn's default).
    #[default]
    Parallel,
    /// Row by row with Gram-Schmidt.
    Deflation,
}

/// scikit-learn's `whiten` parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WhitenMode {
    /// Centre, whiten, and scale the sources to unit variance (the default).
    #[default]
    UnitVariance,
    /// Centre and whiten; sources keep scikit-learn's arbitrary scale (variance `1/n`).
    ArbitraryVariance,
    /// The data are already white: no centring, no whitening, `k = d`.
    None,
}

crate::names::option_names!(Algorithm, "algorithm", {
    Algorithm::Parallel => "parallel", Algorithm::Parallel;
    Algorithm::Deflation => "deflation", Algorithm::Deflation;
});

crate::names::option_names!(WhitenMode, "whiten mode", {
    WhitenMode::UnitVariance => "unit-variance", WhitenMode::UnitVariance;
    WhitenMode::ArbitraryVariance => "arbitrary-variance", WhitenMode::ArbitraryVariance;
    WhitenMode::None => "false", WhitenMode::None;
});

/// Iteration options of [`unmix`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IcaOptions {
    /// Parallel or deflation.
    pub algorithm: Algorithm,
    /// Iteration cap (per row for deflation), at least 1. Default 200.
    pub max_iter: usize,
    /// Stop when the change falls below this, `>= 0`. Default `1e-4`.
    pub tol: f64,
}

impl IcaOptions {
    /// scikit-learn's defaults: parallel, 200 iterations, `tol = 1e-4`.
    pub const DEFAULT: Self = Self {
        algorithm: Algorithm::Parallel,
        max_iter: 200,
        tol: 1e-4,
    };
    fn check(&self) -> Result<()> {
        if self.max_iter == 0 {
            return Err(Error::InvalidParameter("max_iter must be at least 1"));
        }
        if self.tol.is_nan() || self.tol < 0.0 {
            return Err(Error::InvalidParameter("tol must be a number >= 0"));
        }
        Ok(())
    }
}

impl Default for IcaOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// How the iterations ended.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct IcaInfo {
    /// Iterations run (deflation: the most any row needed).
    pub n_iter: usize,
    /// Whether every change fell below `tol` within `max_iter`.
    pub converged: bool,
    /// The last change (deflation: the largest last change over the rows).
    pub last_change: f64,
}

/// Runs the passes over the samples for [`unmix`]. Implementations must feed every row once per
/// call, in row order, to the statistics they are given.
pub trait Passes {
    /// One parallel pass at unmixing `w` (`k x k`).
    fn parallel<C: Contrast>(
        &mut self,
        w: &[f64],
        contrast: &C,
        stats: &mut ParallelStats<'_>,
    ) -> Result<()>;
    /// One deflation pass for the unit vector `w` (`k`).
    fn deflation<C: Contrast>(
        &mut self,
        w: &[f64],
        contrast: &C,
        stats: &mut DeflationStats<'_>,
    ) -> Result<()>;
    /// One pass of source power sums at unmixing `w` (`k x k`).
    fn sources(&mut self, w: &[f64], stats: &mut SourceStats<'_>) -> Result<()>;
}

/// [`Passes`] over white rows in memory (`n x k`, row-major), one after the other.
#[derive(Clone, Copy, Debug)]
pub struct RowPasses<'a, T> {
    z: &'a [T],
}

impl<'a, T: Float> RowPasses<'a, T> {
    /// Passes over `z`.
    pub fn new(z: &'a [T]) -> Self {
        Self { z }
    }
}

impl<T: Float> Passes for RowPasses<'_, T> {
    fn parallel<C: Contrast>(
        &mut self,
        w: &[f64],
        contrast: &C,
        stats: &mut ParallelStats<'_>,
    ) -> Result<()> {
        stats.accumulate(w, self.z, contrast)
    }
    fn deflation<C: Contrast>(
        &mut self,
        w: &[f64],
        contrast: &C,
        stats: &mut DeflationStats<'_>,
    ) -> Result<()> {
        stats.accumulate(w, self.z, contrast)
    }
    fn sources(&mut self, w: &[f64], stats: &mut SourceStats<'_>) -> Result<()> {
        stats.accumulate(w, self.z)
    }
}

/// `f64` workspace [`unmix`] needs for `k` components.
pub const fn unmix_workspace_len(k: usize) -> usize {
    let p = ParallelStats::buffer_len(k);
    let d = DeflationStats::buffer_len(k);
    let stats = if p > d { p } else { d };
    stats + (k * k + k) + k * k + update::sym_workspace_len(k)
}

/// Runs FastICA on the samples `passes` yields (`k` white components), from the start `w`
/// (`k x k`, row-major; checked: finite and not singular), leaving the unmixing in `w`.
/// `on_iteration(iteration, change)` is called after each step (deflation: with the row's step).
pub fn unmix<P: Passes, C: Contrast>(
    passes: &mut P,
    k: usize,
    contrast: &C,
    opts: &IcaOptions,
    w: &mut [f64],
    ws: &mut [f64],
    mut on_iteration: impl FnMut(usize, f64),
) -> Result<IcaInfo> {
    opts.check()?;
    if k == 0 {
        return Err(Error::InvalidComponents { k, d: 0 });
    }
    let ws = prefix_mut(ws, unmix_workspace_len(k))?;
    let stats_len = unmix_workspace_len(k) - (k * k + k) - k * k - update::sym_workspace_len(k);
    let (stats_buf, rest) = ws.split_at_mut(stats_len);
    let (sums, step_ws) = rest.split_at_mut(k * k + k);
    update::check_start(w, k, step_ws)?;
    let w = &mut w[..k * k];
    let mut info = IcaInfo::default();
    match opts.algorithm {
        Algorithm::Parallel => {
            update::sym_decorrelation(w, k, step_ws)?;
            let mut stats = ParallelStats::new(k, stats_buf)?;
            for it in 1..=opts.max_iter {
                stats.reset();
                passes.parallel(w, contrast, &mut stats)?;
                let n = rows_at_least_two(stats.finish(contrast, sums)?)?;
                let change = update::parallel_step(w, sums, n, k, step_ws)?;
                on_iteration(it, change);
                info = IcaInfo {
                    n_iter: it,
                    converged: change < opts.tol,
                    last_change: change,
                };
                if info.converged {
                    break;
                }
            }
        }
        Algorithm::Deflation => {
            info.converged = true;
            let mut stats = DeflationStats::new(k, stats_buf)?;
            for j in 0..k {
                let row = &mut w[j * k..(j + 1) * k];
                let norm = libm::sqrt(crate::linalg::dot(row, row));
                for x in row.iter_mut() {
                    *x /= norm;
                }
                let (mut change, mut iterations) = (f64::INFINITY, 0);
                for it in 1..=opts.max_iter {
                    stats.reset();
                    passes.deflation(&w[j * k..(j + 1) * k], contrast, &mut stats)?;
                    let n = rows_at_least_two(stats.finish(&mut sums[..k + 1])?)?;
                    change = update::deflation_step(w, j, &sums[..k + 1], n, k, step_ws)?;
                    on_iteration(it, change);
                    iterations = it;
                    if change < opts.tol {
                        break;
                    }
                }
                info.n_iter = info.n_iter.max(iterations);
                info.converged &= change < opts.tol;
                info.last_change = info.last_change.max(change);
            }
        }
    }
    Ok(info)
}

fn rows_at_least_two(n: u64) -> Result<u64> {
    if n < 2 {
        return Err(Error::TooFewSamples { n, needed: 2 });
    }
    Ok(n)
}

/// Standard deviation (ddof 0), skewness and excess kurtosis of each source `y = W z`, from one
/// pass, into `out` (`3k`: all deviations, then all skewnesses, then all kurtoses).
pub fn source_moments<P: Passes>(
    passes: &mut P,
    w: &[f64],
    k: usize,
    ws: &mut [f64],
    out: &mut [f64],
) -> Result<()> {
    let ws = prefix_mut(ws, SourceStats::buffer_len(k) + 4 * k)?;
    let (buf, sums) = ws.split_at_mut(SourceStats::buffer_len(k));
    let mut stats = SourceStats::new(k, buf)?;
    passes.sources(w, &mut stats)?;
    let n = rows_at_least_two(stats.finish(sums)?)? as f64;
    let out = prefix_mut(out, 3 * k)?;
    for i in 0..k {
        let m = |p: usize| sums[4 * i + p] / n;
        let (m1, m2, m3, m4) = (m(0), m(1), m(2), m(3));
        let var = (m2 - m1 * m1).max(0.0);
        let mu3 = m3 - 3.0 * m1 * m2 + 2.0 * m1 * m1 * m1;
        let mu4 = m4 - 4.0 * m1 * m3 + 6.0 * m1 * m1 * m2 - 3.0 * m1 * m1 * m1 * m1;
        out[i] = libm::sqrt(var);
        let (skew, kurt) = if var > 0.0 {
            (mu3 / (var * libm::sqrt(var)), mu4 / (var * var) - 3.0)
        } else {
            (0.0, 0.0)
        };
        out[k + i] = skew;
        out[2 * k + i] = kurt;
    }
    Ok(())
}

/// The canonical form: rows of `w` ordered by decreasing |excess kurtosis| (ties keep their
/// order) and signed so that each source's skewness is >= 0. `moments` (as from
/// [`source_moments`]) are permuted and signed alongside.
pub fn canonicalize(w: &mut [f64], k: usize, moments: &mut [f64]) {
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
        while j > 0 && libm::fabs(moments[2 * k + j]) > libm::fabs(moments[2 * k + j - 1]) {
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

/// Where the start `W` comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WInit<'a> {
    /// A given `k x k` matrix, row-major (scikit-learn's `w_init`).
    Matrix(&'a [f64]),
    /// Standard normals from [`Normals::new(seed)`](Normals), row-major (like scikit-learn's
    /// `random_state`, with our generator).
    Seed(u64),
}

/// Everything a full fit needs besides the data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FastIcaOptions {
    /// Algorithm, `max_iter`, `tol`.
    pub ica: IcaOptions,
    /// The contrast.
    pub contrast: ContrastKind,
    /// scikit-learn's `whiten`.
    pub whiten: WhitenMode,
    /// Relative eigenvalue threshold of the whitening's rank test.
    pub rank_rtol: f64,
    /// Order components by |excess kurtosis| and sign them to positive skewness.
    pub canonical: bool,
}

impl FastIcaOptions {
    /// scikit-learn's defaults (parallel, logcosh with alpha 1, unit variance, 200 iterations,
    /// `tol = 1e-4`), `rank_rtol = 1e-10`, no canonical form.
    pub const DEFAULT: Self = Self {
        ica: IcaOptions::DEFAULT,
        contrast: ContrastKind::LogCosh(LogCosh::DEFAULT),
        whiten: WhitenMode::UnitVariance,
        rank_rtol: WhitenOptions::DEFAULT.rank_rtol,
        canonical: false,
    };
}

impl Default for FastIcaOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// `T` storage elements of a FastICA model `d -> k`.
///
/// Layout: a whitener ([`whiten::storage_len`]: mean | whitening | unwhitening | explained
/// variance) | unmixing (`k x k`) | components (`k x d`) | mixing (`d x k`), all row-major.
pub const fn model_len(d: usize, k: usize) -> usize {
    whiten::storage_len(d, k) + k * k + 2 * k * d
}

/// `f64` workspace a full in-memory fit of `d -> k` needs.
pub const fn fit_workspace_len(d: usize, k: usize) -> usize {
    let a = MomentsBuf::buffer_len(d) + whiten::workspace_len(d, k);
    let b = unmix_workspace_len(k);
    let c = SourceStats::buffer_len(k) + 4 * k;
    let max = if a > b { a } else { b };
    let max = if max > c { max } else { c };
    max + k * k + 3 * k
}

/// Mutable storage of a model, whoever owns it.
pub struct ModelParts<'a, T> {
    /// `d`.
    pub mean: &'a mut [T],
    /// `k x d`.
    pub whitening: &'a mut [T],
    /// `d x k`.
    pub unwhitening: &'a mut [T],
    /// `k`.
    pub explained_variance: &'a mut [T],
    /// `k x k`.
    pub unmixing: &'a mut [T],
    /// `k x d`.
    pub components: &'a mut [T],
    /// `d x k`.
    pub mixing: &'a mut [T],
}

impl<'a, T: Float> ModelParts<'a, T> {
    /// Splits a flat [`model_len`] buffer.
    pub fn split(d: usize, k: usize, storage: &'a mut [T]) -> Result<Self> {
        let storage = prefix_mut(storage, model_len(d, k))?;
        let (mean, rest) = storage.split_at_mut(d);
        let (whitening, rest) = rest.split_at_mut(k * d);
        let (unwhitening, rest) = rest.split_at_mut(d * k);
        let (explained_variance, rest) = rest.split_at_mut(k);
        let (unmixing, rest) = rest.split_at_mut(k * k);
        let (components, mixing) = rest.split_at_mut(k * d);
        Ok(Self {
            mean,
            whitening,
            unwhitening,
            explained_variance,
            unmixing,
            components,
            mixing,
        })
    }
    fn whitener_parts(&mut self) -> whiten::Parts<'_, T> {
        whiten::Parts {
            mean: self.mean,
            whitening: self.whitening,
            unwhitening: self.unwhitening,
            explained_variance: self.explained_variance,
        }
    }
    fn whitener_view(&self, d: usize, k: usize) -> WhitenerView<'_, T> {
        WhitenerView::from_slices(
            d,
            k,
            self.mean,
            self.whitening,
            self.unwhitening,
            self.explained_variance,
            whiten::FitInfo::default(),
        )
    }
}

/// A fitted FastICA model, viewed, whoever owns the storage.
#[derive(Clone, Copy, Debug)]
pub struct FastIcaView<'a, T> {
    d: usize,
    k: usize,
    whitener: WhitenerView<'a, T>,
    unmixing: &'a [T],
    components: &'a [T],
    mixing: &'a [T],
    info: IcaInfo,
}

impl<'a, T: Float> FastIcaView<'a, T> {
    /// Views a model stored in the [`model_len`] layout (e.g. loaded from a file).
    pub fn from_parts(d: usize, k: usize, storage: &'a [T], info: IcaInfo) -> Result<Self> {
        if k == 0 || k > d {
            return Err(Error::InvalidComponents { k, d });
        }
        if storage.len() < model_len(d, k) {
            return Err(Error::BufferTooSmall {
                needed: model_len(d, k),
                found: storage.len(),
            });
        }
        let (wpart, rest) = storage.split_at(whiten::storage_len(d, k));
        let whitener = WhitenerView::from_parts(d, k, wpart)?;
        let (unmixing, rest) = rest.split_at(k * k);
        let (components, rest) = rest.split_at(k * d);
        let mixing = &rest[..d * k];
        Ok(Self {
            d,
            k,
            whitener,
            unmixing,
            components,
            mixing,
            info,
        })
    }
    /// The whitening step (mean, whitening, unwhitening, explained variance).
    pub fn whitener(&self) -> WhitenerView<'a, T> {
        self.whitener
    }
    /// Input features `d`.
    pub fn n_features(&self) -> usize {
        self.d
    }
    /// Components `k`.
    pub fn n_components(&self) -> usize {
        self.k
    }
    /// Feature means (zeros with [`WhitenMode::None`]).
    pub fn mean(&self) -> &'a [T] {
        self.whitener.mean()
    }
    /// `k x k`: sources = unmixing * whitened data.
    pub fn unmixing(&self) -> &'a [T] {
        self.unmixing
    }
    /// `k x d` = unmixing * whitening: sources = components (x - mean).
    pub fn components(&self) -> &'a [T] {
        self.components
    }
    /// `d x k`, the pseudo-inverse of `components`: x ~ mean + mixing * sources.
    pub fn mixing(&self) -> &'a [T] {
        self.mixing
    }
    /// Iterations, convergence, last change.
    pub fn info(&self) -> IcaInfo {
        self.info
    }
    /// Sources `s` (`k`) of one sample `x` (`d`).
    pub fn transform(&self, x: &[T], s: &mut [T]) -> Result<()> {
        self.transform_rows(x, s)
    }
    /// One sample `x` (`d`) from its sources `s` (`k`).
    pub fn inverse_transform(&self, s: &[T], x: &mut [T]) -> Result<()> {
        self.inverse_transform_rows(s, x)
    }
    /// Sources of row-major samples `x` (`n x d`) into `s` (`n x k`).
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn transform_rows(&self, x: &[T], s: &mut [T]) -> Result<()> {
        linalg::affine_rows(x, self.d, self.mean(), self.components, s, self.k, false)
    }
    /// Samples `x` (`n x d`) from sources `s` (`n x k`).
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn inverse_transform_rows(&self, s: &[T], x: &mut [T]) -> Result<()> {
        linalg::affine_rows(s, self.k, self.mean(), self.mixing, x, self.d, true)
    }
}

/// The one full in-memory fit behind [`FastIca`] and [`FastIcaBuf`]: moments, whitening into the
/// model, `z`, [`unmix`], [`finish_model`].
#[allow(clippy::too_many_arguments)]
fn fit_model<T: Float>(
    x: &[T],
    d: usize,
    k: usize,
    opts: &FastIcaOptions,
    init: WInit<'_>,
    z: &mut [T],
    mut model: ModelParts<'_, T>,
    ws: &mut [f64],
) -> Result<IcaInfo> {
    let n = check_rows(x, d, 0)?;
    check_fit(d, k, opts)?;
    let ws = prefix_mut(ws, fit_workspace_len(d, k))?;
    let (w, rest) = ws.split_at_mut(k * k);
    let (moments3, ws) = rest.split_at_mut(3 * k);
    start_matrix(init, k, w)?;
    let white: &[T] = if opts.whiten == WhitenMode::None {
        x
    } else {
        let (mbuf, wws) = ws.split_at_mut(MomentsBuf::buffer_len(d));
        let mut moments = MomentsBuf::new(d, mbuf)?;
        moments.accumulate(x)?;
        whiten::fit_into_parts(
            moments.as_ref(),
            &pca_options(opts),
            d,
            k,
            model.whitener_parts(),
            wws,
        )?;
        let z = prefix_mut(z, n * k)?;
        model.whitener_view(d, k).transform_rows(x, z)?;
        z
    };
    let mut passes = RowPasses::new(white);
    let info = unmix(&mut passes, k, &opts.contrast, &opts.ica, w, ws, |_, _| {})?;
    finish_model(&mut passes, d, k, opts, w, moments3, ws, n as u64, model)?;
    Ok(info)
}

/// The whitening FastICA uses: PCA, no rotation, ddof 0 (scikit-learn's eigh solver).
pub fn pca_options(opts: &FastIcaOptions) -> WhitenOptions {
    WhitenOptions {
        method: Method::Pca,
        rotation: Rotation::None,
        ddof: 0,
        rank_rtol: opts.rank_rtol,
    }
}

/// Validates the shape and options of a fit.
pub fn check_fit(d: usize, k: usize, opts: &FastIcaOptions) -> Result<()> {
    if k == 0 || k > d || (opts.whiten == WhitenMode::None && k != d) {
        return Err(Error::InvalidComponents { k, d });
    }
    opts.ica.check()?;
    if let ContrastKind::LogCosh(c) = opts.contrast {
        LogCosh::new(c.alpha())?;
    }
    Ok(())
}

/// Writes the start matrix (`k x k`) into `w`.
pub fn start_matrix(init: WInit<'_>, k: usize, w: &mut [f64]) -> Result<()> {
    let w = prefix_mut(w, k * k)?;
    match init {
        WInit::Matrix(m) => {
            if m.len() != k * k {
                return Err(Error::DimensionMismatch {
                    expected: k * k,
                    found: m.len(),
                });
            }
            w.copy_from_slice(m);
        }
        WInit::Seed(seed) => Normals::new(seed).fill(w),
    }
    Ok(())
}

/// After [`unmix`]: the source pass (if needed), the canonical form, the scale of the sources, and
/// the model's unmixing, components and mixing. The model's whitener parts hold the fitted
/// whitener, or are set here to the identity for [`WhitenMode::None`]. `moments3` needs `3k` and
/// `ws` [`SourceStats::buffer_len`]` + 4k` elements.
#[allow(clippy::too_many_arguments)]
pub fn finish_model<P: Passes, T: Float>(
    passes: &mut P,
    d: usize,
    k: usize,
    opts: &FastIcaOptions,
    w: &mut [f64],
    moments3: &mut [f64],
    ws: &mut [f64],
    n: u64,
    mut model: ModelParts<'_, T>,
) -> Result<()> {
    let moments3 = prefix_mut(moments3, 3 * k)?;
    if opts.whiten == WhitenMode::UnitVariance || opts.canonical {
        source_moments(passes, w, k, ws, moments3)?;
        if opts.canonical {
            canonicalize(w, k, moments3);
        }
    }
    // Row scale c_i: unmixing = diag(c) W.
    for (i, c) in moments3[..k].iter_mut().enumerate() {
        *c = match opts.whiten {
            WhitenMode::UnitVariance => {
                if c.is_nan() || *c <= 0.0 {
                    return Err(Error::RankDeficient {
                        rank: i,
                        requested: k,
                    });
                }
                1.0 / *c
            }
            WhitenMode::ArbitraryVariance => 1.0 / libm::sqrt(n as f64),
            WhitenMode::None => 1.0,
        };
    }
    if opts.whiten == WhitenMode::None {
        let p = model.whitener_parts();
        for part in [&mut *p.mean, &mut *p.whitening, &mut *p.unwhitening] {
            part.fill(T::ZERO);
        }
        for i in 0..k {
            p.whitening[i * d + i] = T::ONE;
            p.unwhitening[i * k + i] = T::ONE;
            p.explained_variance[i] = T::ONE;
        }
    }
    let scale = &moments3[..k];
    let ModelParts {
        whitening,
        unwhitening,
        unmixing,
        components,
        mixing,
        ..
    } = model;
    for i in 0..k {
        let wr = &w[i * k..(i + 1) * k];
        for (j, u) in unmixing[i * k..(i + 1) * k].iter_mut().enumerate() {
            *u = T::from_f64(scale[i] * wr[j]);
        }
        for j in 0..d {
            let v: f64 = wr
                .iter()
                .enumerate()
                .map(|(l, a)| a * whitening[l * d + j].to_f64())
                .sum();
            components[i * d + j] = T::from_f64(scale[i] * v);
        }
    }
    // mixing = unwhitening W' diag(1 / c), the pseudo-inverse of diag(c) W whitening (W orthogonal).
    for r in 0..d {
        let ur = &unwhitening[r * k..(r + 1) * k];
        for i in 0..k {
            let v: f64 = ur
                .iter()
                .zip(&w[i * k..(i + 1) * k])
                .map(|(a, b)| a.to_f64() * b)
                .sum();
            mixing[r * k + i] = T::from_f64(v / scale[i]);
        }
    }
    if [&*unmixing, &*components, &*mixing]
        .iter()
        .any(|p| p.iter().any(|v| !v.is_finite()))
    {
        return Err(Error::Overflow);
    }
    Ok(())
}

/// A FastICA model `D -> K` with its storage inside (usable in a `static`).
///
/// ```
/// use unmix::ica::{FastIca, FastIcaOptions, WInit, fit_workspace_len};
///
/// // Two independent non-Gaussian signals, mixed into two features.
/// let n = 2000;
/// let mut x = [0.0f64; 4000];
/// for t in 0..n {
///     let s1 = if (t / 37) % 2 == 0 { 1.0 } else { -1.0 }; // square wave
///     let s2 = ((t * 7919) % 1000) as f64 / 500.0 - 1.0;   // uniform-like
///     x[2 * t] = s1 + 0.5 * s2;
///     x[2 * t + 1] = 0.3 * s1 - s2;
/// }
/// let mut model = FastIca::<f64, 2, 2>::new();
/// let mut z = [0.0; 4000];
/// let mut ws = [0.0; fit_workspace_len(2, 2)];
/// let info = model.fit(&x, &FastIcaOptions::DEFAULT, WInit::Seed(0), &mut z, &mut ws)?;
/// assert!(info.converged);
/// // Each source is one of the signals, up to sign.
/// let mut s = [0.0; 4000];
/// model.view().transform_rows(&x, &mut s)?;
/// let square = (0..n).map(|t| s[2 * t].abs()).fold(0.0f64, |a, b| a.max((b - 1.0).abs()));
/// let other = (0..n).map(|t| s[2 * t + 1].abs()).fold(0.0f64, |a, b| a.max((b - 1.0).abs()));
/// assert!(square.min(other) < 0.05, "one source is the square wave");
/// # Ok::<(), unmix::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FastIca<T, const D: usize, const K: usize> {
    whitener: Whitener<T, D, K>,
    unmixing: [[T; K]; K],
    components: [[T; D]; K],
    mixing: [[T; K]; D],
    info: IcaInfo,
}

impl<T: Float, const D: usize, const K: usize> Default for FastIca<T, D, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Float, const D: usize, const K: usize> FastIca<T, D, K> {
    /// Unfitted (all zeros).
    pub const fn new() -> Self {
        Self {
            whitener: Whitener::new(),
            unmixing: [[T::ZERO; K]; K],
            components: [[T::ZERO; D]; K],
            mixing: [[T::ZERO; K]; D],
            info: IcaInfo {
                n_iter: 0,
                converged: false,
                last_change: 0.0,
            },
        }
    }
    /// Fits on row-major samples `x` (`n x D`). `z` (`n x K`) receives the whitened data (unused
    /// with [`WhitenMode::None`]); `ws` needs [`fit_workspace_len`]`(D, K)` elements. On error the
    /// model may be partly overwritten; its `info` is unchanged.
    pub fn fit(
        &mut self,
        x: &[T],
        opts: &FastIcaOptions,
        init: WInit<'_>,
        z: &mut [T],
        ws: &mut [f64],
    ) -> Result<IcaInfo> {
        let w = &mut self.whitener;
        let parts = ModelParts {
            mean: &mut w.mean,
            whitening: w.whitening.as_flattened_mut(),
            unwhitening: w.unwhitening.as_flattened_mut(),
            explained_variance: &mut w.explained_variance,
            unmixing: self.unmixing.as_flattened_mut(),
            components: self.components.as_flattened_mut(),
            mixing: self.mixing.as_flattened_mut(),
        };
        let info = fit_model(x, D, K, opts, init, z, parts, ws)?;
        self.info = info;
        Ok(info)
    }
    /// Sources of one sample.
    pub fn transform(&self, x: &[T; D], s: &mut [T; K]) -> Result<()> {
        self.view().transform(x, s)
    }
    /// One sample from its sources.
    pub fn inverse_transform(&self, s: &[T; K], x: &mut [T; D]) -> Result<()> {
        self.view().inverse_transform(s, x)
    }
    /// The fitted model (transforms live there).
    pub fn view(&self) -> FastIcaView<'_, T> {
        FastIcaView {
            d: D,
            k: K,
            whitener: self.whitener.view(),
            unmixing: self.unmixing.as_flattened(),
            components: self.components.as_flattened(),
            mixing: self.mixing.as_flattened(),
            info: self.info,
        }
    }
}

/// A FastICA model `d -> k` (known at run time) in storage the caller lends.
#[derive(Debug)]
pub struct FastIcaBuf<'a, T> {
    d: usize,
    k: usize,
    storage: &'a mut [T],
    info: IcaInfo,
}

impl<'a, T: Float> FastIcaBuf<'a, T> {
    /// Takes [`model_len`]`(d, k)` elements of `storage` (zeroed).
    pub fn new(d: usize, k: usize, storage: &'a mut [T]) -> Result<Self> {
        if k == 0 || k > d {
            return Err(Error::InvalidComponents { k, d });
        }
        let storage = prefix_mut(storage, model_len(d, k))?;
        storage.fill(T::ZERO);
        Ok(Self {
            d,
            k,
            storage,
            info: IcaInfo::default(),
        })
    }
    /// Fits on row-major samples `x` (`n x d`); see [`FastIca::fit`].
    pub fn fit(
        &mut self,
        x: &[T],
        opts: &FastIcaOptions,
        init: WInit<'_>,
        z: &mut [T],
        ws: &mut [f64],
    ) -> Result<IcaInfo> {
        let parts = ModelParts::split(self.d, self.k, self.storage)?;
        let info = fit_model(x, self.d, self.k, opts, init, z, parts, ws)?;
        self.info = info;
        Ok(info)
    }
    /// The model's storage, for a driver that runs its own passes (see [`finish_model`]).
    pub fn parts(&mut self) -> Result<ModelParts<'_, T>> {
        ModelParts::split(self.d, self.k, self.storage)
    }
    /// Records how the iterations ended, for a driver that runs its own passes.
    pub fn set_info(&mut self, info: IcaInfo) {
        self.info = info;
    }
    /// The fitted model.
    pub fn view(&self) -> FastIcaView<'_, T> {
        FastIcaView::from_parts(self.d, self.k, self.storage, self.info)
            .expect("storage split by FastIcaBuf::new")
    }
}
