//! C ABI for the unmix core's whitening, FastICA and metrics, over caller-provided buffers.
//!
//! `#![no_std]`, no allocator, its own panic handler: if anything in the dependency graph needed
//! `std` or `alloc`, this crate would not build, and the CI gate also checks that the linked C
//! program imports no `malloc`, `free` or `__rust_alloc`. The header is `include/unmix.h`.
#![no_std]
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]

use core::slice;
use unmix::Error;
use unmix::ica::{
    self, Algorithm, ContrastKind, FastIcaBuf, FastIcaOptions, FastIcaView, IcaInfo, IcaOptions,
    LogCosh, WInit, WhitenMode,
};
use unmix::metrics::correlation::Method as CorrelationMethod;
use unmix::metrics::{amari_index, auroc, hoyer_sparsity, mcc};
use unmix::moments::MomentsBuf;
use unmix::whiten::{self, Method, Rotation, WhitenOptions, WhitenerBuf, WhitenerView};

/// Status codes (`UNMIX_*` in the header).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmixStatus {
    /// Success.
    Ok = 0,
    /// A required pointer was null.
    NullPointer = 1,
    /// NaN or infinity in the data.
    NonFinite = 2,
    /// Too few samples.
    TooFewSamples = 3,
    /// Shapes do not agree.
    DimensionMismatch = 4,
    /// A buffer is too small.
    BufferTooSmall = 5,
    /// `k` not in `1..=d` (ZCA: `k != d`).
    InvalidComponents = 6,
    /// More components than the effective rank.
    RankDeficient = 7,
    /// The eigensolver did not converge.
    NoConvergence = 8,
    /// An option is out of range.
    InvalidParameter = 9,
    /// An intermediate result overflowed: rescale the data.
    Overflow = 10,
    /// Labels of one class only: AUROC is undefined.
    SingleClass = 11,
}

impl From<Error> for UnmixStatus {
    fn from(e: Error) -> Self {
        match e {
            Error::NonFinite { .. } => Self::NonFinite,
            Error::TooFewSamples { .. } => Self::TooFewSamples,
            Error::DimensionMismatch { .. } | Error::RaggedRows { .. } => Self::DimensionMismatch,
            Error::BufferTooSmall { .. } => Self::BufferTooSmall,
            Error::InvalidComponents { .. } | Error::TooFew { .. } => Self::InvalidComponents,
            Error::RankDeficient { .. } => Self::RankDeficient,
            Error::NoConvergence { .. } => Self::NoConvergence,
            Error::Overflow => Self::Overflow,
            Error::SingleClass => Self::SingleClass,
            _ => Self::InvalidParameter,
        }
    }
}

/// Where a failed call went wrong, for the caller's messages.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UnmixReport {
    /// Row of the first non-finite value (`UNMIX_NON_FINITE`).
    pub row: u64,
    /// Column of the first non-finite value (`UNMIX_NON_FINITE`).
    pub col: usize,
    /// Effective rank of the data (after a fit, successful or `UNMIX_RANK_DEFICIENT`).
    pub effective_rank: usize,
}

/// `double`s of model storage for `d -> k`: `mean | whitening (k x d) | unwhitening (d x k) | variance (k)`.
#[unsafe(no_mangle)]
pub extern "C" fn unmix_whiten_model_len(d: usize, k: usize) -> usize {
    whiten::storage_len(d, k)
}

/// `double`s of workspace [`unmix_whiten_fit`] needs for `d -> k` (the moments, the model being
/// fitted and the eigensolver's scratch).
#[unsafe(no_mangle)]
pub extern "C" fn unmix_whiten_workspace_len(d: usize, k: usize) -> usize {
    MomentsBuf::buffer_len(d) + whiten::storage_len(d, k) + whiten::workspace_len(d, k)
}

/// # Safety
/// `ptr` must be null or valid for `len` reads.
unsafe fn input<'a>(ptr: *const f64, len: usize) -> Result<&'a [f64], UnmixStatus> {
    if ptr.is_null() {
        return Err(UnmixStatus::NullPointer);
    }
    // SAFETY: the caller guarantees `len` readable, initialised doubles at `ptr`.
    Ok(unsafe { slice::from_raw_parts(ptr, len) })
}

