//! `unmix fit`, `transform`, `inverse-transform`: FastICA over files, on all cores.
//!
//! Every pass splits the samples into the core's fixed chunks ([`unmix::ica::CHUNK`] rows), runs
//! them on up to `threads` threads, and merges their statistics in row order: the core's chunked
//! sums make that the same bits as one sequential pass, so `--threads` never changes a result.

use crate::io::Matrix;
use crate::pipeline::moments;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use unmix::Float;
use unmix::ica::{
    self, Algorithm, CHUNK, Contrast, ContrastKind, DeflationStats, FastIcaBuf, FastIcaOptions,
    FastIcaView, IcaInfo, ParallelStats, Passes, SourceStats, WInit, WhitenMode,
};
use unmix::whiten;

/// Passes over white rows in memory, chunk by chunk on a pool of `threads` threads, merged in
/// order.
pub struct ThreadPasses<'a, T> {
    z: &'a [T],
    k: usize,
    threads: usize,
    pool: rayon::ThreadPool,
}

impl<'a, T: Float> ThreadPasses<'a, T> {
    /// Passes over `z` (`n x k`).
    pub fn new(z: &'a [T], k: usize, threads: usize) -> Result<Self> {
        let threads = threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("could not start the worker threads")?;
        Ok(Self {
            z,
            k,
            threads,
            pool,
        })
    }
}

/// One pass of `$stats` over the chunks of `$passes.z` on the pool, merged into `$into` in chunk
/// order. Rounds of one chunk per thread bound the memory for statistics (15 MB a buffer at
/// k = 768) while the pool keeps the threads between rounds and passes. (A macro because each
/// statistics type borrows its per-chunk buffer.)
macro_rules! chunked_pass {
    ($passes:expr, $stats:ident, $into:expr, |$s:ident, $rows:ident| $accumulate:expr) => {{
        use rayon::prelude::*;
        let k = $passes.k;
        let chunks: Vec<&[T]> = $passes.z.chunks(CHUNK * k).collect();
        let round = $passes.threads.min(chunks.len()).max(1);
        let mut bufs: Vec<Vec<f64>> = (0..round)
            .map(|_| vec![0.0; $stats::buffer_len(k)])
            .collect();
        for group in chunks.chunks(round) {
            let results: Vec<unmix::Result<$stats<'_>>> = $passes.pool.install(|| {
                bufs.par_iter_mut()
                    .zip(group.par_iter())
                    .map(|(buf, $rows)| {
                        let mut $s = $stats::new(k, buf)?;
                        crate::simd::fastest(
                            #[inline(always)]
                            || $accumulate,
                        )?;
                        Ok($s)
                    })
                    .collect()
            });
            for r in results {
                $into.merge(&r?)?;
            }
        }
        Ok(())
    }};
}

impl<T: Float> Passes for ThreadPasses<'_, T> {
    fn parallel<C: Contrast>(
        &mut self,
        w: &[f64],
        contrast: &C,
        stats: &mut ParallelStats<'_>,
    ) -> unmix::Result<()> {
        chunked_pass!(self, ParallelStats, stats, |s, rows| s
            .accumulate(w, rows, contrast)
            .map(|()| s.flush(contrast)))
    }
    fn deflation<C: Contrast>(
        &mut self,
        w: &[f64],
        contrast: &C,
        stats: &mut DeflationStats<'_>,
    ) -> unmix::Result<()> {
        chunked_pass!(self, DeflationStats, stats, |s, rows| s
            .accumulate(w, rows, contrast))
    }
    fn sources(&mut self, w: &[f64], stats: &mut SourceStats<'_>) -> unmix::Result<()> {
        chunked_pass!(self, SourceStats, stats, |s, rows| s.accumulate(w, rows))
    }
}

