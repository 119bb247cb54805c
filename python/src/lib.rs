//! `unmix._unmix`: the Rust half of the Python package. Thin functions over the core (fits,
//! transforms, metrics) and the worker side of the Dask executor; the estimators, validation and
//! the Dask graphs live in the pure-Python package `unmix`.
//!
//! Arrays come in as numpy arrays of `float32` or `float64` (C order; the Python side makes them
//! so, copying only when the layout requires it) and are read in place. Every fit, pass and
//! transform runs with the GIL released. Errors are `ValueError`s carrying the core's message.

mod exec;
mod tree;

use exec::{
    Float2, MemoryExec, RemoteExec, block_segment, segment_from_py, segment_to_py, spec_from_dict,
};
use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use unmix::ica::{
    Algorithm, ContrastKind, Executor, FastIcaBuf, FastIcaOptions, FastIcaView, IcaInfo, LogCosh,
    MomentsPass, Pass, Rows, WInit, WhitenMode, fit_workspace_len_with, model_len,
};
use unmix::whiten::{self, FitInfo, Method, Rotation, WhitenOptions, WhitenerBuf, WhitenerView};

/// A `ValueError` with the message of any displayable error.
pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn pool(threads: usize) -> PyResult<rayon::ThreadPool> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    harness::fastica::pool(threads).map_err(value_error)
}

/// A 2-D array's rows as a slice (C order is required; the Python side ensures it).
fn rows<'a, T: numpy::Element>(
    a: &'a PyReadonlyArray2<'_, T>,
) -> PyResult<(&'a [T], usize, usize)> {
    let (n, d) = (a.shape()[0], a.shape()[1]);
    // `as_slice` accepts Fortran order too, whose rows are not contiguous: refuse it.
    if !a.is_c_contiguous() {
        return Err(PyValueError::new_err("the array must be C-contiguous"));
    }
    let s = a
        .as_slice()
        .map_err(|_| PyValueError::new_err("the array must be C-contiguous"))?;
    Ok((s, n, d))
}

fn slice1<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err("the array must be contiguous"))
}

/// The float type of an array, or a `TypeError`.
enum Data<'py> {
    F32(PyReadonlyArray2<'py, f32>),
    F64(PyReadonlyArray2<'py, f64>),
}

fn data<'py>(x: &Bound<'py, PyAny>, what: &str) -> PyResult<Data<'py>> {
    if let Ok(a) = x.extract::<PyReadonlyArray2<'py, f64>>() {
        return Ok(Data::F64(a));
    }
    if let Ok(a) = x.extract::<PyReadonlyArray2<'py, f32>>() {
        return Ok(Data::F32(a));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a 2-D numpy array of float32 or float64"
    )))
}

/// Core options from scikit-learn's parameter values (already validated in Python; checked
/// again here).
fn fastica_options(
    algorithm: &str,
    whiten: &str,
    fun: &str,
    alpha: f64,
    max_iter: usize,
    tol: f64,
    canonical: bool,
) -> PyResult<FastIcaOptions> {
    let mut opts = FastIcaOptions::DEFAULT;
    opts.ica.algorithm = algorithm.parse::<Algorithm>().map_err(value_error)?;
    opts.ica.max_iter = max_iter;
    opts.ica.tol = tol;
    opts.whiten = whiten.parse::<WhitenMode>().map_err(value_error)?;
    opts.contrast = match fun.parse::<ContrastKind>().map_err(value_error)? {
        ContrastKind::LogCosh(_) => {
            ContrastKind::LogCosh(LogCosh::new(alpha).map_err(value_error)?)
        }
        other => other,
    };
    opts.canonical = canonical;
    Ok(opts)
}

fn fit_error(e: unmix::Error) -> PyErr {
    match e {
        unmix::Error::RankDeficient { rank, .. } if rank > 0 => PyValueError::new_err(format!(
            "{e}; keep at most {rank} components (n_components={rank})"
        )),
        e => value_error(e),
    }
}

