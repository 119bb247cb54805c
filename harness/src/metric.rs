//! `unmix metric ...`: the core's metrics over files, and the paper's concentration pipeline.

use crate::io::{self, Matrix};
use anyhow::{Context, Result, bail};
use forust_ml::{GradientBooster, Matrix as GbMatrix, gradientbooster::ImportanceMethod};
use serde_json::{Value, json};
use std::path::Path;
use unmix::metrics::{self, assignment::UNASSIGNED, correlation::Method, mcc, sparsity};
use unmix::random::Normals;

/// Reads a 1-D array (or one column) of floats.
pub fn read_vector(path: &Path) -> Result<Vec<f64>> {
    let m = io::read_table(path)?.to_f64();
    if m.cols != 1 {
        bail!("{}: expected one column, found {}", path.display(), m.cols);
    }
    Ok(m.data)
}

/// Reads binary labels: exactly two distinct integer values; the greater is the positive class
/// (scikit-learn's convention for `roc_auc_score`).
pub fn read_binary_labels(path: &Path) -> Result<Vec<bool>> {
    let y = io::read_labels(path)?;
    let mut classes: Vec<i64> = y.clone();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() != 2 {
        bail!(
            "{}: labels must hold exactly two classes, found {} ({:?})",
            path.display(),
            classes.len(),
            &classes[..classes.len().min(5)]
        );
    }
    Ok(y.iter().map(|v| *v == classes[1]).collect())
}

fn same_len(a: usize, b: usize, what: &str) -> Result<()> {
    if a != b {
        bail!("{what}: lengths differ ({a} vs {b})");
    }
    Ok(())
}

/// `{"auroc": ...}`.
pub fn auroc(scores: &Path, labels: &Path, weights: Option<&Path>) -> Result<Value> {
    let s = read_vector(scores)?;
    let y = read_binary_labels(labels)?;
    same_len(s.len(), y.len(), "scores and labels")?;
    let a = match weights {
        Some(w) => {
            let w = read_vector(w)?;
            same_len(s.len(), w.len(), "scores and weights")?;
            metrics::auroc_weighted(&s, &y, &w, &mut vec![0; s.len()])?
        }
        None => metrics::auroc(&s, &y, &mut vec![0; s.len()])?,
    };
    Ok(json!({ "auroc": a, "n_samples": s.len() }))
}

/// `{"sparsity": ...}` of split fractions (or counts: they are normalised first).
pub fn sparsity(fractions: &Path) -> Result<Value> {
    let m = io::read_table(fractions)?.to_f64();
    let c = if m.rows == 1 || m.cols == 1 {
        m.data
    } else {
        bail!("{}: expected a vector", fractions.display())
    };
    let mut f = vec![0.0; c.len()];
    sparsity::split_fractions(&c, &mut f)?;
    Ok(json!({ "sparsity": metrics::hoyer_sparsity(&f)?, "n_features": c.len() }))
}

/// Checks a matrix for a metric: every value finite (reported where it is in the file).
fn check_finite(m: &Matrix<f64>, path: &Path) -> Result<()> {
    if let Some(i) = m.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "{}: non-finite value at row {}, column {}",
            path.display(),
            i / m.cols,
            i % m.cols
        );
    }
    Ok(())
}

/// Divides each column by its largest magnitude, so that the core's sums of squares neither
/// overflow (data near 1e307) nor underflow (near 1e-310); correlations do not change. A constant
/// column is an error naming the file and the column.
fn scale_columns(m: &mut Matrix<f64>, path: &Path) -> Result<()> {
    for c in 0..m.cols {
        let column = (0..m.rows).map(|r| m.data[r * m.cols + c]);
        let first = m.data.get(c).copied().unwrap_or(0.0);
        if m.rows < 2 || column.clone().all(|v| v == first) {
            bail!(
                "{}: column {c} is constant (zero variance): its correlation is undefined",
                path.display()
            );
        }
        let max = column.fold(0.0f64, |a, v| a.max(v.abs()));
        for r in 0..m.rows {
            m.data[r * m.cols + c] /= max;
        }
    }
    Ok(())
}

