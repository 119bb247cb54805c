//! PCA and ZCA whitening fitted from [`moments`](crate::moments), with an optional Haar-random
//! rotation (the paper's "PCA + Rand" control).
//!
//! With covariance `C = U diag(lambda) U'` (eigenvalues descending, `ddof` of the caller's
//! choosing) and `U_K` the `K` leading eigenvectors:
//!
//! | method | whitening (K x D) | output |
//! |---|---|---|
//! | [`Method::Pca`] | `B diag(lambda_K)^(-1/2) U_K'` with `B = I` | principal components, unit variance |
//! | [`Method::Zca`] | the same with `B = U` (so `W = C^(-1/2)`, symmetric; needs `K = D`) | closest white data to the input |
//!
//! With [`Rotation::Random`], `B` is replaced by `R B` where `R` is a `K x K` orthogonal matrix
//! drawn from the Haar measure (Gram-Schmidt on standard normals from a seeded xoshiro256++).
//! Every variant gives output with identity covariance (at the fitted `ddof`) on the fitted data.
//! The inverse ("unwhitening", `D x K`) is `U_K diag(lambda_K)^(1/2) B'`, the pseudo-inverse of the
//! whitening; with `K = D` it reconstructs the input exactly.
//!
//! # Conventions
//! - Eigenvectors carry a deterministic sign: first nonzero entry positive. scikit-learn's FastICA
//!   flips by the sign of the first entry, which equals ours unless that entry is exactly 0 (where
//!   scikit-learn zeroes the whole vector).
//! - Rank: eigenvalues above `rank_rtol * lambda_max` count; asking for more components than that
//!   is [`Error::RankDeficient`] carrying the effective rank, never a silent clip.
//! - `ddof = 0` (the default) is scikit-learn's FastICA; `ddof = 1` is scikit-learn's
//!   `PCA(whiten=True)`.
//! - Transforms compute in `T`; fitting computes in [`Sum`] (`f64`, or `f32` with the `f32-sums`
//!   feature) and stores the result in `T`.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};
use crate::ica::Kernel;
use crate::ica::kernel::Portable;
use crate::linalg;
use crate::moments::MomentsRef;

/// Which whitening matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Method {
    /// Project on the leading principal axes and scale each to unit variance.
    #[default]
    Pca,
    /// The symmetric inverse square root of the covariance (all `D` components).
    Zca,
}

/// An orthogonal rotation of the whitened space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Rotation {
    /// None.
    #[default]
    None,
    /// A Haar-random orthogonal `K x K` matrix drawn from this seed.
    Random {
        /// Seed of the xoshiro256++ generator.
        seed: u64,
    },
}

crate::names::option_names!(Method, "whitening method", {
    Method::Pca => "pca", Method::Pca;
    Method::Zca => "zca", Method::Zca;
});

// `random` parses with seed 0; the seed is a separate option ([`Rotation::with_seed`]).
crate::names::option_names!(Rotation, "rotation", {
    Rotation::None => "none", Rotation::None;
    Rotation::Random { .. } => "random", Rotation::Random { seed: 0 };
});

impl Rotation {
    /// The same kind of rotation drawn from `seed` (`None` stays `None`).
    pub const fn with_seed(self, seed: u64) -> Self {
        match self {
            Rotation::None => Rotation::None,
            Rotation::Random { .. } => Rotation::Random { seed },
        }
    }
}

/// How to fit a whitener. The number of components is the shape of the whitener's storage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WhitenOptions {
    /// PCA or ZCA.
    pub method: Method,
    /// Optional rotation after whitening.
    pub rotation: Rotation,
    /// Delta degrees of freedom of the covariance: 0 (default) or 1.
    pub ddof: u32,
    /// Relative eigenvalue threshold for the effective rank, in `[0, 1)`; default `1e-10`.
    pub rank_rtol: Sum,
}

impl WhitenOptions {
    /// PCA, no rotation, ddof 0, `rank_rtol` 1e-10.
    pub const DEFAULT: Self = Self {
        method: Method::Pca,
        rotation: Rotation::None,
        ddof: 0,
        rank_rtol: 1e-10,
    };
}

impl Default for WhitenOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a fit found besides the matrices.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct FitInfo {
    /// Samples the moments summarised.
    pub n_samples: u64,
    /// Eigenvalues above `rank_rtol` times the largest.
    pub effective_rank: usize,
    /// The largest eigenvalue of the covariance.
    pub max_eigenvalue: Sum,
}

