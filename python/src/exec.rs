//! The two executors of the Python package: rows in memory on a thread pool, and rows in a Dask
//! array, whose passes run on the workers from their [`PassSpec`] (`dask.py` builds the graph).
//! Both reduce in the order of [`crate::tree`], so they give the same bits.

use crate::tree::{Node, Segment, leaf};
use harness::simd::{GemmFloat, centred_product};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rayon::prelude::*;
use unmix::ica::{CHUNK, ContrastKind, Executor, LogCosh, Pass, PassSpec, Rows};
use unmix::whiten::WhitenerView;

/// `z = W (x - mean)` for rows `x` (`d` wide) into `z` (`k` wide), as the CLI whitens (its GEMM
/// from 16 components): the same function in every process, so the same bits.
pub fn whiten_rows<T: GemmFloat>(
    v: &WhitenerView<'_, T>,
    x: &[T],
    z: &mut [T],
) -> unmix::Result<()> {
    let (d, k) = (v.n_features(), v.n_components());
    harness::simd::fastest(
        #[inline(always)]
        || {
            centred_product(x, d, v.mean(), v.whitening(), z, k, |x, z| {
                v.transform_rows(x, z)
            })
        },
    )
}

/// A whitener's storage (`mean | whitening | unwhitening | explained variance`).
pub fn whitener_storage<T: unmix::Float>(v: &WhitenerView<'_, T>) -> Vec<T> {
    let mut s = v.mean().to_vec();
    s.extend_from_slice(v.whitening());
    s.extend_from_slice(v.unwhitening());
    s.extend_from_slice(v.explained_variance());
    s
}

/// Runs `pass` over `data` (`width` wide) on `pool`: rounds of one chunk per thread, pushed into
/// the segment in row order, so at most `threads` leaves and the segment are held.
pub fn run_in_memory<T: Float2, P: Pass<T>>(
    pool: &rayon::ThreadPool,
    data: &[T],
    width: usize,
    pass: &P,
) -> unmix::Result<Segment> {
    let threads = pool.current_num_threads().max(1);
    let chunks: Vec<(usize, &[T])> = data.chunks(CHUNK * width.max(1)).enumerate().collect();
    let mut seg = Segment::default();
    for group in chunks.chunks(threads) {
        let leaves: Vec<unmix::Result<Node>> = pool.install(|| {
            group
                .par_iter()
                .map(|&(i, rows)| leaf(pass, i as u64, rows))
                .collect()
        });
        for node in leaves {
            seg.push(pass, node?)?;
        }
    }
    Ok(seg)
}

/// The float types of the package.
pub trait Float2: GemmFloat + numpy::Element + Send + Sync {}
impl Float2 for f32 {}
impl Float2 for f64 {}

/// Passes over rows in memory on a rayon pool; the white rows are stored (`n x k`).
pub struct MemoryExec<'a, T> {
    pub x: &'a [T],
    pub d: usize,
    pub white: Option<(Vec<T>, usize)>,
    pub pool: &'a rayon::ThreadPool,
}

impl<T: Float2> Executor<T> for MemoryExec<'_, T> {
    fn pass<P: Pass<T>>(&mut self, rows: Rows, pass: &P, total: &mut [f64]) -> unmix::Result<()> {
        let (data, width) = match (rows, &self.white) {
            (Rows::White, Some((z, k))) => (&z[..], *k),
            _ => (self.x, self.d),
        };
        run_in_memory(self.pool, data, width, pass)?.finish::<T, _>(pass, total)
    }
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, T>>) -> unmix::Result<()> {
        self.white = match whitener {
            None => None,
            Some(v) => {
                let (d, k) = (self.d, v.n_components());
                let mut z = vec![T::ZERO; self.x.len() / d * k];
                harness::fastica::map_rows(self.pool, self.x, d, &mut z, k, |xi, zi| {
                    whiten_rows(v, xi, zi)
                })?;
                Some((z, k))
            }
        };
        Ok(())
    }
}

