//! Streaming, mergeable means, covariances and cross-covariances.
//!
//! Every pass over samples in `unmix` is a reduction with two operations: `accumulate` a chunk of
//! rows, and `merge` another partial result. The same code then runs one sample at a time on a
//! microcontroller, chunk by chunk over threads, or shard by shard on a cluster.
//!
//! # Accuracy contract
//! Sums are kept in [`Sum`] whatever the data type (`f64`; `f32` with the
//! `f32-sums` feature), and never as raw sums of squares: rows are taken
//! in blocks of [`BLOCK`], each block is centred on its own mean, and blocks are combined with the
//! pairwise update of Chan, Golub and LeVeque (1979),
//! `C = C_a + C_b + delta delta' n_a n_b / n`. The error is therefore relative to the spread of the
//! data, not to its offset: f32 data with mean 1e4 and unit variance give a covariance within
//! 1e-7 relative of the exact one (tested with N = 1e6), where a naive f32 sum of squares is off by
//! more than 1e-2.
//!
//! With the `f32-sums` feature the sums are `f32` and the running mean carries a compensation
//! term (Kahan): moved one sample at a time, an `f32` mean would round each step to the offset's
//! magnitude and drift. Streaming 20 000 samples one at a time with offsets up to 7.5e3 and unit
//! spread, the covariance stays within 1e-5 relative of a two-pass `f64` one (measured 3.6e-6;
//! 8e-2 relative error in the mean without the compensation), tested in `core/tests/f32_sums.rs`.
//!
//! # Determinism
//! For a given sequence of `accumulate` and `merge` calls the result is the same bits. Different
//! chunkings of the same rows agree to rounding (about 1e-15 relative), not bit for bit.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};

/// Rows per internal block. Fixed, so that results never depend on anything but the call sequence.
pub const BLOCK: usize = 32;

// Lives with the float helpers so that `linalg` need not import `moments`.
pub(crate) use crate::float::check_rows;

/// Writes the mean of the `nb` rows of `rows` to `bmean` and the centred rows (as f64) to `block`.
fn centre_block<T: Float>(rows: &[T], d: usize, nb: usize, bmean: &mut [Sum], block: &mut [Sum]) {
    bmean.fill(0.0);
    for row in rows.chunks_exact(d).take(nb) {
        for (m, x) in bmean.iter_mut().zip(row) {
            *m += x.to_sum();
        }
    }
    let inv = 1.0 / nb as Sum;
    for m in bmean.iter_mut() {
        *m *= inv;
    }
    for (brow, row) in block.chunks_exact_mut(d).zip(rows.chunks_exact(d)).take(nb) {
        for ((b, x), m) in brow.iter_mut().zip(row).zip(bmean.iter()) {
            *b = x.to_sum() - *m;
        }
    }
}

/// `com[i][j] += sum_r bx[r][i] * by[r][j] + dx[i] * dy[j] * f` for `j >= i` when `upper`,
/// else for all `j`. `com` is `dx_len x dy_len`, row-major.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
fn scatter(
    com: &mut [Sum],
    bx: &[Sum],
    by: &[Sum],
    nb: usize,
    delta_x: &[Sum],
    delta_y: &[Sum],
    f: Sum,
    upper: bool,
) {
    let (nx, ny) = (delta_x.len(), delta_y.len());
    for (i, crow) in com.chunks_exact_mut(ny).enumerate().take(nx) {
        let j0 = if upper { i } else { 0 };
        let crow = &mut crow[j0..];
        for r in 0..nb {
            let a = bx[r * nx + i];
            let brow = &by[r * ny + j0..r * ny + ny];
            for (c, b) in crow.iter_mut().zip(brow) {
                *c += a * *b;
            }
        }
        let di = delta_x[i] * f;
        for (c, dj) in crow.iter_mut().zip(&delta_y[j0..]) {
            *c += di * *dj;
        }
    }
}

