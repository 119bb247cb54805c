//! `unmix report`: the paper's table (Base / PCA / PCA + ICA / PCA + Rand against split-fraction
//! sparsity, concentration and AUROC) on the user's own embeddings, with the mean and spread over
//! seeds, figures and a JSON file of every number.

use crate::concentration::{self, Concentration, ConcentrationJob, Spread, TIE_RULE};
use crate::demo::table::{TextTable, pm};
use crate::fastica::{self, PoolExecutor, map_rows};
use crate::io::{self, Matrix, Table};
use crate::pipeline;
use crate::plot;
use crate::simd::{CliKernel, GemmFloat, centred_product};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use unmix::ica::{self, FastIcaBuf, FastIcaOptions, WInit};
use unmix::random::Normals;
use unmix::whiten::{self, Rotation, WhitenOptions, WhitenerBuf, WhitenerView};

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
    /// Rows the classifiers train and test on, at most: with more rows, a seeded sample
    /// stratified by label (the whitening and FastICA are still fitted on every row).
    #[arg(long, default_value_t = 100_000)]
    pub max_rows: usize,
}

/// The four representations of `x` with `k` components, all rows, as `f64`: Base (x itself),
/// PCA-whitened, PCA + FastICA (scikit-learn's defaults, start from `seed`) and PCA + a
/// Haar-random rotation (from `seed`); see [`kept_representations`].
pub fn representations<T: GemmFloat + serde::Serialize>(
    x: &Matrix<T>,
    k: usize,
    seed: u64,
    threads: usize,
) -> Result<(Vec<Matrix<f64>>, Value)> {
    let (_, others, info) = kept_representations(x, k, seed, threads, None)?;
    let mut reps = vec![x.map(|v| v.to_f64())];
    reps.extend(others);
    Ok((reps, info))
}

/// What [`kept_representations`] gives: Base's kept rows (`None` when every row is kept: Base is
/// the input), PCA, PCA + ICA and PCA + Rand on the kept rows, and FastICA's iterations.
pub type Kept<T> = (Option<Matrix<T>>, Vec<Matrix<f64>>, Value);