type Fitted<T> = (Vec<T>, IcaInfo, FitInfo);

/// The core's one fit driver over `exec`, on the CLI's kernel.
fn fit_with<T: Float2, E: Executor<T>>(
    exec: &mut E,
    d: usize,
    k: usize,
    opts: &FastIcaOptions,
    w_init: &[f64],
) -> unmix::Result<Fitted<T>> {
    let kernel = harness::simd::CliKernel::for_this_cpu();
    let mut storage = vec![T::ZERO; model_len(d, k)];
    let mut staging = vec![T::ZERO; model_len(d, k)];
    let mut ws = vec![0.0; fit_workspace_len_with(d, k, kernel)];
    let mut model = FastIcaBuf::new(d, k, &mut storage)?;
    let info = model.fit_with(
        exec,
        kernel,
        opts,
        WInit::Matrix(w_init),
        &mut staging,
        &mut ws,
        &mut |_, _| {},
    )?;
    let whitening = model.view().whitener().info();
    Ok((storage, info, whitening))
}

fn fit_result<'py, T: Float2>(
    py: Python<'py>,
    (model, info, w): Fitted<T>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("model", PyArray1::from_vec(py, model))?;
    d.set_item("n_iter", info.n_iter)?;
    d.set_item("converged", info.converged)?;
    d.set_item("last_change", info.last_change)?;
    d.set_item("n_samples", w.n_samples)?;
    d.set_item("effective_rank", w.effective_rank)?;
    Ok(d)
}

/// FastICA on rows in memory (`n x d`, float32 or float64) to `k` components from `w_init`
/// (`k x k`), on `n_threads` threads (0: all cores). Returns a dict: `model` (the core's
/// `model_len` layout), `n_iter`, `converged`, `last_change`, `n_samples`, `effective_rank`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (x, k, algorithm, whiten, fun, alpha, max_iter, tol, w_init, canonical, n_threads))]
fn fastica_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    k: usize,
    algorithm: &str,
    whiten: &str,
    fun: &str,
    alpha: f64,
    max_iter: usize,
    tol: f64,
    w_init: PyReadonlyArray2<'py, f64>,
    canonical: bool,
    n_threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = fastica_options(algorithm, whiten, fun, alpha, max_iter, tol, canonical)?;
    let (w, _, _) = rows(&w_init)?;
    let pool = pool(n_threads)?;
    macro_rules! go {
        ($a:expr) => {{
            let (x, _, d) = rows(&$a)?;
            let r = py
                .detach(|| {
                    let mut exec = MemoryExec {
                        x,
                        d,
                        white: None,
                        pool: &pool,
                    };
                    // Inside the pool, so that the update's products use its threads.
                    pool.install(|| fit_with(&mut exec, d, k, &opts, w))
                })
                .map_err(fit_error)?;
            fit_result(py, r)
        }};
    }
    match data(x, "X")? {
        Data::F32(a) => go!(a),
        Data::F64(a) => go!(a),
    }
}

/// FastICA whose passes run through `runner(spec) -> segment` (`unmix.dask`), over `d`
/// features of `dtype`. Returns what [`fastica_fit`] returns.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (runner, d, dtype, k, algorithm, whiten, fun, alpha, max_iter, tol, w_init, canonical))]
fn fastica_fit_remote<'py>(
    py: Python<'py>,
    runner: Py<PyAny>,
    d: usize,
    dtype: &str,
    k: usize,
    algorithm: &str,
    whiten: &str,
    fun: &str,
    alpha: f64,
    max_iter: usize,
    tol: f64,
    w_init: PyReadonlyArray2<'py, f64>,
    canonical: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = fastica_options(algorithm, whiten, fun, alpha, max_iter, tol, canonical)?;
    let (w, _, _) = rows(&w_init)?;
    let mut exec = remote(runner, d, dtype)?;
    macro_rules! go {
        ($t:ty) => {{
            let r = py.detach(|| fit_with::<$t, _>(&mut exec, d, k, &opts, w));
            let r = finish_remote(exec, r)?;
            fit_result(py, r)
        }};
    }
    if dtype == "float32" {
        go!(f32)
    } else {
        go!(f64)
    }
}

