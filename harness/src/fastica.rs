//! `unmix fit`, `transform`, `inverse-transform`: FastICA over files, on all cores.
//!
//! The fit is the core's one driver ([`FastIcaBuf::fit_with`]); this module supplies its
//! [`Executor`]: every pass splits the samples into the core's fixed chunks
//! ([`unmix::ica::CHUNK`] rows), runs them on a rayon pool of `threads` threads, and merges their
//! partial results in row order. The core's chunked sums make that the same bits as one
//! sequential pass, so `--threads` never changes a result.

use crate::io::Matrix;
use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde_json::{Value, json};
use unmix::Float;
use unmix::ica::{
    self, Algorithm, CHUNK, ContrastKind, Executor, FastIcaBuf, FastIcaOptions, FastIcaView,
    IcaInfo, Pass, Portable, Rows, WInit, WhitenMode,
};
use unmix::whiten::WhitenerView;

/// A rayon pool of `threads` threads.
pub fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .context("could not start the worker threads")
}

/// Passes over row-major samples in memory, chunk by chunk on a thread pool, merged in order.
pub struct PoolExecutor<'a, T> {
    x: &'a [T],
    d: usize,
    white: Option<(Vec<T>, usize)>,
    threads: usize,
    pool: &'a rayon::ThreadPool,
}

impl<'a, T: Float + Send + Sync> PoolExecutor<'a, T> {
    /// Passes over `x` (`n x d`) on `pool`.
    pub fn new(x: &'a [T], d: usize, pool: &'a rayon::ThreadPool) -> Self {
        Self {
            x,
            d,
            white: None,
            threads: pool.current_num_threads(),
            pool,
        }
    }
    fn rows(&self, rows: Rows) -> (&[T], usize) {
        match (rows, &self.white) {
            (Rows::White, Some((z, k))) => (z, *k),
            _ => (self.x, self.d),
        }
    }
}

/// Runs `pass` over `data` (`width` wide) on `pool`: rounds of one [`CHUNK`] per thread, each
/// into its own partial, merged into `total` in row order. Rounds bound the memory for partials
/// (15 MB each at k = 768) while the pool keeps its threads between rounds and passes.
pub fn run_pass<T: Float + Sync, P: Pass<T>>(
    pool: &rayon::ThreadPool,
    threads: usize,
    data: &[T],
    width: usize,
    pass: &P,
    total: &mut [f64],
) -> unmix::Result<()> {
    let chunks: Vec<(usize, &[T])> = data.chunks(CHUNK * width.max(1)).enumerate().collect();
    let round = threads.min(chunks.len()).max(1);
    let mut partials = vec![vec![0.0; pass.partial_len()]; round];
    for group in chunks.chunks(round) {
        let results: Vec<unmix::Result<()>> = pool.install(|| {
            partials
                .par_iter_mut()
                .zip(group.par_iter())
                .map(|(partial, &(index, rows))| {
                    partial.fill(0.0);
                    crate::simd::fastest(
                        #[inline(always)]
                        || pass.accumulate(partial, (index * CHUNK) as u64, rows),
                    )
                })
                .collect()
        });
        for (result, partial) in results.into_iter().zip(&partials) {
            result?;
            pass.merge(total, partial)?;
        }
    }
    Ok(())
}

impl<T: Float + Send + Sync> Executor<T> for PoolExecutor<'_, T> {
    fn pass<P: Pass<T>>(&mut self, rows: Rows, pass: &P, total: &mut [f64]) -> unmix::Result<()> {
        let (data, width) = self.rows(rows);
        run_pass(self.pool, self.threads, data, width, pass, total)
    }
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, T>>) -> unmix::Result<()> {
        self.white = match whitener {
            None => None,
            Some(v) => {
                let k = v.n_components();
                let mut z = vec![T::ZERO; self.x.len() / self.d * k];
                map_rows(
                    self.pool,
                    self.x,
                    self.d,
                    &mut z,
                    k,
                    #[inline(always)]
                    |xi, zi| v.transform_rows(xi, zi),
                )?;
                Some((z, k))
            }
        };
        Ok(())
    }
}

/// Applies `f` to row-chunks of `x` (width `in_w`) writing `out` (width `out_w`) on `pool`, in
/// [`CHUNK`]-row pieces; an error names its row counted from the start of `x`.
pub fn map_rows<T: Float + Send + Sync>(
    pool: &rayon::ThreadPool,
    x: &[T],
    in_w: usize,
    out: &mut [T],
    out_w: usize,
    f: impl Fn(&[T], &mut [T]) -> unmix::Result<()> + Sync,
) -> unmix::Result<()> {
    let (in_w, out_w) = (in_w.max(1), out_w.max(1));
    pool.install(|| {
        x.par_chunks(CHUNK * in_w)
            .zip(out.par_chunks_mut(CHUNK * out_w))
            .enumerate()
            .try_for_each(|(index, (xi, oi))| {
                crate::simd::fastest(
                    #[inline(always)]
                    || f(xi, oi),
                )
                .map_err(|e| match e {
                    unmix::Error::NonFinite { row, col } => unmix::Error::NonFinite {
                        row: row + (index * CHUNK) as u64,
                        col,
                    },
                    other => other,
                })
            })
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

/// Fits FastICA on `x` through the core's driver on a thread pool.
pub fn fit<T: Float + Send + Sync + serde::Serialize>(
    x: &Matrix<T>,
    job: &FitJob<'_>,
) -> Result<Fitted<T>> {
    let (n, d) = (x.rows, x.cols);
    let opts = &job.options;
    let k = opts.components(d, job.n_components);
    if opts.whiten == WhitenMode::None && job.n_components.is_some_and(|c| c != d) {
        eprintln!(
            "note: --n-components is ignored with --whiten false (as in scikit-learn): k = {d}"
        );
    }
    opts.check(d, k)?;
    let pool = pool(job.threads)?;
    let mut storage = vec![T::ZERO; ica::model_len(d, k)];
    let mut model = FastIcaBuf::new(d, k, &mut storage)?;
    let mut staging = vec![T::ZERO; ica::model_len(d, k)];
    let mut ws = vec![0.0; ica::fit_workspace_len(d, k)];
    let mut exec = PoolExecutor::new(&x.data, d, &pool);
    let info = model
        .fit_with(
            &mut exec,
            Portable,
            opts,
            job.init,
            &mut staging,
            &mut ws,
            &mut |it, change| (job.progress)(it, change),
        )
        .map_err(|e| match e {
            unmix::Error::RankDeficient { rank, .. } if rank > 0 => {
                anyhow::anyhow!("{e}; keep at most {rank} components (--n-components {rank})")
            }
            e => anyhow::Error::new(e),
        })?;
    drop(exec);
    let view = model.view();
    let mut sources = vec![T::ZERO; n * k];
    map_rows(
        &pool,
        &x.data,
        d,
        &mut sources,
        k,
        #[inline(always)]
        |xi, si| view.transform_rows(xi, si),
    )?;
    let model_json = to_json(&view, opts, view.whitener().info().effective_rank, n);
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
