//! `unmix`: whiten, unmix and score representations from the command line.
//! Results go to stdout as JSON; diagnostics go to stderr.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use harness::fastica::{self, FitJob};
use harness::io::{self, Table};
use harness::pipeline::{WhitenJob, whiten};
use std::path::PathBuf;
use std::process::ExitCode;
use unmix::whiten::{Method, Rotation, WhitenOptions};

#[derive(Parser)]
#[command(
    name = "unmix",
    version,
    about = "Whiten, unmix (FastICA) and score learned representations"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fit a PCA/ZCA whitener on samples (rows) and write the whitened data.
    Whiten(WhitenArgs),
    /// Fit FastICA (scikit-learn's algorithm and options) and write the model and the sources.
    Fit(FitArgs),
    /// Sources of new samples under a fitted model.
    Transform(ApplyArgs),
    /// Samples from sources under a fitted model.
    InverseTransform(ApplyArgs),
    /// Score representations: AUROC, sparsity, MCC, Amari index, concentration, alignment,
    /// InfoMEC.
    #[command(subcommand)]
    Metric(MetricCommand),
    /// The paper's claims on built-in data: tables, verdicts, SVG figures, JSON.
    Demo(harness::demo::DemoArgs),
    /// The paper's table (Base / PCA / PCA + ICA / PCA + Rand) on your own embeddings.
    Report(harness::report::ReportArgs),
}