/// # Safety
/// `ptr` must be null or valid for `len` writes, not aliased by any other argument.
unsafe fn output<'a>(ptr: *mut f64, len: usize) -> Result<&'a mut [f64], UnmixStatus> {
    if ptr.is_null() {
        return Err(UnmixStatus::NullPointer);
    }
    // SAFETY: the caller guarantees `len` writable doubles at `ptr`, exclusively ours.
    Ok(unsafe { slice::from_raw_parts_mut(ptr, len) })
}

fn status(r: Result<(), UnmixStatus>) -> UnmixStatus {
    r.err().unwrap_or(UnmixStatus::Ok)
}

/// Fits a whitener on `n x d` row-major samples `x`, keeping `k` components.
///
/// `method`: 0 PCA, 1 ZCA. `ddof`: 0 or 1. `rotate`: nonzero applies a Haar-random rotation drawn
/// from `seed`. `rank_rtol`: relative eigenvalue threshold (1e-10 is the library default).
/// Writes the model to `model` (`model_len >= unmix_whiten_model_len(d, k)`) only on success.
/// `report` (may be null) receives the error location or the effective rank.
///
/// # Safety
/// Pointers must be valid for the lengths given (`x`: `n * d` reads) and must not overlap.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unmix_whiten_fit(
    x: *const f64,
    n: usize,
    d: usize,
    k: usize,
    method: i32,
    ddof: u32,
    rotate: i32,
    seed: u64,
    rank_rtol: f64,
    model: *mut f64,
    model_len: usize,
    workspace: *mut f64,
    workspace_len: usize,
    report: *mut UnmixReport,
) -> UnmixStatus {
    let mut rep = UnmixReport::default();
    let result = (|| {
        let len = n.checked_mul(d).ok_or(UnmixStatus::DimensionMismatch)?;
        // SAFETY: forwarded caller guarantees.
        let (x, model, ws) = unsafe {
            (
                input(x, len)?,
                output(model, model_len)?,
                output(workspace, workspace_len)?,
            )
        };
        let method = match method {
            0 => Method::Pca,
            1 => Method::Zca,
            _ => return Err(UnmixStatus::InvalidParameter),
        };
        let rotation = if rotate != 0 {
            Rotation::Random { seed }
        } else {
            Rotation::None
        };
        let opts = WhitenOptions {
            method,
            rotation,
            ddof,
            rank_rtol,
        };
        // Fit into the workspace and copy on success, so that a failed fit leaves `model` as it
        // was.
        let (mlen, slen) = (MomentsBuf::buffer_len(d), whiten::storage_len(d, k));
        if ws.len() < mlen + slen || model.len() < slen {
            return Err(UnmixStatus::BufferTooSmall);
        }
        let (mbuf, rest) = ws.split_at_mut(mlen);
        let (scratch_model, wbuf) = rest.split_at_mut(slen);
        let mut moments = MomentsBuf::new(d, mbuf).map_err(|e| fail(e, &mut rep))?;
        moments.accumulate(x).map_err(|e| fail(e, &mut rep))?;
        let mut w = WhitenerBuf::new(d, k, scratch_model).map_err(|e| fail(e, &mut rep))?;
        let info = w
            .fit(moments.as_ref(), &opts, wbuf)
            .map_err(|e| fail(e, &mut rep))?;
        rep.effective_rank = info.effective_rank;
        model[..slen].copy_from_slice(scratch_model);
        Ok(())
    })();
    if !report.is_null() {
        // SAFETY: non-null `report` points to a writable UnmixReport by the caller's guarantee.
        unsafe { *report = rep };
    }
    status(result)
}

/// The shared body of the transforms: checks the sizes, borrows `model` (`model_len` doubles),
/// `n` input rows of width `in_w` and `n` output rows of width `out_w`, and runs `f` on them.
///
/// # Safety
/// Pointers must be null or valid for the lengths implied, and `out` must not overlap the others.
#[allow(clippy::too_many_arguments)]
unsafe fn map_rows(
    model: *const f64,
    model_len: usize,
    rows_in: *const f64,
    in_w: usize,
    n: usize,
    rows_out: *mut f64,
    out_w: usize,
    f: impl FnOnce(&[f64], &[f64], &mut [f64]) -> Result<(), Error>,
) -> UnmixStatus {
    status((|| {
        let (Some(il), Some(ol)) = (n.checked_mul(in_w), n.checked_mul(out_w)) else {
            return Err(UnmixStatus::DimensionMismatch);
        };
        // SAFETY: forwarded caller guarantees.
        let (model, rows_in, rows_out) = unsafe {
            (
                input(model, model_len)?,
                input(rows_in, il)?,
                output(rows_out, ol)?,
            )
        };
        Ok(f(model, rows_in, rows_out)?)
    })())
}