fn remote(runner: Py<PyAny>, d: usize, dtype: &str) -> PyResult<RemoteExec> {
    let dtype = match dtype {
        "float32" => "float32",
        "float64" => "float64",
        other => {
            return Err(PyTypeError::new_err(format!(
                "dtype must be float32 or float64, not {other}"
            )));
        }
    };
    Ok(RemoteExec {
        runner,
        d,
        dtype,
        whitener: None,
        error: None,
    })
}

/// The Python error a remote pass raised, if any, else the core's.
fn finish_remote<R>(exec: RemoteExec, r: unmix::Result<R>) -> PyResult<R> {
    match (r, exec.error) {
        (Ok(r), _) => Ok(r),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(fit_error(e)),
    }
}

/// Applies `f(model view, rows in, rows out)` to `x` on a pool, in the core's chunks.
fn map_model<'py, T: Float2>(
    py: Python<'py>,
    x: &PyReadonlyArray2<'py, T>,
    out_w: usize,
    n_threads: usize,
    f: impl Fn(&[T], &mut [T]) -> unmix::Result<()> + Sync + Send,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    let (x, n, d) = rows(x)?;
    let pool = pool(n_threads)?;
    let mut out = vec![T::ZERO; n * out_w];
    py.detach(|| harness::fastica::map_rows(&pool, x, d, &mut out, out_w, f))
        .map_err(value_error)?;
    let out = PyArray1::from_vec(py, out);
    out.reshape([n, out_w])
}

/// Checks an array's width.
fn width(d_arr: usize, expected: usize, what: &str) -> PyResult<()> {
    if d_arr != expected {
        return Err(PyValueError::new_err(format!(
            "{what} has {d_arr} columns; the model expects {expected}"
        )));
    }
    Ok(())
}

/// Sources of `x` under a model (`model_len(d, k)` values of x's dtype).
#[pyfunction]
fn fastica_transform<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    d: usize,
    k: usize,
    x: &Bound<'py, PyAny>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    fastica_apply(py, model, d, k, x, n_threads, false)
}

/// Samples from sources `s` (`n x k`) under a model.
#[pyfunction]
fn fastica_inverse<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    d: usize,
    k: usize,
    s: &Bound<'py, PyAny>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    fastica_apply(py, model, d, k, s, n_threads, true)
}

/// The rows of `x` mapped by a model: to sources (`n x d` -> `n x k`), or back when `inverse`.
fn fastica_apply<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    d: usize,
    k: usize,
    x: &Bound<'py, PyAny>,
    n_threads: usize,
    inverse: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (width_in, width_out) = if inverse { (k, d) } else { (d, k) };
    macro_rules! go {
        ($a:expr, $t:ty) => {{
            let m: PyReadonlyArray1<'py, $t> = model
                .extract()
                .map_err(|_| PyTypeError::new_err("X must have the model's dtype"))?;
            let view = FastIcaView::from_parts(d, k, slice1(&m)?, IcaInfo::default())
                .map_err(value_error)?;
            width($a.shape()[1], width_in, "X")?;
            Ok(map_model(py, &$a, width_out, n_threads, |xi, oi| {
                if inverse {
                    harness::simd::fastest(|| view.inverse_transform_rows(xi, oi))
                } else {
                    harness::fastica::sources_of(&view, xi, oi)
                }
            })?
            .into_any())
        }};
    }
    match data(x, "X")? {
        Data::F32(a) => go!(a, f32),
        Data::F64(a) => go!(a, f64),
    }
}

