//! FastICA: find the rotation of white data whose components are most non-Gaussian.
//!
//! This follows scikit-learn's `FastICA` (1.9) exactly, with the whitening of
//! `whiten_solver="eigh"`:
//!
//! - **parallel** (default): `W <- sym(E[g(W z) z'] - diag(E[g'(W z)]) W)`, starting from
//!   `sym(w_init)`, stopping when `max_i | |<w_i_new, w_i_old>| - 1 | < tol`;
//! - **deflation**: one row at a time, `w <- E[z g(w'z)] - E[g'(w'z)] w`, Gram-Schmidt against the
//!   rows found, normalised, starting from `w_init[j] / |w_init[j]|`; `n_iter` is the largest
//!   count over the rows;
//! - contrasts [`LogCosh`] (`alpha` in [1, 2]), [`Exp`], [`Cube`], or any [`Contrast`];
//! - `whiten`: [`WhitenMode::UnitVariance`] (sources have unit variance, ddof 0),
//!   [`WhitenMode::ArbitraryVariance`] (scikit-learn's bookkeeping: variance `1/n`), or
//!   [`WhitenMode::None`] (data already white: no centring, `components = W`).
//!
//! Non-convergence is not an error: [`IcaInfo`] says `converged = false` and gives the last change.
//!
//! # Passes
//! A fit is a few passes over the samples, each a mergeable reduction ([`Pass`]). The one fit
//! driver ([`FastIcaBuf::fit_with`], [`FastIca::fit_with`]) asks an [`Executor`] to run them and a
//! [`Kernel`] for the dense products: [`InMemory`] runs them over rows in memory, one after the
//! other (what [`FastIca::fit`] uses); the `unmix` command runs fixed chunks on a thread pool and
//! merges them in order. Either way the result is the same bits.
//!
//! # The model
//! A fitted model is a whitener (mean, whitening, unwhitening, explained variance; see
//! [`whiten`](crate::whiten)) followed by `unmixing` (`k x k`), `components = unmixing *
//! whitening` (`k x d`) and `mixing` (`d x k`, the pseudo-inverse of `components`). Sources are
//! `components (x - mean)`. `components` and `mixing` equal scikit-learn's `components_` and
//! `mixing_`; unlike its `whitening_`, ours is the true whitening (scikit-learn's is ours divided
//! by `sqrt(n)`, and its `_unmixing` ours times `sqrt(n)`).

mod canonical;
pub mod contrast;
pub mod driver;
pub mod fastmath;
pub mod kernel;
mod model;
mod options;
pub mod stats;
pub mod update;
mod workspace;

pub use canonical::canonicalize;
pub use contrast::{Contrast, ContrastKind, Cube, Exp, LogCosh};
pub use driver::{
    DeflationPass, Executor, InMemory, MomentsPass, ParallelPass, Pass, PassSpec, Rows, SourcePass,
    SpecPass, add_parallel_sums,
};
pub use kernel::{Kernel, Portable, PortableRows};
pub use model::{
    FastIca, FastIcaBuf, FastIcaView, fit_scratch_len, fit_workspace_len, fit_workspace_len_with,
    model_len, white_fit_workspace_len, white_fit_workspace_len_rows, white_fit_workspace_len_with,
};
pub use options::{Algorithm, FastIcaOptions, IcaInfo, IcaOptions, WInit, WhitenMode};
pub use stats::{CHUNK, DeflationStats, ParallelStats, SourceStats};
pub use workspace::{Dims, FastIcaWorkspace, WorkspaceArray};
