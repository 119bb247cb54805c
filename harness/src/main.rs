//! `unmix`: whiten, unmix and score representations from the command line.
//! Results go to stdout as JSON; diagnostics go to stderr.
//!
//! This file holds the command-line definitions only; each command's arguments and body live in
//! `harness::cmd::<command>`.

use clap::{Parser, Subcommand};
use harness::cmd;
use std::process::ExitCode;

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
    Whiten(cmd::whiten::Args),
    /// Fit FastICA (scikit-learn's algorithm and options) and write the model and the sources.
    Fit(cmd::fit::Args),
    /// Sources (or whitened rows) of new samples under a fitted model or whitener.
    Transform(cmd::apply::Args),
    /// Samples from sources (or whitened rows) under a fitted model or whitener.
    InverseTransform(cmd::apply::Args),
    /// Score representations: AUROC, sparsity, MCC, Amari index, concentration, alignment,
    /// InfoMEC.
    #[command(subcommand)]
    Metric(cmd::metric::Command),
    /// The paper's claims on built-in data: tables, verdicts, SVG figures, JSON.
    Demo(harness::demo::DemoArgs),
    /// The paper's table (Base / PCA / PCA + ICA / PCA + Rand) on your own embeddings.
    Report(harness::report::ReportArgs),
}

fn main() -> ExitCode {
    harness::phases::begin();
    restore_default_sigpipe();
    let cli = Cli::parse();
    if let Err(e) = harness::output::remove_temporaries_on_signal() {
        eprintln!("warning: {e:#}");
    }
    let result = match &cli.command {
        Command::Whiten(a) => cmd::whiten::run(a),
        Command::Fit(a) => cmd::fit::run(a),
        Command::Transform(a) => cmd::apply::run(a, false),
        Command::InverseTransform(a) => cmd::apply::run(a, true),
        Command::Metric(c) => cmd::metric::run(c),
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

/// Rust ignores SIGPIPE, so a closed pipe (`unmix demo | head`) turns every later `println!` into
/// a panic. The default action ends the process quietly instead, as other Unix tools do. Outputs
/// are persisted before their results print, so no temporary file is pending when it comes.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to its default, before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
