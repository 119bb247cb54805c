//! C ABI for the unmix core's whitening, FastICA and metrics, over caller-provided buffers.
//!
//! `#![no_std]`, no allocator, its own panic handler: if anything in the dependency graph needed
//! `std` or `alloc`, this crate would not build, and the CI gate also checks that the linked C
//! program imports no `malloc`, `free` or `__rust_alloc`. The header is `include/unmix.h`.
#![no_std]
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]

use core::slice;
use unmix::ica::{
    self, Algorithm, ContrastKind, FastIcaBuf, FastIcaOptions, FastIcaView, IcaInfo, IcaOptions,
    LogCosh, WInit, WhitenMode,
};
use unmix::metrics::alignment::{self, AlignmentOptions};
use unmix::metrics::correlation::Method as CorrelationMethod;
use unmix::metrics::{amari_index, auroc, hoyer_sparsity, infomec, mcc};
use unmix::moments::MomentsBuf;
use unmix::whiten::{self, Method, Rotation, WhitenOptions, WhitenerBuf, WhitenerView};
use unmix::{Error, Float};

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
    /// A column has zero variance: its correlation (MCC) is undefined.
    ZeroVariance = 12,
    /// No complete assignment avoids the forbidden (+infinity) costs.
    Infeasible = 13,
    /// A flat buffer's length is not a whole number of rows.
    RaggedRows = 14,
}

impl From<Error> for UnmixStatus {
    fn from(e: Error) -> Self {
        match e {
            Error::NonFinite { .. } => Self::NonFinite,
            Error::TooFewSamples { .. } => Self::TooFewSamples,
            Error::DimensionMismatch { .. } => Self::DimensionMismatch,
            Error::RaggedRows { .. } => Self::RaggedRows,
            Error::BufferTooSmall { .. } => Self::BufferTooSmall,
            Error::InvalidComponents { .. } | Error::TooFew { .. } => Self::InvalidComponents,
            Error::RankDeficient { .. } => Self::RankDeficient,
            Error::NoConvergence { .. } => Self::NoConvergence,
            Error::Overflow => Self::Overflow,
            Error::SingleClass => Self::SingleClass,
            Error::ZeroVariance { .. } => Self::ZeroVariance,
            Error::Infeasible => Self::Infeasible,
            Error::InvalidParameter(_) => Self::InvalidParameter,
            // `Error` is non_exhaustive: a variant added later is still an error, never Ok.
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
unsafe fn input<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], UnmixStatus> {
    if ptr.is_null() {
        return Err(UnmixStatus::NullPointer);
    }
    // SAFETY: the caller guarantees `len` readable, initialised doubles at `ptr`.
    Ok(unsafe { slice::from_raw_parts(ptr, len) })
}

/// # Safety
/// `ptr` must be null or valid for `len` writes, not aliased by any other argument.
unsafe fn output<'a, T>(ptr: *mut T, len: usize) -> Result<&'a mut [T], UnmixStatus> {
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
    // SAFETY: forwarded caller guarantees.
    unsafe {
        whiten_fit(
            x,
            n,
            d,
            k,
            method,
            ddof,
            rotate,
            seed,
            rank_rtol,
            model,
            model_len,
            workspace,
            workspace_len,
            report,
        )
    }
}

/// [`unmix_whiten_fit`] for `float` samples and model (the same workspace of doubles: the fit
/// computes in double precision and rounds its results to float once).
///
/// # Safety
/// As [`unmix_whiten_fit`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unmix_whiten_fit_f32(
    x: *const f32,
    n: usize,
    d: usize,
    k: usize,
    method: i32,
    ddof: u32,
    rotate: i32,
    seed: u64,
    rank_rtol: f64,
    model: *mut f32,
    model_len: usize,
    workspace: *mut f64,
    workspace_len: usize,
    report: *mut UnmixReport,
) -> UnmixStatus {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        whiten_fit(
            x,
            n,
            d,
            k,
            method,
            ddof,
            rotate,
            seed,
            rank_rtol,
            model,
            model_len,
            workspace,
            workspace_len,
            report,
        )
    }
}