/// [`Sum`] workspace elements a fit of `d` features to `k` components needs.
pub const fn workspace_len(d: usize, k: usize) -> usize {
    d * d + 2 * d + 2 * k * k
}

/// `T` storage elements of a fitted whitener of `d` features to `k` components.
///
/// The layout, which [`WhitenerBuf`] writes and [`WhitenerView::from_parts`] reads, is
/// `mean (d) | whitening (k x d) | unwhitening (d x k) | explained_variance (k)`, all row-major.
pub const fn storage_len(d: usize, k: usize) -> usize {
    d + 2 * k * d + k
}

/// A fitted whitener, viewed: `d -> k`, whoever owns the storage.
#[derive(Clone, Copy, Debug)]
pub struct WhitenerView<'a, T> {
    d: usize,
    k: usize,
    mean: &'a [T],
    whitening: &'a [T],
    unwhitening: &'a [T],
    explained_variance: &'a [T],
    info: FitInfo,
}

impl<'a, T: Float> WhitenerView<'a, T> {
    pub(crate) fn from_slices(
        d: usize,
        k: usize,
        mean: &'a [T],
        whitening: &'a [T],
        unwhitening: &'a [T],
        explained_variance: &'a [T],
        info: FitInfo,
    ) -> Self {
        Self {
            d,
            k,
            mean,
            whitening,
            unwhitening,
            explained_variance,
            info,
        }
    }
    /// Views a whitener stored in the [`storage_len`] layout, e.g. one kept in flash or sent by
    /// another process. `info` is not part of the layout and reads as zeros.
    pub fn from_parts(d: usize, k: usize, storage: &'a [T]) -> Result<Self> {
        if k == 0 || k > d {
            return Err(Error::InvalidComponents { k, d });
        }
        let needed = storage_len(d, k);
        if storage.len() < needed {
            return Err(Error::BufferTooSmall {
                needed,
                found: storage.len(),
            });
        }
        let (mean, rest) = storage.split_at(d);
        let (whitening, rest) = rest.split_at(k * d);
        let (unwhitening, rest) = rest.split_at(d * k);
        let explained_variance = &rest[..k];
        Ok(Self {
            d,
            k,
            mean,
            whitening,
            unwhitening,
            explained_variance,
            info: FitInfo::default(),
        })
    }
    /// Input features `d`.
    pub fn n_features(&self) -> usize {
        self.d
    }
    /// Output components `k`.
    pub fn n_components(&self) -> usize {
        self.k
    }
    /// Feature means (`d`).
    pub fn mean(&self) -> &'a [T] {
        self.mean
    }
    /// Whitening matrix, `k x d` row-major: `z = W (x - mean)`.
    pub fn whitening(&self) -> &'a [T] {
        self.whitening
    }
    /// Its pseudo-inverse, `d x k` row-major: `x ~ mean + W+ z`.
    pub fn unwhitening(&self) -> &'a [T] {
        self.unwhitening
    }
    /// Variance along each kept principal axis (the `k` leading eigenvalues), descending.
    pub fn explained_variance(&self) -> &'a [T] {
        self.explained_variance
    }
    /// Sample count, effective rank and largest eigenvalue of the fit.
    pub fn info(&self) -> FitInfo {
        self.info
    }
    /// Whitens one sample `x` (`d`) into `z` (`k`).
    pub fn transform(&self, x: &[T], z: &mut [T]) -> Result<()> {
        self.transform_rows(x, z)
    }
    /// Whitens row-major samples `x` (`n x d`) into `z` (`n x k`). Fails with
    /// [`Error::Overflow`] (leaving `z` partly written) if a result is not finite.
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn transform_rows(&self, x: &[T], z: &mut [T]) -> Result<()> {
        linalg::affine_rows(x, self.d, self.mean, self.whitening, z, self.k, false)
    }
    /// Maps one whitened sample `z` (`k`) back to feature space `x` (`d`).
    pub fn inverse_transform(&self, z: &[T], x: &mut [T]) -> Result<()> {
        self.inverse_transform_rows(z, x)
    }
    /// Maps row-major whitened samples `z` (`n x k`) back to `x` (`n x d`). Fails with
    /// [`Error::Overflow`] (leaving `x` partly written) if a result is not finite.
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn inverse_transform_rows(&self, z: &[T], x: &mut [T]) -> Result<()> {
        linalg::affine_rows(z, self.k, self.mean, self.unwhitening, x, self.d, true)
    }
}

