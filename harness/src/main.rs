//! `unmix`: whiten, unmix and score representations from the command line.
//! Results go to stdout as JSON; diagnostics go to stderr.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
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
    /// Run the pipeline on the bundled digits data and print a report.
    Demo {
        /// Worker threads (default: all cores). Results do not depend on it.
        #[arg(long)]
        threads: Option<usize>,
    },
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

fn threads(arg: Option<usize>) -> usize {
    arg.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

fn run_whiten(a: &WhitenArgs) -> Result<serde_json::Value> {
    if extension(&a.output) != "npy" {
        bail!("--output must be a .npy path, got {}", a.output.display());
    }
    let table = io::read_table(&a.input)?;
    let (n, d) = table.shape();
    eprintln!(
        "read {} x {} ({}) from {}",
        n,
        d,
        table.dtype(),
        a.input.display()
    );
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
        Command::Demo { threads: t } => harness::demo::run(threads(*t)),
    };
    match result {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
