//! Section a: microscopy-style synthetic data, the shape of the paper's Tables 3 and 4.
//!
//! Independent non-Gaussian factors: a binary "perturbation" label shifts the first two, a
//! "batch" id shifts the next two (technical variation), the rest are nuisance. A near-isometric
//! nonlinear map `f(s) = Q (s + distortion * tanh(M s)) + noise` (Q: D x k with orthonormal
//! columns, M: k x k Gaussian / sqrt(k)) turns them into D-dimensional "embeddings".

use crate::io::Matrix;
use anyhow::{Result, bail};
use unmix::metrics::{correlation::Method, mcc};
use unmix::random::Normals;

/// Factors shifted by the perturbation label.
pub const LABEL_FACTORS: usize = 2;
/// Factors shifted by the batch.
pub const BATCH_FACTORS: usize = 2;
/// All factors (the rest are nuisance).
pub const N_FACTORS: usize = 8;
/// Batches.
pub const N_BATCHES: usize = 6;

/// The synthetic data set.
pub struct Synthetic {
    /// The true factors, n x [`N_FACTORS`].
    pub factors: Matrix<f64>,
    /// The embeddings, n x D.
    pub embeddings: Matrix<f64>,
    /// The perturbation label (0 / 1).
    pub label: Vec<i64>,
    /// The batch id.
    pub batch: Vec<i64>,
}

fn uniform(g: &mut Normals) -> f64 {
    g.below(1 << 53) as f64 / (1u64 << 53) as f64
}

/// Standard non-Gaussian noise: Laplace-like (a product of normals) on even factors, uniform on
/// odd ones, each scaled to unit variance.
fn noise(g: &mut Normals, j: usize) -> f64 {
    if j.is_multiple_of(2) {
        g.next_normal() * g.next_normal()
    } else {
        (uniform(g) * 2.0 - 1.0) * 3f64.sqrt()
    }
}

/// A D x k matrix with orthonormal columns (Gram-Schmidt on Gaussian columns), row-major.
pub fn orthonormal_columns(g: &mut Normals, d: usize, k: usize) -> Vec<f64> {
    let mut cols: Vec<Vec<f64>> = Vec::with_capacity(k);
    while cols.len() < k {
        let mut v: Vec<f64> = (0..d).map(|_| g.next_normal()).collect();
        for c in &cols {
            let dot: f64 = v.iter().zip(c).map(|(a, b)| a * b).sum();
            v.iter_mut().zip(c).for_each(|(a, b)| *a -= dot * b);
        }
        let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
        if norm > 1e-8 {
            cols.push(v.iter().map(|a| a / norm).collect());
        }
    }
    (0..d)
        .flat_map(|i| cols.iter().map(move |c| c[i]).collect::<Vec<_>>())
        .collect()
}

/// A near-isometric map of `k` factors into `d` dimensions, drawn from `g`.
pub struct NearIsometry {
    q: Vec<f64>,
    m: Vec<f64>,
    d: usize,
    k: usize,
    distortion: f64,
}

impl NearIsometry {
    /// Draws Q and M.
    pub fn new(g: &mut Normals, d: usize, k: usize, distortion: f64) -> Self {
        let q = orthonormal_columns(g, d, k);
        let scale = 1.0 / (k as f64).sqrt();
        let m = (0..k * k).map(|_| g.next_normal() * scale).collect();
        Self {
            q,
            m,
            d,
            k,
            distortion,
        }
    }