/// Mutable storage of a whitener, whoever owns it.
pub(crate) struct Parts<'a, T> {
    pub(crate) mean: &'a mut [T],
    pub(crate) whitening: &'a mut [T],
    pub(crate) unwhitening: &'a mut [T],
    pub(crate) explained_variance: &'a mut [T],
}

/// Workspace split into its pieces.
struct Scratch<'a> {
    vectors: &'a mut [Sum],
    values: &'a mut [Sum],
    work: &'a mut [Sum],
    basis: &'a mut [Sum],
    tmp: &'a mut [Sum],
}

impl<'a> Scratch<'a> {
    fn split(ws: &'a mut [Sum], d: usize, k: usize) -> Result<Self> {
        let needed = workspace_len(d, k);
        let ws = prefix_mut(ws, needed)?;
        let (vectors, rest) = ws.split_at_mut(d * d);
        let (values, rest) = rest.split_at_mut(d);
        let (work, rest) = rest.split_at_mut(d);
        let (basis, tmp) = rest.split_at_mut(k * k);
        Ok(Self {
            vectors,
            values,
            work,
            basis,
            tmp,
        })
    }
}

/// The one fitting implementation, the covariance's eigen-decomposition on `kernel`
/// ([`Kernel::symmetric_eigen`]). Writes `out` only once everything has succeeded.
fn fit_parts<T: Float, K: Kernel>(
    m: MomentsRef<'_>,
    opts: &WhitenOptions,
    d: usize,
    k: usize,
    out: Parts<'_, T>,
    s: Scratch<'_>,
    kernel: K,
) -> Result<FitInfo> {
    if m.dim() != d {
        return Err(Error::DimensionMismatch {
            expected: d,
            found: m.dim(),
        });
    }
    if k == 0 || k > d || (opts.method == Method::Zca && k != d) {
        return Err(Error::InvalidComponents { k, d });
    }
    if opts.ddof > 1 {
        return Err(Error::InvalidParameter("ddof must be 0 or 1"));
    }
    if !(0.0..1.0).contains(&opts.rank_rtol) {
        return Err(Error::InvalidParameter("rank_rtol must be in [0, 1)"));
    }
    m.covariance_into(opts.ddof, s.vectors)?;
    if s.vectors.iter().any(|c| !c.is_finite()) {
        return Err(Error::Overflow);
    }
    kernel.symmetric_eigen(s.vectors, d, s.values, s.work)?;
    let max_eigenvalue = s.values[0];
    let effective_rank = if max_eigenvalue > 0.0 {
        s.values
            .iter()
            .take_while(|l| **l > opts.rank_rtol * max_eigenvalue)
            .count()
    } else {
        0
    };
    if k > effective_rank {
        return Err(Error::RankDeficient {
            rank: effective_rank,
            requested: k,
        });
    }
    // B: the orthogonal K x K map from principal coordinates to output coordinates.
    let basis = &mut s.basis[..k * k];
    match opts.method {
        Method::Pca => {
            basis.fill(0.0);
            for i in 0..k {
                basis[i * k + i] = 1.0;
            }
        }
        // B[i][l] = u_l[i]; K = D here.
        Method::Zca => {
            for i in 0..k {
                for l in 0..k {
                    basis[i * k + l] = s.vectors[l * d + i];
                }
            }
        }
    }
    if let Rotation::Random { seed } = opts.rotation {
        let r = &mut s.tmp[..k * k];
        haar_orthogonal(seed, r, k)?;
        // basis <- R basis, one column at a time through `work` (k <= d).
        for col in 0..k {
            for i in 0..k {
                s.work[i] = basis[i * k + col];
            }
            for i in 0..k {
                basis[i * k + col] = linalg::dot(&r[i * k..(i + 1) * k], &s.work[..k]);
            }
        }
    }
    // Success is certain from here: write the outputs.
    let sqrt_values = &mut s.work[..k];
    for (r, l) in sqrt_values.iter_mut().zip(s.values.iter()) {
        *r = smath::sqrt(*l);
    }
    for (o, v) in out.mean.iter_mut().zip(m.mean()) {
        *o = T::from_sum(*v);
    }
    for (o, l) in out.explained_variance.iter_mut().zip(s.values.iter()) {
        *o = T::from_sum(*l);
    }
    let identity = opts.method == Method::Pca && opts.rotation == Rotation::None;
    write_matrices(
        basis,
        s.vectors,
        sqrt_values,
        d,
        k,
        identity,
        out.whitening,
        out.unwhitening,
    );
    Ok(FitInfo {
        n_samples: m.n_samples(),
        effective_rank,
        max_eigenvalue,
    })
}

