//! The `f32-sums` path on the host, against `f64` computed here (two-pass, plain loops): the
//! covariance, the whitening and the recovery of known sources. Run with
//! `cargo test -p unmix --features f32-sums --test f32_sums` (CI does); without the feature
//! there is nothing to test here (the default path has its own tests and fixtures).
//! `firmware/check.sh` compares the two paths' fits with each other, on QEMU and the host.
#![cfg(feature = "f32-sums")]

use unmix::ica::{FastIca, FastIcaOptions, WInit, fit_scratch_len, fit_workspace_len};
use unmix::moments::Moments;
use unmix::whiten::{WhitenOptions, WhitenWorkspace, Whitener};

const D: usize = 4;
const N: usize = 20_000;
/// Feature offsets, far above the spread (about 1): the case blockwise centring is for.
const OFFSET: [f64; D] = [1.0e3, -2.5e3, 4.0e2, 7.5e3];
const MIXING: [[f64; D]; D] = [
    [1.0, 0.5, -0.3, 0.2],
    [0.4, 1.2, 0.6, -0.5],
    [-0.7, 0.3, 1.1, 0.4],
    [0.2, -0.6, 0.5, 0.9],
];

/// `N` samples `x = A s + offset` (f32) and their sources `s` (f64): uniform, Laplace, square,
/// and a skewed exponential, from a xorshift generator.
fn data() -> (Vec<f32>, Vec<[f64; D]>) {
    let mut state = 0x2545_f491u32;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        ((state >> 8) + 1) as f64 / 16_777_216.0
    };
    let (mut x, mut sources) = (Vec::with_capacity(N * D), Vec::with_capacity(N));
    for t in 0..N {
        let u = (uniform() - 0.5) * 12f64.sqrt();
        let sign = if uniform() < 0.5 { -1.0 } else { 1.0 };
        let laplace = sign * -uniform().ln() / 2f64.sqrt();
        let square = if (t / 23) % 2 == 0 { 1.0 } else { -1.0 };
        let expo = -uniform().ln() - 1.0;
        let s = [u, laplace, square, expo];
        for (a, o) in MIXING.iter().zip(OFFSET) {
            x.push((a.iter().zip(&s).map(|(m, v)| m * v).sum::<f64>() + o) as f32);
        }
        sources.push(s);
    }
    (x, sources)
}

/// Two-pass f64 mean and covariance (ddof 0) of the f32 rows.
fn reference_covariance(x: &[f32]) -> ([f64; D], [[f64; D]; D]) {
    let n = (x.len() / D) as f64;
    let mut mean = [0.0; D];
    for row in x.chunks_exact(D) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += f64::from(*v) / n;
        }
    }
    let mut cov = [[0.0; D]; D];
    for row in x.chunks_exact(D) {
        for i in 0..D {
            for j in 0..D {
                cov[i][j] += (f64::from(row[i]) - mean[i]) * (f64::from(row[j]) - mean[j]) / n;
            }
        }
    }
    (mean, cov)
}

fn frobenius(m: &[[f64; D]; D]) -> f64 {
    m.iter().flatten().map(|v| v * v).sum::<f64>().sqrt()
}

/// The moments and the whitener in f32 sums agree with f64 computed here.
#[test]
fn covariance_and_whitening_against_f64() {
    let (x, _) = data();
    let mut moments = Moments::<D>::new();
    // One sample at a time, as firmware streams them.
    for row in x.chunks_exact(D) {
        moments.accumulate(row).unwrap();
    }
    let (mean, cov) = reference_covariance(&x);
    let view = moments.as_ref();
    let spread = (0..D).map(|i| cov[i][i].sqrt()).fold(0.0, f64::max);
    let mean_error = (0..D)
        .map(|i| (f64::from(view.mean()[i]) - mean[i]).abs())
        .fold(0.0, f64::max);
    // The mean is off by f32 rounding of the offsets (half an ulp of 7.5e3 is 2.4e-4 absolute);
    // relative to the spread that is what f32 data can give.
    eprintln!("mean error / spread: {:e}", mean_error / spread);
    assert!(mean_error / spread < 5e-4, "mean error {mean_error:e}");
    let mut diff = [[0.0; D]; D];
    for i in 0..D {
        for j in 0..D {
            diff[i][j] = f64::from(view.covariance(i, j, 0).unwrap()) - cov[i][j];
        }
    }
    let relative = frobenius(&diff) / frobenius(&cov);
    // Blockwise centring keeps the error relative to the spread, not to the offsets: a naive f32
    // sum of squares at offsets of 1e3 would be off by far more than 1.
    eprintln!("covariance relative error: {relative:e}");
    assert!(relative < 1e-5, "covariance relative error {relative:e}");

    // Whitening: the whitened samples have identity covariance, computed in f64 here.
    let mut w = Whitener::<f32, D, D>::new();
    w.fit(view, &WhitenOptions::DEFAULT, &mut WhitenWorkspace::new())
        .unwrap();
    let mut z = vec![0.0f32; x.len()];
    w.view().transform_rows(&x, &mut z).unwrap();
    let (_, zc) = reference_covariance(&z);
    let mut off = [[0.0; D]; D];
    for i in 0..D {
        for j in 0..D {
            off[i][j] = zc[i][j] - if i == j { 1.0 } else { 0.0 };
        }
    }
    let error = frobenius(&off);
    eprintln!("whitened covariance - I: {error:e}");
    assert!(error < 5e-4, "whitened covariance - I: {error:e}");
}

/// FastICA in f32 sums recovers the sources: |correlation| of each matched pair, in f64 here.
#[test]
fn fastica_recovers_the_sources() {
    let (x, sources) = data();
    let mut model = FastIca::<f32, D, D>::new();
    let mut scratch = vec![0.0f32; fit_scratch_len(N, D, D)];
    let mut ws = vec![0.0f32; fit_workspace_len(D, D)];
    let info = model
        .fit(
            &x,
            &FastIcaOptions::DEFAULT,
            WInit::Seed(3),
            &mut scratch,
            &mut ws,
        )
        .unwrap();
    assert!(info.converged, "{info:?}");
    let mut y = vec![0.0f32; x.len()];
    model.view().transform_rows(&x, &mut y).unwrap();
    // |corr| between each recovered source and each true one.
    let mut best = [0.0f64; D];
    for (i, b) in best.iter_mut().enumerate() {
        for j in 0..D {
            let a: Vec<f64> = y.chunks_exact(D).map(|r| f64::from(r[i])).collect();
            let s: Vec<f64> = sources.iter().map(|r| r[j]).collect();
            let (ma, ms) = (
                a.iter().sum::<f64>() / N as f64,
                s.iter().sum::<f64>() / N as f64,
            );
            let (mut sab, mut saa, mut sss) = (0.0, 0.0, 0.0);
            for (p, q) in a.iter().zip(&s) {
                sab += (p - ma) * (q - ms);
                saa += (p - ma) * (p - ma);
                sss += (q - ms) * (q - ms);
            }
            *b = b.max((sab / (saa * sss).sqrt()).abs());
        }
    }
    // Four independent non-Gaussian sources at N = 20 000: each is found to |corr| > 0.99 (the
    // f64 path finds the same); f32 rounding costs far less than that margin.
    eprintln!("best |corr| per source: {best:?}");
    for (i, b) in best.iter().enumerate() {
        assert!(*b > 0.99, "source {i}: best |corr| {b}");
    }
}
