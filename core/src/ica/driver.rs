//! The one FastICA fit: passes over the samples, run by an [`Executor`], with the dense products on
//! a [`Kernel`].
//!
//! A fit is a short list of passes, each a mergeable reduction ([`Pass`]): the moments of the
//! input ([`MomentsPass`]), then, once the whitening is known, passes over the white rows: one per
//! iteration ([`ParallelPass`] or [`DeflationPass`]) and one for the moments of the sources
//! ([`SourcePass`]). The driver decides what each pass computes; the executor decides where the
//! rows are and who runs them: [`InMemory`] runs them one after the other over rows in memory
//! (firmware, a single thread); the `unmix` command runs fixed chunks on a thread pool; a
//! cluster can run them shard by shard. Every pass's partial results are merged in row order,
//! so the result does not depend on how the rows were split, as long as each piece starts at a
//! multiple of [`CHUNK`] rows.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};
use crate::ica::contrast::{Contrast, ContrastKind};
use crate::ica::kernel::Kernel;
use crate::ica::options::{Algorithm, IcaInfo, IcaOptions};
use crate::ica::stats::{CHUNK, DeflationStats, ParallelStats, SourceStats};
use crate::ica::update;
use crate::moments::{MomentsBuf, MomentsRef};
use crate::whiten::WhitenerView;

/// One mergeable reduction over rows: what a pass computes, whoever runs it.
///
/// A partial result is `partial_len()` [`Sum`] values, zeroed before its first rows. An executor
/// splits the rows into pieces of whole [`CHUNK`]s counted from the first row of the pass (the
/// last may be shorter), feeds each piece to [`accumulate`](Self::accumulate) on some partial,
/// and folds the partials into the total with [`merge`](Self::merge) in row order. Any such
/// split gives the bits of one sequential pass as long as each partial holds at most one chunk:
/// a partial fed several chunks sums them before they reach the total, which changes the last
/// bits (a few sums by an ulp). Another fixed order is as deterministic: the Python package
/// merges the chunks' partials over a fixed binary tree, the same wherever each node is computed.
///
/// [`DeflationPass`] and [`SourcePass`] also take one chunk in consecutive pieces of any size on
/// one partial, with the same bits: their sums take the rows in order, however the calls cut
/// them. [`ParallelPass`] and [`MomentsPass`] do not: they gather each call's rows into blocks
/// from the call's first row (the kernel's block rows; 32 rows centred on their own mean), so a
/// chunk cut into calls changes their last bits. Feed them whole chunks.
pub trait Pass<T>: Sync {
    /// [`Sum`] elements of a partial result.
    fn partial_len(&self) -> usize;
    /// Adds `rows` (row-major, whole rows of the pass's width), the first of which is row
    /// `first` of the pass, to `partial`. Errors name rows counted from the start of the pass.
    fn accumulate(&self, partial: &mut [Sum], first: u64, rows: &[T]) -> Result<()>;
    /// Adds `next`, the partial result of the rows that follow those of `total`, to `total`.
    fn merge(&self, total: &mut [Sum], next: &[Sum]) -> Result<()>;
    /// The pass as plain data, so that another process can rebuild it ([`PassSpec::pass`]) and
    /// run its [`accumulate`](Self::accumulate) and [`merge`](Self::merge) with the same bits.
    /// `None` (the default) when it cannot be described, e.g. with a user contrast.
    fn spec(&self) -> Option<PassSpec<'_>> {
        None
    }
}