/// The body of both whitening fits.
///
/// # Safety
/// As [`unmix_whiten_fit`].
#[allow(clippy::too_many_arguments)]
unsafe fn whiten_fit<T: Float>(
    x: *const T,
    n: usize,
    d: usize,
    k: usize,
    method: i32,
    ddof: u32,
    rotate: i32,
    seed: u64,
    rank_rtol: f64,
    model: *mut T,
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
        let mut w = WhitenerBuf::<f64>::new(d, k, scratch_model).map_err(|e| fail(e, &mut rep))?;
        let info = w
            .fit(moments.as_ref(), &opts, wbuf)
            .map_err(|e| fail(e, &mut rep))?;
        rep.effective_rank = info.effective_rank;
        // Staged in f64 and rounded once: the same bits as a fit stored in T directly (the fit
        // computes in f64 and rounds its results to T).
        for (m, v) in model[..slen].iter_mut().zip(scratch_model.iter()) {
            *m = T::from_f64(*v);
        }
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
unsafe fn map_rows<T>(
    model: *const T,
    model_len: usize,
    rows_in: *const T,
    in_w: usize,
    n: usize,
    rows_out: *mut T,
    out_w: usize,
    f: impl FnOnce(&[T], &[T], &mut [T]) -> Result<(), Error>,
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

/// [`unmix_whiten_transform`] for `float` model and rows (computed in float).
///
/// # Safety
/// As [`unmix_whiten_transform`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_whiten_transform_f32(
    model: *const f32,
    d: usize,
    k: usize,
    x: *const f32,
    n: usize,
    z: *mut f32,
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

/// [`unmix_whiten_inverse_transform`] for `float` model and rows (computed in float).
///
/// # Safety
/// As [`unmix_whiten_inverse_transform`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_whiten_inverse_transform_f32(
    model: *const f32,
    d: usize,
    k: usize,
    z: *const f32,
    n: usize,
    x: *mut f32,
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
        // SAFETY: forwarded caller guarantees.
        let (x, model, ws) = unsafe {
            (
                input(x, len)?,
                output(model, model_len)?,
                output(workspace, workspace_len)?,
            )
        };
        // SAFETY: forwarded caller guarantee on `options`.
        unsafe { read_options(options, d, k)? };
        let slen = scratch_len(n, d, k)?;
        if ws.len() < slen {
            return Err(UnmixStatus::BufferTooSmall);
        }
        // The core stages the fit in `scratch` (whitened rows and a model) and writes `model` only
        // on success, so a failed fit leaves it as it was.
        let (scratch, fit_ws) = ws.split_at_mut(slen);
        // SAFETY: forwarded caller guarantees on `options`.
        unsafe { fastica_fit(x, d, k, options, model, scratch, fit_ws, &mut rep) }
    })();
    // SAFETY: forwarded caller guarantee on `report`.
    unsafe { put_report(report, rep) };
    status(result)
}

/// `float`s of scratch [`unmix_fastica_fit_f32`] needs for `n` samples, `d -> k` (the whitened
/// samples and the model being fitted); `SIZE_MAX` if that overflows.
#[unsafe(no_mangle)]
pub extern "C" fn unmix_fastica_scratch_len_f32(n: usize, d: usize, k: usize) -> usize {
    scratch_len(n, d, k).unwrap_or(usize::MAX)
}

/// `double`s of workspace [`unmix_fastica_fit_f32`] needs for `d -> k`.
#[unsafe(no_mangle)]
pub extern "C" fn unmix_fastica_workspace_len_f32(d: usize, k: usize) -> usize {
    ica::fit_workspace_len(d, k)
}

