//! Moments and whitening fits, unmix against nalgebra (covariance by a dense X'X product, then
//! `SymmetricEigen`) in the same run; the eigen-decomposition also on the CLI's kernel (faer). Run: `cargo bench -p unmix-benches --bench whiten`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harness::simd::CliKernel;
use nalgebra::{DMatrix, SymmetricEigen};
use std::hint::black_box;
use unmix::ica::Kernel;
use unmix::moments::MomentsBuf;
use unmix::whiten::{self, WhitenOptions, WhitenerBuf};
use unmix_benches::mixed_data;

fn unmix_fit(x: &[f64], d: usize) -> f64 {
    let mut mb = vec![0.0; MomentsBuf::buffer_len(d)];
    let mut m = MomentsBuf::new(d, &mut mb).unwrap();
    m.accumulate(x).unwrap();
    let mut storage = vec![0.0; whiten::storage_len(d, d)];
    let mut ws = vec![0.0; whiten::workspace_len(d, d)];
    let mut w = WhitenerBuf::new(d, d, &mut storage).unwrap();
    w.fit(m.as_ref(), &WhitenOptions::DEFAULT, &mut ws).unwrap();
    w.view().whitening()[0]
}

fn nalgebra_fit(x: &[f64], n: usize, d: usize) -> f64 {
    let m = DMatrix::from_row_slice(n, d, x);
    let mean = m.row_mean();
    let centred = DMatrix::from_fn(n, d, |r, c| m[(r, c)] - mean[c]);
    let cov = centred.transpose() * &centred / n as f64;
    let eig = SymmetricEigen::new(cov);
    let w = eig.eigenvectors.transpose();
    w[(0, 0)] / eig.eigenvalues[0].sqrt()
}

fn fit(c: &mut Criterion) {
    let mut group = c.benchmark_group("whiten_fit");
    for (n, d) in [(100_000, 8), (20_000, 64)] {
        let x = mixed_data(n, d, 1);
        let id = format!("n{n}_d{d}");
        group.bench_with_input(BenchmarkId::new("unmix", &id), &x, |b, x| {
            b.iter(|| unmix_fit(black_box(x), d))
        });
        group.bench_with_input(BenchmarkId::new("nalgebra", &id), &x, |b, x| {
            b.iter(|| nalgebra_fit(black_box(x), n, d))
        });
    }
    group.finish();
}

fn eigen(c: &mut Criterion) {
    let mut group = c.benchmark_group("symmetric_eigen");
    for d in [8, 64, 256] {
        let x = mixed_data(4 * d, d, 2);
        let m = DMatrix::from_row_slice(4 * d, d, &x);
        let cov = m.transpose() * &m;
        let flat: Vec<f64> = cov.as_slice().to_vec(); // symmetric: row- and column-major agree
        group.bench_with_input(BenchmarkId::new("unmix", d), &flat, |b, a| {
            b.iter(|| {
                let (mut v, mut values, mut work) = (a.clone(), vec![0.0; d], vec![0.0; d]);
                unmix::linalg::symmetric_eigen(&mut v, d, &mut values, &mut work).unwrap();
                values[0]
            })
        });
        // The CLI's kernel: faer's divide and conquer from `EIGEN_MIN_K`, the core's below.
        group.bench_with_input(BenchmarkId::new("cli_faer", d), &flat, |b, a| {
            b.iter(|| {
                let (mut v, mut values, mut work) = (a.clone(), vec![0.0; d], vec![0.0; d]);
                CliKernel::Gemm
                    .symmetric_eigen(&mut v, d, &mut values, &mut work)
                    .unwrap();
                values[0]
            })
        });
        group.bench_with_input(BenchmarkId::new("nalgebra", d), &cov, |b, a| {
            b.iter(|| SymmetricEigen::new(a.clone()).eigenvalues[0])
        });
    }
    group.finish();
}

criterion_group!(benches, fit, eigen);
criterion_main!(benches);
