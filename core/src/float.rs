//! The floating-point types the crate works in: `f32` and `f64`, through one small trait.
//!
//! Math goes through [`libm`] explicitly, so a host test and a Cortex-M build run the same code
//! and get the same bits. Sums over samples are always taken in `f64` (see
//! [`moments`](crate::moments)); `T` is the precision of the data and of the fitted model.

use crate::error::{Error, Result};
use core::fmt::{Debug, Display};
use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

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