fn whiten_options(
    method: &str,
    rotation: &str,
    seed: u64,
    ddof: u32,
    rank_rtol: f64,
) -> PyResult<WhitenOptions> {
    Ok(WhitenOptions {
        method: method.parse::<Method>().map_err(value_error)?,
        rotation: rotation
            .parse::<Rotation>()
            .map_err(value_error)?
            .with_seed(seed),
        ddof,
        rank_rtol,
    })
}

/// The whitener of the rows `exec` passes over: one moments pass, then the fit.
fn whitener_with<T: Float2, E: Executor<T>>(
    exec: &mut E,
    d: usize,
    k: usize,
    opts: &WhitenOptions,
) -> unmix::Result<(Vec<T>, FitInfo)> {
    let pass = MomentsPass::new(d)?;
    let mut total = vec![0.0; Pass::<T>::partial_len(&pass)];
    exec.pass(Rows::Input, &pass, &mut total)?;
    let mut storage = vec![T::ZERO; whiten::storage_len(d, k)];
    let mut w = WhitenerBuf::new(d, k, &mut storage)?;
    let info = w.fit(
        pass.view(&total)?,
        opts,
        &mut vec![0.0; whiten::workspace_len(d, k)],
    )?;
    Ok((storage, info))
}

fn whitener_result<'py, T: Float2>(
    py: Python<'py>,
    (storage, info): (Vec<T>, FitInfo),
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("storage", PyArray1::from_vec(py, storage))?;
    d.set_item("n_samples", info.n_samples)?;
    d.set_item("effective_rank", info.effective_rank)?;
    d.set_item("max_eigenvalue", info.max_eigenvalue)?;
    Ok(d)
}

/// A whitener `d -> k` of rows in memory. Returns a dict: `storage` (the core's `storage_len`
/// layout), `n_samples`, `effective_rank`, `max_eigenvalue`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn whitener_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    k: usize,
    method: &str,
    rotation: &str,
    seed: u64,
    ddof: u32,
    rank_rtol: f64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = whiten_options(method, rotation, seed, ddof, rank_rtol)?;
    let pool = pool(n_threads)?;
    macro_rules! go {
        ($a:expr) => {{
            let (x, _, d) = rows(&$a)?;
            let r = py
                .detach(|| {
                    let mut exec = MemoryExec {
                        x,
                        d,
                        white: None,
                        pool: &pool,
                    };
                    whitener_with(&mut exec, d, k, &opts)
                })
                .map_err(fit_error)?;
            whitener_result(py, r)
        }};
    }
    match data(x, "X")? {
        Data::F32(a) => go!(a),
        Data::F64(a) => go!(a),
    }
}

/// A whitener whose moments pass runs through `runner` (`unmix.dask`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn whitener_fit_remote<'py>(
    py: Python<'py>,
    runner: Py<PyAny>,
    d: usize,
    dtype: &str,
    k: usize,
    method: &str,
    rotation: &str,
    seed: u64,
    ddof: u32,
    rank_rtol: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = whiten_options(method, rotation, seed, ddof, rank_rtol)?;
    let mut exec = remote(runner, d, dtype)?;
    macro_rules! go {
        ($t:ty) => {{
            let r = py.detach(|| whitener_with::<$t, _>(&mut exec, d, k, &opts));
            let r = finish_remote(exec, r)?;
            whitener_result(py, r)
        }};
    }
    if dtype == "float32" {
        go!(f32)
    } else {
        go!(f64)
    }
}

/// Whitens `x` (`inverse`: maps white rows back) with a whitener's storage.
#[pyfunction]
fn whitener_transform<'py>(
    py: Python<'py>,
    storage: &Bound<'py, PyAny>,
    d: usize,
    k: usize,
    x: &Bound<'py, PyAny>,
    inverse: bool,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    macro_rules! go {
        ($a:expr, $t:ty) => {{
            let m: PyReadonlyArray1<'py, $t> = storage
                .extract()
                .map_err(|_| PyTypeError::new_err("X must have the whitener's dtype"))?;
            let view = WhitenerView::from_parts(d, k, slice1(&m)?).map_err(value_error)?;
            let out = if inverse {
                width($a.shape()[1], k, "X")?;
                map_model(py, &$a, d, n_threads, |zi, xi| {
                    harness::simd::fastest(|| view.inverse_transform_rows(zi, xi))
                })?
            } else {
                width($a.shape()[1], d, "X")?;
                map_model(py, &$a, k, n_threads, |xi, zi| {
                    exec::whiten_rows(&view, xi, zi)
                })?
            };
            Ok(out.into_any())
        }};
    }
    match data(x, "X")? {
        Data::F32(a) => go!(a, f32),
        Data::F64(a) => go!(a, f64),
    }
}

