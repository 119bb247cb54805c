//! `unmix report`: the paper's table (Base / PCA / PCA + ICA / PCA + Rand against split-fraction
//! sparsity, concentration and AUROC) on the user's own embeddings, with the mean and spread over
//! seeds, figures and a JSON file of every number.

use crate::concentration::{self, Concentration, ConcentrationJob, Spread, TIE_RULE};
use crate::demo::table::{TextTable, pm};
use crate::fastica::{self, FitJob};
use crate::io::{self, Matrix};
use crate::pipeline::{WhitenJob, whiten};
use crate::plot;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use unmix::ica::{FastIcaOptions, WInit};
use unmix::whiten::{Rotation, WhitenOptions};

/// The rows of the paper's tables.
pub const ROWS: [&str; 4] = ["Base", "PCA", "PCA + ICA", "PCA + Rand"];

/// Arguments of `unmix report`.
#[derive(clap::Args, Clone, Debug)]
pub struct ReportArgs {
    /// Embeddings, n x D (.npy float32/float64/integer, or .csv).
    #[arg(long)]
    pub embeddings: PathBuf,
    /// A label per row (integers); more than two classes are scored one-vs-rest and averaged.
    #[arg(long)]
    pub labels: PathBuf,
    /// An integer group (batch) per row: whole groups are held out, so AUROC is out-of-group.
    #[arg(long)]
    pub groups: Option<PathBuf>,
    /// Components kept by PCA / ICA (default: all D; an error naming the effective rank if the
    /// embeddings are rank-deficient).
    #[arg(long)]
    pub n_components: Option<usize>,
    /// Seeds of the split, the trees and the tie-breaking; every number is a mean and spread
    /// over them.
    #[arg(long, default_value_t = 5)]
    pub seeds: usize,
    /// First seed; also the seed of FastICA's start and of the random rotation.
    #[arg(long, default_value_t = 0)]
    pub random_state: u64,
    /// Share of features in the top group (rounded up to whole features).
    #[arg(long, default_value_t = 0.25)]
    pub top: f64,
    /// Directory for the SVG figures.
    #[arg(long, default_value = "unmix-report")]
    pub out: PathBuf,
    /// Write every number here as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// The four representations of `x` with `k` components: Base (x itself), PCA-whitened,
/// PCA + FastICA (scikit-learn's defaults, start from `seed`) and PCA + a Haar-random rotation
/// (from `seed`).
pub fn representations(
    x: &Matrix<f64>,
    k: usize,
    seed: u64,
    threads: usize,
) -> Result<(Vec<Matrix<f64>>, Value)> {
    let white = |rotation| {
        whiten(
            x,
            &WhitenJob {
                n_components: Some(k),
                options: WhitenOptions {
                    rotation,
                    ..WhitenOptions::DEFAULT
                },
                threads,
            },
        )
    };
    let pca = white(Rotation::None)?.z;
    let rand = white(Rotation::Random { seed })?.z;
    let progress = |_: usize, _: f64| {};
    let ica = fastica::fit(
        x,
        &FitJob {
            n_components: Some(k),
            options: FastIcaOptions::DEFAULT,
            init: WInit::Seed(seed),
            threads,
            progress: &progress,
        },
    )?;
    let info = json!({"n_iter": ica.info.n_iter, "converged": ica.info.converged, "last_change": ica.info.last_change});
    Ok((vec![x.clone(), pca, ica.sources, rand], info))
}

/// One row of the table.
pub struct Row {
    /// Base, PCA, PCA + ICA or PCA + Rand.
    pub name: &'static str,
    /// The concentration pipeline over seeds.
    pub result: Concentration,
}

/// A progress bar on stderr (drawn only when stderr is a terminal).
pub fn progress_bar(len: usize, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what:<28} {{bar:30}} {{pos}}/{{len}} {{elapsed}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// The concentration pipeline on each representation.
pub fn score_rows(
    reps: &[Matrix<f64>],
    labels: &[i64],
    groups: Option<&[i64]>,
    job: &ConcentrationJob,
    what: &str,
) -> Result<Vec<Row>> {
    let mut classes = labels.to_vec();
    classes.sort_unstable();
    classes.dedup();
    let tasks = if classes.len() > 2 { classes.len() } else { 1 };
    let bar = progress_bar(reps.len() * job.n_seeds * tasks, what);
    let tick = || bar.inc(1);
    let rows = ROWS
        .iter()
        .zip(reps)
        .map(|(name, z)| {
            Ok(Row {
                name,
                result: concentration::concentration(z, labels, groups, job, &tick)
                    .with_context(|| format!("row {name}"))?,
            })
        })
        .collect::<Result<Vec<_>>>();
    bar.finish_and_clear();
    rows
}

/// The table: one line per row, mean +- spread over seeds.
pub fn rows_table(rows: &[Row], out_of_group: bool) -> TextTable {
    let auroc = if out_of_group {
        "out-of-group AUROC"
    } else {
        "held-out AUROC"
    };
    let mut t = TextTable::new(&[
        "representation",
        "features",
        "sparsity",
        "concentration",
        auroc,
    ]);
    for r in rows {
        let c = &r.result;
        t.row(vec![
            r.name.to_string(),
            c.n_features.to_string(),
            pm(c.sparsity.mean, c.sparsity.std),
            pm(c.concentration.mean, c.concentration.std),
            pm(c.auroc_all.mean, c.auroc_all.std),
        ]);
    }
    t
}

/// The rows as JSON.
pub fn rows_json(rows: &[Row], job: &ConcentrationJob) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| json!({"representation": r.name, "result": r.result.to_json(job)}))
            .collect(),
    )
}

