//! `unmix fit`, `transform`, `inverse-transform`: FastICA over files, on all cores.
//!
//! The fit is the core's one driver ([`FastIcaBuf::fit_with`]); this module supplies its
//! [`Executor`]: every pass splits the samples into the core's fixed chunks
//! ([`unmix::ica::CHUNK`] rows), runs them on a rayon pool of `threads` threads, and merges their
//! partial results in row order. The core's chunked sums make that the same bits as one
//! sequential pass, so `--threads` never changes a result.

use crate::io::Matrix;
use crate::simd::{GemmFloat, centred_product};
use anyhow::{Context, Result};
use rayon::prelude::*;
use unmix::Float;
use unmix::ica::{
    self, CHUNK, Executor, FastIcaBuf, FastIcaOptions, FastIcaView, IcaInfo, Pass, Rows, WInit,
    WhitenMode,
};
use unmix::whiten::{self, WhitenerBuf, WhitenerView};

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

impl<T: GemmFloat> Executor<T> for PoolExecutor<'_, T> {
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
                let d = self.d;
                map_rows(
                    self.pool,
                    self.x,
                    d,
                    &mut z,
                    k,
                    #[inline(always)]
                    |xi, zi| {
                        centred_product(xi, d, v.mean(), v.whitening(), zi, k, |xi, zi| {
                            v.transform_rows(xi, zi)
                        })
                    },
                )?;
                Some((z, k))
            }
        };
        Ok(())
    }
}

/// Rows per piece of [`map_rows`]: a row-wise map has no reduction to keep in order, so pieces
/// smaller than a [`CHUNK`] balance the threads better (2e4 rows are 20 pieces, not 5 chunks).
/// A multiple of the transforms' GEMM blocks (256 rows), so that the products, hence the bits,
/// are the same for any piece size and thread count.
pub const MAP_ROWS: usize = 1024;

/// Applies `f` to row-chunks of `x` (width `in_w`) writing `out` (width `out_w`) on `pool`, in
/// [`MAP_ROWS`]-row pieces; an error names its row counted from the start of `x`.
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
        x.par_chunks(MAP_ROWS * in_w)
            .zip(out.par_chunks_mut(MAP_ROWS * out_w))
            .enumerate()
            .try_for_each(|(index, (xi, oi))| {
                crate::simd::fastest(
                    #[inline(always)]
                    || f(xi, oi),
                )
                .map_err(|e| match e {
                    unmix::Error::NonFinite { row, col } => unmix::Error::NonFinite {
                        row: row + (index * MAP_ROWS) as u64,
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

/// A fitted model plus its sources.
pub struct Fitted<T> {
    /// The model file's content.
    pub model: crate::model::FastIcaModel,
    /// Sources of the training data, `n x k`.
    pub sources: Matrix<T>,
    /// How the iterations ended.
    pub info: IcaInfo,
}

/// Fits FastICA on `x` through the core's driver on a thread pool.
pub fn fit<T: GemmFloat + serde::Serialize>(x: &Matrix<T>, job: &FitJob<'_>) -> Result<Fitted<T>> {
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
    let kernel = crate::simd::CliKernel::for_this_cpu();
    let mut exec = PoolExecutor::new(&x.data, d, &pool);
    let explain = |e: unmix::Error| match e {
        unmix::Error::RankDeficient { rank, .. } if rank > 0 => {
            anyhow::anyhow!("{e}; keep at most {rank} components (--n-components {rank})")
        }
        e => anyhow::Error::new(e),
    };
    let mut on_iteration = |it, change| (job.progress)(it, change);
    let info = if opts.whiten == WhitenMode::None {
        let mut ws = vec![0.0; ica::fit_workspace_len_with(d, k, kernel)];
        model.fit_with(
            &mut exec,
            kernel,
            opts,
            job.init,
            &mut staging,
            &mut ws,
            &mut on_iteration,
        )
    } else {
        // The moments on the CLI's GEMM (the core's pass with UNMIX_SIMD=portable or few
        // features), then the core's fit from the whitener: the same computation as `fit_with`.
        let m = crate::pipeline::moments(x, &pool)?;
        let mut wstorage = vec![T::ZERO; whiten::storage_len(d, k)];
        let mut wws = vec![0.0; whiten::workspace_len(d, k)];
        let mut whitener = WhitenerBuf::new(d, k, &mut wstorage)?;
        whitener
            .fit(m.view(), &opts.pca_options(), &mut wws)
            .map_err(explain)?;
        let mut ws = vec![0.0; ica::white_fit_workspace_len_with(k, kernel)];
        model.fit_white_with(
            &whitener.view(),
            &mut exec,
            kernel,
            opts,
            job.init,
            &mut staging,
            &mut ws,
            &mut on_iteration,
        )
    }
    .map_err(explain)?;
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
        |xi, si| sources_of(&view, xi, si),
    )?;
    let effective_rank = view.whitener().info().effective_rank;
    Ok(Fitted {
        model: crate::model::FastIcaModel::new(&view, opts, effective_rank, n as u64),
        sources: Matrix::new(n, k, sources)?,
        info,
    })
}

/// Sources of rows `x` under `view`: the CLI's one source transform (`fit` and `transform`
/// give the same bytes).
#[inline(always)]
pub fn sources_of<T: GemmFloat>(
    view: &FastIcaView<'_, T>,
    x: &[T],
    s: &mut [T],
) -> unmix::Result<()> {
    let (d, k) = (view.n_features(), view.n_components());
    centred_product(x, d, view.mean(), view.components(), s, k, |x, s| {
        view.transform_rows(x, s)
    })
}