/// `whitening[i][j] = sum_l B[i][l] u_l[j] / sqrt(lambda_l)` and
/// `unwhitening[j][i] = sum_l u_l[j] sqrt(lambda_l) B[i][l]`, summed over `l` in order from
/// `0.0`. When `identity` says `B = I` (PCA, no rotation) every term but `l = i` is a signed zero,
/// which leaves a sum started at `+0.0` unchanged, so the sum is `0.0 + u_i[j] / sqrt(lambda_i)`:
/// the same bits in O(K D) instead of O(K^2 D) (half a second at K = D = 768).
#[allow(clippy::too_many_arguments)]
fn write_matrices<T: Float>(
    basis: &[Sum],
    vectors: &[Sum],
    sqrt_values: &[Sum],
    d: usize,
    k: usize,
    identity: bool,
    whitening: &mut [T],
    unwhitening: &mut [T],
) {
    for (i, brow) in basis.chunks_exact(k).enumerate().take(k) {
        for j in 0..d {
            let (w, u) = if identity {
                let v = vectors[i * d + j];
                let r = sqrt_values[i];
                (0.0 + v / r, 0.0 + v * r)
            } else {
                let (mut w, mut u) = (0.0, 0.0);
                for (l, (b, r)) in brow.iter().zip(sqrt_values.iter()).enumerate() {
                    let v = b * vectors[l * d + j];
                    w += v / r;
                    u += v * r;
                }
                (w, u)
            };
            whitening[i * d + j] = T::from_sum(w);
            unwhitening[j * k + i] = T::from_sum(u);
        }
    }
}

/// Fits into separate parts with a flat [`workspace_len`] workspace (for the FastICA model).
pub(crate) fn fit_into_parts<T: Float, K: Kernel>(
    m: MomentsRef<'_>,
    opts: &WhitenOptions,
    d: usize,
    k: usize,
    out: Parts<'_, T>,
    ws: &mut [Sum],
    kernel: K,
) -> Result<FitInfo> {
    fit_parts(m, opts, d, k, out, Scratch::split(ws, d, k)?, kernel)
}

// Drawn by the random module; re-exported here, where the rotation option uses it.
pub use crate::random::haar_orthogonal;

/// A whitener from `D` features to `K` components with its storage inside: usable on the stack or
/// in a `static`, no heap. The workspace is separate so that it can be shared or dropped after
/// fitting.
///
/// ```
/// use unmix::moments::Moments;
/// use unmix::whiten::{Method, WhitenOptions, WhitenWorkspace, Whitener};
///
/// let mut moments = Moments::<3>::new();
/// for t in 0..200 {
///     let (a, b) = ((t as f32 * 0.37).sin(), (t as f32 * 0.11).cos());
///     moments.accumulate(&[a + b, a - b, 2.0 * a + 0.1 * b])?;
/// }
/// let mut ws = WhitenWorkspace::<3, 2>::new();
/// let mut w = Whitener::<f32, 3, 2>::new();
/// w.fit(moments.as_ref(), &WhitenOptions::DEFAULT, &mut ws)?;
/// let mut z = [0.0f32; 2];
/// w.transform(&[1.0, 0.5, 2.0], &mut z)?;
/// assert_eq!(w.view().info().effective_rank, 2); // the third feature is nearly a combination
/// # Ok::<(), unmix::Error>(())
/// ```
///
/// # Memory
/// `size_of::<T>() (D + 2KD + K)` bytes of model plus a [`FitInfo`] (24 bytes with [`Sum`] =
/// `f64`, 16 with `f32` on a 32-bit target): 184 (176) bytes for `Whitener<f32, 4, 4>` on a
/// Cortex-M. Fitting also needs a [`WhitenWorkspace`].
#[derive(Clone, Debug)]
pub struct Whitener<T, const D: usize, const K: usize> {
    pub(crate) mean: [T; D],
    pub(crate) whitening: [[T; D]; K],
    pub(crate) unwhitening: [[T; K]; D],
    pub(crate) explained_variance: [T; K],
    pub(crate) info: FitInfo,
}