/// What a pass computes, as plain data: its kind, its width and its parameters (the unmixing
/// `w`, the built-in contrast). An executor whose rows live in other processes (the Python
/// package's Dask executor) ships a spec, rebuilds the pass there with [`PassSpec::pass`] on the
/// same [`Kernel`] and runs it on the rows it holds; the partial results are the bits the
/// original pass gives on the same rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PassSpec<'a> {
    /// [`MomentsPass`] over `d` input features.
    Moments {
        /// Input features.
        d: usize,
    },
    /// [`ParallelPass`] at the unmixing `w` (`k x k`, row-major).
    Parallel {
        /// Components.
        k: usize,
        /// Unmixing, `k x k`.
        w: &'a [Sum],
        /// The contrast.
        contrast: ContrastKind,
    },
    /// [`DeflationPass`] for the unit vector `w` (`k`).
    Deflation {
        /// Components.
        k: usize,
        /// The row being fitted, `k`.
        w: &'a [Sum],
        /// The contrast.
        contrast: ContrastKind,
    },
    /// [`SourcePass`] at the unmixing `w` (`k x k`).
    Source {
        /// Components.
        k: usize,
        /// Unmixing, `k x k`.
        w: &'a [Sum],
    },
}

impl<'a> PassSpec<'a> {
    /// Which rows the pass runs over: [`Rows::Input`] for the moments, else [`Rows::White`].
    pub fn rows(&self) -> Rows {
        match self {
            PassSpec::Moments { .. } => Rows::Input,
            _ => Rows::White,
        }
    }
    /// The width of its rows: `d` for the moments, else `k`.
    pub fn width(&self) -> usize {
        match *self {
            PassSpec::Moments { d } => d,
            PassSpec::Parallel { k, .. }
            | PassSpec::Deflation { k, .. }
            | PassSpec::Source { k, .. } => k,
        }
    }
    /// The pass this describes, its products on `kernel` (which must be the kernel of the pass
    /// described for the same bits). Checks the sizes as the passes' constructors do.
    pub fn pass<K: Kernel>(self, kernel: K) -> Result<SpecPass<'a, K>> {
        // Check once here, so that the dispatching methods cannot fail on shapes.
        match self {
            PassSpec::Moments { d } => {
                MomentsPass::new(d)?;
            }
            PassSpec::Parallel { k, w, .. } | PassSpec::Source { k, w } => check_len(w, k * k)?,
            PassSpec::Deflation { k, w, .. } => check_len(w, k)?,
        }
        if let PassSpec::Parallel {
            contrast: ContrastKind::LogCosh(c),
            ..
        }
        | PassSpec::Deflation {
            contrast: ContrastKind::LogCosh(c),
            ..
        } = self
        {
            crate::ica::contrast::LogCosh::new(c.alpha())?;
        }
        Ok(SpecPass { spec: self, kernel })
    }
}

/// The pass a [`PassSpec`] describes ([`PassSpec::pass`]): each method builds the described pass
/// and calls it, so its partials are that pass's bits.
#[derive(Clone, Copy, Debug)]
pub struct SpecPass<'a, K> {
    spec: PassSpec<'a>,
    kernel: K,
}

impl<'a, K: Kernel> SpecPass<'a, K> {
    /// The description.
    pub fn spec(&self) -> PassSpec<'a> {
        self.spec
    }
}

/// Evaluates `$body` with `$p` bound to the pass `$self` describes (one arm per kind, so that
/// each is inlined into the caller's code, e.g. the CLI's AVX2 instance).
macro_rules! with_pass {
    ($self:ident, $p:ident => $body:expr) => {
        match $self.spec {
            PassSpec::Moments { d } => {
                let $p = MomentsPass::new(d)?;
                $body
            }
            PassSpec::Parallel { k, w, contrast } => {
                let $p = ParallelPass::new(w, k, &contrast, $self.kernel)?;
                $body
            }
            PassSpec::Deflation { k, w, contrast } => {
                let $p = DeflationPass::new(w, k, &contrast)?;
                $body
            }
            PassSpec::Source { k, w } => {
                let $p = SourcePass::new(w, k, $self.kernel)?;
                $body
            }
        }
    };
}

