//! The jobs behind the subcommands, on in-memory tables.

use crate::fastica::{map_rows, pool, run_pass};
use crate::io::Matrix;
use crate::moments::GemmMoments;
use crate::simd::{GEMM_MIN_K, GemmFloat, centred_product};
use anyhow::Result;
use unmix::Float;
use unmix::ica::MomentsPass;
use unmix::whiten::{self, WhitenOptions, WhitenerBuf};

/// Owned moments of a table, built by [`moments`].
pub struct OwnedMoments {
    n: u64,
    mean: Vec<f64>,
    comoment: Vec<f64>,
}

/// Accumulates the moments of `x` on `pool` over the core's fixed chunks, merged in chunk order:
/// on the CLI's GEMM ([`GemmMoments`]) from [`GEMM_MIN_K`] features, else (or with
/// `UNMIX_SIMD=portable`) with the core's [`MomentsPass`], whose bits are the no_std core's. Same
/// bits for any number of threads; errors name rows of the whole table.
pub fn moments<T: Float + Send + Sync>(
    x: &Matrix<T>,
    pool: &rayon::ThreadPool,
) -> Result<OwnedMoments> {
    let d = x.cols;
    let threads = pool.current_num_threads();
    let mut total;
    let view = if uses_gemm(d) {
        let pass = GemmMoments::new(d)?;
        total = vec![0.0; GemmMoments::partial_len_for(d)];
        run_pass(pool, threads, &x.data, d, &pass, &mut total)?;
        pass.view(&total)?
    } else {
        let pass = MomentsPass::new(d)?;
        total = vec![0.0; MomentsPass::partial_len_for(d)];
        run_pass(pool, threads, &x.data, d, &pass, &mut total)?;
        pass.view(&total)?
    };
    Ok(OwnedMoments {
        n: view.n_samples(),
        mean: view.mean().to_vec(),
        comoment: view.comoment_upper().to_vec(),
    })
}

/// Whether [`moments`] of `d` features run on the GEMM.
pub fn uses_gemm(d: usize) -> bool {
    d >= GEMM_MIN_K && !crate::simd::portable_requested()
}

impl OwnedMoments {
    /// The moments as the core's view.
    pub fn view(&self) -> unmix::moments::MomentsRef<'_> {
        unmix::moments::MomentsRef::from_parts(self.n, self.mean.len(), &self.mean, &self.comoment)
            .expect("mean and comoment of one table")
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
pub fn whiten<T: GemmFloat + serde::Serialize>(
    x: &Matrix<T>,
    job: &WhitenJob,
) -> Result<Whitened<T>> {
    let (n, d) = (x.rows, x.cols);
    let k = job.n_components.unwrap_or(d);
    let pool = pool(job.threads)?;
    let m = moments(x, &pool)?;
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
    map_rows(
        &pool,
        &x.data,
        d,
        &mut z,
        k,
        #[inline(always)]
        |xi, zi| {
            centred_product(xi, d, view.mean(), view.whitening(), zi, k, |xi, zi| {
                view.transform_rows(xi, zi)
            })
        },
    )?;
    let z = Matrix::new(n, k, z)?;
    let zm = moments(&z, &pool)?;
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