/// The [`Sum`] workspace a [`Whitener`] fit needs (`D^2 + 2D + 2K^2` values).
///
/// # Memory
/// `size_of::<Sum>() (D^2 + 2D + 2K^2)` bytes: 448 at D = K = 4 (224 with the `f32-sums`
/// feature). Only the fit uses it: share it between fits, or drop it after. FastICA's
/// streaming fit takes a [`FastIcaWorkspace`](crate::ica::FastIcaWorkspace) beside it.
#[derive(Clone, Debug)]
pub struct WhitenWorkspace<const D: usize, const K: usize> {
    vectors: [[Sum; D]; D],
    values: [Sum; D],
    work: [Sum; D],
    basis: [[Sum; K]; K],
    tmp: [[Sum; K]; K],
}

impl<const D: usize, const K: usize> WhitenWorkspace<D, K> {
    /// Zeroed. `1 <= K <= D` is checked at compile time.
    pub const fn new() -> Self {
        const { assert!(K >= 1 && K <= D, "a whitener needs 1 <= K <= D") };
        Self {
            vectors: [[0.0; D]; D],
            values: [0.0; D],
            work: [0.0; D],
            basis: [[0.0; K]; K],
            tmp: [[0.0; K]; K],
        }
    }
}

impl<const D: usize, const K: usize> Default for WhitenWorkspace<D, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Float, const D: usize, const K: usize> Default for Whitener<T, D, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Float, const D: usize, const K: usize> Whitener<T, D, K> {
    /// Unfitted: all zeros (transforms return zeros until [`fit`](Self::fit)).
    ///
    /// `1 <= K <= D` is checked at compile time:
    ///
    /// ```compile_fail
    /// let w = unmix::whiten::Whitener::<f32, 2, 3>::new(); // K > D: does not compile
    /// ```
    pub const fn new() -> Self {
        const { assert!(K >= 1 && K <= D, "a whitener needs 1 <= K <= D") };
        Self {
            mean: [T::ZERO; D],
            whitening: [[T::ZERO; D]; K],
            unwhitening: [[T::ZERO; K]; D],
            explained_variance: [T::ZERO; K],
            info: FitInfo {
                n_samples: 0,
                effective_rank: 0,
                max_eigenvalue: 0.0,
            },
        }
    }
    /// Fits from accumulated moments. On error `self` is unchanged.
    pub fn fit(
        &mut self,
        moments: MomentsRef<'_>,
        opts: &WhitenOptions,
        ws: &mut WhitenWorkspace<D, K>,
    ) -> Result<FitInfo> {
        let scratch = Scratch {
            vectors: ws.vectors.as_flattened_mut(),
            values: &mut ws.values,
            work: &mut ws.work,
            basis: ws.basis.as_flattened_mut(),
            tmp: ws.tmp.as_flattened_mut(),
        };
        let parts = Parts {
            mean: &mut self.mean,
            whitening: self.whitening.as_flattened_mut(),
            unwhitening: self.unwhitening.as_flattened_mut(),
            explained_variance: &mut self.explained_variance,
        };
        let info = fit_parts(moments, opts, D, K, parts, scratch, Portable)?;
        self.info = info;
        Ok(info)
    }
    /// The fitted whitener as a view (all accessors and transforms live there).
    pub fn view(&self) -> WhitenerView<'_, T> {
        WhitenerView {
            d: D,
            k: K,
            mean: &self.mean,
            whitening: self.whitening.as_flattened(),
            unwhitening: self.unwhitening.as_flattened(),
            explained_variance: &self.explained_variance,
            info: self.info,
        }
    }
    /// Whitens one sample.
    pub fn transform(&self, x: &[T; D], z: &mut [T; K]) -> Result<()> {
        self.view().transform(x, z)
    }
    /// Maps one whitened sample back.
    pub fn inverse_transform(&self, z: &[T; K], x: &mut [T; D]) -> Result<()> {
        self.view().inverse_transform(z, x)
    }
}

