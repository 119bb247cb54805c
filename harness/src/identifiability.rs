//! `unmix metric alignment` and `unmix metric infomec`: the paper's identifiability measures over
//! files, and InfoE (which needs a classifier, so it lives here rather than in the core).

use crate::io::{self, Matrix};
use anyhow::{Context, Result, bail};
use argmin::core::{CostFunction, Executor, Gradient, State};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use serde_json::{Value, json};
use std::path::Path;
use unmix::metrics::alignment::{self, AlignmentOptions, Errors};
use unmix::metrics::infomec;

fn finite(m: &Matrix<f64>, path: &Path) -> Result<()> {
    if let Some(i) = m.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "{}: non-finite value (NaN or infinity) at row {}, column {}",
            path.display(),
            i / m.cols,
            i % m.cols
        );
    }
    Ok(())
}

fn errors_json(e: &Errors) -> Value {
    json!({"permutation": e.permutation, "rigid": e.rigid, "linear": e.linear, "ica": e.ica})
}

/// `unmix metric alignment --reference A --other B`: the four alignment errors of `B` mapped into
/// `A`, normalised by `A`'s diameter, the ICA efficiency, and the raw (unnormalised) errors.
pub fn alignment(reference: &Path, other: &Path, random_state: u64) -> Result<Value> {
    let a = io::read_table(reference)?.to_f64();
    let b = io::read_table(other)?.to_f64();
    if a.rows != b.rows {
        bail!(
            "{} has {} rows but {} has {}: the two representations must hold the same inputs, row by row",
            reference.display(),
            a.rows,
            other.display(),
            b.rows
        );
    }
    for (m, path) in [(&a, reference), (&b, other)] {
        finite(m, path)?;
        if m.rows <= m.cols {
            bail!(
                "{}: {} samples for {} dimensions; the fits need more samples than dimensions",
                path.display(),
                m.rows,
                m.cols
            );
        }
    }
    let opts = AlignmentOptions {
        random_state,
        ..AlignmentOptions::DEFAULT
    };
    let (lf, lu, lt) = alignment::workspace_len(a.rows, a.cols, b.cols);
    let al = alignment::alignment(
        &a.data,
        a.cols,
        &b.data,
        b.cols,
        &opts,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
        &mut vec![0.0; lt],
    )
    .with_context(|| format!("aligning {} to {}", other.display(), reference.display()))?;
    let n = &al.normalized;
    Ok(json!({
        "permutation": n.permutation,
        "rigid": n.rigid,
        "linear": n.linear,
        "ica": n.ica,
        // NaN (permutation == rigid) is written as null.
        "efficiency": al.efficiency.is_finite().then_some(al.efficiency),
        "diameter": al.diameter,
        "raw": errors_json(&al.raw),
        "rms": errors_json(&al.rms),
        "n_samples": a.rows,
        "dims": [a.cols, b.cols],
        "random_state": random_state,
    }))
}

/// Reads integer factor labels, `n x F`: every value must be an integer.
pub fn read_factors(path: &Path) -> Result<(Vec<i64>, usize)> {
    let m = io::read_table(path)?.to_f64();
    let labels = m
        .data
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if v.fract() == 0.0 && v.abs() < 9.0e15 {
                Ok(*v as i64)
            } else {
                bail!(
                    "{}: factor label at row {}, column {} is not an integer: {v}",
                    path.display(),
                    i / m.cols,
                    i % m.cols
                )
            }
        })
        .collect::<Result<Vec<i64>>>()?;
    Ok((labels, m.cols))
}

/// Each column standardised (ddof 0, scikit-learn's `StandardScaler`: a constant column becomes
/// 0), column-major.
fn standardized_columns(z: &Matrix<f64>) -> Vec<Vec<f64>> {
    (0..z.cols)
        .map(|j| {
            let col: Vec<f64> = (0..z.rows).map(|r| z.data[r * z.cols + j]).collect();
            let n = col.len() as f64;
            let mean = col.iter().sum::<f64>() / n;
            let sd = (col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n).sqrt();
            col.iter()
                .map(|v| if sd > 0.0 { (v - mean) / sd } else { 0.0 })
                .collect()
        })
        .collect()
}

