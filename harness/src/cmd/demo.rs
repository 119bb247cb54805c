//! `unmix demo`: the whole recipe on the bundled digits data.

/// Arguments of `unmix demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Worker threads (default: all cores; at most 4 per core). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs `unmix demo`.
pub fn run(a: &Args) -> anyhow::Result<serde_json::Value> {
    crate::demo::run(super::threads(a.threads))
}