/// `s[i] += sum_r block[r][i]^2 + delta[i]^2 f`: one variable's centred sum of squares.
fn diagonal(s: &mut [Sum], block: &[Sum], nb: usize, delta: &[Sum], f: Sum) {
    let d = delta.len();
    for row in block.chunks_exact(d).take(nb) {
        for (acc, b) in s.iter_mut().zip(row) {
            *acc += b * b;
        }
    }
    for (acc, dl) in s.iter_mut().zip(delta) {
        *acc += dl * dl * f;
    }
}

/// Moves `mean` to the combined mean of `n_a` samples at `mean` and `n_b` at `mean + delta`.
fn shift_mean(mean: &mut [Sum], delta: &[Sum], n_b: u64, n: u64) {
    let w = n_b as Sum / n as Sum;
    for (m, dl) in mean.iter_mut().zip(delta) {
        *m += dl * w;
    }
}

/// Elements of [`Moments`]' compensation of the running mean per feature: 1 with the `f32-sums`
/// feature, else 0.
const MEAN_LO: usize = cfg!(feature = "f32-sums") as usize;

/// `f32-sums`: the running mean is `mean + lo` (Kahan's compensated sum). A running mean in `f32`
/// moved one sample at a time rounds each step to the mean's own magnitude, so data offset far
/// above their spread (a sensor's DC level) would drift by many ulps of the offset and, through
/// the deltas, bias the covariance; with the compensation the deltas, and so the covariance,
/// stay accurate relative to the spread. (The `f64` path keeps its plain update: its bits do not
/// change.)
#[cfg(feature = "f32-sums")]
fn shift_mean_compensated(mean: &mut [Sum], lo: &mut [Sum], delta: &[Sum], n_b: u64, n: u64) {
    let w = n_b as Sum / n as Sum;
    for ((m, c), dl) in mean.iter_mut().zip(lo.iter_mut()).zip(delta) {
        let y = dl * w - *c;
        let t = *m + y;
        *c = (t - *m) - y;
        *m = t;
    }
}

/// `delta = target - (mean + lo)` into `delta`, which holds `target`: the compensated mean's
/// difference (`f32-sums`), or `target - mean`.
#[inline]
fn mean_delta(delta: &mut [Sum], mean: &[Sum], lo: &[Sum]) {
    let _ = lo;
    for (i, (b, m)) in delta.iter_mut().zip(mean).enumerate() {
        *b -= *m;
        if MEAN_LO == 1 {
            *b -= lo[i];
        }
    }
}

/// Read-only view of accumulated moments, whoever owns the storage.
#[derive(Clone, Copy, Debug)]
pub struct MomentsRef<'a> {
    n: u64,
    d: usize,
    mean: &'a [Sum],
    comoment: &'a [Sum],
}

