//! The floating-point types the crate works in: `f32` and `f64`, through one small trait.
//!
//! Math goes through [`libm`] explicitly, so a host test and a Cortex-M build run the same code
//! and get the same bits. `T` is the precision of the data and of the fitted model; sums over
//! samples and the fits' internal state (moments, eigen decompositions, FastICA's `W`, its
//! statistics and update) are kept in [`Sum`]: `f64`, or `f32` with the `f32-sums` feature.
//!
//! # The `f32-sums` feature: f32 arithmetic where the FPU is f32
//! A Cortex-M4F (or M33, M7 with a single-precision FPU) has no `f64` hardware: every `f64`
//! operation is a call into software floating point (`__aeabi_dmul`, `__aeabi_dadd`, ...), some
//! 3 KB of code and tens of cycles each. With `f32-sums`, [`Sum`] is `f32`: the passes and the
//! fits compute in `f32`, with the same blockwise summation as the `f64` path (moments in
//! centred blocks of [`BLOCK`](crate::moments::BLOCK) rows merged by Chan's pairwise update;
//! FastICA's statistics in [`CHUNK`](crate::ica::CHUNK)-row partial sums, each in blocks of the
//! kernel's rows summed over four lanes), and no `f64` arithmetic is linked into a fit (the
//! firmware's `check.sh` checks the symbols).
//!
//! It is a **whole-program** choice, not an additive feature: it changes the element type of
//! every workspace, moment buffer, option and statistic that the API spells [`Sum`] (`f64`
//! otherwise), so code written for the default (`[0.0f64; fit_workspace_len(4, 4)]`) does not
//! compile with it. Cargo unifies features, so enable it only in a firmware's own build (as
//! `firmware/` does with `--features f32-sums`), never in a library that others link.
//! Without the feature nothing changes: every result is the same bits as before it existed.
//!
//! ## Accuracy contract of `f32-sums` against the `f64` path
//! Checked by `firmware/check.sh` (in CI) on the firmware's pipeline: a simulated sensor of 4
//! non-Gaussian sources mixed into D = 4 channels, N = 1000 samples streamed through
//! [`Moments`](crate::moments::Moments), PCA whitening, the streaming FastICA fit (logcosh,
//! parallel, `tol = 1e-4`) to K = 4, MCC and Amari index against the truth. Each path runs in
//! QEMU (Cortex-M4F) and on the host, bit-identical per path; then the `f32-sums` results are
//! compared with the `f64` path's, and the check fails beyond these bounds (the firmware's FastICA
//! blocks are 16 rows, [`PortableRows<16>`](crate::ica::PortableRows)):
//!
//! | quantity | bound | measured |
//! |---|---|---|
//! | whitener mean, max abs. difference / max abs. value | `5e-6` | `8.9e-8` |
//! | whitening matrix, the same | `1e-4` | `1.2e-5` |
//! | explained variance (eigenvalues), the same | `5e-6` | `4.6e-7` |
//! | FastICA components: Amari index of `components_f32 * mixing_f64` | `1e-3` | `2.2e-4` |
//! | components matched row to row up to sign, as above | `2e-3` | `7.7e-4` |
//! | MCC against the true sources, abs. difference | `2e-5` | `1.7e-6` |
//! | Amari index against the true mixing, abs. difference | `1e-4` | `7.5e-6` |
//!
//! With the feature the contrasts take libm's `tanhf` and `expf` (within 2 ulp) instead of the
//! `f64` path's [`fastmath`](crate::ica::fastmath).
//!
//! The whitener carries `f32` rounding of the covariance, amplified for the eigenvectors by the
//! inverse eigenvalue gaps. The components differ mostly by where the iterations stopped: both
//! paths stop once `max_i | |<w_i_new, w_i_old>| - 1 | < tol`, from different starts (a seed
//! draws its normals in [`Sum`], see [`Normals::fill_sum`](crate::random::Normals::fill_sum)),
//! so their difference scales with `tol`, not with `f32`'s epsilon; the `f32` path took 4
//! iterations where the `f64` path took 3.
//!
//! On the host, `core/tests/f32_sums.rs` (run by CI with the feature) checks the moments
//! streamed one sample at a time against a two-pass `f64` covariance computed in the test
//! (offsets up to 7.5e3 over a unit spread: within 1e-5 relative, see
//! [`moments`](crate::moments)), the whitened covariance against the identity, and FastICA's
//! recovery of known sources.
//!
//! Results stay deterministic (same bits for the same call sequence and target-independent,
//! IEEE `f32` everywhere), but a fit computes in `f32`: rank tests at `rank_rtol` below about
//! `1e-6` cannot tell rank deficiency from rounding, and `tol` below about `1e-6` may never be
//! reached (`max_iter` always bounds the fit). A pass's row count is carried in a
//! [`Sum`], exact up to `2^24` rows in `f32`; a pass over more rows is [`Error::Overflow`].