/// The split-fraction and concentration figures for a set of rows.
pub fn row_figures(dir: &Path, prefix: &str, title: &str, rows: &[Row]) -> Result<Vec<PathBuf>> {
    let fractions = dir.join(format!("{prefix}split_fractions.svg"));
    plot::bars(
        &fractions,
        &format!("{title}: share of tree splits per feature (mean over seeds)"),
        &rows
            .iter()
            .map(|r| (r.name.to_string(), r.result.mean_split_fractions.clone()))
            .collect::<Vec<_>>(),
        "split fraction",
    )?;
    let spread = dir.join(format!("{prefix}concentration.svg"));
    let panel = |title: &str, f: fn(&Concentration) -> &Spread| plot::SpreadPanel {
        title: title.to_string(),
        from_zero: title.starts_with("concentration"),
        rows: rows
            .iter()
            .map(|r| (r.name.to_string(), f(&r.result).per_seed.clone()))
            .collect(),
    };
    plot::spread(
        &spread,
        &format!("{title}: per seed (dots), mean ± std (bars)"),
        &[
            panel("concentration (top 25 %)", |c| &c.concentration),
            panel("split-fraction sparsity", |c| &c.sparsity),
            panel("AUROC", |c| &c.auroc_all),
        ],
        "value",
    )?;
    Ok(vec![fractions, spread])
}

/// Creates `dir` (and parents) for figures.
pub fn make_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{}: cannot create the directory", dir.display()))
}

/// Worker threads: the argument, or every core.
pub fn threads(arg: Option<usize>) -> usize {
    arg.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// Runs `unmix report`: the table on stdout, figures in `--out`, every number in `--json`.
pub fn run(a: &ReportArgs) -> Result<()> {
    let threads = threads(a.threads);
    let x = io::read_table(&a.embeddings)?.to_f64();
    let name = a.embeddings.display();
    if let Some(i) = x.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "{name}: non-finite value {} at row {}, column {}",
            x.data[i],
            i / x.cols,
            i % x.cols
        );
    }
    let labels = io::read_labels(&a.labels)?;
    if labels.len() != x.rows {
        bail!(
            "{}: {} labels for {} rows of {name}",
            a.labels.display(),
            labels.len(),
            x.rows
        );
    }
    let groups = match &a.groups {
        Some(p) => {
            let g = io::read_labels(p)?;
            if g.len() != x.rows {
                bail!(
                    "{}: {} groups for {} rows of {name}",
                    p.display(),
                    g.len(),
                    x.rows
                );
            }
            Some(g)
        }
        None => None,
    };
    let k = a.n_components.unwrap_or(x.cols);
    let job = ConcentrationJob {
        top: a.top,
        random_state: a.random_state,
        n_seeds: a.seeds,
        ..ConcentrationJob::default()
    };
    eprintln!("read {} x {} from {name}; {k} components", x.rows, x.cols);
    let (reps, ica) =
        representations(&x, k, a.random_state, threads).with_context(|| format!("{name}"))?;
    let rows = score_rows(&reps, &labels, groups.as_deref(), &job, "report: trees")
        .with_context(|| format!("{name} with labels {}", a.labels.display()))?;
    make_dir(&a.out)?;
    let figures = row_figures(&a.out, "", "report", &rows)?;
    let first = &rows[0].result;
    println!(
        "{} samples, {} features, {k} components; mean ± std over {} seeds",
        x.rows, x.cols, a.seeds
    );
    print!("{}", rows_table(&rows, groups.is_some()).render());
    println!(
        "- sparsity: Hoyer sparsity of the share of tree splits per feature (0 = all used equally, 1 = one feature)."
    );
    println!(
        "- concentration: AUROC(top features) / AUROC(the rest) - 1; the top {:.0} % is rounded up to whole features: {} (Base), {} (the other rows).",
        a.top * 100.0,
        concentration::top_count_text(a.top, first.n_features, first.n_top),
        concentration::top_count_text(a.top, rows[1].result.n_features, rows[1].result.n_top)
    );
    println!("- ties at the cut: {TIE_RULE}.");
    for f in &figures {
        println!("figure: {}", f.display());
    }
    if let Some(path) = &a.json {
        io::write_json(
            path,
            &json!({
                "embeddings": a.embeddings, "labels": a.labels, "groups": a.groups,
                "n_samples": x.rows, "n_features": x.cols, "n_components": k,
                "fastica": ica, "rows": rows_json(&rows, &job),
                "figures": figures,
            }),
        )?;
        println!("json: {}", path.display());
    }
    Ok(())
}
