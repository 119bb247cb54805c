//! Section e: the cocktail party (scikit-learn's FastICA example): a sine, a square wave and a
//! sawtooth, mixed by a fixed 3 x 3 matrix with a little Gaussian noise, recovered by FastICA.

use super::microscopy::mcc_against;
use crate::fastica::{self, FitJob};
use crate::io::Matrix;
use anyhow::Result;
use unmix::ica::{FastIcaOptions, WInit};
use unmix::random::Normals;

/// The mixing matrix (scikit-learn's example).
pub const MIXING: [[f64; 3]; 3] = [[1.0, 1.0, 1.0], [0.5, 2.0, 1.0], [1.5, 1.0, 2.0]];

/// The result of section e.
pub struct Cocktail {
    /// Time of each sample.
    pub time: Vec<f64>,
    /// True sources, n x 3 (standardised).
    pub sources: Matrix<f64>,
    /// Mixtures, n x 3.
    pub mixed: Matrix<f64>,
    /// Recovered sources reordered and signed to match the true ones, n x 3.
    pub recovered: Matrix<f64>,
    /// MCC of the recovered sources.
    pub mcc: f64,
    /// MCC of the mixtures themselves (the baseline).
    pub mcc_mixed: f64,
    /// Amari index of the fitted unmixing against [`MIXING`].
    pub amari: f64,
    /// FastICA iterations.
    pub n_iter: usize,
}

/// Runs section e with `n` samples, noise and FastICA start from `seed`.
pub fn run(n: usize, seed: u64, threads: usize) -> Result<Cocktail> {
    let mut g = Normals::new(seed);
    let time: Vec<f64> = (0..n).map(|i| 8.0 * i as f64 / (n - 1) as f64).collect();
    let mut s = Vec::with_capacity(n * 3);
    for &t in &time {
        let saw = 2.0 * (t - t.floor()) - 1.0; // scipy.signal.sawtooth(2 pi t)
        for v in [(2.0 * t).sin(), (3.0 * t).sin().signum(), saw] {
            s.push(v + 0.2 * g.next_normal());
        }
    }
    // Standardise each source, as scikit-learn's example does.
    for j in 0..3 {
        let mean = (0..n).map(|r| s[r * 3 + j]).sum::<f64>() / n as f64;
        let sd = ((0..n).map(|r| (s[r * 3 + j] - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        (0..n).for_each(|r| s[r * 3 + j] = (s[r * 3 + j] - mean) / sd);
    }
    let x: Vec<f64> = (0..n)
        .flat_map(|r| {
            let row = &s[r * 3..r * 3 + 3];
            MIXING.map(|a| a[0] * row[0] + a[1] * row[1] + a[2] * row[2])
        })
        .collect();
    let sources = Matrix::new(n, 3, s)?;
    let mixed = Matrix::new(n, 3, x)?;
    let progress = |_: usize, _: f64| {};
    let fitted = fastica::fit(
        &mixed,
        &FitJob {
            n_components: Some(3),
            options: FastIcaOptions::DEFAULT,
            init: WInit::Seed(seed),
            threads,
            progress: &progress,
            converted_from: None,
        },
    )?;
    let (mcc, pairs) = mcc_against(&sources, &fitted.sources)?;
    let (mcc_mixed, _) = mcc_against(&sources, &mixed)?;
    // Reorder and sign the recovered sources to their matches, for the figure.
    let est = &fitted.sources;
    let mut recovered = vec![0.0; n * 3];
    for (j, &p) in pairs.iter().enumerate() {
        let dot: f64 = (0..n)
            .map(|r| est.data[r * 3 + p] * sources.data[r * 3 + j])
            .sum();
        let sign = if dot < 0.0 { -1.0 } else { 1.0 };
        (0..n).for_each(|r| recovered[r * 3 + j] = sign * est.data[r * 3 + p]);
    }
    let components: Vec<f64> = fitted.model.components.concat();
    let a: Vec<f64> = MIXING.iter().flatten().copied().collect();
    let amari = unmix::metrics::amari_index(&components, &a, 3, 3, &mut [0.0; 9])?;
    Ok(Cocktail {
        time,
        sources,
        mixed,
        recovered: Matrix::new(n, 3, recovered)?,
        mcc,
        mcc_mixed,
        amari,
        n_iter: fitted.info.n_iter,
    })
}