/// The class-weighted multinomial log-loss of a linear model, for argmin: parameters are
/// `classes x (features + 1)` row-major, the last column the intercepts.
struct Multinomial<'a> {
    x: &'a [Vec<f64>],
    y: &'a [usize],
    weight: &'a [f64],
    classes: usize,
}

impl Multinomial<'_> {
    /// Class probabilities of row `t` into `p`.
    fn probabilities(&self, w: &[f64], t: usize, p: &mut [f64]) {
        let f = self.x.len();
        for (c, pc) in p.iter_mut().enumerate() {
            let row = &w[c * (f + 1)..(c + 1) * (f + 1)];
            *pc = row[f] + (0..f).map(|j| row[j] * self.x[j][t]).sum::<f64>();
        }
        let max = p.iter().fold(f64::NEG_INFINITY, |m, v| m.max(*v));
        let sum: f64 = p
            .iter_mut()
            .map(|v| {
                *v = (*v - max).exp();
                *v
            })
            .sum();
        for v in p.iter_mut() {
            *v /= sum;
        }
    }
    fn total_weight(&self) -> f64 {
        self.weight.iter().sum()
    }
}

impl CostFunction for Multinomial<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, w: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        let mut p = vec![0.0; self.classes];
        let mut loss = 0.0;
        for (t, (&y, &sw)) in self.y.iter().zip(self.weight).enumerate() {
            self.probabilities(w, t, &mut p);
            loss -= sw * p[y].max(f64::MIN_POSITIVE).ln();
        }
        Ok(loss / self.total_weight())
    }
}

impl Gradient for Multinomial<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, w: &Vec<f64>) -> Result<Vec<f64>, argmin::core::Error> {
        let f = self.x.len();
        let mut g = vec![0.0; w.len()];
        let mut p = vec![0.0; self.classes];
        for (t, (&y, &sw)) in self.y.iter().zip(self.weight).enumerate() {
            self.probabilities(w, t, &mut p);
            for (c, pc) in p.iter().enumerate() {
                let r = sw * (pc - if c == y { 1.0 } else { 0.0 });
                let row = &mut g[c * (f + 1)..(c + 1) * (f + 1)];
                for (g, col) in row.iter_mut().zip(self.x) {
                    *g += r * col[t];
                }
                row[f] += r;
            }
        }
        let total = self.total_weight();
        for v in g.iter_mut() {
            *v /= total;
        }
        Ok(g)
    }
}

/// Iteration cap of the logistic regression (scikit-learn's lbfgs stops at `max_iter`, too).
pub const LOGISTIC_MAX_ITER: u64 = 1000;

/// The unweighted training log-loss (nats) of an unpenalised, class-balanced multinomial logistic
/// regression with intercept (scikit-learn's `LogisticRegression(penalty=None,
/// class_weight="balanced")`) from the features `x` (column-major) to the classes `y` (`0..c`).
fn logistic_log_loss(x: &[Vec<f64>], y: &[usize], classes: usize) -> Result<f64> {
    let n = y.len();
    let mut counts = vec![0usize; classes];
    for &c in y {
        counts[c] += 1;
    }
    // scikit-learn's "balanced": n / (classes * count of the class).
    let weight: Vec<f64> = y
        .iter()
        .map(|&c| n as f64 / (classes as f64 * counts[c] as f64))
        .collect();
    let problem = Multinomial {
        x,
        y,
        weight: &weight,
        classes,
    };
    let start = vec![0.0; classes * (x.len() + 1)];
    // Tighter than scikit-learn's (tol = 1e-4 on the largest gradient entry), so that the
    // optimum, not the stopping rule, fixes the result.
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 10)
        .with_tolerance_grad(1e-8)?
        .with_tolerance_cost(1e-14)?;
    let result = Executor::new(problem, solver)
        .configure(|s| s.param(start).max_iters(LOGISTIC_MAX_ITER))
        .run()
        .map_err(|e| anyhow::anyhow!("logistic regression failed: {e}"))?;
    let w = result
        .state()
        .get_best_param()
        .context("logistic regression returned no parameters")?
        .clone();
    let problem = Multinomial {
        x,
        y,
        weight: &weight,
        classes,
    };
    let mut p = vec![0.0; classes];
    let mut loss = 0.0;
    for (t, &c) in y.iter().enumerate() {
        problem.probabilities(&w, t, &mut p);
        // scikit-learn's log_loss clips probabilities to [eps, 1 - eps].
        loss -= p[c].clamp(f64::EPSILON, 1.0 - f64::EPSILON).ln();
    }
    Ok(loss / n as f64)
}