/// [`unmix_fastica_fit`] for `float` samples and model: the whitened samples are floats and the
/// transforms compute in float; sums over samples stay in double. `scratch` holds
/// `unmix_fastica_scratch_len_f32(n, d, k)` floats, `workspace`
/// `unmix_fastica_workspace_len_f32(d, k)` doubles. The model is `unmix_fastica_model_len(d, k)`
/// floats.
///
/// # Safety
/// As [`unmix_fastica_fit`], with `scratch` valid for `scratch_len` writes and overlapping nothing.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unmix_fastica_fit_f32(
    x: *const f32,
    n: usize,
    d: usize,
    k: usize,
    options: *const UnmixFastIcaOptions,
    model: *mut f32,
    model_len: usize,
    scratch: *mut f32,
    scratch_len: usize,
    workspace: *mut f64,
    workspace_len: usize,
    report: *mut UnmixFastIcaReport,
) -> UnmixStatus {
    let mut rep = UnmixFastIcaReport::default();
    let result = (|| {
        let len = n.checked_mul(d).ok_or(UnmixStatus::DimensionMismatch)?;
        // SAFETY: forwarded caller guarantees.
        let (x, model, scratch, ws) = unsafe {
            (
                input(x, len)?,
                output(model, model_len)?,
                output(scratch, scratch_len)?,
                output(workspace, workspace_len)?,
            )
        };
        // SAFETY: forwarded caller guarantees on `options`.
        unsafe { fastica_fit(x, d, k, options, model, scratch, ws, &mut rep) }
    })();
    // SAFETY: forwarded caller guarantee on `report`.
    unsafe { put_report(report, rep) };
    status(result)
}

/// The caller's options (null: the defaults), converted and checked against `d -> k`.
///
/// # Safety
/// `options` must be null or valid for a read.
unsafe fn read_options(
    options: *const UnmixFastIcaOptions,
    d: usize,
    k: usize,
) -> Result<(UnmixFastIcaOptions, FastIcaOptions), UnmixStatus> {
    let o = if options.is_null() {
        default_options()
    } else {
        // SAFETY: non-null `options` points to a readable struct by the caller's guarantee.
        unsafe { *options }
    };
    let opts = fastica_options(&o)?;
    opts.check(d, k)?;
    Ok((o, opts))
}

/// `n k + model_len(d, k)`: the whitened rows and the staged model.
fn scratch_len(n: usize, d: usize, k: usize) -> Result<usize, UnmixStatus> {
    n.checked_mul(k)
        .and_then(|z| z.checked_add(ica::model_len(d, k)))
        .ok_or(UnmixStatus::DimensionMismatch)
}

/// # Safety
/// `report` must be null or valid for a write.
unsafe fn put_report(report: *mut UnmixFastIcaReport, rep: UnmixFastIcaReport) {
    if !report.is_null() {
        // SAFETY: non-null `report` is writable by the caller's guarantee.
        unsafe { *report = rep };
    }
}