impl<'a> MomentsRef<'a> {
    /// Reassembles a view from its parts, e.g. moments computed elsewhere and sent over a wire:
    /// `mean` has `d` elements and `comoment` is `d x d` row-major (only its upper triangle is
    /// read).
    pub fn from_parts(n: u64, d: usize, mean: &'a [Sum], comoment: &'a [Sum]) -> Result<Self> {
        if mean.len() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                found: mean.len(),
            });
        }
        if comoment.len() != d * d {
            return Err(Error::DimensionMismatch {
                expected: d * d,
                found: comoment.len(),
            });
        }
        Ok(Self {
            n,
            d,
            mean,
            comoment,
        })
    }
    /// The comoment matrix, `d x d` row-major; only the upper triangle is maintained.
    pub fn comoment_upper(&self) -> &'a [Sum] {
        self.comoment
    }
    /// Samples accumulated.
    pub fn n_samples(&self) -> u64 {
        self.n
    }
    /// Number of features.
    pub fn dim(&self) -> usize {
        self.d
    }
    /// The mean of each feature (zeros before any sample).
    pub fn mean(&self) -> &'a [Sum] {
        self.mean
    }
    /// The centred sum of products `sum_t (x_ti - mean_i)(x_tj - mean_j)`.
    pub fn comoment(&self, i: usize, j: usize) -> Sum {
        let (a, b) = if i <= j { (i, j) } else { (j, i) };
        self.comoment[a * self.d + b]
    }
    /// The comoment divided by `n - ddof`: ddof 0 is the maximum-likelihood covariance
    /// (scikit-learn's FastICA), ddof 1 the unbiased one (numpy's `cov`, scikit-learn's PCA).
    pub fn covariance(&self, i: usize, j: usize, ddof: u32) -> Result<Sum> {
        Ok(self.comoment(i, j) / self.denominator(ddof)?)
    }
    /// Writes the full symmetric `d x d` covariance, row-major, to `out`.
    pub fn covariance_into(&self, ddof: u32, out: &mut [Sum]) -> Result<()> {
        let d = self.d;
        if out.len() < d * d {
            return Err(Error::BufferTooSmall {
                needed: d * d,
                found: out.len(),
            });
        }
        let inv = 1.0 / self.denominator(ddof)?;
        for i in 0..d {
            for j in i..d {
                let c = self.comoment[i * d + j] * inv;
                out[i * d + j] = c;
                out[j * d + i] = c;
            }
        }
        Ok(())
    }
    fn denominator(&self, ddof: u32) -> Result<Sum> {
        denominator(self.n, ddof)
    }
}

/// `n - ddof`, or an error when fewer than `max(2, ddof + 1)` samples were seen.
fn denominator(n: u64, ddof: u32) -> Result<Sum> {
    let needed = (u64::from(ddof) + 1).max(2);
    if n < needed {
        return Err(Error::TooFewSamples { n, needed });
    }
    Ok((n - u64::from(ddof)) as Sum)
}

/// The one implementation behind [`Moments`] and [`MomentsBuf`].
struct State<'s> {
    n: &'s mut u64,
    d: usize,
    mean: &'s mut [Sum],
    /// The mean's compensation (`f32-sums`; empty otherwise).
    mean_lo: &'s mut [Sum],
    comoment: &'s mut [Sum],
    bmean: &'s mut [Sum],
    block: &'s mut [Sum],
}

impl State<'_> {
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    fn accumulate<T: Float>(mut self, rows: &[T]) -> Result<()> {
        let d = self.d;
        check_rows(rows, d, *self.n)?;
        for chunk in rows.chunks(BLOCK * d) {
            let nb = chunk.len() / d;
            centre_block(chunk, d, nb, self.bmean, self.block);
            let n_new = *self.n + nb as u64;
            // delta = block mean - running mean, kept in bmean.
            mean_delta(self.bmean, self.mean, self.mean_lo);
            let f = *self.n as Sum * nb as Sum / n_new as Sum;
            scatter(
                self.comoment,
                self.block,
                self.block,
                nb,
                self.bmean,
                self.bmean,
                f,
                true,
            );
            self.shift(nb as u64, n_new);
            *self.n = n_new;
        }
        Ok(())
    }

    fn merge(mut self, other: MomentsRef<'_>) -> Result<()> {
        let d = self.d;
        if other.d != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                found: other.d,
            });
        }
        if other.n == 0 {
            return Ok(());
        }
        let n_new = *self.n + other.n;
        self.bmean.copy_from_slice(other.mean);
        mean_delta(self.bmean, self.mean, self.mean_lo);
        let f = *self.n as Sum * other.n as Sum / n_new as Sum;
        for i in 0..d {
            let di = self.bmean[i] * f;
            for j in i..d {
                self.comoment[i * d + j] += other.comoment[i * d + j] + di * self.bmean[j];
            }
        }
        self.shift(other.n, n_new);
        *self.n = n_new;
        Ok(())
    }

    /// Moves the mean by `bmean` for `n_b` of `n` samples.
    fn shift(&mut self, n_b: u64, n: u64) {
        #[cfg(feature = "f32-sums")]
        shift_mean_compensated(self.mean, self.mean_lo, self.bmean, n_b, n);
        #[cfg(not(feature = "f32-sums"))]
        shift_mean(self.mean, self.bmean, n_b, n);
    }
}

