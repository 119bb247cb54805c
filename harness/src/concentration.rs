//! The paper's concentration pipeline, run over several seeds so that its noise is visible.
//!
//! For one seed and one binary task: split the rows (stratified by class, or whole groups held
//! out), train gradient-boosted trees on all features, take each feature's share of all splits
//! (`split_fractions`) and their Hoyer `sparsity`, rank the features by that share, and score
//! the top `ceil(top * D)` features and the rest each by the held-out AUROC of new trees trained
//! on them alone: `concentration = auroc_top / auroc_rest - 1`.
//!
//! Single seeds are noisy (on a label independent of the features a single seed lands anywhere
//! in about +-0.15), so every number is reported as the mean and spread over `n_seeds` seeds,
//! with the per-seed values kept. Labels with more than two classes are scored one-vs-rest for
//! every class and averaged per seed.

use crate::io::Matrix;
use anyhow::{Context, Result, bail};
use forust_ml::{GradientBooster, Matrix as GbMatrix, gradientbooster::ImportanceMethod};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};
use unmix::metrics::{self, sparsity};
use unmix::random::Normals;

/// The gradient-boosted trees, set as close to scikit-learn's `GradientBoostingClassifier()`
/// defaults as forust-ml allows.
///
/// | setting | here | scikit-learn | forust's own default |
/// |---|---|---|---|
/// | trees | 100 | `n_estimators=100` | 10 |
/// | depth | 3 | `max_depth=3` | 5 |
/// | learning rate | 0.1 | `learning_rate=0.1` | 0.3 |
/// | L2 penalty on leaf values | 0 | none | 1 |
/// | minimum leaf hessian | 0 | none (`min_samples_leaf=1`) | 1 |
/// | minimum split gain | 1e-3 (see below) | `min_impurity_decrease=0`, no split of a node whose impurity is 0 | 0 |
/// | bins per feature | 256 quantile bins | exact splits | 256 |
/// | start | log-odds of the training prior | `init=None` (the prior) | 0.5 |
/// | row / column subsampling | none | `subsample=1`, `max_features=None` | none |
/// | missing-value branches | off (inputs are checked finite) | n/a | on |
/// | threads | 1, so a seed fixes the result | 1 | all |
///
/// The minimum split gain matters: forust sums gains in `f32`, so in a node whose gradients are
/// all equal (which scikit-learn never splits: its impurity is 0) a split on pure noise shows a
/// rounding-error gain above 0 and is taken. In issue 10's constructed case (777 rows, 7 %
/// positives, a binary feature equal to the label, one Gaussian noise feature) that gives the
/// noise feature three splits in four and a concentration of -0.45 where scikit-learn gives
/// +0.83; with a floor of 1e-3 (a split must lower the training log loss by 5e-4 nats in total,
/// far below any real split) the label feature takes every split and concentration is +0.87.
/// 256 bins rather than forust's largest, 65 535 (exact up to that many distinct values), is
/// for speed: 3.5x faster on the fixtures and the same agreement with scikit-learn
/// (`harness/tests/concentration.rs`).
///
/// What cannot match: forust grows each tree on the Newton gain (gradient^2 / hessian), as
/// XGBoost does, where scikit-learn fits a least-squares tree to the gradient (Friedman's MSE)
/// and sets Newton leaf values afterwards; forust cuts at bin edges, scikit-learn at midpoints.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Trees {
    /// Boosting rounds.
    pub n_trees: usize,
    /// Depth of each tree.
    pub max_depth: usize,
    /// Shrinkage.
    pub learning_rate: f64,
    /// L2 penalty on leaf values.
    pub l2: f32,
    /// Smallest hessian sum a leaf may have.
    pub min_leaf_weight: f32,
    /// Smallest gain a split must have.
    pub gamma: f32,
    /// Histogram bins per feature (distinct values beyond this share bins).
    pub max_bins: u16,
}

