//! The two products of a parallel FastICA pass over one block of rows (`Y = W Z`, `G += g(Y) Z'`,
//! feature-major `k x rows`): the core's portable kernel, the CLI's GEMM kernel (the `gemm` crate)
//! and nalgebra, in one run.
//!
//! `cargo bench -p unmix-benches --bench kernels -- --warm-up-time 1 --measurement-time 2`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use harness::simd::CliKernel;
use std::hint::black_box;
use unmix::ica::{Kernel, Portable};
use unmix::random::Normals;

fn products<K: Kernel>(
    kernel: K,
    w: &[f64],
    z: &[f64],
    y: &mut [f64],
    g: &mut [f64],
    k: usize,
    rows: usize,
) {
    kernel.unmix_block(w, k, z, y, rows, rows);
    kernel.gram_block(y, z, k, rows, rows, g);
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("pass_products");
    for (k, rows) in [(8usize, 64usize), (64, 256), (256, 256)] {
        let mut normals = Normals::new(1);
        let mut fill =
            |len: usize| -> Vec<f64> { (0..len).map(|_| normals.next_normal()).collect() };
        let (w, z) = (fill(k * k), fill(k * rows));
        let (mut y, mut g) = (vec![0.0; k * rows], vec![0.0; k * k]);
        group.throughput(Throughput::Elements((4 * k * k * rows) as u64)); // flops
        let id = |name: &str| BenchmarkId::new(name, format!("k{k}_rows{rows}"));
        group.bench_function(id("portable"), |b| {
            b.iter(|| products(Portable, black_box(&w), &z, &mut y, &mut g, k, rows))
        });
        group.bench_function(id("portable_avx2"), |b| {
            b.iter(|| {
                harness::simd::fastest(
                    #[inline(always)]
                    || products(Portable, black_box(&w), &z, &mut y, &mut g, k, rows),
                )
            })
        });
        group.bench_function(id("gemm"), |b| {
            b.iter(|| products(CliKernel::Gemm, black_box(&w), &z, &mut y, &mut g, k, rows))
        });
        let (wm, zm) = (
            nalgebra::DMatrix::from_row_slice(k, k, &w),
            nalgebra::DMatrix::from_row_slice(k, rows, &z),
        );
        let mut gm = nalgebra::DMatrix::<f64>::zeros(k, k);
        group.bench_function(id("nalgebra"), |b| {
            b.iter(|| {
                let ym = black_box(&wm) * &zm;
                gm.gemm(1.0, &ym, &zm.transpose(), 1.0);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