/// A whitener from `d` to `k` (known at run time) in storage the caller lends.
///
/// ```
/// use unmix::moments::MomentsBuf;
/// use unmix::whiten::{self, WhitenOptions, WhitenerBuf};
///
/// let (d, k) = (2, 2);
/// let data = [1.0f64, 2.0, 2.0, 1.0, 3.0, 5.0, 4.0, 3.0, 0.0, 1.0];
/// let mut mbuf = vec![0.0; MomentsBuf::buffer_len(d)];
/// let mut moments = MomentsBuf::new(d, &mut mbuf)?;
/// moments.accumulate(&data)?;
/// let mut storage = vec![0.0f64; whiten::storage_len(d, k)];
/// let mut ws = vec![0.0; whiten::workspace_len(d, k)];
/// let mut w = WhitenerBuf::new(d, k, &mut storage)?;
/// w.fit(moments.as_ref(), &WhitenOptions::DEFAULT, &mut ws)?;
/// let mut z = vec![0.0; data.len()];
/// w.view().transform_rows(&data, &mut z)?;
/// let var0: f64 = z.iter().step_by(2).map(|v| v * v).sum::<f64>() / 5.0;
/// assert!((var0 - 1.0).abs() < 1e-12);
/// # Ok::<(), unmix::Error>(())
/// ```
#[derive(Debug)]
pub struct WhitenerBuf<'a, T> {
    d: usize,
    k: usize,
    mean: &'a mut [T],
    whitening: &'a mut [T],
    unwhitening: &'a mut [T],
    explained_variance: &'a mut [T],
    info: FitInfo,
}

impl<'a, T: Float> WhitenerBuf<'a, T> {
    /// Takes [`storage_len(d, k)`](storage_len) elements of `storage` (zeroed) for `d -> k`.
    pub fn new(d: usize, k: usize, storage: &'a mut [T]) -> Result<Self> {
        if k == 0 || k > d {
            return Err(Error::InvalidComponents { k, d });
        }
        let storage = prefix_mut(storage, storage_len(d, k))?;
        storage.fill(T::ZERO);
        Self::new_keep(d, k, storage)
    }
    fn new_keep(d: usize, k: usize, storage: &'a mut [T]) -> Result<Self> {
        let needed = storage_len(d, k);
        let storage = prefix_mut(storage, needed)?;
        let (mean, rest) = storage.split_at_mut(d);
        let (whitening, rest) = rest.split_at_mut(k * d);
        let (unwhitening, explained_variance) = rest.split_at_mut(d * k);
        Ok(Self {
            d,
            k,
            mean,
            whitening,
            unwhitening,
            explained_variance,
            info: FitInfo::default(),
        })
    }
    /// Fits from accumulated moments using `workspace` ([`workspace_len(d, k)`](workspace_len)
    /// elements). On error the stored whitener is unchanged.
    pub fn fit(
        &mut self,
        moments: MomentsRef<'_>,
        opts: &WhitenOptions,
        workspace: &mut [Sum],
    ) -> Result<FitInfo> {
        self.fit_with(moments, opts, workspace, Portable)
    }
    /// [`fit`](Self::fit) with the covariance's eigen-decomposition on `kernel`
    /// ([`Kernel::symmetric_eigen`]): a host's faster solver (the `unmix` command's, from 64
    /// features) changes the last bits of the eigenvectors, within the accuracy contract of
    /// [`linalg::symmetric_eigen`], which [`Portable`] runs.
    pub fn fit_with<K: Kernel>(
        &mut self,
        moments: MomentsRef<'_>,
        opts: &WhitenOptions,
        workspace: &mut [Sum],
        kernel: K,
    ) -> Result<FitInfo> {
        let scratch = Scratch::split(workspace, self.d, self.k)?;
        let parts = Parts {
            mean: &mut *self.mean,
            whitening: &mut *self.whitening,
            unwhitening: &mut *self.unwhitening,
            explained_variance: &mut *self.explained_variance,
        };
        let info = fit_parts(moments, opts, self.d, self.k, parts, scratch, kernel)?;
        self.info = info;
        Ok(info)
    }
    /// The fitted whitener as a view (all accessors and transforms live there).
    pub fn view(&self) -> WhitenerView<'_, T> {
        WhitenerView {
            d: self.d,
            k: self.k,
            mean: self.mean,
            whitening: self.whitening,
            unwhitening: self.unwhitening,
            explained_variance: self.explained_variance,
            info: self.info,
        }
    }
}

#[cfg(all(test, not(feature = "f32-sums")))]
mod tests {
    use super::{WhitenerView, write_matrices};
    use crate::float::Sum;