use crate::error::{Error, Result};
use core::fmt::{Debug, Display};
use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// The type of sums over samples and of the fits' internal state: `f64`, or `f32` with the
/// `f32-sums` feature (see the [module docs](self) for what that changes and costs).
#[cfg(not(feature = "f32-sums"))]
pub type Sum = f64;
/// The type of sums over samples and of the fits' internal state: `f64`, or `f32` with the
/// `f32-sums` feature (see the [module docs](self) for what that changes and costs).
#[cfg(feature = "f32-sums")]
pub type Sum = f32;

/// `libm` at the precision of [`Sum`]: `libm::sqrt` for `f64`, `libm::sqrtf` for `f32`, and so on.
pub(crate) mod smath {
    #[cfg(not(feature = "f32-sums"))]
    pub(crate) use libm::{ceil, copysign, fabs, frexp, hypot, ldexp, log, sqrt};
    #[cfg(feature = "f32-sums")]
    pub(crate) use libm::{
        ceilf as ceil, copysignf as copysign, fabsf as fabs, frexpf as frexp, ldexpf as ldexp,
        logf as log, sqrtf as sqrt,
    };

    /// `sqrt(x^2 + y^2)` without undue overflow or underflow, in `f32` only (libm's `hypotf`
    /// computes in `f64`, which would link soft-float `f64` on an f32 FPU): the larger magnitude
    /// times `sqrt(1 + r^2)`, `r <= 1` the ratio, within 2 ulp. Infinite if either is; else NaN if
    /// either is.
    #[cfg(feature = "f32-sums")]
    pub(crate) fn hypot(x: f32, y: f32) -> f32 {
        let (a, b) = (libm::fabsf(x), libm::fabsf(y));
        if a == f32::INFINITY || b == f32::INFINITY {
            return f32::INFINITY;
        }
        let (big, small) = if a >= b { (a, b) } else { (b, a) };
        if big == 0.0 || big.is_nan() || small.is_nan() {
            return if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                0.0
            };
        }
        let r = small / big;
        big * libm::sqrtf(1.0 + r * r)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64`. Sealed: the crate's accuracy contracts are stated for these two only.
pub trait Float:
    sealed::Sealed
    + Copy
    + Default
    + PartialOrd
    + Debug
    + Display
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Machine epsilon.
    const EPSILON: Self;
    /// Converts from `f64`, rounding to nearest.
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` exactly.
    fn to_f64(self) -> f64;
    /// Converts from [`Sum`], rounding to nearest (a no-op when they are the same type).
    fn from_sum(v: Sum) -> Self;
    /// Converts to [`Sum`], rounding to nearest (a no-op when they are the same type).
    fn to_sum(self) -> Sum;
    /// Neither NaN nor infinite.
    fn is_finite(self) -> bool;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Square root (libm, correctly rounded).
    fn sqrt(self) -> Self;
    /// Exponential (libm, within 1 ulp).
    fn exp(self) -> Self;
    /// Natural logarithm (libm, within 1 ulp).
    fn ln(self) -> Self;
    /// Hyperbolic tangent (libm, within 2 ulp).
    fn tanh(self) -> Self;
}

/// Checks that `rows` is a whole number of rows of `width` and all finite; `first_row` numbers the
/// first row in error messages.
pub(crate) fn check_rows<T: Float>(rows: &[T], width: usize, first_row: u64) -> Result<usize> {
    if width == 0 || rows.len() % width != 0 {
        return Err(Error::RaggedRows {
            len: rows.len(),
            width,
        });
    }
    if let Some(pos) = first_non_finite(rows) {
        return Err(Error::NonFinite {
            row: first_row + (pos / width) as u64,
            col: pos % width,
        });
    }
    Ok(rows.len() / width)
}

/// Index of the first NaN or infinity in `v`, if any.
///
/// Every pass over samples checks its input, so this must run at memory speed: it scans blocks of
/// 64 values without an early exit (a loop that vectorises) and searches only a block that holds
/// a non-finite value.
#[inline]
pub(crate) fn first_non_finite<T: Float>(v: &[T]) -> Option<usize> {
    const BLOCK: usize = 64;
    for (b, block) in v.chunks(BLOCK).enumerate() {
        if block.iter().fold(false, |bad, x| bad | !x.is_finite()) {
            return block
                .iter()
                .position(|x| !x.is_finite())
                .map(|i| b * BLOCK + i);
        }
    }
    None
}

macro_rules! impl_float {
    ($t:ty, $sqrt:path, $exp:path, $ln:path, $tanh:path) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const EPSILON: Self = <$t>::EPSILON;
            #[inline]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_sum(v: Sum) -> Self {
                v as $t
            }
            #[inline]
            fn to_sum(self) -> Sum {
                self as Sum
            }
            #[inline]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                $sqrt(self)
            }
            #[inline]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline]
            fn ln(self) -> Self {
                $ln(self)
            }
            #[inline]
            fn tanh(self) -> Self {
                $tanh(self)
            }
        }
    };
}

impl_float!(f32, libm::sqrtf, libm::expf, libm::logf, libm::tanhf);
impl_float!(f64, libm::sqrt, libm::exp, libm::log, libm::tanh);
