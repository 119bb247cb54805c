//! Contrast functions: `G` is the contrast, the update uses `g = G'` and `g'`.
//!
//! | contrast | G(u) | g(u) | g'(u) |
//! |---|---|---|---|
//! | [`LogCosh`] | log cosh(a u) / a | tanh(a u) | a (1 - tanh^2(a u)) |
//! | [`Exp`] | -exp(-u^2 / 2) | u exp(-u^2 / 2) | (1 - u^2) exp(-u^2 / 2) |
//! | [`Cube`] | u^4 / 4 | u^3 | 3 u^2 |
//!
//! These are scikit-learn's `logcosh` (with `alpha` in [1, 2]), `exp` and `cube`. A user contrast
//! implements [`Contrast`]. `tanh` and `exp` come from [`fastmath`] (within 4 and 2 ulp of libm),
//! which vectorises over a block of samples.

use crate::error::{Error, Result};
use crate::float::Sum;
#[cfg(not(feature = "f32-sums"))]
use crate::ica::fastmath;

// `tanh` and `exp` at the precision of `Sum`: fastmath's branch-free f64 ones, or with the
// `f32-sums` feature libm's `tanhf` and `expf` (within 2 ulp of f32; no f64 is linked).
#[cfg(not(feature = "f32-sums"))]
use fastmath::{exp_nonpositive, tanh};
#[cfg(feature = "f32-sums")]
#[inline(always)]
fn tanh(x: Sum) -> Sum {
    libm::tanhf(x)
}
#[cfg(feature = "f32-sums")]
#[inline(always)]
fn exp_nonpositive(x: Sum) -> Sum {
    libm::expf(x)
}

/// A FastICA nonlinearity: for a projection `u`, returns `(g(u), g'(u))`. `Sync`, so that
/// passes can run on several threads.
pub trait Contrast: Sync {
    /// `(g(u), g'(u))`.
    fn eval(&self, u: Sum) -> (Sum, Sum);
    /// Replaces each `y[r]` by `g(y[r])` and writes `g'(y[r])` to `gp[r]`. The default loops over
    /// [`eval`](Self::eval); the built-in contrasts keep it branch-free so that it vectorises.
    #[inline(always)]
    fn eval_block(&self, y: &mut [Sum], gp: &mut [Sum]) {
        for (v, d) in y.iter_mut().zip(gp.iter_mut()) {
            let (g, dg) = self.eval(*v);
            *v = g;
            *d = dg;
        }
    }
    /// The built-in contrast this is, if it is one: what lets a pass be described as plain
    /// data ([`PassSpec`](crate::ica::PassSpec)) and run in another process. A user contrast
    /// keeps the default `None`.
    fn kind(&self) -> Option<ContrastKind> {
        None
    }
}

/// `g(u) = tanh(alpha u)`, the default (scikit-learn's `logcosh`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogCosh {
    alpha: Sum,
}

impl LogCosh {
    /// `alpha = 1`.
    pub const DEFAULT: Self = Self { alpha: 1.0 };
    /// `alpha` must be in [1, 2], as scikit-learn requires.
    pub fn new(alpha: Sum) -> Result<Self> {
        if !(1.0..=2.0).contains(&alpha) {
            return Err(Error::InvalidParameter("alpha must be in [1, 2]"));
        }
        Ok(Self { alpha })
    }
    /// `alpha`.
    pub fn alpha(&self) -> Sum {
        self.alpha
    }
}

impl Default for LogCosh {
    fn default() -> Self {
        Self { alpha: 1.0 }
    }
}

impl Contrast for LogCosh {
    fn kind(&self) -> Option<ContrastKind> {
        Some(ContrastKind::LogCosh(*self))
    }
    #[inline(always)]
    fn eval(&self, u: Sum) -> (Sum, Sum) {
        let t = tanh(self.alpha * u);
        (t, self.alpha * (1.0 - t * t))
    }
    /// The same bits as [`eval`](Self::eval), in two loops (see [`fastmath::tanh`]'s halves).
    #[cfg(not(feature = "f32-sums"))]
    #[inline(always)]
    fn eval_block(&self, y: &mut [Sum], gp: &mut [Sum]) {
        let alpha = self.alpha;
        for (v, m) in y.iter_mut().zip(gp.iter_mut()) {
            *v *= alpha;
            *m = fastmath::tanh_expm1(*v);
        }
        for (v, d) in y.iter_mut().zip(gp.iter_mut()) {
            let t = fastmath::tanh_finish(*d, *v);
            *v = t;
            *d = alpha * (1.0 - t * t);
        }
    }
}

/// `g(u) = u exp(-u^2 / 2)` (scikit-learn's `exp`), robust to outliers.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Exp;

impl Contrast for Exp {
    fn kind(&self) -> Option<ContrastKind> {
        Some(ContrastKind::Exp)
    }
    #[inline(always)]
    fn eval(&self, u: Sum) -> (Sum, Sum) {
        let u2 = u * u;
        let e = exp_nonpositive(-0.5 * u2);
        (u * e, (1.0 - u2) * e)
    }
}

/// `g(u) = u^3` (scikit-learn's `cube`): kurtosis.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Cube;

impl Contrast for Cube {
    fn kind(&self) -> Option<ContrastKind> {
        Some(ContrastKind::Cube)
    }
    #[inline(always)]
    fn eval(&self, u: Sum) -> (Sum, Sum) {
        let u2 = u * u;
        (u2 * u, 3.0 * u2)
    }
}

/// One of the built-in contrasts, chosen at run time (the CLI and the C API).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContrastKind {
    /// [`LogCosh`].
    LogCosh(LogCosh),
    /// [`Exp`].
    Exp,
    /// [`Cube`].
    Cube,
}

// `logcosh` parses with alpha = 1; the alpha is a separate option.
crate::names::option_names!(ContrastKind, "contrast", {
    ContrastKind::LogCosh(_) => "logcosh", ContrastKind::LogCosh(LogCosh::default());
    ContrastKind::Exp => "exp", ContrastKind::Exp;
    ContrastKind::Cube => "cube", ContrastKind::Cube;
});

impl Default for ContrastKind {
    fn default() -> Self {
        Self::LogCosh(LogCosh::default())
    }
}

impl Contrast for ContrastKind {
    fn kind(&self) -> Option<ContrastKind> {
        Some(*self)
    }
    #[inline(always)]
    fn eval(&self, u: Sum) -> (Sum, Sum) {
        match self {
            Self::LogCosh(c) => c.eval(u),
            Self::Exp => Exp.eval(u),
            Self::Cube => Cube.eval(u),
        }
    }
    #[inline(always)]
    fn eval_block(&self, y: &mut [Sum], gp: &mut [Sum]) {
        // One match per block, then each contrast's own (vectorisable) loop.
        match self {
            Self::LogCosh(c) => c.eval_block(y, gp),
            Self::Exp => Exp.eval_block(y, gp),
            Self::Cube => Cube.eval_block(y, gp),
        }
    }
}
