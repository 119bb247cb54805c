//! The jobs behind the subcommands, on in-memory tables.

use crate::fastica::{pool, release_slots, run_pass, stream_rows, write_rows_npy};
use crate::io::Matrix;
use crate::moments::GemmMoments;
use crate::output::Delivery;
use crate::simd::{CliKernel, GemmFloat, centred_product};
use crate::widen::{Widened, Widens};
use anyhow::Result;
use unmix::Float;
use unmix::ica::MomentsPass;
use unmix::whiten::{self, WhitenOptions, WhitenerBuf, WhitenerView};

/// Owned moments of a table, built by [`moments`].
pub struct OwnedMoments {
    n: u64,
    mean: Vec<f64>,
    comoment: Vec<f64>,
}

/// Accumulates the moments of `x` on `pool` over the core's fixed chunks, merged in chunk order:
/// on the CLI's GEMM ([`GemmMoments`]) from [`MOMENTS_GEMM_MIN`] features, else (or with
/// `UNMIX_SIMD=portable`) with the core's [`MomentsPass`], whose bits are the no_std core's. Same
/// bits for any number of threads; errors name rows of the whole table.
pub fn moments<T: Float + Send + Sync + 'static>(
    x: &Matrix<T>,
    pool: &rayon::ThreadPool,
) -> Result<OwnedMoments> {
    moments_widened::<T, T>(x, pool)
}

/// [`moments`] of the rows `x` read as `T`'s ([`crate::widen`]): an `f32` table's moments as
/// an `f64` fit computes them, with the bits of the moments of its `f64` copy.
pub fn moments_widened<T: Float + Send + Sync + 'static, S: Widens<T>>(
    x: &Matrix<S>,
    pool: &rayon::ThreadPool,
) -> Result<OwnedMoments> {
    let (d, threads) = (x.cols, pool.current_num_threads());
    // The pass's slots are not of the FastICA passes' size: released, not kept for them.
    if uses_gemm(d) {
        let pass = GemmMoments::new(d)?;
        let mut total = vec![0.0; GemmMoments::partial_len_for(d)];
        // Its sums read each value as an f64 (`to_f64`, exact), so `S` rows give the bits of
        // their widened copy without one (a chunk's copy: 8 MB a thread at 256 features).
        let result = run_pass(pool, threads, &x.data, d, &pass, &mut total);
        release_slots();
        result?;
        return Ok(owned(pass.view(&total)?));
    }
    let pass = MomentsPass::new(d)?;
    let mut total = vec![0.0; MomentsPass::partial_len_for(d)];
    let widened = Widened::<_, T>::new(&pass);
    let result = run_pass(pool, threads, &x.data, d, &widened, &mut total);
    release_slots();
    result?;
    Ok(owned(pass.view(&total)?))
}

/// A copy of the moments in `view`.
fn owned(view: unmix::moments::MomentsRef<'_>) -> OwnedMoments {
    OwnedMoments {
        n: view.n_samples(),
        mean: view.mean().to_vec(),
        comoment: view.comoment_upper().to_vec(),
    }
}

/// From this many features [`moments`] run on the GEMM. The core's pass adds one row's outer
/// product at a time, at 3-4 GFLOP/s whatever `d`: at 1e6 x 8 its 48-62 ms on one thread were
/// a third to a half of a whole fit's time, against 19 ms on the GEMM (26-28 against 12-15 ms
/// on two; Zen 4, `UNMIX_PHASES=1 unmix fit`). Below 8 features the moments are cheap either
/// way, and the core's bits are kept (`tests/simd.rs` checks them at 6 features).
pub const MOMENTS_GEMM_MIN: usize = 8;

/// Whether [`moments`] of `d` features run on the GEMM.
pub fn uses_gemm(d: usize) -> bool {
    d >= MOMENTS_GEMM_MIN && !crate::simd::portable_requested()
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
    /// The self-check: the largest |W C W' - I| over the entries ([`covariance_error`]).
    pub max_cov_error: f64,
}