/// Mean and covariance of `D` features, storage inside: usable on the stack or in a `static`.
///
/// ```
/// use unmix::moments::Moments;
///
/// let mut m = Moments::<2>::new();
/// m.accumulate(&[1.0f32, 2.0, 3.0, 6.0])?; // two samples, row-major
/// m.accumulate(&[5.0f32, 10.0])?;          // one more
/// let view = m.as_ref();
/// assert_eq!(view.n_samples(), 3);
/// assert!((view.mean()[1] - 6.0).abs() < 1e-12);
/// assert!((view.covariance(0, 1, 1)? - 8.0).abs() < 1e-12);
/// # Ok::<(), unmix::Error>(())
/// ```
///
/// # Memory
/// `8 + size_of::<Sum>() (2D + D^2 + BLOCK D)` bytes with [`BLOCK`] = 32 rows of scratch: 1224
/// bytes at D = 4 ([`Sum`] = `f64`); with the `f32-sums` feature `D` more values (the running
/// mean's compensation), 632 bytes at D = 4. `new` is `const`, so it can live in a `static` (see [`FastIca`](crate::ica::FastIca)
/// for one in a mutex).
#[derive(Clone, Debug)]
pub struct Moments<const D: usize> {
    n: u64,
    mean: [Sum; D],
    #[cfg(feature = "f32-sums")]
    mean_lo: [Sum; D],
    comoment: [[Sum; D]; D],
    bmean: [Sum; D],
    block: [[Sum; D]; BLOCK],
}

impl<const D: usize> Default for Moments<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const D: usize> Moments<D> {
    /// No samples yet.
    pub const fn new() -> Self {
        Self {
            n: 0,
            mean: [0.0; D],
            #[cfg(feature = "f32-sums")]
            mean_lo: [0.0; D],
            comoment: [[0.0; D]; D],
            bmean: [0.0; D],
            block: [[0.0; D]; BLOCK],
        }
    }
    fn state(&mut self) -> State<'_> {
        State {
            n: &mut self.n,
            d: D,
            mean: &mut self.mean,
            #[cfg(feature = "f32-sums")]
            mean_lo: &mut self.mean_lo,
            #[cfg(not(feature = "f32-sums"))]
            mean_lo: &mut [],
            comoment: self.comoment.as_flattened_mut(),
            bmean: &mut self.bmean,
            block: self.block.as_flattened_mut(),
        }
    }
    /// Adds samples: `rows` is row-major, a whole number of rows of `D`. On error nothing is added.
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn accumulate<T: Float>(&mut self, rows: &[T]) -> Result<()> {
        self.state().accumulate(rows)
    }
    /// Adds the samples summarised by `other`.
    pub fn merge(&mut self, other: MomentsRef<'_>) -> Result<()> {
        self.state().merge(other)
    }
    /// The accumulated moments.
    pub fn as_ref(&self) -> MomentsRef<'_> {
        MomentsRef {
            n: self.n,
            d: D,
            mean: &self.mean,
            comoment: self.comoment.as_flattened(),
        }
    }
    /// Forgets every sample.
    pub fn reset(&mut self) {
        *self = Self::new();
    }
}

/// Mean and covariance of `d` features (known at run time) in a buffer the caller lends.
///
/// ```
/// use unmix::moments::MomentsBuf;
///
/// let d = 2;
/// let mut storage = [0.0f64; MomentsBuf::buffer_len(2)];
/// let mut m = MomentsBuf::new(d, &mut storage)?;
/// m.accumulate(&[1.0f64, 2.0, 3.0, 6.0, 5.0, 10.0])?;
/// assert!((m.as_ref().covariance(0, 1, 1)? - 8.0).abs() < 1e-12);
/// # Ok::<(), unmix::Error>(())
/// ```
#[derive(Debug)]
pub struct MomentsBuf<'a> {
    n: u64,
    d: usize,
    mean: &'a mut [Sum],
    comoment: &'a mut [Sum],
    bmean: &'a mut [Sum],
    block: &'a mut [Sum],
    mean_lo: &'a mut [Sum],
}

