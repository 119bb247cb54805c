//! The fitted model (typed [`FastIca`], caller-buffer [`FastIcaBuf`], both viewed as
//! [`FastIcaView`]) and the one fit behind both.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};
use crate::ica::canonical::{canonicalize, source_moments, source_moments_workspace_len};
use crate::ica::driver::{
    self, Executor, InMemory, MomentsPass, Rows, unmix_workspace_len, unmix_workspace_len_with,
};
use crate::ica::kernel::{Kernel, Portable};
use crate::ica::options::{FastIcaOptions, IcaInfo, WInit, WhitenMode, start_matrix};
use crate::ica::stats::SourceStats;
use crate::linalg;
use crate::moments::check_rows;
use crate::whiten::{self, FitInfo, Whitener, WhitenerView};

/// `T` storage elements of a FastICA model `d -> k`.
///
/// Layout: a whitener ([`whiten::storage_len`]: mean | whitening | unwhitening | explained
/// variance) | unmixing (`k x k`) | components (`k x d`) | mixing (`d x k`), all row-major.
pub const fn model_len(d: usize, k: usize) -> usize {
    whiten::storage_len(d, k) + k * k + 2 * k * d
}

/// [`Sum`] workspace a fit of `d -> k` on the portable kernel needs ([`FastIca::fit`],
/// [`FastIcaBuf::fit`]).
pub const fn fit_workspace_len(d: usize, k: usize) -> usize {
    fit_workspace_len_for(
        d,
        k,
        unmix_workspace_len(k),
        1 + SourceStats::buffer_len(k) + 4 * k,
    )
}

/// [`Sum`] workspace a fit of `d -> k` on `kernel` needs ([`FastIcaBuf::fit_with`]).
pub fn fit_workspace_len_with<K: Kernel>(d: usize, k: usize, kernel: K) -> usize {
    fit_workspace_len_for(
        d,
        k,
        unmix_workspace_len_with(k, kernel),
        source_moments_workspace_len(k, kernel),
    )
}

const fn fit_workspace_len_for(d: usize, k: usize, unmix: usize, sources: usize) -> usize {
    let a = MomentsPass::partial_len_for(d) + whiten::workspace_len(d, k);
    let b = unmix;
    let c = sources;
    let max = if a > b { a } else { b };
    let max = if max > c { max } else { c };
    max + k * k + 3 * k
}

/// [`Sum`] workspace [`FastIca::fit_white`] needs for `k` components: the start and the sources'
/// scales (`k^2 + 3k`), and the larger of the iterations' and the source pass's needs.
pub const fn white_fit_workspace_len(k: usize) -> usize {
    white_fit_workspace_len_for(
        k,
        unmix_workspace_len(k),
        1 + SourceStats::buffer_len(k) + 4 * k,
    )
}

/// [`Sum`] workspace [`FastIca::fit_white`] needs for `k` components on `kernel`.
pub fn white_fit_workspace_len_with<K: Kernel>(k: usize, kernel: K) -> usize {
    white_fit_workspace_len_for(
        k,
        unmix_workspace_len_with(k, kernel),
        source_moments_workspace_len(k, kernel),
    )
}

/// [`Sum`] workspace [`FastIca::fit_white`] needs for `k` components on
/// [`PortableRows`](crate::ica::PortableRows)`<rows>` (at `rows` = 64, on [`Portable`] too):
/// `1 + 9k^2 + 8k + (2k + 1) rows`, the start and the sources' scales, the parallel pass's
/// partial (`(2k + 1) rows` of it its block of rows held feature-major) and the update's
/// decorrelation. [`FastIcaWorkspace`](crate::ica::FastIcaWorkspace) holds as much.
pub const fn white_fit_workspace_len_rows(k: usize, rows: usize) -> usize {
    white_fit_workspace_len_for(
        k,
        driver::unmix_workspace_len_for(k, crate::ica::stats::parallel_buffer_len_for(k, rows)),
        1 + crate::ica::stats::source_buffer_len_for(k, rows) + 4 * k,
    )
}