impl<T: Float, K: Kernel> Pass<T> for SpecPass<'_, K> {
    fn partial_len(&self) -> usize {
        let len = || -> Result<usize> { Ok(with_pass!(self, p => Pass::<T>::partial_len(&p))) };
        // `PassSpec::pass` checked the shapes, so the pass builds.
        len().unwrap_or(0)
    }
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the caller's AVX2 code
    fn accumulate(&self, partial: &mut [Sum], first: u64, rows: &[T]) -> Result<()> {
        with_pass!(self, p => p.accumulate(partial, first, rows))
    }
    fn merge(&self, total: &mut [Sum], next: &[Sum]) -> Result<()> {
        with_pass!(self, p => Pass::<T>::merge(&p, total, next))
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        Some(self.spec)
    }
}

/// Which rows a pass runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// The input samples (`d` wide).
    Input,
    /// The samples as [`Executor::whiten`] left them (`k` wide).
    White,
}

/// Runs passes over the samples of one fit.
pub trait Executor<T: Float> {
    /// Runs `pass` over every row of `rows`, leaving the merged result in `total`
    /// (`pass.partial_len()` values, zeroed by the caller).
    fn pass<P: Pass<T>>(&mut self, rows: Rows, pass: &P, total: &mut [Sum]) -> Result<()>;
    /// Makes [`Rows::White`] the input whitened by `whitener` (`z = W (x - mean)`), or the input
    /// itself when `whitener` is `None`. Called once per fit, before any white pass. With
    /// [`WhitenerView::transform_rows`] the rows are the core's bits; a faster product (the CLI's
    /// GEMM) changes the last bits.
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, T>>) -> Result<()>;
}

/// An [`Executor`] over row-major samples in memory, one pass after the other on this thread.
#[derive(Debug)]
pub struct InMemory<'a, T> {
    x: &'a [T],
    z: &'a mut [T],
    white_is_input: bool,
    k: usize,
}

impl<'a, T: Float> InMemory<'a, T> {
    /// Passes over `x`; `z` receives the whitened rows (`n x k`; may be empty when the fit does
    /// not whiten).
    pub fn new(x: &'a [T], z: &'a mut [T]) -> Self {
        Self {
            x,
            z,
            white_is_input: false,
            k: 0,
        }
    }
}

impl<T: Float> Executor<T> for InMemory<'_, T> {
    fn pass<P: Pass<T>>(&mut self, rows: Rows, pass: &P, total: &mut [Sum]) -> Result<()> {
        let data: &[T] = match rows {
            Rows::Input => self.x,
            Rows::White if self.white_is_input => self.x,
            Rows::White => &self.z[..],
        };
        pass.accumulate(total, 0, data)
    }
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, T>>) -> Result<()> {
        match whitener {
            None => self.white_is_input = true,
            Some(v) => {
                let (d, k) = (v.n_features(), v.n_components());
                let n = crate::moments::check_rows(self.x, d, 0)?;
                let z = prefix_mut(self.z, n * k)?;
                v.transform_rows(self.x, z)?;
                self.k = k;
                self.white_is_input = false;
                let len = n * k;
                // Later passes see exactly the rows written.
                let z = core::mem::take(&mut self.z);
                self.z = &mut z[..len];
            }
        }
        Ok(())
    }
}

/// Row numbers in errors from rows counted from `offset`.
fn renumber(e: Error, offset: u64) -> Error {
    match e {
        Error::NonFinite { row, col } => Error::NonFinite {
            row: row.wrapping_add(offset),
            col,
        },
        other => other,
    }
}

/// Splits a partial into its row count (stored as a [`Sum`], exact below 2^53 in `f64`, 2^24 in
/// `f32`) and the rest.
fn split_rows(partial: &mut [Sum]) -> Result<(u64, &mut [Sum])> {
    let (head, rest) = partial.split_first_mut().ok_or(Error::BufferTooSmall {
        needed: 1,
        found: 0,
    })?;
    Ok((*head as u64, rest))
}

