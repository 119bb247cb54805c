//! The crate's one error type.
//!
//! Every fallible function in `unmix` returns [`Result<T>`](Result). Errors are small `Copy`
//! values that say what was wrong and where, so a caller on a microcontroller can match on them
//! and a command-line tool can print them.

use core::fmt;

/// What went wrong. Nothing in the crate panics on data: every bad input ends up here.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A value is NaN or infinite; `row` counts samples from the first one ever accumulated.
    NonFinite {
        /// Sample index.
        row: u64,
        /// Feature index.
        col: usize,
    },
    /// Fewer samples than the computation needs.
    TooFewSamples {
        /// Samples seen.
        n: u64,
        /// Samples needed.
        needed: u64,
    },
    /// A slice or matrix does not have the dimension the computation expects.
    DimensionMismatch {
        /// Expected length or dimension.
        expected: usize,
        /// Length or dimension found.
        found: usize,
    },
    /// A flat row-major slice whose length is not a whole number of rows.
    RaggedRows {
        /// Slice length.
        len: usize,
        /// Row width.
        width: usize,
    },
    /// A caller-provided buffer is shorter than needed.
    BufferTooSmall {
        /// Elements needed.
        needed: usize,
        /// Elements provided.
        found: usize,
    },
    /// The number of components `k` is not in `1..=d` (or, for ZCA, not equal to `d`).
    InvalidComponents {
        /// Components requested.
        k: usize,
        /// Features available.
        d: usize,
    },
    /// Too few entries for the computation: e.g. an Amari index of a 1 x 1 matrix, or the
    /// sparsity of a single feature.
    TooFew {
        /// What was counted, e.g. `"components"`.
        what: &'static str,
        /// How many were given.
        found: usize,
        /// How many are needed.
        needed: usize,
    },
    /// More components were requested than the data's effective rank supports.
    RankDeficient {
        /// Effective rank: eigenvalues above `rank_rtol` times the largest.
        rank: usize,
        /// Components requested.
        requested: usize,
    },
    /// An iterative routine did not converge within its iteration cap.
    NoConvergence {
        /// Iterations performed.
        iterations: usize,
    },
    /// Labels hold a single class (or one class has zero total weight): the metric is undefined.
    SingleClass,
    /// A column has zero variance, so a correlation with it is undefined.
    ZeroVariance {
        /// Column index, counted across the first matrix and then the second (a column `c` of
        /// the second matrix is `dx + c`).
        col: usize,
    },
    /// No complete assignment avoids the forbidden (+infinity) costs.
    Infeasible,
    /// An intermediate result overflowed (e.g. a covariance of data near 1e200): rescale the data.
    Overflow,
    /// An option is outside its documented range; the string names it.
    InvalidParameter(&'static str),
}

/// `core::result::Result` specialised to [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::NonFinite { row, col } => {
                write!(
                    f,
                    "non-finite value (NaN or infinity) at row {row}, column {col}"
                )
            }
            Error::TooFewSamples { n, needed } => {
                write!(f, "too few samples: {n} given, at least {needed} needed")
            }
            Error::DimensionMismatch { expected, found } => {
                write!(f, "dimension mismatch: expected {expected}, found {found}")
            }
            Error::RaggedRows { len, width } => {
                write!(
                    f,
                    "{len} values are not a whole number of rows of width {width}"
                )
            }
            Error::BufferTooSmall { needed, found } => {
                write!(
                    f,
                    "buffer too small: {needed} elements needed, {found} given"
                )
            }
            Error::InvalidComponents { k, d } => {
                write!(f, "invalid number of components {k} for {d} features")
            }
            Error::TooFew {
                what,
                found,
                needed,
            } => write!(f, "too few {what}: {found} given, at least {needed} needed"),
            Error::RankDeficient { rank, requested } => write!(
                f,
                "data are rank-deficient: effective rank {rank}, {requested} components requested"
            ),
            Error::NoConvergence { iterations } => {
                write!(f, "no convergence after {iterations} iterations")
            }
            Error::SingleClass => write!(f, "labels hold a single class: the metric is undefined"),
            Error::ZeroVariance { col } => {
                write!(
                    f,
                    "column {col} has zero variance: its correlation is undefined"
                )
            }
            Error::Infeasible => write!(f, "the cost matrix is infeasible: no complete assignment"),
            Error::Overflow => {
                write!(f, "intermediate result overflowed; rescale the data")
            }
            Error::InvalidParameter(what) => write!(f, "invalid parameter: {what}"),
        }
    }
}

impl core::error::Error for Error {}

/// The first `needed` elements of a caller's buffer, or [`Error::BufferTooSmall`].
pub(crate) fn prefix_mut<T>(buf: &mut [T], needed: usize) -> Result<&mut [T]> {
    let found = buf.len();
    buf.get_mut(..needed)
        .ok_or(Error::BufferTooSmall { needed, found })
}

/// The first `needed` elements of `buf`, or [`Error::BufferTooSmall`].
pub(crate) fn prefix<T>(buf: &[T], needed: usize) -> Result<&[T]> {
    let found = buf.len();
    buf.get(..needed)
        .ok_or(Error::BufferTooSmall { needed, found })
}