/// Passes run by a Python callable (`unmix.dask`'s runner): each pass goes out as a dict (its
/// spec, and the whitener for white passes) and comes back as a [`Segment`].
pub struct RemoteExec {
    pub runner: Py<PyAny>,
    pub d: usize,
    pub dtype: &'static str,
    /// `(k, storage)` of the whitener, as `T` values widened to `f64` for shipping.
    pub whitener: Option<(usize, Vec<f64>)>,
    /// The Python error that stopped the fit, re-raised after it.
    pub error: Option<PyErr>,
}

/// A spec as a Python dict.
pub fn spec_to_dict<'py>(py: Python<'py>, spec: &PassSpec<'_>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (kind, w, contrast) = match *spec {
        PassSpec::Moments { d: dim } => {
            d.set_item("d", dim)?;
            ("moments", None, None)
        }
        PassSpec::Parallel { k, w, contrast } => {
            d.set_item("k", k)?;
            ("parallel", Some(w), Some(contrast))
        }
        PassSpec::Deflation { k, w, contrast } => {
            d.set_item("k", k)?;
            ("deflation", Some(w), Some(contrast))
        }
        PassSpec::Source { k, w } => {
            d.set_item("k", k)?;
            ("source", Some(w), None)
        }
    };
    d.set_item("kind", kind)?;
    if let Some(w) = w {
        d.set_item("w", PyArray1::from_slice(py, w))?;
    }
    if let Some(c) = contrast {
        d.set_item("contrast", c.as_str())?;
        if let ContrastKind::LogCosh(l) = c {
            d.set_item("alpha", l.alpha())?;
        }
    }
    Ok(d)
}

/// A spec from its dict; `w` borrows the dict's array.
pub fn spec_from_dict<'a>(
    dict: &Bound<'_, PyDict>,
    w: &'a Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<PassSpec<'a>> {
    let get_usize = |key: &str| -> PyResult<usize> {
        dict.get_item(key)?
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))?
            .extract()
    };
    let kind: String = dict
        .get_item("kind")?
        .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("kind"))?
        .extract()?;
    let w = || -> PyResult<&'a [f64]> {
        w.as_ref()
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("w"))?
            .as_slice()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    };
    let contrast = || -> PyResult<ContrastKind> {
        let name: String = dict
            .get_item("contrast")?
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("contrast"))?
            .extract()?;
        let c: ContrastKind = name.parse().map_err(crate::value_error)?;
        Ok(match c {
            ContrastKind::LogCosh(_) => {
                let alpha: f64 = match dict.get_item("alpha")? {
                    Some(a) => a.extract()?,
                    None => 1.0,
                };
                ContrastKind::LogCosh(LogCosh::new(alpha).map_err(crate::value_error)?)
            }
            other => other,
        })
    };
    Ok(match kind.as_str() {
        "moments" => PassSpec::Moments { d: get_usize("d")? },
        "parallel" => PassSpec::Parallel {
            k: get_usize("k")?,
            w: w()?,
            contrast: contrast()?,
        },
        "deflation" => PassSpec::Deflation {
            k: get_usize("k")?,
            w: w()?,
            contrast: contrast()?,
        },
        "source" => PassSpec::Source {
            k: get_usize("k")?,
            w: w()?,
        },
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown pass kind {other:?}"
            )));
        }
    })
}

/// A segment as a Python list of `(level, index, partial)`.
pub fn segment_to_py<'py>(py: Python<'py>, seg: Segment) -> PyResult<Bound<'py, PyList>> {
    let items: Vec<Bound<'py, PyAny>> = seg
        .nodes
        .into_iter()
        .map(|n| {
            let arr = PyArray1::from_vec(py, n.partial);
            (n.level, n.index, arr)
                .into_pyobject(py)
                .map(|t| t.into_any())
        })
        .collect::<PyResult<_>>()?;
    PyList::new(py, items)
}