/// Stores a partial's row count in its first element: exact in [`Sum`] below `2^53` rows (`f64`)
/// or `2^24` (`f32`, the `f32-sums` feature); beyond that it is [`Error::Overflow`].
fn store_rows(partial: &mut [Sum], n: u64) -> Result<()> {
    let v = n as Sum;
    if v as u64 != n {
        return Err(Error::Overflow);
    }
    partial[0] = v;
    Ok(())
}

/// The mean and centred sum of products of the input rows: each [`CHUNK`] of rows is summarised
/// alone and merged in order (Chan's update), so every split into whole chunks gives the same
/// bits. A chunk cut into several calls is summarised piece by piece, which changes the last
/// bits ([`Pass`] says which splits a pass allows).
#[derive(Clone, Copy, Debug)]
pub struct MomentsPass {
    d: usize,
}

impl MomentsPass {
    /// Moments of `d` features.
    pub fn new(d: usize) -> Result<Self> {
        if d == 0 {
            return Err(Error::InvalidParameter(
                "number of features must be at least 1",
            ));
        }
        Ok(Self { d })
    }
    /// [`Pass::partial_len`] for `d` features.
    pub const fn partial_len_for(d: usize) -> usize {
        1 + 2 * MomentsBuf::buffer_len(d)
    }
    /// The moments in a finished total.
    pub fn view<'a>(&self, total: &'a [Sum]) -> Result<MomentsRef<'a>> {
        let d = self.d;
        let total = crate::error::prefix(total, Self::partial_len_for(d))?;
        MomentsRef::from_parts(
            total[0] as u64,
            d,
            &total[1..1 + d],
            &total[1 + d..1 + d + d * d],
        )
    }
}

impl<T: Float> Pass<T> for MomentsPass {
    fn partial_len(&self) -> usize {
        Self::partial_len_for(self.d)
    }
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    fn accumulate(&self, partial: &mut [Sum], first: u64, rows: &[T]) -> Result<()> {
        let d = self.d;
        let partial = prefix_mut(partial, Self::partial_len_for(d))?;
        let (n, rest) = split_rows(partial)?;
        let (acc, scratch) = rest.split_at_mut(MomentsBuf::buffer_len(d));
        let mut acc = MomentsBuf::resume(d, acc, n)?;
        for (i, chunk) in rows.chunks(CHUNK * d).enumerate() {
            let mut m = MomentsBuf::new(d, scratch)?;
            m.accumulate(chunk)
                .map_err(|e| renumber(e, first + (i * CHUNK) as u64))?;
            acc.merge(m.as_ref())?;
        }
        let rows = acc.as_ref().n_samples();
        store_rows(partial, rows)?;
        Ok(())
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        Some(PassSpec::Moments { d: self.d })
    }
    fn merge(&self, total: &mut [Sum], next: &[Sum]) -> Result<()> {
        let next = self.view(next)?;
        let d = self.d;
        let total = prefix_mut(total, Self::partial_len_for(d))?;
        let (n, rest) = split_rows(total)?;
        let mut acc = MomentsBuf::resume(d, &mut rest[..MomentsBuf::buffer_len(d)], n)?;
        acc.merge(next)?;
        let rows = acc.as_ref().n_samples();
        store_rows(total, rows)?;
        Ok(())
    }
}

/// One parallel-FastICA pass at unmixing `w` ([`ParallelStats`]: `sum g(W z) z'` and
/// `sum g'(W z)`), its products on kernel `K`.
#[derive(Clone, Copy, Debug)]
pub struct ParallelPass<'a, C, K> {
    w: &'a [Sum],
    k: usize,
    contrast: &'a C,
    kernel: K,
}

