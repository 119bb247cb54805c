//! `unmix fit`: FastICA with scikit-learn's algorithm and options; writes the model and sources.

use super::{check_fit_size, explain_rank_zero, named, read_input_described, require_npy, threads};
use crate::fastica::{self, FitJob};
use crate::io::{self, Matrix, Table};
use crate::output::{Delivery, Outputs};
use crate::simd::GemmFloat;
use crate::widen::Widens;
use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use std::path::PathBuf;
use unmix::ica::{
    Algorithm, ContrastKind, FastIcaOptions, IcaInfo, IcaOptions, LogCosh, WInit, WhitenMode,
};
use unmix::whiten::WhitenOptions;

/// Precision of the fit.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dtype {
    /// float32 model and sources (the arithmetic inside is f64 where the core sums).
    F32,
    /// float64.
    F64,
}

/// Arguments of `unmix fit`.
#[derive(clap::Args)]
pub struct Args {
    /// Samples as rows: .npy or .csv.
    #[arg(long)]
    pub input: PathBuf,
    /// Components (default: all features; ignored with --whiten false, as in scikit-learn).
    #[arg(long)]
    pub n_components: Option<usize>,
    /// parallel: all components at once (symmetric decorrelation); deflation: one at a time.
    #[arg(long, value_parser = named::<Algorithm>(Algorithm::NAMES), default_value = Algorithm::Parallel.as_str())]
    pub algorithm: Algorithm,
    /// Contrast function G: logcosh (general purpose), exp (super-Gaussian, robust), cube
    /// (kurtosis).
    #[arg(long, value_parser = named::<ContrastKind>(ContrastKind::NAMES), default_value = "logcosh")]
    pub fun: ContrastKind,
    /// logcosh's alpha, in [1, 2].
    #[arg(long, default_value_t = 1.0)]
    pub alpha: f64,
    /// unit-variance, arbitrary-variance, or false (data already white).
    #[arg(long, value_parser = named::<WhitenMode>(WhitenMode::NAMES), default_value = WhitenMode::UnitVariance.as_str())]
    pub whiten: WhitenMode,
    /// Iteration cap (per component with deflation), at least 1.
    #[arg(long, default_value_t = 200)]
    pub max_iter: usize,
    /// Stop when max_i | |<w_i new, w_i old>| - 1 | < tol (scikit-learn's rule); 0 runs to
    /// --max-iter.
    #[arg(long, default_value_t = 1e-4, allow_negative_numbers = true)]
    pub tol: f64,
    /// Start matrix, k x k (.npy or .csv); default: standard normals from --random-state.
    #[arg(long)]
    pub w_init: Option<PathBuf>,
    /// Seed of the start matrix when --w-init is not given.
    #[arg(long, default_value_t = 0)]
    pub random_state: u64,
    /// Precision of the model and sources (default: the input's float type).
    #[arg(long, value_enum)]
    pub dtype: Option<Dtype>,
    /// Order components by |excess kurtosis| and sign them to positive skewness.
    #[arg(long)]
    pub canonical: bool,
    /// Eigenvalues above this fraction of the largest count towards the effective rank.
    #[arg(long, default_value_t = WhitenOptions::DEFAULT.rank_rtol)]
    pub rank_rtol: f64,
    /// Worker threads (default: all cores; at most 4 per core). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Where to write the model (JSON).
    #[arg(long)]
    pub model: PathBuf,
    /// Where to write the sources of the input (.npy).
    #[arg(long)]
    pub sources: Option<PathBuf>,
}