impl<'a> MomentsBuf<'a> {
    /// [`Sum`] elements of storage needed for `d` features.
    pub const fn buffer_len(d: usize) -> usize {
        d * d + (BLOCK + 2 + MEAN_LO) * d
    }
    /// Takes `buffer_len(d)` elements of `buf` (zeroing them) for `d >= 1` features.
    pub fn new(d: usize, buf: &'a mut [Sum]) -> Result<Self> {
        if d == 0 {
            return Err(Error::InvalidParameter(
                "number of features must be at least 1",
            ));
        }
        let needed = Self::buffer_len(d);
        let buf = prefix_mut(buf, needed)?;
        buf.fill(0.0);
        Self::resume(d, buf, 0)
    }
    /// The moments of `n` samples already in `buf` (as another `MomentsBuf` left it).
    pub(crate) fn resume(d: usize, buf: &'a mut [Sum], n: u64) -> Result<Self> {
        let buf = prefix_mut(buf, Self::buffer_len(d))?;
        let (mean, rest) = buf.split_at_mut(d);
        let (comoment, rest) = rest.split_at_mut(d * d);
        let (bmean, rest) = rest.split_at_mut(d);
        let (block, mean_lo) = rest.split_at_mut(BLOCK * d);
        Ok(Self {
            n,
            d,
            mean,
            comoment,
            bmean,
            block,
            mean_lo,
        })
    }
    fn state(&mut self) -> State<'_> {
        State {
            n: &mut self.n,
            d: self.d,
            mean: self.mean,
            mean_lo: self.mean_lo,
            comoment: self.comoment,
            bmean: self.bmean,
            block: self.block,
        }
    }
    /// Adds samples: `rows` is row-major, a whole number of rows of `d`. On error nothing is added.
    #[cfg_attr(target_arch = "x86_64", inline(always))] // into the CLI's AVX2 code (harness simd.rs)
    pub fn accumulate<T: Float>(&mut self, rows: &[T]) -> Result<()> {
        self.state().accumulate(rows)
    }
    /// Adds the samples summarised by `other`.
    pub fn merge(&mut self, other: MomentsRef<'_>) -> Result<()> {
        self.state().merge(other)
    }
    /// The accumulated moments.
    pub fn as_ref(&self) -> MomentsRef<'_> {
        MomentsRef {
            n: self.n,
            d: self.d,
            mean: self.mean,
            comoment: self.comoment,
        }
    }
    /// Forgets every sample.
    pub fn reset(&mut self) {
        self.n = 0;
        self.mean.fill(0.0);
        self.mean_lo.fill(0.0);
        self.comoment.fill(0.0);
    }
}

/// Read-only view of accumulated cross-moments of paired samples `(x, y)`.
#[derive(Clone, Copy, Debug)]
pub struct CrossMomentsRef<'a> {
    n: u64,
    dx: usize,
    dy: usize,
    mean_x: &'a [Sum],
    mean_y: &'a [Sum],
    comoment: &'a [Sum],
    sxx: &'a [Sum],
    syy: &'a [Sum],
}

