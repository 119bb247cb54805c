//! Sections c (alignment of two "training runs") and d (InfoMEC), on the factors of section a.
//! The measures are issue 8's: `unmix::metrics::alignment`, `unmix::metrics::infomec` and the
//! harness's InfoE (`crate::identifiability::infoe`).

use super::microscopy::{self, NearIsometry};
use crate::identifiability::infoe;
use crate::io::Matrix;
use anyhow::{Context, Result};
use serde::Serialize;
use unmix::metrics::alignment::{self, AlignmentOptions};
use unmix::metrics::infomec;
use unmix::random::Normals;

/// The four alignment errors (normalised by the reference's diameter) and the ICA efficiency.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct AlignmentRow {
    /// Distortion of both maps.
    pub distortion: f64,
    /// Best signed permutation.
    pub permutation: f64,
    /// Unsupervised: ICA on each, matched components.
    pub ica: f64,
    /// Orthogonal Procrustes plus translation.
    pub rigid: f64,
    /// Least-squares affine map.
    pub linear: f64,
    /// `(perm - ica) / (perm - rigid)` in percent (`None` when perm == rigid).
    pub efficiency_percent: Option<f64>,
    /// The paper's ordering permutation >= ICA >= rigid >= linear.
    pub ordered: bool,
}

/// Two "training runs": the same factors through two independently drawn near-isometric maps
/// (seeds `seed + 1` and `seed + 2`), aligned with FastICA started from `seed`.
pub fn align_runs(
    factors: &Matrix<f64>,
    d: usize,
    distortion: f64,
    seed: u64,
) -> Result<AlignmentRow> {
    let k = factors.cols;
    let run = |s: u64| {
        let mut g = Normals::new(s);
        NearIsometry::new(&mut g, d, k, distortion).apply(factors, 0.05, &mut g)
    };
    let (a, b) = (run(seed.wrapping_add(1)), run(seed.wrapping_add(2)));
    let (lf, lu, lt) = alignment::workspace_len(a.rows, d, d);
    let opts = AlignmentOptions {
        random_state: seed,
        ..AlignmentOptions::DEFAULT
    };
    let al = alignment::alignment(
        &a.data,
        d,
        &b.data,
        d,
        &opts,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
        &mut vec![0.0; lt],
    )
    .with_context(|| format!("aligning two runs at distortion {distortion}"))?;
    let e = al.normalized;
    Ok(AlignmentRow {
        distortion,
        permutation: e.permutation,
        ica: e.ica,
        rigid: e.rigid,
        linear: e.linear,
        efficiency_percent: al.efficiency.is_finite().then_some(al.efficiency),
        ordered: e.permutation >= e.ica && e.ica >= e.rigid && e.rigid >= e.linear,
    })
}

/// The distortions of the sweep: a fixed grid plus the demo's own value.
pub fn sweep_grid(distortion: f64) -> Vec<f64> {
    let mut grid = vec![0.0, 0.1, 0.2, 0.4, 0.8, 1.6];
    if !grid.contains(&distortion) {
        grid.push(distortion);
        grid.sort_by(f64::total_cmp);
    }
    grid
}

/// InfoM, InfoE, InfoC of one representation against the discrete factors.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct InfoMecRow {
    /// Modularity.
    pub infom: Option<f64>,
    /// Explicitness.
    pub infoe: f64,
    /// Compactness.
    pub infoc: Option<f64>,
    /// Active latents.
    pub n_active: usize,
}

/// InfoMEC of `latents` against the discrete `factors` (`n x f`, row-major), with the paper's
/// k = 10 neighbours.
pub fn infomec_of(factors: &[i64], f: usize, latents: &Matrix<f64>) -> Result<InfoMecRow> {
    let (n, l) = (latents.rows, latents.cols);
    let (lf, lu) = infomec::workspace_len(n);
    let mut nmi = vec![0.0; f * l];
    let mut active = vec![false; l];
    let scores = infomec::infomec(
        factors,
        f,
        &latents.data,
        l,
        infomec::DEFAULT_NEIGHBORS,
        &mut nmi,
        &mut active,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
    )?;
    Ok(InfoMecRow {
        infom: scores.infom,
        infoe: infoe(factors, f, latents)?,
        infoc: scores.infoc,
        n_active: scores.n_active,
    })
}

/// The discrete factors of section a: the perturbation label and the batch, `n x 2`.
pub fn discrete_factors(label: &[i64], batch: &[i64]) -> Vec<i64> {
    label
        .iter()
        .zip(batch)
        .flat_map(|(y, b)| [*y, *b])
        .collect()
}

/// Re-exported for the demo: the number of factors of section a.
pub const N_FACTORS: usize = microscopy::N_FACTORS;