/// The body of both FastICA fits, on borrowed buffers.
///
/// # Safety
/// `options` must be null or valid for a read, and its `w_init` null or valid for `k * k` reads.
#[allow(clippy::too_many_arguments)]
unsafe fn fastica_fit<T: Float>(
    x: &[T],
    d: usize,
    k: usize,
    options: *const UnmixFastIcaOptions,
    model: &mut [T],
    scratch: &mut [T],
    ws: &mut [f64],
    rep: &mut UnmixFastIcaReport,
) -> Result<(), UnmixStatus> {
    // SAFETY: forwarded caller guarantee on `options`.
    let (o, opts) = unsafe { read_options(options, d, k)? };
    let w_init;
    let init = if o.w_init.is_null() {
        WInit::Seed(o.seed)
    } else {
        let kk = k.checked_mul(k).ok_or(UnmixStatus::DimensionMismatch)?;
        // SAFETY: a non-null `w_init` holds `k * k` doubles by the caller's guarantee.
        w_init = unsafe { input(o.w_init, kk)? };
        WInit::Matrix(w_init)
    };
    if model.len() < ica::model_len(d, k) {
        return Err(UnmixStatus::BufferTooSmall);
    }
    let mut fit = FastIcaBuf::with_storage(d, k, model).map_err(|e| fail(e, &mut rep.error))?;
    let info = fit
        .fit(x, &opts, init, scratch, ws)
        .map_err(|e| fail(e, &mut rep.error))?;
    rep.n_iter = info.n_iter;
    rep.converged = i32::from(info.converged);
    rep.last_change = info.last_change;
    Ok(())
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

/// [`unmix_fastica_transform`] for `float` model and rows (computed in float).
///
/// # Safety
/// As [`unmix_fastica_transform`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_fastica_transform_f32(
    model: *const f32,
    d: usize,
    k: usize,
    x: *const f32,
    n: usize,
    s: *mut f32,
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

/// [`unmix_fastica_inverse_transform`] for `float` model and rows (computed in float).
///
/// # Safety
/// As [`unmix_fastica_inverse_transform`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_fastica_inverse_transform_f32(
    model: *const f32,
    d: usize,
    k: usize,
    s: *const f32,
    n: usize,
    x: *mut f32,
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

/// The alignment of two representations (see [`unmix_alignment`]): errors normalised by the
/// diameter of `A`, the ICA efficiency (NaN when permutation and rigid errors are equal), the
/// diameter, and the unnormalised mean errors.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UnmixAlignment {
    /// Signed permutation, normalised.
    pub permutation: f64,
    /// Orthogonal Procrustes plus translation, normalised.
    pub rigid: f64,
    /// Least-squares affine map, normalised.
    pub linear: f64,
    /// Through independently fitted FastICA sources, normalised.
    pub ica: f64,
    /// `(permutation - ica) / (permutation - rigid) x 100`.
    pub efficiency: f64,
    /// `2 max_t |a_t - mean_A|`.
    pub diameter: f64,
    /// Mean Euclidean distance of the signed permutation, in `A`'s units.
    pub raw_permutation: f64,
    /// Mean Euclidean distance of the rigid map.
    pub raw_rigid: f64,
    /// Mean Euclidean distance of the linear map.
    pub raw_linear: f64,
    /// Mean Euclidean distance of the ICA map.
    pub raw_ica: f64,
}

/// Workspace [`unmix_alignment`] needs for `n` rows: `*f64_len` doubles and `*size_len`
/// `size_t`s.
///
/// # Safety
/// `f64_len` and `size_len` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_alignment_workspace_len(
    n: usize,
    da: usize,
    db: usize,
    f64_len: *mut usize,
    size_len: *mut usize,
) -> UnmixStatus {
    if f64_len.is_null() || size_len.is_null() {
        return UnmixStatus::NullPointer;
    }
    let Some((f, u)) = alignment_lens(n, da, db) else {
        return UnmixStatus::DimensionMismatch;
    };
    // SAFETY: non-null and writable by the caller's guarantee.
    unsafe { (*f64_len, *size_len) = (f, u) };
    UnmixStatus::Ok
}

/// `(f64, usize)` lengths: the core's f64 and T (= f64) workspaces in one buffer.
fn alignment_lens(n: usize, da: usize, db: usize) -> Option<(usize, usize)> {
    // The core's lengths are sums of products of the sizes, each below these bounds: refuse
    // sizes whose products would overflow.
    let d = da.checked_add(db)?;
    d.checked_mul(d)?.checked_mul(64)?;
    n.checked_mul(d)?.checked_mul(4)?;
    let (f, u, t) = alignment::workspace_len(n, da, db);
    Some((f.checked_add(t)?, u))
}