const fn white_fit_workspace_len_for(k: usize, unmix: usize, sources: usize) -> usize {
    (if unmix > sources { unmix } else { sources }) + k * k + 3 * k
}

/// `T` scratch an in-memory fit of `n` samples `d -> k` needs ([`FastIca::fit`],
/// [`FastIcaBuf::fit`]): the whitened samples (`n x k`) and the model being fitted, which is
/// copied into place only on success.
pub const fn fit_scratch_len(n: usize, d: usize, k: usize) -> usize {
    n * k + model_len(d, k)
}

/// Mutable storage of a model, whoever owns it.
pub(crate) struct ModelParts<'a, T> {
    mean: &'a mut [T],
    whitening: &'a mut [T],
    unwhitening: &'a mut [T],
    explained_variance: &'a mut [T],
    unmixing: &'a mut [T],
    components: &'a mut [T],
    mixing: &'a mut [T],
}

impl<'a, T: Float> ModelParts<'a, T> {
    /// Splits a flat [`model_len`] buffer.
    fn split(d: usize, k: usize, storage: &'a mut [T]) -> Result<Self> {
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
            FitInfo::default(),
        )
    }
    /// Copies a model laid out as [`model_len`] into these parts.
    fn copy_from(self, flat: &[T]) {
        let mut rest = flat;
        for part in [
            self.mean,
            self.whitening,
            self.unwhitening,
            self.explained_variance,
            self.unmixing,
            self.components,
            self.mixing,
        ] {
            let (head, tail) = rest.split_at(part.len());
            part.copy_from_slice(head);
            rest = tail;
        }
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
        Self::with_whitening_info(d, k, storage, info, FitInfo::default())
    }
    fn with_whitening_info(
        d: usize,
        k: usize,
        storage: &'a [T],
        info: IcaInfo,
        whitening: FitInfo,
    ) -> Result<Self> {
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
        let w = WhitenerView::from_parts(d, k, wpart)?;
        let whitener = WhitenerView::from_slices(
            d,
            k,
            w.mean(),
            w.whitening(),
            w.unwhitening(),
            w.explained_variance(),
            whitening,
        );
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
    /// The whitening step (mean, whitening, unwhitening, explained variance). After a fit its
    /// [`info`](WhitenerView::info) gives the effective rank (`d` with [`WhitenMode::None`]).
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

/// The one fit: moments, whitening, iterations, sources' moments, all through `exec`, into
/// `staging` (a [`model_len`] model) only; the caller's model is written by the caller on
/// success. Returns how the iterations ended and the whitening's fit information.
#[allow(clippy::too_many_arguments)]
fn fit_model<T: Float, E: Executor<T>, K: Kernel>(
    exec: &mut E,
    kernel: K,
    d: usize,
    k: usize,
    opts: &FastIcaOptions,
    init: WInit<'_>,
    staging: &mut [T],
    ws: &mut [Sum],
    on_iteration: &mut dyn FnMut(usize, Sum),
) -> Result<(IcaInfo, FitInfo)> {
    opts.check(d, k)?;
    let ws = prefix_mut(ws, fit_workspace_len_with(d, k, kernel))?;
    let (w, rest) = ws.split_at_mut(k * k);
    let (moments3, ws) = rest.split_at_mut(3 * k);
    start_matrix(init, k, w)?;
    let mut model = ModelParts::split(d, k, staging)?;
    let (whitening, n) = if opts.whiten == WhitenMode::None {
        exec.whiten(None)?;
        let identity = FitInfo {
            effective_rank: d,
            ..FitInfo::default()
        };
        (identity, 0)
    } else {
        let pass = MomentsPass::new(d)?;
        let (total, wws) = ws.split_at_mut(MomentsPass::partial_len_for(d));
        total.fill(0.0);
        exec.pass(Rows::Input, &pass, total)?;
        let info = whiten::fit_into_parts(
            pass.view(total)?,
            &opts.pca_options(),
            d,
            k,
            model.whitener_parts(),
            wws,
            kernel,
        )?;
        exec.whiten(Some(&model.whitener_view(d, k)))?;
        (info, info.n_samples)
    };
    let info = iterate_and_finish(
        exec,
        kernel,
        d,
        k,
        opts,
        w,
        moments3,
        ws,
        n,
        model,
        on_iteration,
    )?;
    Ok((info, whitening))
}

/// The streaming fit: `whitener` was fitted elsewhere (from moments accumulated one sample at a
/// time, say) on the `n_samples` rows `exec` holds; the rest is [`fit_model`]'s.
#[allow(clippy::too_many_arguments)]
fn fit_model_white<T: Float, E: Executor<T>, K: Kernel>(
    exec: &mut E,
    kernel: K,
    whitener: &WhitenerView<'_, T>,
    opts: &FastIcaOptions,
    init: WInit<'_>,
    staging: &mut [T],
    ws: &mut [Sum],
    on_iteration: &mut dyn FnMut(usize, Sum),
) -> Result<IcaInfo> {
    let (d, k) = (whitener.n_features(), whitener.n_components());
    opts.check(d, k)?;
    if opts.whiten == WhitenMode::None {
        return Err(Error::InvalidParameter(
            "fit_white needs a whitening mode other than None",
        ));
    }
    let ws = prefix_mut(ws, white_fit_workspace_len_with(k, kernel))?;
    let (w, rest) = ws.split_at_mut(k * k);
    let (moments3, ws) = rest.split_at_mut(3 * k);
    start_matrix(init, k, w)?;
    let mut model = ModelParts::split(d, k, staging)?;
    let parts = model.whitener_parts();
    for (to, from) in [
        (parts.mean, whitener.mean()),
        (parts.whitening, whitener.whitening()),
        (parts.unwhitening, whitener.unwhitening()),
        (parts.explained_variance, whitener.explained_variance()),
    ] {
        to.copy_from_slice(from);
    }
    exec.whiten(Some(whitener))?;
    let n = whitener.info().n_samples;
    iterate_and_finish(
        exec,
        kernel,
        d,
        k,
        opts,
        w,
        moments3,
        ws,
        n,
        model,
        on_iteration,
    )
}

/// The iterations over the white rows, then [`finish_model`].
#[allow(clippy::too_many_arguments)]
fn iterate_and_finish<T: Float, E: Executor<T>, K: Kernel>(
    exec: &mut E,
    kernel: K,
    d: usize,
    k: usize,
    opts: &FastIcaOptions,
    w: &mut [Sum],
    moments3: &mut [Sum],
    ws: &mut [Sum],
    n: u64,
    model: ModelParts<'_, T>,
    on_iteration: &mut dyn FnMut(usize, Sum),
) -> Result<IcaInfo> {
    let info = driver::unmix(
        exec,
        kernel,
        k,
        &opts.contrast,
        &opts.ica,
        w,
        ws,
        on_iteration,
    )?;
    finish_model(exec, kernel, d, k, opts, w, moments3, ws, n, model)?;
    Ok(info)
}

/// After the iterations: the source pass (if needed), the canonical form, the scale of the
/// sources, and the model's unmixing, components and mixing. The model's whitener parts hold the
/// fitted whitener, or are set here to the identity for [`WhitenMode::None`].
#[allow(clippy::too_many_arguments)]
fn finish_model<T: Float, E: Executor<T>, K: Kernel>(
    exec: &mut E,
    kernel: K,
    d: usize,
    k: usize,
    opts: &FastIcaOptions,
    w: &mut [Sum],
    moments3: &mut [Sum],
    ws: &mut [Sum],
    n: u64,
    mut model: ModelParts<'_, T>,
) -> Result<()> {
    let moments3 = prefix_mut(moments3, 3 * k)?;
    if opts.whiten == WhitenMode::UnitVariance || opts.canonical {
        source_moments(exec, kernel, w, k, ws, moments3)?;
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
            WhitenMode::ArbitraryVariance => 1.0 / smath::sqrt(n as Sum),
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
            *u = T::from_sum(scale[i] * wr[j]);
        }
        for j in 0..d {
            let v: Sum = wr
                .iter()
                .enumerate()
                .map(|(l, a)| a * whitening[l * d + j].to_sum())
                .sum();
            components[i * d + j] = T::from_sum(scale[i] * v);
        }
    }
    // mixing = unwhitening W' diag(1 / c), the pseudo-inverse of diag(c) W whitening (W orthogonal).
    for r in 0..d {
        let ur = &unwhitening[r * k..(r + 1) * k];
        for i in 0..k {
            let v: Sum = ur
                .iter()
                .zip(&w[i * k..(i + 1) * k])
                .map(|(a, b)| a.to_sum() * b)
                .sum();
            mixing[r * k + i] = T::from_sum(v / scale[i]);
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

/// Splits an in-memory fit's scratch into the whitened rows (`n x k`) and the staging model.
fn split_scratch<'s, T: Float>(
    x: &[T],
    d: usize,
    k: usize,
    scratch: &'s mut [T],
) -> Result<(&'s mut [T], &'s mut [T])> {
    let n = check_rows(x, d, 0)?;
    let scratch = prefix_mut(scratch, fit_scratch_len(n, d, k))?;
    Ok(scratch.split_at_mut(n * k))
}

/// A FastICA model `D -> K` with its storage inside (usable in a `static`).
///
/// ```
/// use unmix::ica::{FastIca, FastIcaOptions, WInit, fit_scratch_len, fit_workspace_len};
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
/// let mut scratch = [0.0; fit_scratch_len(2000, 2, 2)];
/// let mut ws = [0.0; fit_workspace_len(2, 2)];
/// let info = model.fit(&x, &FastIcaOptions::DEFAULT, WInit::Seed(0), &mut scratch, &mut ws)?;
/// assert!(info.converged);
/// // Each source is one of the signals, up to sign.
/// let mut s = [0.0; 4000];
/// model.view().transform_rows(&x, &mut s)?;
/// let square = (0..n).map(|t| s[2 * t].abs()).fold(0.0f64, |a, b| a.max((b - 1.0).abs()));
/// let other = (0..n).map(|t| s[2 * t + 1].abs()).fold(0.0f64, |a, b| a.max((b - 1.0).abs()));
/// assert!(square.min(other) < 0.05, "one source is the square wave");
/// # Ok::<(), unmix::Error>(())
/// ```
///
/// In a `static` on a microcontroller, without `static mut`: a `critical-section` mutex (here
/// with its `std` implementation; on a Cortex-M, `cortex-m`'s `critical-section-single-core`).
/// `firmware/` in the repository does this on a Cortex-M4F with the streaming
/// [`fit_white`](Self::fit_white).
///
/// ```
/// use core::cell::RefCell;
/// use critical_section::Mutex;
/// use unmix::ica::{FastIca, FastIcaOptions, WInit, fit_scratch_len, fit_workspace_len};
///
/// static MODEL: Mutex<RefCell<FastIca<f32, 4, 4>>> = Mutex::new(RefCell::new(FastIca::new()));
///
/// // Four independent non-Gaussian signals through a fixed mixing.
/// let mut x = [0.0f32; 4 * 500];
/// let mut state = 7u32;
/// for row in x.chunks_exact_mut(4) {
///     let mut s = [0.0f32; 4];
///     for v in s.iter_mut() {
///         state ^= state << 13; state ^= state >> 17; state ^= state << 5;
///         *v = (state >> 8) as f32 / 16_777_216.0 - 0.5; // uniform
///     }
///     row.copy_from_slice(&[s[0] + 0.5 * s[1], s[1] - s[2], s[2] + 0.3 * s[3], s[3] - s[0]]);
/// }
/// let mut scratch = [0.0f32; fit_scratch_len(500, 4, 4)];
/// let mut ws = [0.0f64; fit_workspace_len(4, 4)];
/// let info = critical_section::with(|cs| {
///     let opts = FastIcaOptions::DEFAULT;
///     MODEL.borrow_ref_mut(cs).fit(&x, &opts, WInit::Seed(1), &mut scratch, &mut ws)
/// })?;
/// assert!(info.converged);
/// // Anywhere else (an interrupt handler, say): transform one sample.
/// let mut s = [0.0f32; 4];
/// critical_section::with(|cs| MODEL.borrow_ref(cs).transform(&[0.1, 0.2, 0.3, 0.4], &mut s))?;
/// assert!(s.iter().all(|v| v.is_finite()));
/// # Ok::<(), unmix::Error>(())
/// ```
///
/// # Memory
/// Every buffer is the caller's; sizes in bytes on a 32-bit target (Cortex-M), at `D = K = 4`
/// with `T = f32`, for [`Sum`] = `f64` (default) / `f32` (the `f32-sums` feature):
///
/// | what | formula | `D = K = 4` |
/// |---|---|---|
/// | the model, `FastIca<T, D, K>` | `size_of::<T>() (D + 4KD + K + K^2)` + [`IcaInfo`] + the whitener's [`FitInfo`], padded | 392 / 384 |
/// | [`fit_white`](Self::fit_white)'s staging model | `size_of::<T>()` [`model_len`]`(D, K)` = `size_of::<T>() (D + 4KD + K + K^2)` | 352 |
/// | [`fit_white`](Self::fit_white)'s workspace, [`FastIcaWorkspace`](crate::ica::FastIcaWorkspace)`<D, K, ROWS>` | `size_of::<Sum>()` [`white_fit_workspace_len_rows`]`(K, ROWS)` = `size_of::<Sum>() (1 + 9K^2 + 8K + (2K + 1) ROWS)` | 6024 / 3012 at `ROWS` = 64; 2568 / 1284 at 16 |
/// | [`fit`](Self::fit)'s scratch (whitened rows, staging model) | `size_of::<T>()` [`fit_scratch_len`]`(n, D, K)` = `size_of::<T>() (nK + model_len(D, K))` | `16 n + 352` |
/// | [`fit`](Self::fit)'s workspace | `size_of::<Sum>()` [`fit_workspace_len`]`(D, K)` | 6024 / 3012 |
///
/// Besides: the [`Moments`](crate::moments::Moments) a streaming fit accumulates, the
/// [`Whitener`] and its [`WhitenWorkspace`](crate::whiten::WhitenWorkspace) (each documents its
/// size), and the samples. Most of the FastICA workspace is the parallel pass's block of `ROWS`
/// rows held feature-major (`(2K + 1) ROWS` values), which lets the pass vectorise on a host;
/// firmware short of RAM takes a smaller block with [`PortableRows`](crate::ica::PortableRows)
/// (through [`FastIcaWorkspace::kernel`](crate::ica::FastIcaWorkspace::kernel)) at the cost of a
/// few percent more instructions and different last bits. `firmware/` in the repository measures
/// all of it on a Cortex-M4F.
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
    /// Unfitted (all zeros). `1 <= K <= D` is checked at compile time:
    ///
    /// ```compile_fail
    /// let m = unmix::ica::FastIca::<f64, 3, 4>::new(); // K > D: does not compile
    /// ```
    pub const fn new() -> Self {
        const { assert!(K >= 1 && K <= D, "FastICA needs 1 <= K <= D") };
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
    /// Fits on row-major samples `x` (`n x D`) in memory, on the portable kernel. `scratch`
    /// needs [`fit_scratch_len`]`(n, D, K)` elements and `ws` [`fit_workspace_len`]`(D, K)`.
    /// On error the model is unchanged.
    pub fn fit(
        &mut self,
        x: &[T],
        opts: &FastIcaOptions,
        init: WInit<'_>,
        scratch: &mut [T],
        ws: &mut [Sum],
    ) -> Result<IcaInfo> {
        let (z, staging) = split_scratch(x, D, K, scratch)?;
        let mut exec = InMemory::new(x, z);
        self.fit_with(&mut exec, Portable, opts, init, staging, ws, &mut |_, _| {})
    }
    /// Fits on the samples `exec` passes over, with the dense products on `kernel`. `staging`
    /// needs [`model_len`]`(D, K)` elements and `ws` [`fit_workspace_len_with`]`(D, K, kernel)`;
    /// `on_iteration(iteration, change)` is called after each step. On error the model is
    /// unchanged.
    #[allow(clippy::too_many_arguments)]
    pub fn fit_with<E: Executor<T>, Kn: Kernel>(
        &mut self,
        exec: &mut E,
        kernel: Kn,
        opts: &FastIcaOptions,
        init: WInit<'_>,
        staging: &mut [T],
        ws: &mut [Sum],
        on_iteration: &mut dyn FnMut(usize, Sum),
    ) -> Result<IcaInfo> {
        let staging = prefix_mut(staging, model_len(D, K))?;
        let (info, whitening) =
            fit_model(exec, kernel, D, K, opts, init, staging, ws, on_iteration)?;
        let w = &mut self.whitener;
        ModelParts {
            mean: &mut w.mean,
            whitening: w.whitening.as_flattened_mut(),
            unwhitening: w.unwhitening.as_flattened_mut(),
            explained_variance: &mut w.explained_variance,
            unmixing: self.unmixing.as_flattened_mut(),
            components: self.components.as_flattened_mut(),
            mixing: self.mixing.as_flattened_mut(),
        }
        .copy_from(staging);
        w.info = whitening;
        self.info = info;
        Ok(info)
    }
    /// The streaming fit: `whitener` was fitted from [`Moments`](crate::moments::Moments)
    /// accumulated one sample at a time, on the samples `exec` holds; `exec` whitens them (in
    /// place, say, when `D = K`) and runs the iterations and the source pass over them, so no
    /// `n x K` buffer is needed besides the samples. The model takes the whitener as it is.
    /// [`WhitenMode::None`] is [`Error::InvalidParameter`]. `staging` needs
    /// [`model_len`]`(D, K)` elements and `ws` [`white_fit_workspace_len`]`(K)` (or a
    /// [`FastIcaWorkspace`](crate::ica::FastIcaWorkspace)'s [`as_mut_slice`](crate::ica::FastIcaWorkspace::as_mut_slice)
    /// with its [`kernel`](crate::ica::FastIcaWorkspace::kernel)). On error the model is unchanged.
    #[allow(clippy::too_many_arguments)]
    pub fn fit_white<E: Executor<T>, Kn: Kernel>(
        &mut self,
        whitener: &Whitener<T, D, K>,
        exec: &mut E,
        kernel: Kn,
        opts: &FastIcaOptions,
        init: WInit<'_>,
        staging: &mut [T],
        ws: &mut [Sum],
    ) -> Result<IcaInfo> {
        let staging = prefix_mut(staging, model_len(D, K))?;
        let view = whitener.view();
        let info = fit_model_white(exec, kernel, &view, opts, init, staging, ws, &mut |_, _| {})?;
        let w = &mut self.whitener;
        ModelParts {
            mean: &mut w.mean,
            whitening: w.whitening.as_flattened_mut(),
            unwhitening: w.unwhitening.as_flattened_mut(),
            explained_variance: &mut w.explained_variance,
            unmixing: self.unmixing.as_flattened_mut(),
            components: self.components.as_flattened_mut(),
            mixing: self.mixing.as_flattened_mut(),
        }
        .copy_from(staging);
        w.info = view.info();
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
    whitening: FitInfo,
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
            whitening: FitInfo::default(),
        })
    }
    /// Takes [`model_len`]`(d, k)` elements of `storage` as they are: a model stored earlier, or
    /// anything, since only a successful fit writes them (the C API's caller-owned model).
    pub fn with_storage(d: usize, k: usize, storage: &'a mut [T]) -> Result<Self> {
        if k == 0 || k > d {
            return Err(Error::InvalidComponents { k, d });
        }
        Ok(Self {
            d,
            k,
            storage: prefix_mut(storage, model_len(d, k))?,
            info: IcaInfo::default(),
            whitening: FitInfo::default(),
        })
    }
    /// Fits on row-major samples `x` (`n x d`) in memory; see [`FastIca::fit`]. On error the
    /// model is unchanged.
    pub fn fit(
        &mut self,
        x: &[T],
        opts: &FastIcaOptions,
        init: WInit<'_>,
        scratch: &mut [T],
        ws: &mut [Sum],
    ) -> Result<IcaInfo> {
        let (z, staging) = split_scratch(x, self.d, self.k, scratch)?;
        let mut exec = InMemory::new(x, z);
        self.fit_with(&mut exec, Portable, opts, init, staging, ws, &mut |_, _| {})
    }
    /// Fits on the samples `exec` passes over; see [`FastIca::fit_with`]. On error the model is
    /// unchanged.
    #[allow(clippy::too_many_arguments)]
    pub fn fit_with<E: Executor<T>, Kn: Kernel>(
        &mut self,
        exec: &mut E,
        kernel: Kn,
        opts: &FastIcaOptions,
        init: WInit<'_>,
        staging: &mut [T],
        ws: &mut [Sum],
        on_iteration: &mut dyn FnMut(usize, Sum),
    ) -> Result<IcaInfo> {
        let (d, k) = (self.d, self.k);
        let staging = prefix_mut(staging, model_len(d, k))?;
        let (info, whitening) =
            fit_model(exec, kernel, d, k, opts, init, staging, ws, on_iteration)?;
        self.storage.copy_from_slice(staging);
        self.info = info;
        self.whitening = whitening;
        Ok(info)
    }
    /// The fit from a whitener fitted elsewhere: `whitener` (`d -> k`, fitted with
    /// [`FastIcaOptions::pca_options`] on moments of the samples `exec` holds, by whatever pass
    /// computed them: the `unmix` command's GEMM, shards on other machines) replaces the moments
    /// pass of [`fit_with`](Self::fit_with); the rest is the same computation, so the same
    /// moments give the same bits. See [`FastIca::fit_white`]. `staging` needs
    /// [`model_len`]`(d, k)` elements and `ws` [`white_fit_workspace_len_with`]`(k, kernel)`. On
    /// error the model is unchanged.
    #[allow(clippy::too_many_arguments)]
    pub fn fit_white_with<E: Executor<T>, Kn: Kernel>(
        &mut self,
        whitener: &WhitenerView<'_, T>,
        exec: &mut E,
        kernel: Kn,
        opts: &FastIcaOptions,
        init: WInit<'_>,
        staging: &mut [T],
        ws: &mut [Sum],
        on_iteration: &mut dyn FnMut(usize, Sum),
    ) -> Result<IcaInfo> {
        let (d, k) = (self.d, self.k);
        if (whitener.n_features(), whitener.n_components()) != (d, k) {
            return Err(Error::DimensionMismatch {
                expected: d * k,
                found: whitener.n_features() * whitener.n_components(),
            });
        }
        let staging = prefix_mut(staging, model_len(d, k))?;
        let info = fit_model_white(
            exec,
            kernel,
            whitener,
            opts,
            init,
            staging,
            ws,
            on_iteration,
        )?;
        self.storage.copy_from_slice(staging);
        self.info = info;
        self.whitening = whitener.info();
        Ok(info)
    }
    /// The fitted model.
    pub fn view(&self) -> FastIcaView<'_, T> {
        FastIcaView::with_whitening_info(self.d, self.k, self.storage, self.info, self.whitening)
            .expect("storage split by FastIcaBuf::new")
    }
}