/// Whitens `n` rows of `x` (`n x d`) into `z` (`n x k`) with a model from [`unmix_whiten_fit`].
///
/// # Safety
/// Pointers must be valid for the lengths implied and `z` must not overlap the others.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_whiten_transform(
    model: *const f64,
    d: usize,
    k: usize,
    x: *const f64,
    n: usize,
    z: *mut f64,
) -> UnmixStatus {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        map_rows(
            model,
            whiten::storage_len(d, k),
            x,
            d,
            n,
            z,
            k,
            |m, x, z| WhitenerView::from_parts(d, k, m)?.transform_rows(x, z),
        )
    }
}

/// Maps `n` whitened rows `z` (`n x k`) back to `x` (`n x d`).
///
/// # Safety
/// Pointers must be valid for the lengths implied and `x` must not overlap the others.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_whiten_inverse_transform(
    model: *const f64,
    d: usize,
    k: usize,
    z: *const f64,
    n: usize,
    x: *mut f64,
) -> UnmixStatus {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        map_rows(
            model,
            whiten::storage_len(d, k),
            z,
            k,
            n,
            x,
            d,
            |m, z, x| WhitenerView::from_parts(d, k, m)?.inverse_transform_rows(z, x),
        )
    }
}

/// FastICA's options, scikit-learn's names (`UNMIX_*` constants in the header). Fill with
/// [`unmix_fastica_default_options`], then change what differs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UnmixFastIcaOptions {
    /// 0 parallel, 1 deflation.
    pub algorithm: i32,
    /// 0 logcosh, 1 exp, 2 cube.
    pub fun: i32,
    /// logcosh's alpha, in [1, 2].
    pub alpha: f64,
    /// 0 unit-variance, 1 arbitrary-variance, 2 none (the data are already white; k = d).
    pub whiten: i32,
    /// Iteration cap, at least 1.
    pub max_iter: usize,
    /// Stopping tolerance, `>= 0`.
    pub tol: f64,
    /// The whitening's relative rank threshold.
    pub rank_rtol: f64,
    /// Nonzero: order components by |excess kurtosis|, positive skewness.
    pub canonical: i32,
    /// `k x k` start matrix (row-major), or null to draw one from `seed`.
    pub w_init: *const f64,
    /// Seed of the Gaussian start when `w_init` is null.
    pub seed: u64,
}

/// How a FastICA fit ended, or where it failed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UnmixFastIcaReport {
    /// Iterations run (deflation: the most any component needed).
    pub n_iter: usize,
    /// 1 if every change fell below `tol` within `max_iter`; 0 otherwise (the model is still
    /// written, as scikit-learn does).
    pub converged: i32,
    /// The last change.
    pub last_change: f64,
    /// Row, column and effective rank, as in [`UnmixReport`].
    pub error: UnmixReport,
}

/// Fills `options` with scikit-learn's defaults: parallel, logcosh (alpha 1), unit variance,
/// 200 iterations, `tol = 1e-4`, `rank_rtol = 1e-10`, seed 0, no `w_init`, not canonical.
///
/// # Safety
/// `options` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_fastica_default_options(
    options: *mut UnmixFastIcaOptions,
) -> UnmixStatus {
    if options.is_null() {
        return UnmixStatus::NullPointer;
    }
    // SAFETY: non-null and writable by the caller's guarantee.
    unsafe { *options = default_options() };
    UnmixStatus::Ok
}

fn default_options() -> UnmixFastIcaOptions {
    let d = FastIcaOptions::DEFAULT;
    UnmixFastIcaOptions {
        algorithm: 0,
        fun: 0,
        alpha: 1.0,
        whiten: 0,
        max_iter: d.ica.max_iter,
        tol: d.ica.tol,
        rank_rtol: d.rank_rtol,
        canonical: 0,
        w_init: core::ptr::null(),
        seed: 0,
    }
}