/// The paper's alignment errors of `b` (`n x db`) mapped into `a` (`n x da`), both row-major:
/// signed permutation, rigid (orthogonal Procrustes), linear (least squares) and ICA (FastICA
/// with scikit-learn's defaults on each, seeded by `random_state`), into `*result`. Workspace
/// sizes from [`unmix_alignment_workspace_len`].
///
/// # Safety
/// Pointers must be valid for the lengths given or implied, and the outputs must not overlap.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unmix_alignment(
    a: *const f64,
    da: usize,
    b: *const f64,
    db: usize,
    n: usize,
    random_state: u64,
    ws_f64: *mut f64,
    ws_f64_len: usize,
    ws_size: *mut usize,
    ws_size_len: usize,
    result: *mut UnmixAlignment,
) -> UnmixStatus {
    if result.is_null() || ws_size.is_null() {
        return UnmixStatus::NullPointer;
    }
    let value = (|| {
        let (Some(la), Some(lb)) = (n.checked_mul(da), n.checked_mul(db)) else {
            return Err(UnmixStatus::DimensionMismatch);
        };
        let (_, _, lt) = alignment::workspace_len(n, da, db);
        // SAFETY: forwarded caller guarantees (null pointers rejected above and in `input`).
        let (a, b, wf, wu) = unsafe {
            (
                input(a, la)?,
                input(b, lb)?,
                output(ws_f64, ws_f64_len)?,
                slice::from_raw_parts_mut(ws_size, ws_size_len),
            )
        };
        if wf.len() < lt {
            return Err(UnmixStatus::BufferTooSmall);
        }
        let (wt, wf) = wf.split_at_mut(lt);
        let opts = AlignmentOptions {
            random_state,
            ..AlignmentOptions::DEFAULT
        };
        Ok(alignment::alignment(a, da, b, db, &opts, wf, wu, wt)?)
    })();
    match value {
        Ok(al) => {
            let (e, r) = (al.normalized, al.raw);
            // SAFETY: non-null and writable by the caller's guarantee.
            unsafe {
                *result = UnmixAlignment {
                    permutation: e.permutation,
                    rigid: e.rigid,
                    linear: e.linear,
                    ica: e.ica,
                    efficiency: al.efficiency,
                    diameter: al.diameter,
                    raw_permutation: r.permutation,
                    raw_rigid: r.rigid,
                    raw_linear: r.linear,
                    raw_ica: r.ica,
                }
            };
            UnmixStatus::Ok
        }
        Err(e) => e,
    }
}

/// Workspace [`unmix_infomec`] needs for `n` samples: `*f64_len` doubles and `*size_len`
/// `size_t`s.
///
/// # Safety
/// `f64_len` and `size_len` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unmix_infomec_workspace_len(
    n: usize,
    f64_len: *mut usize,
    size_len: *mut usize,
) -> UnmixStatus {
    if f64_len.is_null() || size_len.is_null() {
        return UnmixStatus::NullPointer;
    }
    if n.checked_mul(4).is_none() {
        return UnmixStatus::DimensionMismatch;
    }
    let (f, u) = infomec::workspace_len(n);
    // SAFETY: non-null and writable by the caller's guarantee.
    unsafe { (*f64_len, *size_len) = (f, u) };
    UnmixStatus::Ok
}

/// InfoM and InfoC (Hsu et al.) of `latents` (`n x l`, continuous) against `factors` (`n x f`,
/// integer labels): `nmi` (`f x l`) receives the normalised mutual information (kNN estimator
/// with `n_neighbors`, 10 by convention), `active` (`l`) which latents are active, `*infom` and
/// `*infoc` the scores (NaN where undefined: one factor, or one active latent). A factor with one
/// level is `UNMIX_SINGLE_CLASS`; every latent constant is `UNMIX_INVALID_PARAMETER`.
///
/// # Safety
/// Pointers must be valid for the lengths given or implied, and the outputs must not overlap.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unmix_infomec(
    factors: *const i64,
    f: usize,
    latents: *const f64,
    l: usize,
    n: usize,
    n_neighbors: usize,
    nmi: *mut f64,
    active: *mut bool,
    ws_f64: *mut f64,
    ws_f64_len: usize,
    ws_size: *mut usize,
    ws_size_len: usize,
    infom: *mut f64,
    infoc: *mut f64,
) -> UnmixStatus {
    if [factors.is_null(), active.is_null(), ws_size.is_null()]
        .into_iter()
        .chain([infom.is_null(), infoc.is_null()])
        .any(|b| b)
    {
        return UnmixStatus::NullPointer;
    }
    let value = (|| {
        let (Some(lf), Some(ll), Some(lnmi)) =
            (n.checked_mul(f), n.checked_mul(l), f.checked_mul(l))
        else {
            return Err(UnmixStatus::DimensionMismatch);
        };
        // SAFETY: forwarded caller guarantees (null pointers rejected above and in `input`).
        let (s, z, out, act, wf, wu) = unsafe {
            (
                slice::from_raw_parts(factors, lf),
                input(latents, ll)?,
                output(nmi, lnmi)?,
                slice::from_raw_parts_mut(active, l),
                output(ws_f64, ws_f64_len)?,
                slice::from_raw_parts_mut(ws_size, ws_size_len),
            )
        };
        Ok(infomec::infomec(s, f, z, l, n_neighbors, out, act, wf, wu)?)
    })();
    match value {
        Ok(r) => {
            // SAFETY: non-null and writable by the caller's guarantee.
            unsafe {
                *infom = r.infom.unwrap_or(f64::NAN);
                *infoc = r.infoc.unwrap_or(f64::NAN);
            }
            UnmixStatus::Ok
        }
        Err(e) => e,
    }
}

