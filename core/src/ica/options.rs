//! What a FastICA fit is asked to do: algorithm, iteration cap and tolerance, contrast, whitening,
//! start.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Sum;
use crate::ica::contrast::{ContrastKind, LogCosh};
use crate::random::Normals;
use crate::whiten::{Method, Rotation, WhitenOptions};

/// Parallel (symmetric) or deflation (one component at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// All rows at once with symmetric decorrelation (scikit-learn's default).
    #[default]
    Parallel,
    /// Row by row with Gram-Schmidt.
    Deflation,
}

/// scikit-learn's `whiten` parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WhitenMode {
    /// Centre, whiten, and scale the sources to unit variance (the default).
    #[default]
    UnitVariance,
    /// Centre and whiten; sources keep scikit-learn's arbitrary scale (variance `1/n`).
    ArbitraryVariance,
    /// The data are already white: no centring, no whitening, `k = d`.
    None,
}

crate::names::option_names!(Algorithm, "algorithm", {
    Algorithm::Parallel => "parallel", Algorithm::Parallel;
    Algorithm::Deflation => "deflation", Algorithm::Deflation;
});

crate::names::option_names!(WhitenMode, "whiten mode", {
    WhitenMode::UnitVariance => "unit-variance", WhitenMode::UnitVariance;
    WhitenMode::ArbitraryVariance => "arbitrary-variance", WhitenMode::ArbitraryVariance;
    WhitenMode::None => "false", WhitenMode::None;
});

/// Iteration options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IcaOptions {
    /// Parallel or deflation.
    pub algorithm: Algorithm,
    /// Iteration cap (per row for deflation), at least 1. Default 200.
    pub max_iter: usize,
    /// Stop when the change falls below this, `>= 0`. Default `1e-4`.
    pub tol: Sum,
}

impl IcaOptions {
    /// scikit-learn's defaults: parallel, 200 iterations, `tol = 1e-4`.
    pub const DEFAULT: Self = Self {
        algorithm: Algorithm::Parallel,
        max_iter: 200,
        tol: 1e-4,
    };
    pub(crate) fn check(&self) -> Result<()> {
        if self.max_iter == 0 {
            return Err(Error::InvalidParameter("max_iter must be at least 1"));
        }
        if self.tol.is_nan() || self.tol < 0.0 {
            return Err(Error::InvalidParameter("tol must be a number >= 0"));
        }
        Ok(())
    }
}

impl Default for IcaOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// How the iterations ended.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct IcaInfo {
    /// Iterations run (deflation: the most any row needed).
    pub n_iter: usize,
    /// Whether every change fell below `tol` within `max_iter`.
    pub converged: bool,
    /// The last change (deflation: the largest last change over the rows).
    pub last_change: Sum,
}

/// Where the start `W` comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WInit<'a> {
    /// A given `k x k` matrix, row-major (scikit-learn's `w_init`).
    Matrix(&'a [Sum]),
    /// Standard normals from [`Normals::new(seed)`](Normals), row-major (like scikit-learn's
    /// `random_state`, with our generator).
    Seed(u64),
}

/// Everything a full fit needs besides the data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FastIcaOptions {
    /// Algorithm, `max_iter`, `tol`.
    pub ica: IcaOptions,
    /// The contrast.
    pub contrast: ContrastKind,
    /// scikit-learn's `whiten`.
    pub whiten: WhitenMode,
    /// Relative eigenvalue threshold of the whitening's rank test.
    pub rank_rtol: Sum,
    /// Order components by |excess kurtosis| and sign them to positive skewness.
    pub canonical: bool,
}

impl FastIcaOptions {
    /// scikit-learn's defaults (parallel, logcosh with alpha 1, unit variance, 200 iterations,
    /// `tol = 1e-4`), `rank_rtol = 1e-10`, no canonical form.
    pub const DEFAULT: Self = Self {
        ica: IcaOptions::DEFAULT,
        contrast: ContrastKind::LogCosh(LogCosh::DEFAULT),
        whiten: WhitenMode::UnitVariance,
        rank_rtol: WhitenOptions::DEFAULT.rank_rtol,
        canonical: false,
    };

    /// The number of components a fit of `d` features asked for `requested` keeps: all `d` with
    /// [`WhitenMode::None`] (scikit-learn ignores `n_components` there), else `requested` or `d`.
    pub fn components(&self, d: usize, requested: Option<usize>) -> usize {
        match self.whiten {
            WhitenMode::None => d,
            _ => requested.unwrap_or(d),
        }
    }

    /// Checks the options and the shape `d -> k` of a fit, before any pass over the data.
    pub fn check(&self, d: usize, k: usize) -> Result<()> {
        if k == 0 || k > d || (self.whiten == WhitenMode::None && k != d) {
            return Err(Error::InvalidComponents { k, d });
        }
        self.ica.check()?;
        if let ContrastKind::LogCosh(c) = self.contrast {
            LogCosh::new(c.alpha())?;
        }
        Ok(())
    }

    /// The whitening FastICA uses: PCA, no rotation, ddof 0 (scikit-learn's eigh solver), this
    /// `rank_rtol`. A whitener for [`FastIcaBuf::fit_white_with`](crate::ica::FastIcaBuf::fit_white_with)
    /// is fitted with these.
    pub fn pca_options(&self) -> WhitenOptions {
        WhitenOptions {
            method: Method::Pca,
            rotation: Rotation::None,
            ddof: 0,
            rank_rtol: self.rank_rtol,
        }
    }
}

impl Default for FastIcaOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Writes the start matrix (`k x k`) into `w`.
pub(crate) fn start_matrix(init: WInit<'_>, k: usize, w: &mut [Sum]) -> Result<()> {
    let w = prefix_mut(w, k * k)?;
    match init {
        WInit::Matrix(m) => {
            if m.len() != k * k {
                return Err(Error::DimensionMismatch {
                    expected: k * k,
                    found: m.len(),
                });
            }
            w.copy_from_slice(m);
        }
        WInit::Seed(seed) => Normals::new(seed).fill_sum(w),
    }
    Ok(())
}