/// Applies `f` to row-chunks of `x` (width `in_w`) writing `out` (width `out_w`) on threads.
pub fn map_rows<T: Float>(
    x: &[T],
    in_w: usize,
    out: &mut [T],
    out_w: usize,
    threads: usize,
    f: impl Fn(&[T], &mut [T]) -> unmix::Result<()> + Sync,
) -> unmix::Result<()> {
    let rows_per = x
        .len()
        .div_ceil(in_w.max(1))
        .div_ceil(threads.max(1))
        .max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = x
            .chunks(rows_per * in_w)
            .zip(out.chunks_mut(rows_per * out_w))
            .map(|(xi, oi)| {
                let f = &f;
                s.spawn(move || {
                    crate::simd::fastest(
                        #[inline(always)]
                        || f(xi, oi),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("transform thread panicked"))
    })
}

/// What `unmix fit` needs beyond the data.
pub struct FitJob<'a> {
    /// Components (default: all features, or the effective rank must allow it).
    pub n_components: Option<usize>,
    /// Core options.
    pub options: FastIcaOptions,
    /// Start matrix or seed.
    pub init: WInit<'a>,
    /// Worker threads.
    pub threads: usize,
    /// Called after each iteration with (iteration, change).
    pub progress: &'a (dyn Fn(usize, f64) + Sync),
}

/// A fitted model as JSON plus its sources.
pub struct Fitted<T> {
    /// The model file's content.
    pub model: Value,
    /// Sources of the training data, `n x k`.
    pub sources: Matrix<T>,
    /// How the iterations ended.
    pub info: IcaInfo,
}

/// Fits FastICA on `x`.
pub fn fit<T: Float + serde::Serialize>(x: &Matrix<T>, job: &FitJob<'_>) -> Result<Fitted<T>> {
    let (n, d) = (x.rows, x.cols);
    let opts = &job.options;
    let k = if opts.whiten == WhitenMode::None {
        d
    } else {
        job.n_components.unwrap_or(d)
    };
    if opts.whiten == WhitenMode::None && job.n_components.is_some_and(|c| c != d) {
        eprintln!(
            "note: --n-components is ignored with --whiten false (as in scikit-learn): k = {d}"
        );
    }
    ica::check_fit(d, k, opts)?;
    let mut storage = vec![T::ZERO; ica::model_len(d, k)];
    let mut model = FastIcaBuf::new(d, k, &mut storage)?;
    let mut w = vec![0.0; k * k];
    ica::start_matrix(job.init, k, &mut w)?;
    let mut effective_rank = d;
    // Whiten (or take the data as white).
    let z_owned;
    let z: &[T] =
        if opts.whiten == WhitenMode::None {
            if n < 2 {
                bail!("too few samples: {n} given, at least 2 needed");
            }
            &x.data
        } else {
            let m = moments(x, job.threads)?;
            let mut ws = vec![0.0; whiten::workspace_len(d, k)];
            let mut wstorage = vec![T::ZERO; whiten::storage_len(d, k)];
            let mut wbuf = whiten::WhitenerBuf::new(d, k, &mut wstorage)?;
            let info = wbuf.fit(m.view(), &ica::pca_options(opts), &mut ws).map_err(|e| match e {
            unmix::Error::RankDeficient { rank, .. } if rank > 0 => anyhow::anyhow!(
                "whitening failed: {e}; keep at most {rank} components (--n-components {rank})"
            ),
            e => anyhow::Error::new(e).context("whitening failed"),
        })?;
            effective_rank = info.effective_rank;
            let v = wbuf.view();
            let parts = model.parts()?;
            parts.mean.copy_from_slice(v.mean());
            parts.whitening.copy_from_slice(v.whitening());
            parts.unwhitening.copy_from_slice(v.unwhitening());
            parts
                .explained_variance
                .copy_from_slice(v.explained_variance());
            let mut z = vec![T::ZERO; n * k];
            map_rows(
                &x.data,
                d,
                &mut z,
                k,
                job.threads,
                #[inline(always)]
                |xi, zi| v.transform_rows(xi, zi),
            )?;
            z_owned = z;
            &z_owned
        };
    let mut passes = ThreadPasses::new(z, k, job.threads)?;
    let mut ws = vec![0.0; ica::unmix_workspace_len(k).max(SourceStats::buffer_len(k) + 4 * k)];
    let info = ica::unmix(
        &mut passes,
        k,
        &opts.contrast,
        &opts.ica,
        &mut w,
        &mut ws,
        job.progress,
    )?;
    let mut moments3 = vec![0.0; 3 * k];
    ica::finish_model(
        &mut passes,
        d,
        k,
        opts,
        &mut w,
        &mut moments3,
        &mut ws,
        n as u64,
        model.parts()?,
    )?;
    model.set_info(info);
    let view = model.view();
    let mut sources = vec![T::ZERO; n * k];
    map_rows(
        &x.data,
        d,
        &mut sources,
        k,
        job.threads,
        #[inline(always)]
        |xi, si| view.transform_rows(xi, si),
    )?;
    let model_json = to_json(&view, opts, effective_rank, n);
    Ok(Fitted {
        model: model_json,
        sources: Matrix::new(n, k, sources)?,
        info,
    })
}

fn rows_of<T: Float>(flat: &[T], width: usize) -> Vec<Vec<f64>> {
    flat.chunks(width)
        .map(|r| r.iter().map(|v| v.to_f64()).collect())
        .collect()
}

fn to_json<T: Float>(
    v: &FastIcaView<'_, T>,
    o: &FastIcaOptions,
    effective_rank: usize,
    n: usize,
) -> Value {
    let (fun, alpha) = match o.contrast {
        ContrastKind::LogCosh(c) => ("logcosh", c.alpha()),
        ContrastKind::Exp => ("exp", 1.0),
        ContrastKind::Cube => ("cube", 1.0),
    };
    let info = v.info();
    let w = v.whitener();
    json!({
        "format": "unmix-fastica",
        "version": 1,
        "dtype": if std::mem::size_of::<T>() == 4 { "float32" } else { "float64" },
        "algorithm": match o.ica.algorithm { Algorithm::Parallel => "parallel", Algorithm::Deflation => "deflation" },
        "fun": fun,
        "alpha": alpha,
        "whiten": match o.whiten {
            WhitenMode::UnitVariance => "unit-variance",
            WhitenMode::ArbitraryVariance => "arbitrary-variance",
            WhitenMode::None => "false",
        },
        "max_iter": o.ica.max_iter,
        "tol": o.ica.tol,
        "canonical": o.canonical,
        "n_samples": n,
        "n_features": v.n_features(),
        "n_components": v.n_components(),
        "effective_rank": effective_rank,
        "n_iter": info.n_iter,
        "converged": info.converged,
        "last_change": info.last_change,
        "mean": w.mean().iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
        "whitening": rows_of(w.whitening(), v.n_features()),
        "unwhitening": rows_of(w.unwhitening(), v.n_components()),
        "explained_variance": w.explained_variance().iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
        "unmixing": rows_of(v.unmixing(), v.n_components()),
        "components": rows_of(v.components(), v.n_features()),
        "mixing": rows_of(v.mixing(), v.n_components()),
    })
}

/// A model read back from JSON, in the core's flat layout.
pub struct LoadedModel {
    /// Features.
    pub d: usize,
    /// Components.
    pub k: usize,
    /// `float32` or `float64`.
    pub dtype: String,
    /// [`ica::model_len`] values.
    pub storage: Vec<f64>,
    /// Iterations etc.
    pub info: IcaInfo,
}

/// Reads a model written by `unmix fit`.
pub fn load_model(path: &std::path::Path) -> Result<LoadedModel> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot open {}", path.display()))?;
    let v: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not valid JSON", path.display()))?;
    if v["format"] != "unmix-fastica" {
        bail!(
            "{}: not an unmix FastICA model (format {:?})",
            path.display(),
            v["format"]
        );
    }
    let num = |key: &str| -> Result<usize> {
        v[key]
            .as_u64()
            .map(|x| x as usize)
            .with_context(|| format!("{}: missing {key}", path.display()))
    };
    let (d, k) = (num("n_features")?, num("n_components")?);
    let mut storage = Vec::with_capacity(ica::model_len(d, k));
    let mut take = |key: &str, rows: usize, cols: usize| -> Result<()> {
        let flat: Vec<f64> = match &v[key] {
            Value::Array(a) if cols == 1 && a.iter().all(Value::is_number) => {
                a.iter().filter_map(Value::as_f64).collect()
            }
            Value::Array(a) => a
                .iter()
                .flat_map(|r| {
                    r.as_array()
                        .into_iter()
                        .flatten()
                        .map(|x| x.as_f64().unwrap_or(f64::NAN))
                })
                .collect(),
            _ => bail!("{}: missing {key}", path.display()),
        };
        if flat.len() != rows * cols || flat.iter().any(|x| !x.is_finite()) {
            bail!(
                "{}: {key} must be {rows} x {cols} finite numbers",
                path.display()
            );
        }
        storage.extend(flat);
        Ok(())
    };
    take("mean", d, 1)?;
    take("whitening", k, d)?;
    take("unwhitening", d, k)?;
    take("explained_variance", k, 1)?;
    take("unmixing", k, k)?;
    take("components", k, d)?;
    take("mixing", d, k)?;
    let info = IcaInfo {
        n_iter: v["n_iter"].as_u64().unwrap_or(0) as usize,
        converged: v["converged"].as_bool().unwrap_or(false),
        last_change: v["last_change"].as_f64().unwrap_or(f64::NAN),
    };
    let dtype = v["dtype"].as_str().unwrap_or("float64").to_string();
    Ok(LoadedModel {
        d,
        k,
        dtype,
        storage,
        info,
    })
}