/// The segment of one block of a pass, on a Dask worker: `x` holds rows `first ..` of the
/// pass's input (`first` a multiple of the core's chunk), whitened by `whitener` (`k`, in
/// `f64`, converted to x's dtype exactly) for white passes.
#[pyfunction]
#[pyo3(signature = (spec, x, first, whitener=None, k=None))]
fn pass_block<'py>(
    py: Python<'py>,
    spec: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
    first: u64,
    whitener: Option<PyReadonlyArray1<'py, f64>>,
    k: Option<usize>,
) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    let w: Option<PyReadonlyArray1<'py, f64>> = match spec.get_item("w")? {
        Some(w) => Some(w.extract()?),
        None => None,
    };
    let spec = spec_from_dict(spec, &w)?;
    macro_rules! go {
        ($a:expr, $t:ty) => {{
            let (x, _, d) = rows(&$a)?;
            let wh: Option<(usize, Vec<$t>)> = match (&whitener, k) {
                (Some(s), Some(k)) => Some((k, slice1(s)?.iter().map(|v| *v as $t).collect())),
                (None, _) => None,
                (Some(_), None) => return Err(PyValueError::new_err("whitener needs k")),
            };
            let seg = py
                .detach(|| block_segment(spec, x, d, first, wh.as_ref().map(|(k, s)| (*k, &s[..]))))
                .map_err(value_error)?;
            segment_to_py(py, seg)
        }};
    }
    match data(x, "a block")? {
        Data::F32(a) => go!(a, f32),
        Data::F64(a) => go!(a, f64),
    }
}

/// Two adjacent segments of a pass combined (the tree reduction's step).
#[pyfunction]
fn pass_combine<'py>(
    py: Python<'py>,
    spec: &Bound<'py, PyDict>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    let w: Option<PyReadonlyArray1<'py, f64>> = match spec.get_item("w")? {
        Some(w) => Some(w.extract()?),
        None => None,
    };
    let spec = spec_from_dict(spec, &w)?;
    let pass = spec
        .pass(harness::simd::CliKernel::for_this_cpu())
        .map_err(value_error)?;
    let (mut a, b) = (segment_from_py(a)?, segment_from_py(b)?);
    py.detach(|| a.append::<f64, _>(&pass, b))
        .map_err(value_error)?;
    segment_to_py(py, a)
}

/// The core's fixed chunk (rows).
#[pyfunction]
fn chunk_rows() -> usize {
    unmix::ica::CHUNK
}

/// `unmix.metrics` lives in metrics.rs.
mod metrics;

#[pymodule]
fn _unmix(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fastica_fit, m)?)?;
    m.add_function(wrap_pyfunction!(fastica_fit_remote, m)?)?;
    m.add_function(wrap_pyfunction!(fastica_transform, m)?)?;
    m.add_function(wrap_pyfunction!(fastica_inverse, m)?)?;
    m.add_function(wrap_pyfunction!(whitener_fit, m)?)?;
    m.add_function(wrap_pyfunction!(whitener_fit_remote, m)?)?;
    m.add_function(wrap_pyfunction!(whitener_transform, m)?)?;
    m.add_function(wrap_pyfunction!(pass_block, m)?)?;
    m.add_function(wrap_pyfunction!(pass_combine, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_rows, m)?)?;
    metrics::register(m)?;
    m.add("__core_version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