impl<'a> CrossMomentsRef<'a> {
    /// Sample pairs accumulated.
    pub fn n_samples(&self) -> u64 {
        self.n
    }
    /// Means of `x` and of `y`.
    pub fn means(&self) -> (&'a [Sum], &'a [Sum]) {
        (self.mean_x, self.mean_y)
    }
    /// Writes the `dx x dy` cross-covariance `sum_t (x_t - mx)(y_t - my)' / (n - ddof)`.
    pub fn cross_covariance_into(&self, ddof: u32, out: &mut [Sum]) -> Result<()> {
        let len = self.dx * self.dy;
        if out.len() < len {
            return Err(Error::BufferTooSmall {
                needed: len,
                found: out.len(),
            });
        }
        let inv = 1.0 / denominator(self.n, ddof)?;
        for (o, c) in out.iter_mut().zip(self.comoment) {
            *o = c * inv;
        }
        Ok(())
    }
    /// Writes the `dx x dy` Pearson correlations. A constant column is
    /// [`Error::ZeroVariance`] (columns of `x` first, then of `y`).
    pub fn correlation_into(&self, out: &mut [Sum]) -> Result<()> {
        let out = prefix_mut(out, self.dx * self.dy)?;
        denominator(self.n, 0)?;
        let zero = |s: &[Sum], offset: usize| {
            s.iter()
                .position(|v| v.is_nan() || *v <= 0.0)
                .map(|c| c + offset)
        };
        if let Some(col) = zero(self.sxx, 0).or_else(|| zero(self.syy, self.dx)) {
            return Err(Error::ZeroVariance { col });
        }
        for (i, row) in out.chunks_exact_mut(self.dy).enumerate() {
            for (j, o) in row.iter_mut().enumerate() {
                let r = self.comoment[i * self.dy + j] / smath::sqrt(self.sxx[i] * self.syy[j]);
                *o = r.clamp(-1.0, 1.0);
            }
        }
        Ok(())
    }
}

/// Cross-covariance of `x` (`dx` features) with `y` (`dy` features) in a buffer the caller lends.
///
/// ```
/// use unmix::moments::CrossMomentsBuf;
///
/// let mut storage = [0.0f64; CrossMomentsBuf::buffer_len(1, 1)];
/// let mut m = CrossMomentsBuf::new(1, 1, &mut storage)?;
/// m.accumulate(&[1.0f64, 2.0, 3.0], &[2.0f64, 4.0, 6.0])?;
/// let mut c = [0.0];
/// m.as_ref().cross_covariance_into(1, &mut c)?;
/// assert!((c[0] - 2.0).abs() < 1e-12);
/// # Ok::<(), unmix::Error>(())
/// ```
#[derive(Debug)]
pub struct CrossMomentsBuf<'a> {
    n: u64,
    dx: usize,
    dy: usize,
    mean_x: &'a mut [Sum],
    mean_y: &'a mut [Sum],
    comoment: &'a mut [Sum],
    sxx: &'a mut [Sum],
    syy: &'a mut [Sum],
    bmean_x: &'a mut [Sum],
    bmean_y: &'a mut [Sum],
    block_x: &'a mut [Sum],
    block_y: &'a mut [Sum],
}

