//! The measures: how well sources are recovered, and how concentrated a label's information is.
//!
//! - [`auroc`]: exact AUROC with ties, optional weights, O(n log n).
//! - [`sparsity`]: split fractions, Hoyer sparsity, top-k% features, concentration.
//! - [`correlation`]: Pearson (streaming) and Spearman correlation matrices.
//! - [`assignment`]: rectangular linear sum assignment (Crouse's shortest augmenting path).
//! - [`mcc`]: mean correlation coefficient after optimal matching.
//! - [`amari`]: the Amari index of `W A`, normalised to [0, 1].
//! - [`alignment`]: alignment errors of two representations (permutation, rigid, linear, ICA).
//! - [`infomec`]: InfoM and InfoC of latents against discrete factors (kNN mutual information).
//!
//! All take their scratch from the caller; none allocates or panics on data.

pub mod alignment;
pub mod amari;
pub mod assignment;
pub mod auroc;
pub mod correlation;
pub mod infomec;
pub mod mcc;
pub mod sparsity;

pub use amari::amari_index;
pub use auroc::{auroc, auroc_weighted};
pub use sparsity::{concentration, hoyer_sparsity, split_fractions};