impl Default for Trees {
    /// See the table on [`Trees`].
    fn default() -> Self {
        Self {
            n_trees: 100,
            max_depth: 3,
            learning_rate: 0.1,
            l2: 0.0,
            min_leaf_weight: 0.0,
            gamma: 1e-3,
            max_bins: 256,
        }
    }
}

impl Trees {
    fn booster(&self, seed: u64) -> Result<GradientBooster> {
        Ok(GradientBooster::default()
            .set_iterations(self.n_trees)
            .set_max_depth(self.max_depth)
            .set_learning_rate(self.learning_rate as f32)
            .set_l2(self.l2)
            .set_min_leaf_weight(self.min_leaf_weight)
            .set_gamma(self.gamma)
            .set_nbins(self.max_bins)
            .set_initialize_base_score(true)
            .set_subsample(1.0)
            .set_colsample_bytree(1.0)
            .set_allow_missing_splits(false)
            .set_create_missing_branch(false)
            .set_parallel(false)
            .set_seed(seed))
    }

    /// Every setting, for the JSON output.
    pub fn describe(&self) -> Value {
        json!({
            "library": "forust-ml 0.8 (GradientBooster, log loss)",
            "n_trees": self.n_trees, "max_depth": self.max_depth,
            "learning_rate": self.learning_rate, "l2": shortest(self.l2),
            "min_leaf_weight": shortest(self.min_leaf_weight), "gamma": shortest(self.gamma),
            "max_bins": self.max_bins, "base_score": "log-odds of the training prior",
            "subsample": 1.0, "colsample_bytree": 1.0, "missing_branches": false, "threads": 1,
            "importance": "split count per feature (forust's \"weight\")",
            "matches": "scikit-learn GradientBoostingClassifier() defaults, except that trees grow on the Newton gain and cut at bin edges",
        })
    }
}

/// An `f32` setting as the `f64` with the same shortest decimal form (1e-3, not 1.0000000474974513e-3).
fn shortest(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}

/// Options of the concentration pipeline.
#[derive(Clone, Debug)]
pub struct ConcentrationJob {
    /// Fraction of features in the top group, in (0, 1); rounded up to whole features.
    pub top: f64,
    /// The first seed; seeds `random_state .. random_state + n_seeds` are run.
    pub random_state: u64,
    /// How many seeds (each: its own split, trees and tie-breaking).
    pub n_seeds: usize,
    /// Share of samples (or of groups) held out.
    pub test_fraction: f64,
    /// The classifier.
    pub trees: Trees,
}

impl Default for ConcentrationJob {
    fn default() -> Self {
        Self {
            top: 0.25,
            random_state: 0,
            n_seeds: 5,
            test_fraction: 0.25,
            trees: Trees::default(),
        }
    }
}

/// One seed on one binary task.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The seed of the split, the trees and the tie-breaking.
    pub seed: u64,
    /// The positive class of this task (the rest are negative).
    pub class: i64,
    /// Share of all splits that use each feature (sums to 1).
    pub split_fractions: Vec<f64>,
    /// Hoyer sparsity of `split_fractions`.
    pub sparsity: f64,
    /// The top features, ascending.
    pub top_features: Vec<usize>,
    /// Features whose split fraction equals the one at the top-k cut (the tie that was broken).
    pub tied_at_cut: usize,
    /// Held-out AUROC from all features.
    pub auroc_all: f64,
    /// Held-out AUROC from the top features.
    pub auroc_top: f64,
    /// Held-out AUROC from the other features.
    pub auroc_rest: f64,
    /// `auroc_top / auroc_rest - 1`.
    pub concentration: f64,
    /// Training rows.
    pub n_train: usize,
    /// Held-out rows.
    pub n_test: usize,
    /// The held-out groups, when groups were given.
    pub held_out_groups: Vec<i64>,
}

/// Mean and spread of one number over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Spread {
    /// Mean over seeds.
    pub mean: f64,
    /// Sample standard deviation over seeds (`ddof = 1`; 0 for one seed).
    pub std: f64,
    /// Smallest per-seed value.
    pub min: f64,
    /// Largest per-seed value.
    pub max: f64,
    /// One value per seed (averaged over classes when one-vs-rest).
    pub per_seed: Vec<f64>,
}