fn fastica_options(o: &UnmixFastIcaOptions) -> Result<FastIcaOptions, UnmixStatus> {
    let algorithm = match o.algorithm {
        0 => Algorithm::Parallel,
        1 => Algorithm::Deflation,
        _ => return Err(UnmixStatus::InvalidParameter),
    };
    let contrast = match o.fun {
        0 => ContrastKind::LogCosh(LogCosh::new(o.alpha)?),
        1 => ContrastKind::Exp,
        2 => ContrastKind::Cube,
        _ => return Err(UnmixStatus::InvalidParameter),
    };
    let whiten = match o.whiten {
        0 => WhitenMode::UnitVariance,
        1 => WhitenMode::ArbitraryVariance,
        2 => WhitenMode::None,
        _ => return Err(UnmixStatus::InvalidParameter),
    };
    Ok(FastIcaOptions {
        ica: IcaOptions {
            algorithm,
            max_iter: o.max_iter,
            tol: o.tol,
        },
        contrast,
        whiten,
        rank_rtol: o.rank_rtol,
        canonical: o.canonical != 0,
    })
}

/// `double`s of model storage for FastICA `d -> k`: the whitener's layout, then unmixing (k x k),
/// components (k x d) and mixing (d x k).
#[unsafe(no_mangle)]
pub extern "C" fn unmix_fastica_model_len(d: usize, k: usize) -> usize {
    ica::model_len(d, k)
}

/// `double`s of workspace [`unmix_fastica_fit`] needs for `n` samples, `d -> k` (it holds the
/// whitened samples, `n x k`, and the model being fitted); `SIZE_MAX` if that overflows.
#[unsafe(no_mangle)]
pub extern "C" fn unmix_fastica_workspace_len(n: usize, d: usize, k: usize) -> usize {
    n.checked_mul(k)
        .and_then(|z| z.checked_add(ica::model_len(d, k)))
        .and_then(|z| z.checked_add(ica::fit_workspace_len(d, k)))
        .unwrap_or(usize::MAX)
}

/// Fits FastICA on `n x d` row-major samples `x`, keeping `k` components, as scikit-learn's
/// `FastICA(whiten_solver="eigh")`. `options` null means the defaults. The model is written to
/// `model` (`model_len >= unmix_fastica_model_len(d, k)`) only on success, which includes
/// iterations that did not converge (`report->converged == 0`). `report` may be null.
///
/// # Safety
/// Pointers must be valid for the lengths given (`x`: `n * d` reads; `options->w_init`, if not
/// null: `k * k` reads) and `model` and `workspace` must not overlap anything else.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unmix_fastica_fit(
    x: *const f64,
    n: usize,
    d: usize,
    k: usize,
    options: *const UnmixFastIcaOptions,
    model: *mut f64,
    model_len: usize,
    workspace: *mut f64,
    workspace_len: usize,
    report: *mut UnmixFastIcaReport,
) -> UnmixStatus {
    let mut rep = UnmixFastIcaReport::default();
    let result = (|| {
        let len = n.checked_mul(d).ok_or(UnmixStatus::DimensionMismatch)?;
        let o = if options.is_null() {
            default_options()
        } else {
            // SAFETY: non-null `options` points to a readable struct by the caller's guarantee.
            unsafe { *options }
        };
        let opts = fastica_options(&o)?;
        ica::check_fit(d, k, &opts)?;
        // SAFETY: forwarded caller guarantees.
        let (x, model, ws) = unsafe {
            (
                input(x, len)?,
                output(model, model_len)?,
                output(workspace, workspace_len)?,
            )
        };
        let w_init;
        let init = if o.w_init.is_null() {
            WInit::Seed(o.seed)
        } else {
            let kk = k.checked_mul(k).ok_or(UnmixStatus::DimensionMismatch)?;
            // SAFETY: a non-null `w_init` holds `k * k` doubles by the caller's guarantee.
            w_init = unsafe { input(o.w_init, kk)? };
            WInit::Matrix(w_init)
        };
        let (zlen, mlen) = (
            n.checked_mul(k).ok_or(UnmixStatus::DimensionMismatch)?,
            ica::model_len(d, k),
        );
        if ws.len() < zlen + mlen || model.len() < mlen {
            return Err(UnmixStatus::BufferTooSmall);
        }
        // Fit into the workspace and copy on success, so that a failed fit leaves `model` as it
        // was.
        let (z, rest) = ws.split_at_mut(zlen);
        let (scratch_model, fit_ws) = rest.split_at_mut(mlen);
        let mut fit = FastIcaBuf::new(d, k, scratch_model).map_err(|e| fail(e, &mut rep.error))?;
        let info = fit
            .fit(x, &opts, init, z, fit_ws)
            .map_err(|e| fail(e, &mut rep.error))?;
        model[..mlen].copy_from_slice(scratch_model);
        rep.n_iter = info.n_iter;
        rep.converged = i32::from(info.converged);
        rep.last_change = info.last_change;
        Ok(())
    })();
    if !report.is_null() {
        // SAFETY: non-null `report` is writable by the caller's guarantee.
        unsafe { *report = rep };
    }
    status(result)
}

