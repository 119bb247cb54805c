//! The jobs behind the subcommands, on in-memory tables.

use crate::io::Matrix;
use anyhow::Result;
use unmix::Float;
use unmix::moments::MomentsBuf;
use unmix::whiten::{self, WhitenOptions, WhitenerBuf};

/// Rows per chunk of a parallel pass. Fixed, so results do not depend on the thread count.
pub const CHUNK_ROWS: usize = 4096;

/// Owned moments of a table, built by [`moments`].
pub struct OwnedMoments {
    d: usize,
    buf: Vec<f64>,
    n: u64,
}

/// Accumulates the moments of `x` over `threads` threads: fixed chunks of [`CHUNK_ROWS`] rows,
/// each summarised alone, merged in chunk order. Same bits for any `threads`.
pub fn moments<T: Float>(x: &Matrix<T>, threads: usize) -> Result<OwnedMoments> {
    let d = x.cols;
    let mut total_buf = vec![0.0; MomentsBuf::buffer_len(d)];
    let mut total = MomentsBuf::new(d, &mut total_buf)?;
    let chunks: Vec<(usize, &[T])> = x.data.chunks(CHUNK_ROWS * d).enumerate().collect();
    for group in chunks.chunks(threads.max(1)) {
        let partials: Vec<Result<(u64, Vec<f64>)>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .map(|&(index, rows)| {
                    s.spawn(move || -> Result<(u64, Vec<f64>)> {
                        let mut buf = vec![0.0; MomentsBuf::buffer_len(d)];
                        let mut m = MomentsBuf::new(d, &mut buf)?;
                        crate::simd::fastest(
                            #[inline(always)]
                            || m.accumulate(rows),
                        )
                        .map_err(|e| renumber(e, index))?;
                        Ok((m.as_ref().n_samples(), buf))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("moment thread panicked"))
                .collect()
        });
        for p in partials {
            let (n, buf) = p?;
            let view = unmix::moments::MomentsRef::from_parts(n, d, &buf[..d], &buf[d..d + d * d])?;
            total.merge(view)?;
        }
    }
    let n = total.as_ref().n_samples();
    Ok(OwnedMoments {
        d,
        buf: total_buf,
        n,
    })
}

/// Row numbers in errors from chunk `index` count from the start of the table.
fn renumber(e: unmix::Error, index: usize) -> unmix::Error {
    match e {
        unmix::Error::NonFinite { row, col } => unmix::Error::NonFinite {
            row: row + (index * CHUNK_ROWS) as u64,
            col,
        },
        other => other,
    }
}

impl OwnedMoments {
    /// The moments as the core's view.
    pub fn view(&self) -> unmix::moments::MomentsRef<'_> {
        let d = self.d;
        unmix::moments::MomentsRef::from_parts(self.n, d, &self.buf[..d], &self.buf[d..d + d * d])
            .expect("buffer laid out by MomentsBuf")
    }
}

/// Options of `unmix whiten`.
#[derive(Clone, Copy, Debug)]
pub struct WhitenJob {
    /// Components to keep; `None` keeps all `D` (an error if the data are rank-deficient).
    pub n_components: Option<usize>,
    /// Core options.
    pub options: WhitenOptions,
    /// Threads for the moment pass.
    pub threads: usize,
}

/// A fitted whitener and the whitened data.
pub struct Whitened<T> {
    /// Whitened samples, `n x k`.
    pub z: Matrix<T>,
    /// The model, as written to `--model`.
    pub model: crate::model::WhitenerModel,
    /// Largest |cov(Z) - I| over the entries, at the fitted ddof (a self-check).
    pub max_cov_error: f64,
}

/// Fits a whitener on `x` and whitens it.
pub fn whiten<T: Float + serde::Serialize>(x: &Matrix<T>, job: &WhitenJob) -> Result<Whitened<T>> {
    let (n, d) = (x.rows, x.cols);
    let k = job.n_components.unwrap_or(d);
    let m = moments(x, job.threads)?;
    let mut storage = vec![T::ZERO; whiten::storage_len(d, k)];
    let mut ws = vec![0.0; whiten::workspace_len(d, k)];
    let mut w = WhitenerBuf::new(d, k, &mut storage)?;
    let info = w
        .fit(m.view(), &job.options, &mut ws)
        .map_err(|e| match e {
            unmix::Error::RankDeficient { rank, .. } if rank > 0 => anyhow::anyhow!(
                "whitening failed: {e}; keep at most {rank} components (--n-components {rank})"
            ),
            e => anyhow::Error::new(e).context("whitening failed"),
        })?;
    let view = w.view();
    let mut z = vec![T::ZERO; n * k];
    view.transform_rows(&x.data, &mut z)?;
    let z = Matrix::new(n, k, z)?;
    let zm = moments(&z, job.threads)?;
    let mut cov = vec![0.0; k * k];
    zm.view().covariance_into(job.options.ddof, &mut cov)?;
    let max_cov_error = cov
        .iter()
        .enumerate()
        .map(|(i, c)| (c - if i / k == i % k { 1.0 } else { 0.0 }).abs())
        .fold(0.0, f64::max);
    let model = crate::model::WhitenerModel::new(&view, &job.options, &info);
    Ok(Whitened {
        z,
        model,
        max_cov_error,
    })
}