impl Spread {
    /// Summarises per-seed values.
    ///
    /// ```
    /// let s = harness::concentration::Spread::of(vec![0.1, 0.3, 0.2]);
    /// assert!((s.mean - 0.2).abs() < 1e-15 && (s.std - 0.1).abs() < 1e-15);
    /// assert_eq!((s.min, s.max), (0.1, 0.3));
    /// ```
    pub fn of(per_seed: Vec<f64>) -> Self {
        let n = per_seed.len() as f64;
        let mean = per_seed.iter().sum::<f64>() / n;
        let var = if per_seed.len() > 1 {
            per_seed.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Self {
            mean,
            std: var.sqrt(),
            min: per_seed.iter().copied().fold(f64::INFINITY, f64::min),
            max: per_seed.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            per_seed,
        }
    }
}

/// The pipeline over all seeds (and classes).
#[derive(Clone, Debug)]
pub struct Concentration {
    /// The distinct labels, ascending.
    pub classes: Vec<i64>,
    /// The positive class of each task: the greater class for two classes, every class
    /// (one-vs-rest) for more.
    pub tasks: Vec<i64>,
    /// The seeds run.
    pub seeds: Vec<u64>,
    /// Features in the top group.
    pub n_top: usize,
    /// Features.
    pub n_features: usize,
    /// Every run, seed-major.
    pub runs: Vec<Run>,
    /// Concentration over seeds.
    pub concentration: Spread,
    /// Sparsity over seeds.
    pub sparsity: Spread,
    /// AUROC from all features over seeds (out-of-group with groups).
    pub auroc_all: Spread,
    /// AUROC from the top features over seeds.
    pub auroc_top: Spread,
    /// AUROC from the other features over seeds.
    pub auroc_rest: Spread,
    /// Mean split fractions over seeds and tasks (for figures).
    pub mean_split_fractions: Vec<f64>,
}

/// How the top group is chosen, as printed in every output: `ceil(top x D)` features.
pub fn top_rule(top: f64, n_features: usize, n_top: usize) -> String {
    format!(
        "top {:.0} % rounded up to whole features: {}",
        top * 100.0,
        top_count_text(top, n_features, n_top)
    )
}

/// The rounding, spelled out.
///
/// ```
/// use harness::concentration::top_count_text;
/// assert_eq!(top_count_text(0.25, 61, 16), "ceil(0.25 x 61) = 16 of 61 features (26.2 %)");
/// ```
pub fn top_count_text(top: f64, n_features: usize, n_top: usize) -> String {
    format!(
        "ceil({top} x {n_features}) = {n_top} of {n_features} features ({:.1} %)",
        100.0 * n_top as f64 / n_features as f64
    )
}

/// How ties at the cut are broken, as printed in every output.
pub const TIE_RULE: &str = "features are ranked by split fraction; ties (split counts are integers, and never-split features tie at 0) are broken by a random permutation drawn from the run's seed, so no column position is favoured";

impl Concentration {
    /// Everything as JSON.
    pub fn to_json(&self, job: &ConcentrationJob) -> Value {
        json!({
            "concentration": self.concentration,
            "sparsity": self.sparsity,
            "auroc_all": self.auroc_all,
            "auroc_top": self.auroc_top,
            "auroc_rest": self.auroc_rest,
            "classes": self.classes,
            "tasks": if self.tasks.len() > 1 { "one-vs-rest over every class, averaged per seed" } else { "binary: the greater label is positive" },
            "positive_classes": self.tasks,
            "seeds": self.seeds,
            "n_features": self.n_features,
            "n_top": self.n_top,
            "top_rule": top_rule(job.top, self.n_features, self.n_top),
            "tie_rule": TIE_RULE,
            "test_fraction": job.test_fraction,
            "mean_split_fractions": self.mean_split_fractions,
            "runs": self.runs,
            "classifier": job.trees.describe(),
        })
    }
}

/// Trains on `cols` of `x` (train rows), returns held-out scores and split counts per column.
fn train_and_score(
    x: &Matrix<f64>,
    y: &[bool],
    cols: &[usize],
    train: &[usize],
    test: &[usize],
    trees: &Trees,
    seed: u64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let column_major = |rows: &[usize]| -> Vec<f64> {
        cols.iter()
            .flat_map(|&c| rows.iter().map(move |&r| x.data[r * x.cols + c]))
            .collect()
    };
    let (train_data, test_data) = (column_major(train), column_major(test));
    let y_train: Vec<f64> = train
        .iter()
        .map(|&r| if y[r] { 1.0 } else { 0.0 })
        .collect();
    let mut model = trees.booster(seed)?;
    let m_train = GbMatrix::new(&train_data, train.len(), cols.len());
    model
        .fit(&m_train, &y_train, &vec![1.0; train.len()], None)
        .map_err(|e| anyhow::anyhow!("gradient boosting failed: {e}"))?;
    let scores = model.predict(&GbMatrix::new(&test_data, test.len(), cols.len()), false);
    let importance = model.calculate_feature_importance(ImportanceMethod::Weight, false);
    let counts = (0..cols.len())
        .map(|j| f64::from(importance.get(&j).copied().unwrap_or(0.0)))
        .collect();
    Ok((scores, counts))
}

/// Fisher-Yates with the core's seeded stream.
pub fn shuffle(v: &mut [usize], normals: &mut Normals) {
    for i in (1..v.len()).rev() {
        let j = normals.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// Splits rows into (train, test): whole groups held out when `groups` is given (an
/// out-of-distribution score), otherwise a split stratified by class. Seeded, deterministic.
fn split(
    y: &[bool],
    groups: Option<&[i64]>,
    fraction: f64,
    seed: u64,
) -> Result<(Vec<usize>, Vec<usize>, Vec<i64>)> {
    let mut normals = Normals::new(seed);
    let n = y.len();
    let mut test_mask = vec![false; n];
    let mut held_out = Vec::new();
    match groups {
        Some(g) => {
            let ids = distinct(g);
            let mut order: Vec<usize> = (0..ids.len()).collect();
            shuffle(&mut order, &mut normals);
            let count = ((fraction * ids.len() as f64).ceil() as usize).clamp(1, ids.len() - 1);
            held_out = order[..count].iter().map(|&i| ids[i]).collect();
            held_out.sort_unstable();
            for (m, gi) in test_mask.iter_mut().zip(g) {
                *m = held_out.binary_search(gi).is_ok();
            }
        }
        None => {
            for class in [false, true] {
                let mut rows: Vec<usize> = (0..n).filter(|&r| y[r] == class).collect();
                shuffle(&mut rows, &mut normals);
                let count = (fraction * rows.len() as f64).round() as usize;
                for &r in &rows[..count.min(rows.len())] {
                    test_mask[r] = true;
                }
            }
        }
    }
    let train: Vec<usize> = (0..n).filter(|&r| !test_mask[r]).collect();
    let test: Vec<usize> = (0..n).filter(|&r| test_mask[r]).collect();
    for (name, rows) in [("training", &train), ("held-out", &test)] {
        if !(rows.iter().any(|&r| y[r]) && rows.iter().any(|&r| !y[r])) {
            bail!(
                "with seed {seed}, the {name} samples hold a single class{}; choose another --random-state, fewer seeds or more data",
                if groups.is_some() {
                    " (whole groups are held out)"
                } else {
                    ""
                }
            );
        }
    }
    Ok((train, test, held_out))
}

fn distinct(v: &[i64]) -> Vec<i64> {
    let mut ids = v.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Orders features by decreasing fraction; ties in a seeded random order (see [`TIE_RULE`]).
pub fn rank_with_random_ties(fractions: &[f64], seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..fractions.len()).collect();
    // A stream separate from the split's, so the split does not depend on D.
    shuffle(&mut order, &mut Normals::new(seed ^ 0x7469_6573)); // "ties"
    // Stable: equal fractions keep the shuffled order.
    order.sort_by(|&a, &b| fractions[b].total_cmp(&fractions[a]));
    order
}

/// One seed on one binary task.
fn run_once(
    x: &Matrix<f64>,
    y: &[bool],
    groups: Option<&[i64]>,
    job: &ConcentrationJob,
    n_top: usize,
    seed: u64,
    class: i64,
) -> Result<Run> {
    let (train, test, held_out) = split(y, groups, job.test_fraction, seed)?;
    let all: Vec<usize> = (0..x.cols).collect();
    let y_test: Vec<bool> = test.iter().map(|&r| y[r]).collect();
    let auc = |scores: &[f64]| -> Result<f64> {
        Ok(metrics::auroc(scores, &y_test, &mut vec![0; scores.len()])?)
    };
    let (scores_all, counts) = train_and_score(x, y, &all, &train, &test, &job.trees, seed)?;
    let mut fractions = vec![0.0; x.cols];
    sparsity::split_fractions(&counts, &mut fractions)
        .context("the trees made no split (the features cannot predict the label at all)")?;
    let order = rank_with_random_ties(&fractions, seed);
    let cut = fractions[order[n_top - 1]];
    let tied_at_cut = fractions.iter().filter(|f| **f == cut).count();
    let (top, rest) = order.split_at(n_top);
    let (mut top, mut rest) = (top.to_vec(), rest.to_vec());
    top.sort_unstable();
    rest.sort_unstable();
    let (scores_top, _) = train_and_score(x, y, &top, &train, &test, &job.trees, seed)?;
    let (scores_rest, _) = train_and_score(x, y, &rest, &train, &test, &job.trees, seed)?;
    let (auroc_top, auroc_rest) = (auc(&scores_top)?, auc(&scores_rest)?);
    Ok(Run {
        seed,
        class,
        sparsity: metrics::hoyer_sparsity(&fractions)?,
        split_fractions: fractions,
        top_features: top,
        tied_at_cut,
        auroc_all: auc(&scores_all)?,
        auroc_top,
        auroc_rest,
        concentration: sparsity::concentration(auroc_top, auroc_rest)?,
        n_train: train.len(),
        n_test: test.len(),
        held_out_groups: held_out,
    })
}

/// Checks the inputs of [`concentration`]; the messages name what is wrong.
fn check(
    x: &Matrix<f64>,
    labels: &[i64],
    groups: Option<&[i64]>,
    job: &ConcentrationJob,
) -> Result<Vec<i64>> {
    if x.rows != labels.len() {
        bail!(
            "labels: {} values for {} rows of features",
            labels.len(),
            x.rows
        );
    }
    if let Some(g) = groups
        && g.len() != x.rows
    {
        bail!("groups: {} values for {} rows of features", g.len(), x.rows);
    }
    if let Some(i) = x.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "features: non-finite value {} at row {}, column {}",
            x.data[i],
            i / x.cols,
            i % x.cols
        );
    }
    check_targets(labels, groups, job)
}

/// Checks the labels, the groups and the options of [`concentration`] (not the features), so
/// that a caller can fail before costly work; returns the classes.
pub fn check_targets(
    labels: &[i64],
    groups: Option<&[i64]>,
    job: &ConcentrationJob,
) -> Result<Vec<i64>> {
    if let Some(g) = groups
        && distinct(g).len() < 2
    {
        bail!(
            "groups: a single group ({}); out-of-group AUROC holds whole groups out and needs at least two",
            g.first().copied().unwrap_or_default()
        );
    }
    let classes = distinct(labels);
    if classes.len() < 2 {
        bail!(
            "labels: a single class ({}); AUROC needs two",
            classes.first().copied().unwrap_or_default()
        );
    }
    if job.n_seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    if !(job.test_fraction > 0.0 && job.test_fraction < 1.0) {
        bail!("--test-fraction must be in (0, 1)");
    }
    Ok(classes)
}

/// The concentration pipeline over `job.n_seeds` seeds and, for more than two classes, every
/// one-vs-rest task. `progress` is called once per finished run. Runs go in parallel on the
/// current rayon pool; each is single-threaded and seeded, so the result does not depend on
/// the thread count.
pub fn concentration(
    x: &Matrix<f64>,
    labels: &[i64],
    groups: Option<&[i64]>,
    job: &ConcentrationJob,
    progress: &(dyn Fn() + Sync),
) -> Result<Concentration> {
    let classes = check(x, labels, groups, job)?;
    let n_top = sparsity::top_count(x.cols, job.top)?;
    let tasks: Vec<i64> = if classes.len() == 2 {
        vec![classes[1]]
    } else {
        classes.clone()
    };
    let seeds: Vec<u64> = (0..job.n_seeds as u64)
        .map(|i| job.random_state.wrapping_add(i))
        .collect();
    let pairs: Vec<(u64, i64)> = seeds
        .iter()
        .flat_map(|&s| tasks.iter().map(move |&c| (s, c)))
        .collect();
    let runs: Vec<Run> = pairs
        .par_iter()
        .map(|&(seed, class)| {
            let y: Vec<bool> = labels.iter().map(|l| *l == class).collect();
            let r = run_once(x, &y, groups, job, n_top, seed, class).with_context(|| {
                if tasks.len() > 1 {
                    format!("class {class} against the rest")
                } else {
                    format!("class {class} positive")
                }
            });
            progress();
            r
        })
        .collect::<Result<_>>()?;
    let per_seed = |f: fn(&Run) -> f64| -> Spread {
        Spread::of(
            runs.chunks(tasks.len())
                .map(|c| c.iter().map(f).sum::<f64>() / c.len() as f64)
                .collect(),
        )
    };
    let mut mean_split_fractions = vec![0.0; x.cols];
    for r in &runs {
        for (m, f) in mean_split_fractions.iter_mut().zip(&r.split_fractions) {
            *m += f / runs.len() as f64;
        }
    }
    Ok(Concentration {
        concentration: per_seed(|r| r.concentration),
        sparsity: per_seed(|r| r.sparsity),
        auroc_all: per_seed(|r| r.auroc_all),
        auroc_top: per_seed(|r| r.auroc_top),
        auroc_rest: per_seed(|r| r.auroc_rest),
        classes,
        tasks,
        seeds,
        n_top,
        n_features: x.cols,
        runs,
        mean_split_fractions,
    })
}

/// `unmix metric concentration`: reads the files, runs [`concentration`] with a progress bar,
/// and returns every number as JSON. Errors name the file at fault.
pub fn run_files(
    features: &std::path::Path,
    labels: &std::path::Path,
    groups: Option<&std::path::Path>,
    job: &ConcentrationJob,
) -> Result<Value> {
    let x = crate::io::read_table(features)?.to_f64();
    let y = crate::io::read_labels(labels)?;
    if y.len() != x.rows {
        bail!(
            "{}: {} labels for {} rows of {}",
            labels.display(),
            y.len(),
            x.rows,
            features.display()
        );
    }
    let g = match groups {
        Some(p) => {
            let g = crate::io::read_labels(p)?;
            if g.len() != x.rows {
                bail!(
                    "{}: {} groups for {} rows of {}",
                    p.display(),
                    g.len(),
                    x.rows,
                    features.display()
                );
            }
            Some(g)
        }
        None => None,
    };
    let classes = distinct(&y).len();
    let tasks = if classes > 2 { classes } else { 1 };
    let bar = crate::report::progress_bar(job.n_seeds * tasks, "concentration: trees");
    let result = concentration(&x, &y, g.as_deref(), job, &|| bar.inc(1)).with_context(|| {
        format!(
            "{} with labels {}{}",
            features.display(),
            labels.display(),
            groups
                .map(|p| format!(" and groups {}", p.display()))
                .unwrap_or_default()
        )
    });
    bar.finish_and_clear();
    let mut out = result?.to_json(job);
    out["n_samples"] = json!(x.rows);
    Ok(out)
}