impl<'a> CrossMomentsBuf<'a> {
    /// [`Sum`] elements of storage needed.
    pub const fn buffer_len(dx: usize, dy: usize) -> usize {
        dx * dy + (BLOCK + 3) * (dx + dy)
    }
    /// Takes `buffer_len(dx, dy)` elements of `buf` (zeroing them).
    pub fn new(dx: usize, dy: usize, buf: &'a mut [Sum]) -> Result<Self> {
        if dx == 0 || dy == 0 {
            return Err(Error::InvalidParameter(
                "number of features must be at least 1",
            ));
        }
        let needed = Self::buffer_len(dx, dy);
        let buf = prefix_mut(buf, needed)?;
        buf.fill(0.0);
        let (mean_x, rest) = buf.split_at_mut(dx);
        let (mean_y, rest) = rest.split_at_mut(dy);
        let (comoment, rest) = rest.split_at_mut(dx * dy);
        let (sxx, rest) = rest.split_at_mut(dx);
        let (syy, rest) = rest.split_at_mut(dy);
        let (bmean_x, rest) = rest.split_at_mut(dx);
        let (bmean_y, rest) = rest.split_at_mut(dy);
        let (block_x, block_y) = rest.split_at_mut(BLOCK * dx);
        Ok(Self {
            n: 0,
            dx,
            dy,
            mean_x,
            mean_y,
            comoment,
            sxx,
            syy,
            bmean_x,
            bmean_y,
            block_x,
            block_y,
        })
    }
    /// Adds paired samples: `x` and `y` row-major with the same number of rows.
    pub fn accumulate<T: Float>(&mut self, x: &[T], y: &[T]) -> Result<()> {
        let (dx, dy) = (self.dx, self.dy);
        let nx = check_rows(x, dx, self.n)?;
        let ny = check_rows(y, dy, self.n)?;
        if nx != ny {
            return Err(Error::DimensionMismatch {
                expected: nx,
                found: ny,
            });
        }
        for (cx, cy) in x.chunks(BLOCK * dx).zip(y.chunks(BLOCK * dy)) {
            let nb = cx.len() / dx;
            centre_block(cx, dx, nb, self.bmean_x, self.block_x);
            centre_block(cy, dy, nb, self.bmean_y, self.block_y);
            let n_new = self.n + nb as u64;
            for (b, m) in self.bmean_x.iter_mut().zip(self.mean_x.iter()) {
                *b -= *m;
            }
            for (b, m) in self.bmean_y.iter_mut().zip(self.mean_y.iter()) {
                *b -= *m;
            }
            let f = self.n as Sum * nb as Sum / n_new as Sum;
            let (bx, by) = (&*self.block_x, &*self.block_y);
            scatter(
                self.comoment,
                bx,
                by,
                nb,
                self.bmean_x,
                self.bmean_y,
                f,
                false,
            );
            diagonal(self.sxx, bx, nb, self.bmean_x, f);
            diagonal(self.syy, by, nb, self.bmean_y, f);
            shift_mean(self.mean_x, self.bmean_x, nb as u64, n_new);
            shift_mean(self.mean_y, self.bmean_y, nb as u64, n_new);
            self.n = n_new;
        }
        Ok(())
    }
    /// Adds the pairs summarised by `other`.
    pub fn merge(&mut self, other: CrossMomentsRef<'_>) -> Result<()> {
        if other.dx != self.dx || other.dy != self.dy {
            return Err(Error::DimensionMismatch {
                expected: self.dx * self.dy,
                found: other.dx * other.dy,
            });
        }
        if other.n == 0 {
            return Ok(());
        }
        let n_new = self.n + other.n;
        for ((b, om), m) in self
            .bmean_x
            .iter_mut()
            .zip(other.mean_x)
            .zip(self.mean_x.iter())
        {
            *b = om - m;
        }
        for ((b, om), m) in self
            .bmean_y
            .iter_mut()
            .zip(other.mean_y)
            .zip(self.mean_y.iter())
        {
            *b = om - m;
        }
        let f = self.n as Sum * other.n as Sum / n_new as Sum;
        for (i, crow) in self.comoment.chunks_exact_mut(self.dy).enumerate() {
            let di = self.bmean_x[i] * f;
            let orow = &other.comoment[i * self.dy..(i + 1) * self.dy];
            for ((c, o), dj) in crow.iter_mut().zip(orow).zip(self.bmean_y.iter()) {
                *c += o + di * dj;
            }
        }
        for (s, (o, dl)) in self
            .sxx
            .iter_mut()
            .zip(other.sxx.iter().zip(self.bmean_x.iter()))
        {
            *s += o + dl * dl * f;
        }
        for (s, (o, dl)) in self
            .syy
            .iter_mut()
            .zip(other.syy.iter().zip(self.bmean_y.iter()))
        {
            *s += o + dl * dl * f;
        }
        shift_mean(self.mean_x, self.bmean_x, other.n, n_new);
        shift_mean(self.mean_y, self.bmean_y, other.n, n_new);
        self.n = n_new;
        Ok(())
    }
    /// The accumulated cross-moments.
    pub fn as_ref(&self) -> CrossMomentsRef<'_> {
        CrossMomentsRef {
            n: self.n,
            dx: self.dx,
            dy: self.dy,
            mean_x: self.mean_x,
            mean_y: self.mean_y,
            comoment: self.comoment,
            sxx: self.sxx,
            syy: self.syy,
        }
    }
}