/// `{"mcc": ..., "pairs": [[i, j], ...]}`.
pub fn mcc(truth: &Path, estimated: &Path, method: Method) -> Result<Value> {
    let (mut t, mut e) = (
        io::read_table(truth)?.to_f64(),
        io::read_table(estimated)?.to_f64(),
    );
    same_len(t.rows, e.rows, "true and estimated rows")?;
    if t.rows < 2 {
        bail!("too few samples: {} given, at least 2 needed", t.rows);
    }
    for (m, p) in [(&mut t, truth), (&mut e, estimated)] {
        check_finite(m, p)?;
        scale_columns(m, p)?;
    }
    // The correlation matrix and the cross-moments are d x d': check before allocating them.
    let cross = t
        .cols
        .checked_mul(e.cols)
        .and_then(|c| c.checked_mul(3 * 8));
    if cross.is_none_or(|b| b as u64 > crate::cmd::MAX_WORK_BYTES) {
        bail!(
            "{} x {} columns need more than the {} GiB working-memory limit for their \
             correlations",
            t.cols,
            e.cols,
            crate::cmd::MAX_WORK_BYTES >> 30
        );
    }
    let (lf, lu) = mcc::workspace_len(t.rows, t.cols, e.cols, method);
    let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; t.cols]);
    let score = mcc::mcc(
        &t.data, t.cols, &e.data, e.cols, method, &mut pairs, &mut wf, &mut wu,
    )?;
    let pairs: Vec<[usize; 2]> = pairs
        .iter()
        .enumerate()
        .filter(|(_, j)| **j != UNASSIGNED)
        .map(|(i, j)| [i, *j])
        .collect();
    Ok(json!({ "mcc": score, "pairs": pairs, "method": method.as_str() }))
}

/// `{"amari": ...}` of the unmixing `W` (`k x d`) and the mixing `A` (`d x k`).
pub fn amari(unmixing: &Path, mixing: &Path) -> Result<Value> {
    let (w, a) = (
        io::read_table(unmixing)?.to_f64(),
        io::read_table(mixing)?.to_f64(),
    );
    if w.cols != a.rows || w.rows != a.cols {
        bail!(
            "shapes do not compose: unmixing is {} x {}, mixing is {} x {} (expected k x d and d x k)",
            w.rows,
            w.cols,
            a.rows,
            a.cols
        );
    }
    check_finite(&w, unmixing)?;
    check_finite(&a, mixing)?;
    let index = metrics::amari_index(
        &w.data,
        &a.data,
        w.rows,
        w.cols,
        &mut vec![0.0; w.rows * w.rows],
    )?;
    Ok(json!({ "amari": index, "k": w.rows }))
}

/// The gradient-boosted trees of the concentration pipeline.
#[derive(Clone, Copy, Debug)]
pub struct Trees {
    /// Boosting rounds.
    pub n_trees: usize,
    /// Depth of each tree.
    pub max_depth: usize,
    /// Shrinkage.
    pub learning_rate: f64,
}

impl Default for Trees {
    /// scikit-learn's `GradientBoostingClassifier` defaults: 100 trees of depth 3, rate 0.1.
    fn default() -> Self {
        Self {
            n_trees: 100,
            max_depth: 3,
            learning_rate: 0.1,
        }
    }
}

/// Options of `unmix metric concentration`.
pub struct ConcentrationJob {
    /// Fraction of features in the top group, in (0, 1).
    pub top: f64,
    /// Seed of the train/test split and of the trees.
    pub random_state: u64,
    /// Share of samples (or of groups) held out.
    pub test_fraction: f64,
    /// The classifier.
    pub trees: Trees,
}

