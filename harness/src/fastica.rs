//! `unmix fit`, `transform`, `inverse-transform`: FastICA over files, on all cores.
//!
//! Every pass splits the samples into the core's fixed chunks ([`unmix::ica::CHUNK`] rows), runs
//! them on up to `threads` threads, and merges their statistics in row order: the core's chunked
//! sums make that the same bits as one sequential pass, so `--threads` never changes a result.

use crate::io::Matrix;
use crate::pipeline::moments;
use anyhow::{Context, Result, bail};
use unmix::Float;
use unmix::ica::{
    self, CHUNK, Contrast, DeflationStats, FastIcaBuf, FastIcaOptions, IcaInfo, ParallelStats,
    Passes, SourceStats, WInit, WhitenMode,
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

/// A fitted model plus its sources.
pub struct Fitted<T> {
    /// The model file's content.
    pub model: crate::model::FastIcaModel,
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
    Ok(Fitted {
        model: crate::model::FastIcaModel::new(&view, opts, effective_rank, n as u64),
        sources: Matrix::new(n, k, sources)?,
        info,
    })
}