/// Runs `unmix fit`.
pub fn run(a: &Args) -> Result<serde_json::Value> {
    if let Some(s) = &a.sources {
        require_npy("--sources", s)?;
    }
    let mut inputs = vec![("--input", a.input.as_path())];
    if let Some(w) = &a.w_init {
        inputs.push(("--w-init", w.as_path()));
    }
    let mut outs = vec![("--model", a.model.as_path())];
    if let Some(s) = &a.sources {
        outs.push(("--sources", s.as_path()));
    }
    let mut outputs = Outputs::reserve(&inputs, &outs)?;
    let contrast = match a.fun {
        ContrastKind::LogCosh(_) => {
            ContrastKind::LogCosh(LogCosh::new(a.alpha).context("--alpha")?)
        }
        other => other,
    };
    let options = FastIcaOptions {
        ica: IcaOptions {
            algorithm: a.algorithm,
            max_iter: a.max_iter,
            tol: a.tol,
        },
        contrast,
        whiten: a.whiten,
        rank_rtol: a.rank_rtol,
        canonical: a.canonical,
    };
    let (table, stored_as) = read_input_described(&a.input)?;
    crate::phases::done("read");
    let (n, d) = table.shape();
    let k = if a.whiten == WhitenMode::None {
        d
    } else {
        a.n_components.unwrap_or(d)
    };
    let threads = threads(a.threads);
    check_fit_size(n, d, k, threads, a.whiten != WhitenMode::None)
        .with_context(|| a.input.display().to_string())?;
    let w_init = match &a.w_init {
        Some(p) => Some(read_w_init(p, k)?),
        None => None,
    };
    let init = match &w_init {
        Some(m) => WInit::Matrix(m),
        None => WInit::Seed(a.random_state),
    };
    let bar = progress_bar();
    let tol = a.tol;
    let report = |it: usize, change: f64| {
        bar.set_position(convergence_position(change, tol));
        bar.set_message(format!(
            "iteration {it}/{}: change {change:.2e}, tol {tol:.0e}",
            a.max_iter
        ));
    };
    let dtype = a.dtype.unwrap_or(if matches!(table, Table::F32(_)) {
        Dtype::F32
    } else {
        Dtype::F64
    });
    let job = FitJob {
        n_components: a.n_components,
        options,
        init,
        threads,
        progress: &report,
        // A float file read as the other type: the memory bound is the file's, of which the
        // rows take half (an f32 copy) or the file's own size (f32 rows widened as the passes
        // read them, which then fold the whitening in: `crate::widen`).
        converted_from: match (dtype, stored_as.as_str()) {
            (Dtype::F32, "float64") => Some(8),
            (Dtype::F64, "float32") => Some(4),
            _ => None,
        },
    };
    let input = a.input.display();
    let sources = a.sources.is_some();
    let (model, info) = match (dtype, table) {
        // f32 rows fitted in f64: widened a block at a time as the passes read them, not
        // copied (the copy took twice the file's size).
        (Dtype::F64, Table::F32(x)) => fit_and_write::<f64, f32>(&x, &job, &mut outputs, sources),
        (Dtype::F32, table) => {
            fit_and_write::<f32, f32>(&table.into_f32(), &job, &mut outputs, sources)
        }
        (Dtype::F64, table) => {
            fit_and_write::<f64, f64>(&table.into_f64(), &job, &mut outputs, sources)
        }
    }
    .with_context(|| format!("{input}"))?;
    outputs.write_json("--model", &crate::model::Model::FastIca(model.clone()))?;
    outputs.persist()?;
    crate::phases::done("persist");
    bar.finish_and_clear();
    if !info.converged {
        eprintln!(
            "warning: FastICA did not converge in {} iterations (last change {:.3e} >= tol {:e}); \
             consider increasing --max-iter or --tol",
            info.n_iter, info.last_change, a.tol
        );
    }
    Ok(serde_json::json!({
        "model": a.model,
        "sources": a.sources,
        "n_samples": n,
        "n_features": d,
        "n_components": model.n_components,
        "n_iter": info.n_iter,
        "converged": info.converged,
        "last_change": info.last_change,
    }))
}

/// Reads `--w-init` and checks it (shape, finite, and that it can be decorrelated) so that a bad
/// start matrix is blamed on its own file, not on the data.
fn read_w_init(path: &std::path::Path, k: usize) -> Result<Vec<f64>> {
    let name = path.display();
    let m = io::read_table(path)?.to_f64();
    if (m.rows, m.cols) != (k, k) {
        bail!(
            "{name}: w_init has shape {} x {}, expected {k} x {k}",
            m.rows,
            m.cols
        );
    }
    if let Some(i) = m.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "{name}: --w-init has a non-finite value at row {}, column {}",
            i / k,
            i % k
        );
    }
    // FastICA's result does not depend on the start matrix's scale; bring a matrix far from 1 to
    // near 1 by a power of two (exact), so that entries like 1e300 cannot overflow its products.
    let max = m.data.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    if max == 0.0 {
        bail!("{name}: --w-init is all zeros");
    }
    let mut w = m.data.into_vec();
    if !(2f64.powi(-100)..=2f64.powi(100)).contains(&max) {
        // In two halves: 2^1030 itself would overflow for subnormal entries.
        let e = -(max.log2().floor() as i32);
        let (half, rest) = (2f64.powi(e / 2), 2f64.powi(e - e / 2));
        w.iter_mut().for_each(|v| *v = *v * half * rest);
    }
    Ok(w)
}

/// Steps of the progress bar from change 1 to change `tol`.
const BAR_STEPS: u64 = 1000;

fn progress_bar() -> indicatif::ProgressBar {
    // indicatif draws nothing when stderr is not a terminal.
    let bar = indicatif::ProgressBar::new(BAR_STEPS);
    bar.set_style(
        indicatif::ProgressStyle::with_template("FastICA {bar:30} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// How far the convergence measure has come, on a log scale from 1 (empty bar) to `tol` (full).
fn convergence_position(change: f64, tol: f64) -> u64 {
    let target = -tol.max(1e-16).log10();
    let done = -change.max(1e-300).log10();
    if !(target > 0.0 && done.is_finite()) {
        return 0;
    }
    ((done / target).clamp(0.0, 1.0) * BAR_STEPS as f64) as u64
}

/// Fits `x` and, when `sources`, streams its sources to the staged `--sources` output.
fn fit_and_write<T: GemmFloat + io::NpyFloat + serde::Serialize, S: Widens<T>>(
    x: &Matrix<S>,
    job: &FitJob<'_>,
    outputs: &mut Outputs,
    sources: bool,
) -> Result<(crate::model::FastIcaModel, IcaInfo)> {
    let (model, info, ()) = fastica::fit_then(x, job, None, |view, pool| {
        if sources {
            let delivery = Delivery::for_threads(pool.current_num_threads());
            outputs.write("--sources", |w| {
                fastica::write_sources(view, x, pool, delivery, w)
            })?;
        }
        Ok(())
    })
    .map_err(|e| explain_rank_zero(e, x))?;
    Ok((model, info))
}
