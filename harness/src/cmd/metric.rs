//! `unmix metric ...`: one subcommand per metric; the bodies are in [`crate::metric`],
//! [`crate::concentration`] and [`crate::identifiability`].

use super::named;
use crate::metric;
use anyhow::{Result, bail};
use std::path::PathBuf;
use unmix::metrics::correlation::Method;

/// The metrics.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Exact AUROC (ties count half), optionally weighted.
    Auroc {
        /// Scores, one per sample (.npy or .csv).
        #[arg(long)]
        scores: PathBuf,
        /// Two-class labels (the greater value is positive).
        #[arg(long)]
        labels: PathBuf,
        /// Non-negative sample weights.
        #[arg(long)]
        weights: Option<PathBuf>,
    },
    /// Hoyer sparsity of split fractions (counts are normalised first).
    Sparsity {
        /// Split counts or fractions per feature: a vector (one row or one column), at least 2.
        #[arg(long)]
        fractions: PathBuf,
    },
    /// Mean |correlation| of estimated to true sources after optimal matching.
    Mcc {
        /// True sources, n x d.
        #[arg(long = "true")]
        truth: PathBuf,
        /// Estimated sources, n x d'.
        #[arg(long)]
        estimated: PathBuf,
        /// pearson (linear correlation) or spearman (rank correlation).
        #[arg(long, value_parser = named::<Method>(Method::NAMES), default_value = Method::Pearson.as_str())]
        method: Method,
    },
    /// Amari index of unmixing (k x d, whitening included) times mixing (d x k), in [0, 1].
    Amari {
        /// Estimated unmixing, k x d: FastICA's `components` (whitening included).
        #[arg(long)]
        unmixing: PathBuf,
        /// True mixing, d x k.
        #[arg(long)]
        mixing: PathBuf,
    },
    /// The paper's concentration: tree split fractions, their sparsity, and the held-out AUROC
    /// of the top features against the rest.
    Concentration {
        /// Features, n x D.
        #[arg(long)]
        features: PathBuf,
        /// Integer labels: two classes (the greater is positive), or more (one-vs-rest over
        /// every class, averaged per seed).
        #[arg(long)]
        labels: PathBuf,
        /// Integer group of each sample: whole groups are held out (out-of-distribution score).
        #[arg(long)]
        groups: Option<PathBuf>,
        /// Share of features in the top group, in (0, 1).
        #[arg(long, default_value_t = 0.25)]
        top: f64,
        /// Share of samples (or of groups) held out.
        #[arg(long, default_value_t = 0.25)]
        test_fraction: f64,
        /// The first seed of the split, the trees and the tie-breaking.
        #[arg(long, default_value_t = 0)]
        random_state: u64,
        /// How many seeds (random_state, random_state + 1, ...); results are mean and spread.
        #[arg(long, default_value_t = 5)]
        seeds: usize,
        /// Boosting rounds.
        #[arg(long, default_value_t = 100)]
        n_trees: usize,
        /// Depth of each tree.
        #[arg(long, default_value_t = 3)]
        max_depth: usize,
        /// Shrinkage of each tree, a finite number > 0.
        #[arg(long, default_value_t = 0.1)]
        learning_rate: f64,
    },
    /// The paper's alignment errors of --other mapped into --reference (permutation, rigid,
    /// linear, ICA), normalised by the reference's diameter, and the ICA efficiency.
    Alignment {
        /// Reference representation A, n x Da.
        #[arg(long)]
        reference: PathBuf,
        /// The other representation B of the same n inputs, n x Db.
        #[arg(long)]
        other: PathBuf,
        /// Seed of the two FastICA fits.
        #[arg(long, default_value_t = 0)]
        random_state: u64,
    },
    /// InfoM, InfoE and InfoC of continuous latents against discrete factors (Hsu et al.).
    Infomec {
        /// Integer factor labels, n x F.
        #[arg(long)]
        factors: PathBuf,
        /// Latents, n x L.
        #[arg(long)]
        latents: PathBuf,
        /// Neighbours of the mutual-information estimator.
        #[arg(long, default_value_t = 10)]
        n_neighbors: usize,
    },
}

/// Runs one metric.
pub fn run(c: &Command) -> Result<serde_json::Value> {
    match c {
        Command::Auroc {
            scores,
            labels,
            weights,
        } => metric::auroc(scores, labels, weights.as_deref()),
        Command::Sparsity { fractions } => metric::sparsity(fractions),
        Command::Mcc {
            truth,
            estimated,
            method,
        } => metric::mcc(truth, estimated, *method),
        Command::Amari { unmixing, mixing } => metric::amari(unmixing, mixing),
        Command::Concentration {
            features,
            labels,
            groups,
            top,
            test_fraction,
            random_state,
            seeds,
            n_trees,
            max_depth,
            learning_rate,
        } => {
            if !(learning_rate.is_finite() && *learning_rate > 0.0) {
                bail!("--learning-rate must be a finite number > 0, got {learning_rate}");
            }
            use crate::concentration::{ConcentrationJob, Trees};
            let job = ConcentrationJob {
                top: *top,
                random_state: *random_state,
                n_seeds: *seeds,
                test_fraction: *test_fraction,
                trees: Trees {
                    n_trees: *n_trees,
                    max_depth: *max_depth,
                    learning_rate: *learning_rate,
                    ..Trees::default()
                },
            };
            crate::concentration::run_files(features, labels, groups.as_deref(), &job)
        }
        Command::Alignment {
            reference,
            other,
            random_state,
        } => crate::identifiability::alignment(reference, other, *random_state),
        Command::Infomec {
            factors,
            latents,
            n_neighbors,
        } => crate::identifiability::infomec(factors, latents, *n_neighbors),
    }
}