/// The representations of [`representations`] on the rows `keep` (all rows when `None`):
/// Base's kept rows in the input's type when `keep` is given (so that a caller can drop the
/// input before widening them; with `None`, Base is `x`), and PCA, PCA + ICA and PCA + Rand as
/// `f64`, plus FastICA's iterations as JSON.
///
/// The whitening and FastICA are fitted on every row of `x`, whatever `keep` is: one moments
/// pass serves both whiteners and FastICA (the same computation, hence the same bits, as
/// `unmix whiten` and `unmix fit`), and only the kept rows are transformed, a block at a time,
/// so that large inputs need no `n x k` copy per representation. Progress goes to stderr.
pub fn kept_representations<T: GemmFloat + serde::Serialize>(
    x: &Matrix<T>,
    k: usize,
    seed: u64,
    threads: usize,
    keep: Option<&[usize]>,
) -> Result<Kept<T>> {
    let (d, opts) = (x.cols, FastIcaOptions::DEFAULT);
    opts.check(d, k)?;
    let pool = fastica::pool(threads)?;
    let explain = |e: unmix::Error| match e {
        unmix::Error::RankDeficient { rank, .. } if rank > 0 => {
            anyhow::anyhow!(
                "whitening failed: {e}; keep at most {rank} components (--n-components {rank})"
            )
        }
        e => anyhow::Error::new(e).context("whitening failed"),
    };
    let step = progress_spinner("report: moments (all rows)");
    let m = pipeline::moments(x, &pool)?;
    step.finish_and_clear();
    let mut ws = vec![0.0; whiten::workspace_len(d, k)];
    let mut pca_storage = vec![T::ZERO; whiten::storage_len(d, k)];
    let mut pca = WhitenerBuf::new(d, k, &mut pca_storage)?;
    pca.fit(m.view(), &opts.pca_options(), &mut ws)
        .map_err(explain)?;
    let mut rand_storage = vec![T::ZERO; whiten::storage_len(d, k)];
    let mut rand = WhitenerBuf::new(d, k, &mut rand_storage)?;
    let rotation = WhitenOptions {
        rotation: Rotation::Random { seed },
        ..opts.pca_options()
    };
    rand.fit(m.view(), &rotation, &mut ws).map_err(explain)?;

    let kernel = CliKernel::for_this_cpu();
    let mut ica_storage = vec![T::ZERO; ica::model_len(d, k)];
    let mut ica = FastIcaBuf::new(d, k, &mut ica_storage)?;
    let mut staging = vec![T::ZERO; ica::model_len(d, k)];
    let mut ica_ws = vec![0.0; ica::white_fit_workspace_len_with(k, kernel)];
    let bar = progress_bar(opts.ica.max_iter, "report: FastICA iterations");
    let mut exec = PoolExecutor::new(&x.data, d, &pool);
    // Inside the pool, so that the update's products (`simd::gemm_halves`) use its threads.
    let info = pool
        .install(|| {
            ica.fit_white_with(
                &pca.view(),
                &mut exec,
                kernel,
                &opts,
                WInit::Seed(seed),
                &mut staging,
                &mut ica_ws,
                &mut |iteration, _| bar.set_position(iteration as u64),
            )
        })
        .map_err(anyhow::Error::new)
        .context("FastICA failed")?;
    drop(exec); // its whitened copy of every row
    bar.finish_and_clear();

    let (pca, rand, ica) = (pca.view(), rand.view(), ica.view());
    let whitened = |v: &WhitenerView<'_, T>, xi: &[T], zi: &mut [T]| {
        centred_product(xi, d, v.mean(), v.whitening(), zi, k, |xi, zi| {
            v.transform_rows(xi, zi)
        })
    };
    let kept = keep.map_or(x.rows, <[usize]>::len);
    let bar = progress_bar(kept.div_ceil(GATHER_ROWS), "report: transforms (kept rows)");
    let mut base = Vec::with_capacity(if keep.is_some() { kept * d } else { 0 });
    let mut reps = (0..3)
        .map(|_| Matrix::new(kept, k, vec![0.0; kept * k]))
        .collect::<Result<Vec<_>>>()?;
    let mut block = Vec::new();
    let mut out = vec![T::ZERO; GATHER_ROWS.min(kept) * k];
    for start in (0..kept).step_by(GATHER_ROWS) {
        let end = (start + GATHER_ROWS).min(kept);
        let rows: &[T] = match keep {
            None => &x.data[start * d..end * d],
            Some(idx) => {
                block.clear();
                for &r in &idx[start..end] {
                    block.extend_from_slice(x.row(r));
                }
                base.extend_from_slice(&block);
                &block
            }
        };
        let to_f64 = |rep: &mut Matrix<f64>, values: &[T]| {
            let w = rep.cols;
            for (o, v) in rep.data[start * w..end * w].iter_mut().zip(values) {
                *o = v.to_f64();
            }
        };
        let out = &mut out[..(end - start) * k];
        map_rows(&pool, rows, d, out, k, |xi, zi| whitened(&pca, xi, zi))?;
        to_f64(&mut reps[0], out);
        map_rows(&pool, rows, d, out, k, |xi, si| {
            fastica::sources_of(&ica, xi, si)
        })?;
        to_f64(&mut reps[1], out);
        map_rows(&pool, rows, d, out, k, |xi, zi| whitened(&rand, xi, zi))?;
        to_f64(&mut reps[2], out);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let info = json!({"n_iter": info.n_iter, "converged": info.converged, "last_change": info.last_change});
    let base = match keep {
        Some(_) => Some(Matrix::new(kept, d, base)?),
        None => None,
    };
    Ok((base, reps, info))
}

/// Kept rows transformed per block: a multiple of [`fastica::MAP_ROWS`], so that a row's
/// values do not depend on the block (see there).
const GATHER_ROWS: usize = 16 * fastica::MAP_ROWS;