/// Fits a whitener on `x` and whitens it, in memory (the demo's).
pub fn whiten<T: GemmFloat + serde::Serialize>(
    x: &Matrix<T>,
    job: &WhitenJob,
) -> Result<Whitened<T>> {
    let (model, max_cov_error, z) = whiten_then(x, job, |view, pool| {
        let k = view.n_components();
        let mut z = Vec::with_capacity(x.rows * k);
        whiten_blocks(view, x, pool, |b| {
            z.extend_from_slice(b);
            Ok(())
        })?;
        Matrix::new(x.rows, k, z)
    })?;
    Ok(Whitened {
        z,
        model,
        max_cov_error,
    })
}

/// Fits a whitener on `x` and calls `then` with it and the pool (to whiten the rows). Returns
/// the model, the self-check ([`covariance_error`]) and what `then` returned.
pub fn whiten_then<T: GemmFloat + serde::Serialize, R>(
    x: &Matrix<T>,
    job: &WhitenJob,
    then: impl FnOnce(&WhitenerView<'_, T>, &rayon::ThreadPool) -> Result<R>,
) -> Result<(crate::model::WhitenerModel, f64, R)> {
    let d = x.cols;
    let k = job.n_components.unwrap_or(d);
    let pool = pool(job.threads)?;
    let m = moments(x, &pool)?;
    crate::phases::done("moments");
    let mut storage = vec![T::ZERO; whiten::storage_len(d, k)];
    let mut ws = vec![0.0; whiten::workspace_len(d, k)];
    let mut w = WhitenerBuf::new(d, k, &mut storage)?;
    // The eigen-decomposition on the CLI's kernel: faer's from 64 features.
    let info = w
        .fit_with(m.view(), &job.options, &mut ws, CliKernel::for_this_cpu())
        .map_err(|e| match e {
            unmix::Error::RankDeficient { rank, .. } if rank > 0 => anyhow::anyhow!(
                "whitening failed: {e}; keep at most {rank} components (--n-components {rank})"
            ),
            e => anyhow::Error::new(e).context("whitening failed"),
        })?;
    crate::phases::done("whitener");
    let view = w.view();
    let check = covariance_error(&view, m.view(), job.options.ddof)?;
    drop(m);
    crate::phases::done("self-check");
    let out = then(&view, &pool)?;
    crate::phases::done("transform and write");
    let model = crate::model::WhitenerModel::new(&view, &job.options, &info);
    Ok((model, check, out))
}

/// The whitening's self-check: the largest `|W C W' - I|` over the entries, for the whitening
/// matrix `W` (`k x d`, as stored, so in `T`'s precision) and the covariance `C` of the data it
/// was fitted on, at `ddof`. `W C W'` is the covariance of the whitened data `W (x - mean)`, up to
/// the rounding of the transform and of the output's type; it costs `O(K D^2)` on the GEMM
/// (3 ms at D = 256) where the moments of the output cost a pass over all of it (65 ms at
/// 2e4 x 256). What it checks is the whitener: eigenvectors that are not orthogonal, eigenvalues
/// that are off, or a whitening matrix rounded too far (`f32` storage of an ill-conditioned one).
pub fn covariance_error<T: GemmFloat>(
    view: &WhitenerView<'_, T>,
    m: unmix::moments::MomentsRef<'_>,
    ddof: u32,
) -> Result<f64> {
    let (d, k) = (view.n_features(), view.n_components());
    let mut cov = vec![0.0; d * d];
    m.covariance_into(ddof, &mut cov)?;
    let w: Vec<f64> = view.whitening().iter().map(|v| v.to_f64()).collect();
    let mut wc = vec![0.0; k * d];
    crate::simd::gemm(k, d, d, &w, (d, 1), &cov, (d, 1), &mut wc, d, false);
    let mut wcw = vec![0.0; k * k];
    crate::simd::gemm(k, d, k, &wc, (d, 1), &w, (1, d), &mut wcw, k, false);
    Ok(wcw
        .iter()
        .enumerate()
        .map(|(i, c)| (c - if i / k == i % k { 1.0 } else { 0.0 }).abs())
        .fold(0.0, f64::max))
}

/// Whitens `x` under `view` through [`stream_rows`], handing each block to `sink` in row order:
/// one read of `x`, no copy of `Z` held.
pub fn whiten_blocks<T: GemmFloat>(
    view: &WhitenerView<'_, T>,
    x: &Matrix<T>,
    pool: &rayon::ThreadPool,
    sink: impl FnMut(&[T]) -> Result<()> + Send,
) -> Result<()> {
    let (k, threads) = (view.n_components(), pool.current_num_threads());
    let behind = crate::output::core_to_spare(threads);
    stream_rows(
        pool,
        x,
        k,
        // Inlined into the AVX2 instance of the pieces' loop, as every row map.
        #[inline(always)]
        |xi, zi| whiten_rows(view, xi, zi),
        behind,
        sink,
    )
}

/// Whitens `x` under `view` into the `.npy` file that `w` wraps, delivered as `delivery` says
/// ([`write_rows_npy`]): `unmix whiten`'s output, the bytes of [`whiten_blocks`]'s rows.
pub fn whiten_into<T: GemmFloat + crate::io::NpyFloat>(
    view: &WhitenerView<'_, T>,
    x: &Matrix<T>,
    pool: &rayon::ThreadPool,
    delivery: Delivery,
    w: &mut std::io::BufWriter<&std::fs::File>,
) -> Result<()> {
    let k = view.n_components();
    write_rows_npy(
        delivery,
        pool,
        x,
        k,
        #[inline(always)]
        |xi, zi| whiten_rows(view, xi, zi),
        w,
    )
}

/// The whitened rows `z` of rows `x`: the one row map of [`whiten_blocks`] and [`whiten_into`].
#[inline(always)]
fn whiten_rows<T: GemmFloat>(
    view: &WhitenerView<'_, T>,
    x: &[T],
    z: &mut [T],
) -> unmix::Result<()> {
    let (d, k) = (view.n_features(), view.n_components());
    centred_product(x, d, view.mean(), view.whitening(), z, k, |xi, zi| {
        view.transform_rows(xi, zi)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The self-check is `max |W C W' - I|`: the covariance of the whitened rows themselves
    /// (within rounding) for the fitted whitener, and `1.01^2 - 1` when `W` is scaled by 1.01.
    #[test]
    fn the_self_check_measures_the_whitened_covariance() {
        let (n, d) = (3000, 12);
        let mut normals = unmix::random::Normals::new(3);
        let s: Vec<f64> = (0..n * d).map(|_| normals.next_normal()).collect();
        // Correlated features of different scales and offsets.
        let x: Vec<f64> = (0..n * d)
            .map(|i| {
                let (r, c) = (i / d, i % d);
                (1 + c) as f64 * s[i] + 0.5 * s[r * d + (c + 1) % d] + c as f64
            })
            .collect();
        let x = Matrix::new(n, d, x).unwrap();
        let job = WhitenJob {
            n_components: None,
            options: WhitenOptions::DEFAULT,
            threads: 1,
        };
        let out = whiten(&x, &job).unwrap();
        let z = &out.z.data;
        let mut direct = 0.0f64;
        for a in 0..d {
            for b in 0..d {
                let c: f64 = (0..n).map(|r| z[r * d + a] * z[r * d + b]).sum::<f64>() / n as f64;
                direct = direct.max((c - if a == b { 1.0 } else { 0.0 }).abs());
            }
        }
        assert!(out.max_cov_error < 1e-12, "{}", out.max_cov_error);
        assert!(direct < 1e-12, "{direct}");

        let m = moments(&x, &pool(1).unwrap()).unwrap();
        let mut storage = vec![0.0; whiten::storage_len(d, d)];
        let mut ws = vec![0.0; whiten::workspace_len(d, d)];
        WhitenerBuf::new(d, d, &mut storage)
            .unwrap()
            .fit(m.view(), &WhitenOptions::DEFAULT, &mut ws)
            .unwrap();
        // The layout: the mean (d), then the whitening matrix (k x d).
        for v in &mut storage[d..d + d * d] {
            *v *= 1.01;
        }
        let view = WhitenerView::from_parts(d, d, &storage).unwrap();
        let scaled = covariance_error(&view, m.view(), 0).unwrap();
        assert!((scaled - (1.01f64.powi(2) - 1.0)).abs() < 1e-12, "{scaled}");
    }
}