unsafe extern "C" {
    /// The C library's `abort` (every hosted C library has it; newlib does on bare metal).
    fn abort() -> !;
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // The core returns errors for bad data and never panics on it; should a bug reach here,
    // abort as C code would (SIGABRT, a debugger stops there) rather than hang or unwind
    // through C frames.
    // SAFETY: `abort` takes nothing and never returns.
    unsafe { abort() }
}

/// The ABI as Rust lays it out, for the header check (`tests/check.c` compares every entry
/// with `sizeof`, `offsetof` and the enum values the header gives): the status values in
/// order, then each struct's size and its fields' offsets.
#[unsafe(no_mangle)]
pub static unmix_abi_layout: [u32; 47] = {
    use core::mem::{offset_of, size_of};
    type O = UnmixFastIcaOptions;
    type R = UnmixFastIcaReport;
    type A = UnmixAlignment;
    [
        UnmixStatus::Ok as u32,
        UnmixStatus::NullPointer as u32,
        UnmixStatus::NonFinite as u32,
        UnmixStatus::TooFewSamples as u32,
        UnmixStatus::DimensionMismatch as u32,
        UnmixStatus::BufferTooSmall as u32,
        UnmixStatus::InvalidComponents as u32,
        UnmixStatus::RankDeficient as u32,
        UnmixStatus::NoConvergence as u32,
        UnmixStatus::InvalidParameter as u32,
        UnmixStatus::Overflow as u32,
        UnmixStatus::SingleClass as u32,
        UnmixStatus::ZeroVariance as u32,
        UnmixStatus::Infeasible as u32,
        UnmixStatus::RaggedRows as u32,
        size_of::<UnmixStatus>() as u32,
        size_of::<UnmixReport>() as u32,
        offset_of!(UnmixReport, row) as u32,
        offset_of!(UnmixReport, col) as u32,
        offset_of!(UnmixReport, effective_rank) as u32,
        size_of::<O>() as u32,
        offset_of!(O, algorithm) as u32,
        offset_of!(O, fun) as u32,
        offset_of!(O, alpha) as u32,
        offset_of!(O, whiten) as u32,
        offset_of!(O, max_iter) as u32,
        offset_of!(O, tol) as u32,
        offset_of!(O, rank_rtol) as u32,
        offset_of!(O, canonical) as u32,
        offset_of!(O, w_init) as u32,
        offset_of!(O, seed) as u32,
        size_of::<R>() as u32,
        offset_of!(R, n_iter) as u32,
        offset_of!(R, converged) as u32,
        offset_of!(R, last_change) as u32,
        offset_of!(R, error) as u32,
        size_of::<A>() as u32,
        offset_of!(A, permutation) as u32,
        offset_of!(A, rigid) as u32,
        offset_of!(A, linear) as u32,
        offset_of!(A, ica) as u32,
        offset_of!(A, efficiency) as u32,
        offset_of!(A, diameter) as u32,
        offset_of!(A, raw_permutation) as u32,
        offset_of!(A, raw_rigid) as u32,
        offset_of!(A, raw_linear) as u32,
        offset_of!(A, raw_ica) as u32,
    ]
};