impl<'a, C: Contrast, K: Kernel> ParallelPass<'a, C, K> {
    /// The pass at `w` (`k x k`).
    pub fn new(w: &'a [Sum], k: usize, contrast: &'a C, kernel: K) -> Result<Self> {
        check_len(w, k * k)?;
        Ok(Self {
            w,
            k,
            contrast,
            kernel,
        })
    }
    /// [`Pass::partial_len`] for `k` components on the portable kernel.
    pub const fn partial_len_for(k: usize) -> usize {
        1 + ParallelStats::buffer_len(k)
    }
    /// [`Pass::partial_len`] for `k` components on `kernel`.
    pub fn partial_len_with(k: usize, kernel: K) -> usize {
        1 + ParallelStats::buffer_len_with(k, kernel)
    }
    /// `G` (`k x k`) then `b` (`k`) of a finished total into `out`; returns the row count.
    pub fn finish(&self, total: &mut [Sum], out: &mut [Sum]) -> Result<u64> {
        let (n, rest) = split_rows(total)?;
        let mut s = ParallelStats::resume(self.k, rest, n, self.kernel)?;
        s.finish(self.contrast, prefix_mut(out, self.k * self.k + self.k)?)
    }
}

/// Adds to a [`ParallelPass`]'s `partial` the sums of `rows` further rows that an executor
/// computed by its own arithmetic: `g` is `G = sum g(W z) z'` (`k x k`, row-major) and `b` is
/// `b = sum g'(W z)` (`k`), as [`ParallelPass::finish`] returns them, in either float type,
/// each value widened to [`Sum`] as it is added (no copy). The CLI does this for the blocks of
/// its pass, whose products run in the data's type; the partial then carries that
/// arithmetic's bits, and merges and finishes like any other.
#[inline]
pub fn add_parallel_sums<S: Float>(
    partial: &mut [Sum],
    k: usize,
    rows: u64,
    g: &[S],
    b: &[S],
) -> Result<()> {
    let (g, b) = (crate::error::prefix(g, k * k)?, crate::error::prefix(b, k)?);
    let (n, rest) = split_rows(partial)?;
    // The partial's `Sums` total: `finish` adds it to the in-chunk sums, which stay untouched.
    let (total_g, total_b) = prefix_mut(rest, k * k + k)?.split_at_mut(k * k);
    for (t, s) in total_g.iter_mut().zip(g) {
        *t += s.to_sum();
    }
    for (t, s) in total_b.iter_mut().zip(b) {
        *t += s.to_sum();
    }
    store_rows(partial, n.checked_add(rows).ok_or(Error::Overflow)?)
}

fn check_len(w: &[Sum], len: usize) -> Result<()> {
    if w.len() != len {
        return Err(Error::DimensionMismatch {
            expected: len,
            found: w.len(),
        });
    }
    Ok(())
}

impl<T: Float, C: Contrast, K: Kernel> Pass<T> for ParallelPass<'_, C, K> {
    fn partial_len(&self) -> usize {
        Self::partial_len_with(self.k, self.kernel)
    }
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    fn accumulate(&self, partial: &mut [Sum], first: u64, rows: &[T]) -> Result<()> {
        let (n, rest) = split_rows(partial)?;
        let mut s = ParallelStats::resume(self.k, rest, n, self.kernel)?;
        s.accumulate(self.w, rows, self.contrast)
            .map_err(|e| renumber(e, first.wrapping_sub(n)))?;
        s.flush(self.contrast);
        let rows = s.rows();
        store_rows(partial, rows)?;
        Ok(())
    }
    fn merge(&self, total: &mut [Sum], next: &[Sum]) -> Result<()> {
        merge_sums(total, next, self.k * self.k + self.k)
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        Some(PassSpec::Parallel {
            k: self.k,
            w: self.w,
            contrast: self.contrast.kind()?,
        })
    }
}

/// Merges partials laid out as `[rows | Sums (total, partial) of len | ...]`: the same
/// additions as the statistics' own `merge`.
fn merge_sums(total: &mut [Sum], next: &[Sum], len: usize) -> Result<()> {
    let total = prefix_mut(total, 1 + 2 * len)?;
    let next = crate::error::prefix(next, 1 + 2 * len)?;
    for (t, n) in total.iter_mut().zip(next) {
        *t += *n;
    }
    Ok(())
}