    /// `Q (s + distortion * tanh(M s))` for every row of `s` (n x k), plus isotropic noise of
    /// standard deviation `noise_sd` from `g`.
    pub fn apply(&self, s: &Matrix<f64>, noise_sd: f64, g: &mut Normals) -> Matrix<f64> {
        let (d, k) = (self.d, self.k);
        let mut out = Vec::with_capacity(s.rows * d);
        let mut u = vec![0.0; k];
        for r in 0..s.rows {
            let row = s.row(r);
            for (i, ui) in u.iter_mut().enumerate() {
                let ms: f64 = (0..k).map(|j| self.m[i * k + j] * row[j]).sum();
                *ui = row[i] + self.distortion * ms.tanh();
            }
            for i in 0..d {
                let v: f64 = (0..k).map(|j| self.q[i * k + j] * u[j]).sum();
                out.push(v + noise_sd * g.next_normal());
            }
        }
        Matrix {
            rows: s.rows,
            cols: d,
            data: out.into(),
        }
    }
}

/// The factors: label shift of 1.5 on the label factors, batch offsets N(0, 1.5^2) on the batch
/// factors, then every factor standardised to mean 0 and variance 1.
pub fn factors(n: usize, seed: u64) -> (Matrix<f64>, Vec<i64>, Vec<i64>) {
    let mut g = Normals::new(seed);
    let offsets: Vec<f64> = (0..N_BATCHES * BATCH_FACTORS)
        .map(|_| 1.5 * g.next_normal())
        .collect();
    let mut label = Vec::with_capacity(n);
    let mut batch = Vec::with_capacity(n);
    let mut s = Vec::with_capacity(n * N_FACTORS);
    for _ in 0..n {
        let y = g.below(2) as i64;
        let b = g.below(N_BATCHES as u64) as usize;
        for j in 0..N_FACTORS {
            let mut v = noise(&mut g, j);
            if j < LABEL_FACTORS {
                v += 1.5 * (2.0 * y as f64 - 1.0);
            } else if j < LABEL_FACTORS + BATCH_FACTORS {
                v += offsets[b * BATCH_FACTORS + j - LABEL_FACTORS];
            }
            s.push(v);
        }
        label.push(y);
        batch.push(b as i64);
    }
    for j in 0..N_FACTORS {
        let mean = (0..n).map(|r| s[r * N_FACTORS + j]).sum::<f64>() / n as f64;
        let var = (0..n)
            .map(|r| (s[r * N_FACTORS + j] - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        let sd = var.sqrt();
        for r in 0..n {
            s[r * N_FACTORS + j] = (s[r * N_FACTORS + j] - mean) / sd;
        }
    }
    let m = Matrix {
        rows: n,
        cols: N_FACTORS,
        data: s.into(),
    };
    (m, label, batch)
}

/// The data set of section a: factors from `seed`, the map from `seed + 1`.
pub fn synthetic(n: usize, d: usize, distortion: f64, seed: u64) -> Result<Synthetic> {
    if d < N_FACTORS {
        bail!("--dim must be at least {N_FACTORS} (the number of factors), got {d}");
    }
    if n < 100 {
        bail!("--n-samples must be at least 100, got {n}");
    }
    if !(distortion.is_finite() && distortion >= 0.0) {
        bail!("--distortion must be a finite number >= 0, got {distortion}");
    }
    let (s, label, batch) = factors(n, seed);
    let mut g = Normals::new(seed.wrapping_add(1));
    let map = NearIsometry::new(&mut g, d, N_FACTORS, distortion);
    let embeddings = map.apply(&s, 0.05, &mut g);
    Ok(Synthetic {
        factors: s,
        embeddings,
        label,
        batch,
    })
}

/// Pearson MCC of estimated columns against the true factors (optimal one-to-one matching),
/// and the matched column of each factor.
pub fn mcc_against(truth: &Matrix<f64>, est: &Matrix<f64>) -> Result<(f64, Vec<usize>)> {
    let (n, k, e) = (truth.rows, truth.cols, est.cols);
    let (lf, lu) = mcc::workspace_len(n, k, e, Method::Pearson);
    let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; k]);
    let score = mcc::mcc(
        &truth.data,
        k,
        &est.data,
        e,
        Method::Pearson,
        &mut pairs,
        &mut wf,
        &mut wu,
    )?;
    Ok((score, pairs))
}