/// The rows the classifiers see: every row when there are at most `max_rows`, otherwise a
/// seeded sample stratified by label (each class keeps its share, rounded down, and at least one
/// row), in row order.
pub fn scored_rows(labels: &[i64], max_rows: usize, seed: u64) -> Result<Option<Vec<usize>>> {
    if max_rows == 0 {
        bail!("--max-rows must be at least 1");
    }
    let n = labels.len();
    if n <= max_rows {
        return Ok(None);
    }
    let mut classes = labels.to_vec();
    classes.sort_unstable();
    classes.dedup();
    let mut normals = Normals::new(seed ^ 0x726f_7773); // "rows"
    let mut keep = Vec::with_capacity(max_rows + classes.len());
    for class in classes {
        let mut rows: Vec<usize> = (0..n).filter(|&r| labels[r] == class).collect();
        let share = ((rows.len() as u128 * max_rows as u128) / n as u128) as usize;
        concentration::shuffle(&mut rows, &mut normals);
        keep.extend_from_slice(&rows[..share.max(1)]);
    }
    keep.sort_unstable();
    Ok(Some(keep))
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

/// A spinner on stderr for a step without a count (drawn only when stderr is a terminal).
pub fn progress_spinner(what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
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
/// `float32` embeddings stay `float32` until the kept rows' representations are taken.
pub fn run(a: &ReportArgs) -> Result<()> {
    match io::read_table(&a.embeddings)? {
        Table::F32(x) => run_on(a, x),
        Table::F64(x) => run_on(a, x),
    }
}

fn run_on<T: GemmFloat + serde::Serialize>(a: &ReportArgs, x: Matrix<T>) -> Result<()> {
    let threads = threads(a.threads);
    let name = a.embeddings.display();
    if let Some(i) = x.data.iter().position(|v| !v.is_finite()) {
        bail!(
            "{name}: non-finite value {} at row {}, column {}",
            x.data[i],
            i / x.cols,
            i % x.cols
        );
    }
    let (n, d) = (x.rows, x.cols);
    let labels = io::read_labels(&a.labels)?;
    if labels.len() != n {
        bail!(
            "{}: {} labels for {n} rows of {name}",
            a.labels.display(),
            labels.len(),
        );
    }
    let groups = match &a.groups {
        Some(p) => {
            let g = io::read_labels(p)?;
            if g.len() != n {
                bail!("{}: {} groups for {n} rows of {name}", p.display(), g.len());
            }
            Some(g)
        }
        None => None,
    };
    let k = a.n_components.unwrap_or(d);
    let job = ConcentrationJob {
        top: a.top,
        random_state: a.random_state,
        n_seeds: a.seeds,
        ..ConcentrationJob::default()
    };
    // Before the costly fits: labels, groups and options.
    concentration::check_targets(&labels, groups.as_deref(), &job)
        .with_context(|| format!("{}", a.labels.display()))?;
    let keep = scored_rows(&labels, a.max_rows, a.random_state)?;
    let (labels, groups) = match &keep {
        None => (labels, groups),
        Some(rows) => (
            rows.iter().map(|&r| labels[r]).collect(),
            groups.map(|g| rows.iter().map(|&r| g[r]).collect()),
        ),
    };
    let scored = labels.len();
    eprintln!("read {n} x {d} from {name}; {k} components; trees on {scored} rows");
    let (base, others, ica) = kept_representations(&x, k, a.random_state, threads, keep.as_deref())
        .with_context(|| format!("{name}"))?;
    // The trees need only the kept rows' representations: drop the input before widening Base.
    let base = base.unwrap_or(x);
    let mut reps = vec![base.map(|v| v.to_f64())];
    drop(base);
    reps.extend(others);
    let rows = score_rows(&reps, &labels, groups.as_deref(), &job, "report: trees")
        .with_context(|| format!("{name} with labels {}", a.labels.display()))?;
    make_dir(&a.out)?;
    let figures = row_figures(&a.out, "", "report", &rows)?;
    let first = &rows[0].result;
    println!(
        "{n} samples, {d} features, {k} components; mean ± std over {} seeds",
        a.seeds
    );
    if scored < n {
        println!(
            "The whitening and FastICA were fitted on all {n} rows; the trees train and test on a sample of {scored} rows, stratified by label (--max-rows {}).",
            a.max_rows
        );
    }
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
                "n_samples": n, "n_features": d, "n_components": k,
                "scored_rows": {
                    "n": scored, "max_rows": a.max_rows,
                    "rule": if scored < n { "a seeded sample stratified by label; whitening and FastICA fitted on all rows" } else { "all rows" },
                },
                "fastica": ica, "rows": rows_json(&rows, &job),
                "figures": figures,
            }),
        )?;
        println!("json: {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scored_rows_keep_each_class_share_in_row_order() {
        // 900 rows of class 0, 90 of class 7, 10 of class 3.
        let labels: Vec<i64> = (0..1000)
            .map(|i| match i % 100 {
                0..=89 => 0,
                90..=98 => 7,
                _ => 3,
            })
            .collect();
        assert_eq!(scored_rows(&labels, 1000, 1).unwrap(), None);
        let keep = scored_rows(&labels, 100, 1).unwrap().unwrap();
        let count = |c| keep.iter().filter(|&&r| labels[r] == c).count();
        assert_eq!((count(0), count(7), count(3)), (90, 9, 1));
        assert!(keep.windows(2).all(|w| w[0] < w[1]), "sorted, distinct");
        assert_eq!(keep, scored_rows(&labels, 100, 1).unwrap().unwrap());
        assert_ne!(keep, scored_rows(&labels, 100, 2).unwrap().unwrap());
        // A class too small for its share still keeps one row.
        let keep = scored_rows(&labels, 20, 1).unwrap().unwrap();
        assert_eq!(keep.iter().filter(|&&r| labels[r] == 3).count(), 1);
        assert!(scored_rows(&labels, 0, 1).is_err());
    }
}