/// Records where `e` happened in `rep` and converts it.
fn fail(e: Error, rep: &mut UnmixReport) -> UnmixStatus {
    match e {
        Error::NonFinite { row, col } => (rep.row, rep.col) = (row, col),
        Error::RankDeficient { rank, .. } => rep.effective_rank = rank,
        _ => {}
    }
    UnmixStatus::from(e)
}

/// Sources `s` (`n x k`) of samples `x` (`n x d`) under a model from [`unmix_fastica_fit`].
///
/// # Safety
/// Pointers must be valid for the lengths implied and `s` must not overlap the others.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_fastica_transform(
    model: *const f64,
    d: usize,
    k: usize,
    x: *const f64,
    n: usize,
    s: *mut f64,
) -> UnmixStatus {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        map_rows(model, ica::model_len(d, k), x, d, n, s, k, |m, x, s| {
            FastIcaView::from_parts(d, k, m, IcaInfo::default())?.transform_rows(x, s)
        })
    }
}

/// Samples `x` (`n x d`) from sources `s` (`n x k`): `mean + mixing * s`.
///
/// # Safety
/// Pointers must be valid for the lengths implied and `x` must not overlap the others.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_fastica_inverse_transform(
    model: *const f64,
    d: usize,
    k: usize,
    s: *const f64,
    n: usize,
    x: *mut f64,
) -> UnmixStatus {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        map_rows(model, ica::model_len(d, k), s, k, n, x, d, |m, s, x| {
            FastIcaView::from_parts(d, k, m, IcaInfo::default())?.inverse_transform_rows(s, x)
        })
    }
}

/// Writes `value` to `out` after a successful metric.
///
/// # Safety
/// `out` must be null or valid for a write.
unsafe fn put(out: *mut f64, value: Result<f64, UnmixStatus>) -> UnmixStatus {
    match value {
        Ok(v) if !out.is_null() => {
            // SAFETY: non-null `out` is writable by the caller's guarantee.
            unsafe { *out = v };
            UnmixStatus::Ok
        }
        Ok(_) => UnmixStatus::NullPointer,
        Err(e) => e,
    }
}

/// Area under the ROC curve of `scores` for `labels` (true = positive), exact with ties
/// (scikit-learn's `roc_auc_score`), into `*result`. `scratch` holds `n` `uint64_t`s.
///
/// # Safety
/// `scores` and `labels` must be valid for `n` reads, `scratch` for `n` writes, `result` for one;
/// `labels` are C `bool`s (0 or 1).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_auroc(
    scores: *const f64,
    labels: *const bool,
    n: usize,
    scratch: *mut u64,
    result: *mut f64,
) -> UnmixStatus {
    let value = (|| {
        if labels.is_null() || scratch.is_null() {
            return Err(UnmixStatus::NullPointer);
        }
        // SAFETY: forwarded caller guarantees; C's bool has Rust's bool layout and values.
        let (scores, labels, scratch) = unsafe {
            (
                input(scores, n)?,
                slice::from_raw_parts(labels, n),
                slice::from_raw_parts_mut(scratch, n),
            )
        };
        Ok(auroc(scores, labels, scratch)?)
    })();
    // SAFETY: forwarded caller guarantee on `result`.
    unsafe { put(result, value) }
}

/// Hoyer sparsity of `c` (`d` values, e.g. split fractions), in [0, 1], into `*result`.
///
/// # Safety
/// `c` must be valid for `d` reads, `result` for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_hoyer_sparsity(
    c: *const f64,
    d: usize,
    result: *mut f64,
) -> UnmixStatus {
    // SAFETY: forwarded caller guarantees.
    let value = unsafe { input(c, d) }.and_then(|c| Ok(hoyer_sparsity(c)?));
    // SAFETY: forwarded caller guarantee on `result`.
    unsafe { put(result, value) }
}