/// InfoE: the mean over factors of `(LL0 - LL) / LL0`, where `LL` is the training log-loss of the
/// logistic regression from the standardised latents and `LL0` from all-zero input (Hsu et al.).
pub fn infoe(factors: &[i64], f: usize, latents: &Matrix<f64>) -> Result<f64> {
    let n = latents.rows;
    let z = standardized_columns(latents);
    let zeros = vec![vec![0.0; n]; latents.cols];
    let mut total = 0.0;
    for i in 0..f {
        let mut levels: Vec<i64> = (0..n).map(|t| factors[t * f + i]).collect();
        levels.sort_unstable();
        levels.dedup();
        if levels.len() < 2 {
            bail!("factor {i} has a single level: InfoE is undefined");
        }
        let y: Vec<usize> = (0..n)
            .map(|t| levels.binary_search(&factors[t * f + i]).unwrap_or(0))
            .collect();
        let ll = logistic_log_loss(&z, &y, levels.len())?;
        let ll0 = logistic_log_loss(&zeros, &y, levels.len())?;
        total += (ll0 - ll) / ll0;
    }
    Ok(total / f as f64)
}

/// `unmix metric infomec --factors S --latents Z`: InfoM, InfoE, InfoC, the NMI matrix (factors x
/// latents) and which latents are active.
pub fn infomec(factors_path: &Path, latents_path: &Path, n_neighbors: usize) -> Result<Value> {
    let (factors, f) = read_factors(factors_path)?;
    let z = io::read_table(latents_path)?.to_f64();
    let n = factors.len() / f.max(1);
    if n != z.rows {
        bail!(
            "{} has {n} rows but {} has {}: factors and latents must describe the same samples",
            factors_path.display(),
            latents_path.display(),
            z.rows
        );
    }
    finite(&z, latents_path)?;
    if n_neighbors == 0 {
        bail!("--n-neighbors must be at least 1");
    }
    if n < 2 {
        bail!(
            "{}: at least 2 samples are needed, found {n}",
            latents_path.display()
        );
    }
    for i in 0..f {
        let first = factors[i];
        if (0..n).all(|t| factors[t * f + i] == first) {
            bail!(
                "{}: factor (column) {i} has a single level ({first}): its entropy is 0, so its NMI is undefined",
                factors_path.display()
            );
        }
    }
    let l = z.cols;
    let mut active = vec![false; l];
    infomec::active_latents(&z.data, l, &mut active).map_err(|_| {
        anyhow::anyhow!(
            "{}: every latent is constant, so none is active",
            latents_path.display()
        )
    })?;
    let (lf, lu) = infomec::workspace_len(n);
    let mut nmi = vec![0.0; f * l];
    let scores = infomec::infomec(
        &factors,
        f,
        &z.data,
        l,
        n_neighbors,
        &mut nmi,
        &mut active,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
    )
    .with_context(|| {
        format!(
            "InfoMEC of {} against {}",
            latents_path.display(),
            factors_path.display()
        )
    })?;
    let infoe =
        infoe(&factors, f, &z).with_context(|| format!("InfoE of {}", latents_path.display()))?;
    let nmi_rows: Vec<&[f64]> = nmi.chunks(l).collect();
    Ok(json!({
        "infom": scores.infom,
        "infoe": infoe,
        "infoc": scores.infoc,
        "nmi": nmi_rows,
        "active": active,
        "n_active": scores.n_active,
        "n_samples": n,
        "n_neighbors": n_neighbors,
    }))
}