/// One deflation pass for the unit vector `w` ([`DeflationStats`]: `sum z g(w'z)` and
/// `sum g'(w'z)`).
#[derive(Clone, Copy, Debug)]
pub struct DeflationPass<'a, C> {
    w: &'a [Sum],
    k: usize,
    contrast: &'a C,
}

impl<'a, C: Contrast> DeflationPass<'a, C> {
    /// The pass for `w` (`k`).
    pub fn new(w: &'a [Sum], k: usize, contrast: &'a C) -> Result<Self> {
        check_len(w, k)?;
        Ok(Self { w, k, contrast })
    }
    /// [`Pass::partial_len`] for `k` components.
    pub const fn partial_len_for(k: usize) -> usize {
        1 + DeflationStats::buffer_len(k)
    }
    /// `s` (`k`) then `b` of a finished total into `out`; returns the row count.
    pub fn finish(&self, total: &mut [Sum], out: &mut [Sum]) -> Result<u64> {
        let (n, rest) = split_rows(total)?;
        DeflationStats::resume(self.k, rest, n)?.finish(prefix_mut(out, self.k + 1)?)
    }
}

impl<T: Float, C: Contrast> Pass<T> for DeflationPass<'_, C> {
    fn partial_len(&self) -> usize {
        Self::partial_len_for(self.k)
    }
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    fn accumulate(&self, partial: &mut [Sum], first: u64, rows: &[T]) -> Result<()> {
        let (n, rest) = split_rows(partial)?;
        let mut s = DeflationStats::resume(self.k, rest, n)?;
        s.accumulate(self.w, rows, self.contrast)
            .map_err(|e| renumber(e, first.wrapping_sub(n)))?;
        let rows = s.rows();
        store_rows(partial, rows)?;
        Ok(())
    }
    fn merge(&self, total: &mut [Sum], next: &[Sum]) -> Result<()> {
        merge_sums(total, next, self.k + 1)
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        Some(PassSpec::Deflation {
            k: self.k,
            w: self.w,
            contrast: self.contrast.kind()?,
        })
    }
}

/// Power sums of the sources `y = W z` ([`SourceStats`]), unmixed on kernel `K`.
#[derive(Clone, Copy, Debug)]
pub struct SourcePass<'a, K> {
    w: &'a [Sum],
    k: usize,
    kernel: K,
}

impl<'a, K: Kernel> SourcePass<'a, K> {
    /// The pass at `w` (`k x k`).
    pub fn new(w: &'a [Sum], k: usize, kernel: K) -> Result<Self> {
        check_len(w, k * k)?;
        Ok(Self { w, k, kernel })
    }
    /// [`Pass::partial_len`] for `k` components on `kernel`.
    pub fn partial_len_with(k: usize, kernel: K) -> usize {
        1 + SourceStats::buffer_len_with(k, kernel)
    }
    /// `sum y, y^2, y^3, y^4` per source (`4k`) of a finished total into `out`; returns the row
    /// count.
    pub fn finish(&self, total: &mut [Sum], out: &mut [Sum]) -> Result<u64> {
        let (n, rest) = split_rows(total)?;
        SourceStats::resume(self.k, rest, n, self.kernel)?.finish(prefix_mut(out, 4 * self.k)?)
    }
}

impl<T: Float, K: Kernel> Pass<T> for SourcePass<'_, K> {
    fn partial_len(&self) -> usize {
        Self::partial_len_with(self.k, self.kernel)
    }
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    fn accumulate(&self, partial: &mut [Sum], first: u64, rows: &[T]) -> Result<()> {
        let (n, rest) = split_rows(partial)?;
        let mut s = SourceStats::resume(self.k, rest, n, self.kernel)?;
        s.accumulate(self.w, rows)
            .map_err(|e| renumber(e, first.wrapping_sub(n)))?;
        let rows = s.rows();
        store_rows(partial, rows)?;
        Ok(())
    }
    fn merge(&self, total: &mut [Sum], next: &[Sum]) -> Result<()> {
        merge_sums(total, next, 4 * self.k)
    }
    fn spec(&self) -> Option<PassSpec<'_>> {
        Some(PassSpec::Source {
            k: self.k,
            w: self.w,
        })
    }
}