/// Amari index of the unmixing `w` (`k x d`) and the true mixing `a` (`d x k`), normalised to
/// [0, 1], into `*result`. `scratch` holds `k * k` doubles.
///
/// # Safety
/// Pointers must be valid for the lengths implied; `scratch` must not overlap the others.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_amari_index(
    w: *const f64,
    a: *const f64,
    k: usize,
    d: usize,
    scratch: *mut f64,
    result: *mut f64,
) -> UnmixStatus {
    let value = (|| {
        let (Some(kd), Some(kk)) = (k.checked_mul(d), k.checked_mul(k)) else {
            return Err(UnmixStatus::DimensionMismatch);
        };
        // SAFETY: forwarded caller guarantees.
        let (w, a, p) = unsafe { (input(w, kd)?, input(a, kd)?, output(scratch, kk)?) };
        Ok(amari_index(w, a, k, d, p)?)
    })();
    // SAFETY: forwarded caller guarantee on `result`.
    unsafe { put(result, value) }
}

/// Workspace [`unmix_mcc`] needs: `*f64_len` doubles and `*size_len` `size_t`s. `method`: 0
/// Pearson, 1 Spearman.
///
/// # Safety
/// `f64_len` and `size_len` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_mcc_workspace_len(
    n: usize,
    d_true: usize,
    d_est: usize,
    method: i32,
    f64_len: *mut usize,
    size_len: *mut usize,
) -> UnmixStatus {
    let Ok(method) = correlation_method(method) else {
        return UnmixStatus::InvalidParameter;
    };
    if f64_len.is_null() || size_len.is_null() {
        return UnmixStatus::NullPointer;
    }
    let (f, u) = mcc::workspace_len(n, d_true, d_est, method);
    // SAFETY: non-null and writable by the caller's guarantee.
    unsafe { (*f64_len, *size_len) = (f, u) };
    UnmixStatus::Ok
}

fn correlation_method(method: i32) -> Result<CorrelationMethod, UnmixStatus> {
    match method {
        0 => Ok(CorrelationMethod::Pearson),
        1 => Ok(CorrelationMethod::Spearman),
        _ => Err(UnmixStatus::InvalidParameter),
    }
}

/// Mean correlation coefficient of `estimate` (`n x d_est`) against `truth` (`n x d_true`): the
/// mean |correlation| after the matching that maximises it, into `*result`; `pairs` (`d_true`)
/// receives the estimated column matched to each true column (`SIZE_MAX` if none). `method`: 0
/// Pearson, 1 Spearman. Workspace sizes from [`unmix_mcc_workspace_len`].
///
/// # Safety
/// Pointers must be valid for the lengths given or implied, and the outputs must not overlap.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unmix_mcc(
    truth: *const f64,
    d_true: usize,
    estimate: *const f64,
    d_est: usize,
    n: usize,
    method: i32,
    pairs: *mut usize,
    ws_f64: *mut f64,
    ws_f64_len: usize,
    ws_size: *mut usize,
    ws_size_len: usize,
    result: *mut f64,
) -> UnmixStatus {
    let value = (|| {
        let method = correlation_method(method)?;
        let (Some(lt), Some(le)) = (n.checked_mul(d_true), n.checked_mul(d_est)) else {
            return Err(UnmixStatus::DimensionMismatch);
        };
        if pairs.is_null() || ws_size.is_null() {
            return Err(UnmixStatus::NullPointer);
        }
        // SAFETY: forwarded caller guarantees (null pointers rejected above and in `input`).
        let (truth, estimate, wf, pairs, wu) = unsafe {
            (
                input(truth, lt)?,
                input(estimate, le)?,
                output(ws_f64, ws_f64_len)?,
                slice::from_raw_parts_mut(pairs, d_true),
                slice::from_raw_parts_mut(ws_size, ws_size_len),
            )
        };
        Ok(mcc::mcc(
            truth, d_true, estimate, d_est, method, pairs, wf, wu,
        )?)
    })();
    // SAFETY: forwarded caller guarantee on `result`.
    unsafe { put(result, value) }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // The core returns errors for bad data and never panics on it; should a bug reach here,
    // stop rather than unwind through C frames.
    loop {}
}