/// A segment from its Python list.
pub fn segment_from_py(list: &Bound<'_, PyAny>) -> PyResult<Segment> {
    let mut nodes = Vec::new();
    for item in list.try_iter()? {
        let (level, index, partial): (u32, u64, Bound<'_, PyAny>) = item?.extract()?;
        let partial: PyReadonlyArray1<'_, f64> = partial.extract()?;
        nodes.push(Node {
            level,
            index,
            partial: partial.as_array().to_vec(),
        });
    }
    Ok(Segment { nodes })
}

impl<T: Float2> Executor<T> for RemoteExec {
    fn pass<P: Pass<T>>(&mut self, rows: Rows, pass: &P, total: &mut [f64]) -> unmix::Result<()> {
        let Some(spec) = pass.spec() else {
            return Err(unmix::Error::InvalidParameter(
                "this pass cannot be described for Dask workers",
            ));
        };
        let result = Python::attach(|py| -> PyResult<Segment> {
            let d = spec_to_dict(py, &spec)?;
            d.set_item("dtype", self.dtype)?;
            d.set_item("n_features", self.d)?;
            match (rows, &self.whitener) {
                (Rows::White, Some((k, storage))) => {
                    d.set_item("whitener", PyArray1::from_slice(py, storage))?;
                    d.set_item("whitener_k", *k)?;
                }
                _ => {
                    d.set_item("whitener", py.None())?;
                }
            }
            let seg = self.runner.bind(py).call1((d,))?;
            segment_from_py(&seg)
        });
        match result {
            Ok(seg) => seg.finish::<T, _>(pass, total),
            Err(e) => {
                self.error = Some(e);
                Err(unmix::Error::InvalidParameter("a Dask pass failed"))
            }
        }
    }
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, T>>) -> unmix::Result<()> {
        self.whitener = whitener.map(|v| {
            let s: Vec<f64> = whitener_storage(v).iter().map(|x| x.to_f64()).collect();
            (v.n_components(), s)
        });
        Ok(())
    }
}

/// The segment of one block of a pass on a worker: `x` (rows `first ..`, `d` wide; `first` a
/// multiple of [`CHUNK`]) whitened chunk by chunk when `whitener` is given (`k`), each chunk a
/// leaf.
pub fn block_segment<T: Float2>(
    spec: PassSpec<'_>,
    x: &[T],
    d: usize,
    first: u64,
    whitener: Option<(usize, &[T])>,
) -> unmix::Result<Segment> {
    if !first.is_multiple_of(CHUNK as u64) {
        return Err(unmix::Error::InvalidParameter(
            "a block must start at a multiple of the core's chunk of 4096 rows",
        ));
    }
    let kernel = harness::simd::CliKernel::for_this_cpu();
    let pass = spec.pass(kernel)?;
    let view = match whitener {
        Some((k, s)) => Some(WhitenerView::from_parts(d, k, s)?),
        None => None,
    };
    let width = view.map_or(d, |v| v.n_components());
    if width != spec.width() {
        return Err(unmix::Error::DimensionMismatch {
            expected: spec.width(),
            found: width,
        });
    }
    let mut seg = Segment::default();
    let mut z = Vec::new();
    for (i, piece) in x.chunks(CHUNK * d.max(1)).enumerate() {
        let index = first / CHUNK as u64 + i as u64;
        let rows: &[T] = match &view {
            Some(v) => {
                z.resize(piece.len() / d * width, T::ZERO);
                whiten_rows(v, piece, &mut z).map_err(|e| renumber(e, index))?;
                &z
            }
            None => piece,
        };
        seg.push::<T, _>(&pass, leaf(&pass, index, rows)?)?;
    }
    Ok(seg)
}

fn renumber(e: unmix::Error, chunk: u64) -> unmix::Error {
    match e {
        unmix::Error::NonFinite { row, col } => unmix::Error::NonFinite {
            row: row + chunk * CHUNK as u64,
            col,
        },
        other => other,
    }
}