pub(crate) fn rows_at_least_two(n: u64) -> Result<u64> {
    if n < 2 {
        return Err(Error::TooFewSamples { n, needed: 2 });
    }
    Ok(n)
}

/// [`Sum`] workspace [`unmix`] needs for `k` components on the portable kernel.
pub(crate) const fn unmix_workspace_len(k: usize) -> usize {
    unmix_workspace_len_for(k, ParallelStats::buffer_len(k))
}

/// [`Sum`] workspace [`unmix`] needs for `k` components on `kernel`.
pub(crate) fn unmix_workspace_len_with<K: Kernel>(k: usize, kernel: K) -> usize {
    unmix_workspace_len_for(k, ParallelStats::buffer_len_with(k, kernel))
}

pub(crate) const fn unmix_workspace_len_for(k: usize, parallel_stats: usize) -> usize {
    let p = 1 + parallel_stats;
    let d = 1 + DeflationStats::buffer_len(k);
    let stats = if p > d { p } else { d };
    stats + (k * k + k) + k * k + update::sym_workspace_len(k)
}

/// Runs FastICA's iterations over the white rows of `exec` (`k` components), from the start `w`
/// (`k x k`, row-major; checked: finite and not singular), leaving the unmixing in `w`.
/// `on_iteration(iteration, change)` is called after each step (deflation: with the row's step).
#[allow(clippy::too_many_arguments)]
pub(crate) fn unmix<T: Float, E: Executor<T>, C: Contrast, K: Kernel>(
    exec: &mut E,
    kernel: K,
    k: usize,
    contrast: &C,
    opts: &IcaOptions,
    w: &mut [Sum],
    ws: &mut [Sum],
    on_iteration: &mut dyn FnMut(usize, Sum),
) -> Result<IcaInfo> {
    opts.check()?;
    if k == 0 {
        return Err(Error::InvalidComponents { k, d: 0 });
    }
    let len = unmix_workspace_len_with(k, kernel);
    let ws = prefix_mut(ws, len)?;
    let stats_len = len - (k * k + k) - k * k - update::sym_workspace_len(k);
    let (total, rest) = ws.split_at_mut(stats_len);
    let (sums, step_ws) = rest.split_at_mut(k * k + k);
    update::check_start(w, k, step_ws)?;
    let w = &mut w[..k * k];
    let mut info = IcaInfo::default();
    match opts.algorithm {
        Algorithm::Parallel => {
            update::sym_decorrelation_with(w, k, step_ws, kernel)?;
            for it in 1..=opts.max_iter {
                let pass = ParallelPass::new(w, k, contrast, kernel)?;
                let total = &mut total[..ParallelPass::<C, K>::partial_len_with(k, kernel)];
                total.fill(0.0);
                exec.pass(Rows::White, &pass, total)?;
                let n = rows_at_least_two(pass.finish(total, sums)?)?;
                let change = update::parallel_step_with(w, sums, n, k, step_ws, kernel)?;
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
            for j in 0..k {
                let row = &mut w[j * k..(j + 1) * k];
                let norm = smath::sqrt(crate::linalg::dot(row, row));
                for x in row.iter_mut() {
                    *x /= norm;
                }
                let (mut change, mut iterations) = (Sum::INFINITY, 0);
                for it in 1..=opts.max_iter {
                    let pass = DeflationPass::new(&w[j * k..(j + 1) * k], k, contrast)?;
                    let total = &mut total[..DeflationPass::<C>::partial_len_for(k)];
                    total.fill(0.0);
                    exec.pass(Rows::White, &pass, total)?;
                    let n = rows_at_least_two(pass.finish(total, &mut sums[..k + 1])?)?;
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