    /// The shortcut for `B = I` gives the bits of the full sum, signed zeros included.
    #[test]
    fn identity_shortcut_gives_the_bits_of_the_full_sum() {
        let (d, k) = (7, 5);
        let mut vectors: [Sum; 49] = core::array::from_fn(|i| {
            let x = libm::sin(i as Sum * 1.7) * 1e3;
            if i % 6 == 0 { -x } else { x }
        });
        vectors[3] = -0.0;
        vectors[9] = 0.0;
        let sqrt_values: [Sum; 7] = core::array::from_fn(|i| 1e-3 + i as Sum * 3.3);
        let mut basis = [0.0; 25];
        for i in 0..k {
            basis[i * k + i] = 1.0;
        }
        let run = |identity| {
            let (mut w, mut u) = ([0.0f64; 35], [0.0f64; 35]);
            write_matrices(
                &basis,
                &vectors,
                &sqrt_values,
                d,
                k,
                identity,
                &mut w,
                &mut u,
            );
            (w.map(Sum::to_bits), u.map(Sum::to_bits))
        };
        assert_eq!(run(true), run(false));
    }

    /// A kernel whose eigen-decomposition is the core's with every eigenvector negated (within
    /// the contract but for the signs), or fails.
    #[derive(Clone, Copy)]
    struct Flipped(bool);

    impl crate::ica::Kernel for Flipped {
        fn unmix_block(&self, w: &[Sum], k: usize, z: &[Sum], y: &mut [Sum], s: usize, n: usize) {
            crate::ica::kernel::Portable.unmix_block(w, k, z, y, s, n)
        }
        fn gram_block(&self, g: &[Sum], z: &[Sum], k: usize, s: usize, n: usize, o: &mut [Sum]) {
            crate::ica::kernel::Portable.gram_block(g, z, k, s, n, o)
        }
        fn symmetric_eigen(
            &self,
            m: &mut [Sum],
            k: usize,
            values: &mut [Sum],
            work: &mut [Sum],
        ) -> crate::Result<()> {
            if self.0 {
                return Err(crate::Error::InvalidParameter("the kernel's eigen failed"));
            }
            crate::linalg::symmetric_eigen(m, k, values, work)?;
            m[..k * k].iter_mut().for_each(|v| *v = -*v);
            Ok(())
        }
    }

    /// `fit_with` takes the covariance's eigenvectors from the kernel, and a failure there
    /// leaves the stored whitener as it was.
    #[test]
    fn fit_with_decomposes_on_the_kernel() {
        use super::{WhitenOptions, WhitenerBuf, storage_len, workspace_len};
        let (d, k) = (3, 2);
        let mut m = crate::moments::Moments::<3>::new();
        let rows: [f64; 15] = [
            1.0, 2.0, 0.5, 3.0, 1.0, -1.0, 0.0, 4.0, 2.0, -2.0, 1.5, 0.0, 5.0, -1.0, 1.0,
        ];
        m.accumulate(&rows).unwrap();
        let opts = WhitenOptions::DEFAULT;
        let mut ws = [0.0; workspace_len(3, 2)];
        let (mut plain, mut flipped) = ([0.0f64; storage_len(3, 2)], [0.0f64; storage_len(3, 2)]);
        WhitenerBuf::new(d, k, &mut plain)
            .unwrap()
            .fit(m.as_ref(), &opts, &mut ws)
            .unwrap();
        let mut w = WhitenerBuf::new(d, k, &mut flipped).unwrap();
        w.fit_with(m.as_ref(), &opts, &mut ws, Flipped(false))
            .unwrap();
        let a = WhitenerView::from_parts(d, k, &plain).unwrap();
        let mut b = [0.0f64; 6];
        b.copy_from_slice(w.view().whitening());
        assert!(a.whitening().iter().any(|v| *v != 0.0));
        for (x, y) in a.whitening().iter().zip(&b) {
            assert_eq!(*x, -*y);
        }
        let before = flipped;
        let mut w = WhitenerBuf::new_keep(d, k, &mut flipped).unwrap();
        let err = w.fit_with(m.as_ref(), &opts, &mut ws, Flipped(true));
        assert_eq!(
            err,
            Err(crate::Error::InvalidParameter("the kernel's eigen failed"))
        );
        assert_eq!(flipped, before);
    }
}