/// Trains on `cols` of `x` (train rows), returns held-out scores and split counts per column.
fn train_and_score(
    x: &Matrix<f64>,
    y: &[bool],
    cols: &[usize],
    train: &[usize],
    test: &[usize],
    job: &ConcentrationJob,
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
    let mut model = GradientBooster::default()
        .set_iterations(job.trees.n_trees)
        .set_max_depth(job.trees.max_depth)
        .set_learning_rate(job.trees.learning_rate as f32)
        .set_parallel(false)
        .set_seed(job.random_state);
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

/// Splits rows into (train, test): whole groups held out when `groups` is given (an
/// out-of-distribution score), otherwise a split stratified by class. Seeded, deterministic.
fn split(
    y: &[bool],
    groups: Option<&[i64]>,
    fraction: f64,
    seed: u64,
) -> Result<(Vec<usize>, Vec<usize>, Vec<i64>)> {
    let mut normals = Normals::new(seed);
    let mut shuffle = |v: &mut Vec<usize>| {
        // Fisher-Yates with the core's seeded stream.
        for i in (1..v.len()).rev() {
            let j = normals.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    };
    let n = y.len();
    let mut test_mask = vec![false; n];
    let mut held_out = Vec::new();
    match groups {
        Some(g) => {
            let mut ids: Vec<i64> = g.to_vec();
            ids.sort_unstable();
            ids.dedup();
            if ids.len() < 2 {
                bail!("--groups: at least two groups are needed to hold one out");
            }
            let mut order: Vec<usize> = (0..ids.len()).collect();
            shuffle(&mut order);
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
                shuffle(&mut rows);
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
                "the {name} samples hold a single class; choose another --random-state or more data"
            );
        }
    }
    Ok((train, test, held_out))
}

/// The paper's concentration pipeline: split fractions and their sparsity from trees on all
/// features, then held-out AUROC from the top `top` share of features against the rest.
pub fn concentration(
    x: &Matrix<f64>,
    y: &[bool],
    groups: Option<&[i64]>,
    job: &ConcentrationJob,
) -> Result<Value> {
    same_len(x.rows, y.len(), "features and labels")?;
    if let Some(g) = groups {
        same_len(x.rows, g.len(), "features and groups")?;
    }
    if let Some(i) = x.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "non-finite value at row {}, column {}",
            i / x.cols,
            i % x.cols
        );
    }
    let n_top = sparsity::top_count(x.cols, job.top)?;
    if !(job.test_fraction > 0.0 && job.test_fraction < 1.0) {
        bail!("--test-fraction must be in (0, 1)");
    }
    let (train, test, held_out) = split(y, groups, job.test_fraction, job.random_state)?;
    let all: Vec<usize> = (0..x.cols).collect();
    let y_test: Vec<bool> = test.iter().map(|&r| y[r]).collect();
    let auc = |scores: &[f64]| -> Result<f64> {
        Ok(metrics::auroc(scores, &y_test, &mut vec![0; scores.len()])?)
    };
    let (scores_all, counts) = train_and_score(x, y, &all, &train, &test, job)?;
    let mut fractions = vec![0.0; x.cols];
    sparsity::split_fractions(&counts, &mut fractions).context("the trees made no split")?;
    let sparsity = metrics::hoyer_sparsity(&fractions)?;
    let mut order = vec![0; x.cols];
    sparsity::rank_features(&fractions, &mut order)?;
    let (top, rest) = order.split_at(n_top);
    let (mut top, mut rest) = (top.to_vec(), rest.to_vec());
    top.sort_unstable();
    rest.sort_unstable();
    let (scores_top, _) = train_and_score(x, y, &top, &train, &test, job)?;
    let (scores_rest, _) = train_and_score(x, y, &rest, &train, &test, job)?;
    let (auroc_top, auroc_rest) = (auc(&scores_top)?, auc(&scores_rest)?);
    Ok(json!({
        "split_fractions": fractions,
        "sparsity": sparsity,
        "top_features": top,
        "auroc_all": auc(&scores_all)?,
        "auroc_top": auroc_top,
        "auroc_rest": auroc_rest,
        "concentration": sparsity::concentration(auroc_top, auroc_rest)?,
        "n_train": train.len(),
        "n_test": test.len(),
        "held_out_groups": held_out,
        "classifier": {"library": "forust-ml", "n_trees": job.trees.n_trees, "max_depth": job.trees.max_depth,
                       "learning_rate": job.trees.learning_rate},
    }))
}
