//! The subcommands: each module holds one command's arguments (clap) and its body, so adding a
//! command is one module here plus one variant of `main.rs`'s `Command`.

pub mod apply;
pub mod fit;
pub mod metric;
pub mod whiten;

use crate::io::{self, Table};
use anyhow::{Result, bail};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::path::Path;

/// A clap parser for a core option enum, through its one table of names (`NAMES`, `FromStr`).
pub fn named<T>(names: &'static [&'static str]) -> impl TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = unmix::names::UnknownName> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

/// `--threads` may ask for at most this many threads per available core: more only adds
/// start-up cost (the work is split into fixed chunks, so the result never depends on it).
pub const THREADS_PER_CORE: usize = 4;

/// The worker threads to use: `requested`, or every available core; capped at
/// [`THREADS_PER_CORE`] times the available cores, with a note on stderr.
pub fn threads(requested: Option<usize>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cap = cores.saturating_mul(THREADS_PER_CORE);
    match requested {
        None => cores,
        Some(t) if t > cap => {
            eprintln!(
                "note: --threads {t} is more than {THREADS_PER_CORE} x the {cores} available \
                 cores; using {cap}"
            );
            cap
        }
        Some(t) => t.max(1),
    }
}

/// Reads the samples and says on stderr what was read (the file's own type, e.g. int64).
pub fn read_input(path: &Path) -> Result<Table> {
    Ok(read_input_described(path)?.0)
}

/// [`read_input`], with the type stored in the file (`"float64"`, `"int32"`, `"csv (read as
/// float64)"`...).
pub fn read_input_described(path: &Path) -> Result<(Table, String)> {
    let (table, dtype) = io::read_table_described(path)?;
    let (n, d) = table.shape();
    eprintln!("read {n} x {d} ({dtype}) from {}", path.display());
    Ok((table, dtype))
}

/// Fails unless `path` ends in `.npy`.
pub fn require_npy(flag: &str, path: &Path) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext != "npy" {
        bail!("{flag} must be a .npy path, got {}", path.display());
    }
    Ok(())
}

/// Working memory one command may ask for before it is refused (the whitening's D x D
/// covariance and eigenvectors, the per-thread statistics, the whitened copy and the outputs).
pub const MAX_WORK_BYTES: u64 = 4 << 30;

/// Checks the dimensions of a whitening or FastICA fit of `n x d` data to `k` components against
/// the data and [`MAX_WORK_BYTES`] before anything is allocated from them.
pub fn check_fit_size(n: usize, d: usize, k: usize, threads: usize, whitens: bool) -> Result<()> {
    if n < 2 {
        bail!("too few samples: {n} given, at least 2 needed");
    }
    if k == 0 || k > d {
        bail!("invalid number of components {k} for {d} features (need 1 <= k <= {d})");
    }
    if whitens && k > n - 1 {
        bail!(
            "too few samples: {n} centred samples have rank at most {}, so they cannot be \
             whitened to {k} components (use --n-components {} or more samples)",
            n - 1,
            n - 1
        );
    }
    let (n, d, k, t) = (n as u64, d as u64, k as u64, threads.max(1) as u64);
    // f64 values: per-thread moments (d + d^2), eigen workspace (d^2 + 2d + 2k^2), the model
    // (d + 3kd + k^2 + k), the whitened rows a fit keeps (n x k, at most a quarter of the input
    // plus 50 MB: `fastica::white_chunks_to_store`) and the output's blocks (a chunk per thread).
    let values = (|| {
        let dd = d.checked_mul(d)?;
        let per_thread = dd.checked_add(d)?.checked_mul(t.checked_add(1)?)?;
        let eigen = dd
            .checked_add(2 * d)?
            .checked_add(k.checked_mul(k)?.checked_mul(2)?)?;
        let model = k
            .checked_mul(d)?
            .checked_mul(3)?
            .checked_add(d + k * k + k)?;
        let kept = n
            .checked_mul(k)?
            .min(n.checked_mul(d)? / 4 + crate::fastica::MEMORY_SLACK as u64 / 8);
        let copies =
            kept.checked_add((unmix::ica::CHUNK as u64).checked_mul(k)?.checked_mul(t)?)?;
        per_thread
            .checked_add(eigen)?
            .checked_add(model)?
            .checked_add(copies)
    })();
    match values.and_then(|v| v.checked_mul(8)) {
        Some(bytes) if bytes <= MAX_WORK_BYTES => Ok(()),
        bytes => bail!(
            "{d} features and {k} components need {} of working memory, more than the limit of \
             {} GiB (the D x D covariance grows with the square of the features)",
            bytes.map_or("more than 2^64 bytes".into(), |b| format!(
                "{:.1} GiB",
                b as f64 / (1u64 << 30) as f64
            )),
            MAX_WORK_BYTES >> 30
        ),
    }
}

/// Replaces "rank-deficient: effective rank 0" by what it means when the data are not constant:
/// their deviations are so small that their squares underflow.
pub fn explain_rank_zero<T: unmix::Float>(
    e: anyhow::Error,
    x: &crate::io::Matrix<T>,
) -> anyhow::Error {
    let rank_zero = matches!(
        e.root_cause().downcast_ref::<unmix::Error>(),
        Some(unmix::Error::RankDeficient { rank: 0, .. })
    );
    if !rank_zero || x.rows == 0 {
        return e;
    }
    let varies = (0..x.cols).any(|c| (1..x.rows).any(|r| x.data[r * x.cols + c] != x.data[c]));
    if varies {
        anyhow::anyhow!(
            "the data vary, but by so little that their covariance underflows to zero (every \
             eigenvalue is 0); rescale the data"
        )
    } else {
        e.context("every column is constant")
    }
}