#[derive(Subcommand)]
enum MetricCommand {
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
        #[arg(long, value_enum, default_value = "pearson")]
        method: CorrelationArg,
    },
    /// Amari index of unmixing (k x d, whitening included) times mixing (d x k), in [0, 1].
    Amari {
        #[arg(long)]
        unmixing: PathBuf,
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
        #[arg(long, default_value_t = 3)]
        max_depth: usize,
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

#[derive(Clone, Copy, ValueEnum)]
enum CorrelationArg {
    Pearson,
    Spearman,
}

fn run_metric(c: &MetricCommand) -> Result<serde_json::Value> {
    use harness::metric;
    match c {
        MetricCommand::Auroc {
            scores,
            labels,
            weights,
        } => metric::auroc(scores, labels, weights.as_deref()),
        MetricCommand::Sparsity { fractions } => metric::sparsity(fractions),
        MetricCommand::Mcc {
            truth,
            estimated,
            method,
        } => {
            let method = match method {
                CorrelationArg::Pearson => unmix::metrics::correlation::Method::Pearson,
                CorrelationArg::Spearman => unmix::metrics::correlation::Method::Spearman,
            };
            metric::mcc(truth, estimated, method)
        }
        MetricCommand::Amari { unmixing, mixing } => metric::amari(unmixing, mixing),
        MetricCommand::Concentration {
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
            use harness::concentration::{ConcentrationJob, Trees};
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
            harness::concentration::run_files(features, labels, groups.as_deref(), &job)
        }
        MetricCommand::Alignment {
            reference,
            other,
            random_state,
        } => harness::identifiability::alignment(reference, other, *random_state),
        MetricCommand::Infomec {
            factors,
            latents,
            n_neighbors,
        } => harness::identifiability::infomec(factors, latents, *n_neighbors),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum MethodArg {
    Pca,
    Zca,
}

#[derive(Clone, Copy, ValueEnum)]
enum RotationArg {
    None,
    Random,
}

#[derive(clap::Args)]
struct WhitenArgs {
    /// Samples as rows: .npy (float32/float64/integer, C or Fortran order) or .csv.
    #[arg(long)]
    input: PathBuf,
    /// Components to keep (default: all features; an error if the data are rank-deficient).
    #[arg(long)]
    n_components: Option<usize>,
    /// Whitening matrix.
    #[arg(long, value_enum, default_value = "pca")]
    method: MethodArg,
    /// Rotate the whitened data by a Haar-random orthogonal matrix (the "PCA + Rand" control).
    #[arg(long, value_enum, default_value = "none")]
    rotation: RotationArg,
    /// Seed of the random rotation.
    #[arg(long, default_value_t = 0)]
    random_state: u64,
    /// Delta degrees of freedom of the covariance: 0 (scikit-learn's FastICA) or 1 (its PCA).
    #[arg(long, default_value_t = 0)]
    ddof: u32,
    /// Eigenvalues above this fraction of the largest count towards the effective rank.
    #[arg(long, default_value_t = WhitenOptions::DEFAULT.rank_rtol)]
    rank_rtol: f64,
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Where to write the whitened data (.npy, the input's float type).
    #[arg(long)]
    output: PathBuf,
    /// Where to write the fitted whitener (JSON).
    #[arg(long)]
    model: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum AlgorithmArg {
    Parallel,
    Deflation,
}

#[derive(Clone, Copy, ValueEnum)]
enum FunArg {
    Logcosh,
    Exp,
    Cube,
}

#[derive(Clone, Copy, ValueEnum)]
enum WhitenArg {
    #[value(name = "unit-variance")]
    UnitVariance,
    #[value(name = "arbitrary-variance")]
    ArbitraryVariance,
    #[value(name = "false")]
    False,
}

#[derive(Clone, Copy, ValueEnum)]
enum DtypeArg {
    F32,
    F64,
}

#[derive(clap::Args)]
struct FitArgs {
    /// Samples as rows: .npy or .csv.
    #[arg(long)]
    input: PathBuf,
    /// Components (default: all features).
    #[arg(long)]
    n_components: Option<usize>,
    #[arg(long, value_enum, default_value = "parallel")]
    algorithm: AlgorithmArg,
    /// Contrast function.
    #[arg(long, value_enum, default_value = "logcosh")]
    fun: FunArg,
    /// logcosh's alpha, in [1, 2].
    #[arg(long, default_value_t = 1.0)]
    alpha: f64,
    /// unit-variance, arbitrary-variance, or false (data already white).
    #[arg(long, value_enum, default_value = "unit-variance")]
    whiten: WhitenArg,
    #[arg(long, default_value_t = 200)]
    max_iter: usize,
    #[arg(long, default_value_t = 1e-4, allow_negative_numbers = true)]
    tol: f64,
    /// Start matrix, k x k (.npy or .csv); default: standard normals from --random-state.
    #[arg(long)]
    w_init: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    random_state: u64,
    /// Precision of the model and sources (default: the input's float type).
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// Order components by |excess kurtosis| and sign them to positive skewness.
    #[arg(long)]
    canonical: bool,
    /// Eigenvalues above this fraction of the largest count towards the effective rank.
    #[arg(long, default_value_t = WhitenOptions::DEFAULT.rank_rtol)]
    rank_rtol: f64,
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Where to write the model (JSON).
    #[arg(long)]
    model: PathBuf,
    /// Where to write the sources of the input (.npy).
    #[arg(long)]
    sources: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ApplyArgs {
    /// A model written by `unmix fit`.
    #[arg(long)]
    model: PathBuf,
    /// Rows to map: .npy or .csv.
    #[arg(long)]
    input: PathBuf,
    /// Where to write the result (.npy).
    #[arg(long)]
    output: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

fn run_fit(a: &FitArgs) -> Result<serde_json::Value> {
    use unmix::ica::{
        Algorithm, ContrastKind, FastIcaOptions, IcaOptions, LogCosh, WInit, WhitenMode,
    };
    if let Some(s) = &a.sources {
        if extension(s) != "npy" {
            bail!("--sources must be a .npy path, got {}", s.display());
        }
    }
    let contrast = match a.fun {
        FunArg::Logcosh => ContrastKind::LogCosh(LogCosh::new(a.alpha).context("--alpha")?),
        FunArg::Exp => ContrastKind::Exp,
        FunArg::Cube => ContrastKind::Cube,
    };
    let options = FastIcaOptions {
        ica: IcaOptions {
            algorithm: match a.algorithm {
                AlgorithmArg::Parallel => Algorithm::Parallel,
                AlgorithmArg::Deflation => Algorithm::Deflation,
            },
            max_iter: a.max_iter,
            tol: a.tol,
        },
        contrast,
        whiten: match a.whiten {
            WhitenArg::UnitVariance => WhitenMode::UnitVariance,
            WhitenArg::ArbitraryVariance => WhitenMode::ArbitraryVariance,
            WhitenArg::False => WhitenMode::None,
        },
        rank_rtol: a.rank_rtol,
        canonical: a.canonical,
    };
    let table = read_input(&a.input)?;
    let (n, d) = table.shape();
    let w_init = match &a.w_init {
        Some(p) => {
            let m = io::read_table(p)?.to_f64();
            let k = if matches!(a.whiten, WhitenArg::False) {
                d
            } else {
                a.n_components.unwrap_or(d)
            };
            if (m.rows, m.cols) != (k, k) {
                bail!(
                    "{}: w_init has shape {} x {}, expected {k} x {k}",
                    p.display(),
                    m.rows,
                    m.cols
                );
            }
            Some(m.data)
        }
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
    let job = FitJob {
        n_components: a.n_components,
        options,
        init,
        threads: threads(a.threads),
        progress: &report,
    };
    let dtype = a.dtype.unwrap_or(if matches!(table, Table::F32(_)) {
        DtypeArg::F32
    } else {
        DtypeArg::F64
    });
    let input = a.input.display();
    let (model, info) = match dtype {
        DtypeArg::F32 => {
            let x = table.to_f32();
            let out = fastica::fit(&x, &job).with_context(|| format!("{input}"))?;
            write_fit(a, &out.model, &out.sources)?;
            (out.model, out.info)
        }
        DtypeArg::F64 => {
            let out = fastica::fit(&table.to_f64(), &job).with_context(|| format!("{input}"))?;
            write_fit(a, &out.model, &out.sources)?;
            (out.model, out.info)
        }
    };
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
        "n_components": model["n_components"],
        "n_iter": info.n_iter,
        "converged": info.converged,
        "last_change": info.last_change,
    }))
}

fn write_fit<T: npyz::AutoSerialize + Copy>(
    a: &FitArgs,
    model: &serde_json::Value,
    sources: &io::Matrix<T>,
) -> Result<()> {
    if let Some(path) = &a.sources {
        io::write_npy(path, sources)?;
    }
    if let Err(e) = io::write_json(&a.model, model) {
        if let Some(path) = &a.sources {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    Ok(())
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

fn run_apply(a: &ApplyArgs, inverse: bool) -> Result<serde_json::Value> {
    if extension(&a.output) != "npy" {
        bail!("--output must be a .npy path, got {}", a.output.display());
    }
    let model = fastica::load_model(&a.model)?;
    let table = io::read_table(&a.input)?;
    let (n, width) = table.shape();
    let (in_w, out_w) = if inverse {
        (model.k, model.d)
    } else {
        (model.d, model.k)
    };
    if width != in_w {
        bail!(
            "{}: {} columns, but the model {} expects {in_w}",
            a.input.display(),
            width,
            a.model.display()
        );
    }
    let t = threads(a.threads);
    fn apply<T: harness::simd::GemmFloat + npyz::AutoSerialize>(
        m: &fastica::LoadedModel,
        x: &io::Matrix<T>,
        out_w: usize,
        inverse: bool,
        threads: usize,
    ) -> Result<io::Matrix<T>> {
        let storage: Vec<T> = m.storage.iter().map(|v| T::from_f64(*v)).collect();
        let view = unmix::ica::FastIcaView::from_parts(m.d, m.k, &storage, m.info)?;
        let mut out = vec![T::ZERO; x.rows * out_w];
        let in_w = x.cols;
        let pool = fastica::pool(threads)?;
        fastica::map_rows(&pool, &x.data, in_w, &mut out, out_w, |xi, oi| {
            if inverse {
                view.inverse_transform_rows(xi, oi)
            } else {
                fastica::sources_of(&view, xi, oi)
            }
        })?;
        io::Matrix::new(x.rows, out_w, out)
    }
    let input = a.input.display();
    if model.dtype == "float32" {
        let x = table.to_f32();
        let out = apply(&model, &x, out_w, inverse, t).with_context(|| format!("{input}"))?;
        io::write_npy(&a.output, &out)?;
    } else {
        let out = apply(&model, &table.to_f64(), out_w, inverse, t)
            .with_context(|| format!("{input}"))?;
        io::write_npy(&a.output, &out)?;
    }
    Ok(serde_json::json!({"output": a.output, "n_samples": n, "n_columns": out_w}))
}

/// Reads the samples and says on stderr what was read.
fn read_input(path: &std::path::Path) -> Result<Table> {
    let table = io::read_table(path)?;
    let (n, d) = table.shape();
    eprintln!("read {n} x {d} ({}) from {}", table.dtype(), path.display());
    Ok(table)
}

fn threads(arg: Option<usize>) -> usize {
    arg.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

fn run_whiten(a: &WhitenArgs) -> Result<serde_json::Value> {
    if extension(&a.output) != "npy" {
        bail!("--output must be a .npy path, got {}", a.output.display());
    }
    let table = read_input(&a.input)?;
    let (n, d) = table.shape();
    let options = WhitenOptions {
        method: match a.method {
            MethodArg::Pca => Method::Pca,
            MethodArg::Zca => Method::Zca,
        },
        rotation: match a.rotation {
            RotationArg::None => Rotation::None,
            RotationArg::Random => Rotation::Random {
                seed: a.random_state,
            },
        },
        ddof: a.ddof,
        rank_rtol: a.rank_rtol,
    };
    let job = WhitenJob {
        n_components: a.n_components,
        options,
        threads: threads(a.threads),
    };
    let input = a.input.display();
    // Compute everything first; write files only once nothing can fail any more.
    let (model, max_cov_error) = match &table {
        Table::F32(x) => {
            let out = whiten(x, &job).with_context(|| format!("{input}"))?;
            io::write_npy(&a.output, &out.z)?;
            (out.model, out.max_cov_error)
        }
        Table::F64(x) => {
            let out = whiten(x, &job).with_context(|| format!("{input}"))?;
            io::write_npy(&a.output, &out.z)?;
            (out.model, out.max_cov_error)
        }
    };
    if let Some(path) = &a.model {
        if let Err(e) = io::write_json(path, &model) {
            let _ = std::fs::remove_file(&a.output);
            return Err(e);
        }
    }
    Ok(serde_json::json!({
        "output": a.output,
        "model": a.model,
        "n_samples": n,
        "n_features": d,
        "n_components": model["n_components"],
        "effective_rank": model["effective_rank"],
        "max_abs_cov_error": max_cov_error,
    }))
}

fn extension(p: &std::path::Path) -> String {
    p.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Whiten(a) => run_whiten(a),
        Command::Fit(a) => run_fit(a),
        Command::Transform(a) => run_apply(a, false),
        Command::InverseTransform(a) => run_apply(a, true),
        Command::Metric(c) => run_metric(c),
        // These print their own tables; Null means nothing more to print.
        Command::Demo(a) => harness::demo::run(a).map(|()| serde_json::Value::Null),
        Command::Report(a) => harness::report::run(a).map(|()| serde_json::Value::Null),
    };
    match result {
        Ok(v) => {
            if !v.is_null() {
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
