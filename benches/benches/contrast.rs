//! FastICA's contrasts over one 64-value block (the unit a pass evaluates), against `libm::tanh`
//! in a plain loop: the portable build, and the same code compiled for AVX2 through the CLI's
//! run-time dispatch (`harness::simd`). Time per block / 64 = time per value.
//! Also the CLI's block pass contrast (`harness::blocks::BlockFloat::contrast`: fused
//! multiply-adds where the CPU has them, 16 or 32 values a step, derivatives summed per
//! component) over a 256 x 8 block in f64 and f32: time per block / 2048 = time per value.
//! Run: `cargo bench -p unmix-benches --bench contrast`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use harness::blocks::BlockFloat;
use std::hint::black_box;
use unmix::ica::contrast::{Contrast, ContrastKind};

const BLOCK: usize = 64;

fn contrasts(c: &mut Criterion) {
    let input: Vec<f64> = (0..BLOCK).map(|i| (i as f64 - 32.0) * 0.1).collect();
    let (mut y, mut gp) = (vec![0.0; BLOCK], vec![0.0; BLOCK]);
    let mut group = c.benchmark_group("contrast_block64");
    group.throughput(Throughput::Elements(BLOCK as u64));
    group.bench_function("libm_tanh", |b| {
        b.iter(|| {
            for (o, v) in y.iter_mut().zip(black_box(&input)) {
                *o = libm::tanh(*v);
            }
            y[0]
        })
    });
    for (name, contrast) in [
        ("logcosh", ContrastKind::default()),
        ("exp", ContrastKind::Exp),
        ("cube", ContrastKind::Cube),
    ] {
        group.bench_function(BenchmarkId::new("portable", name), |b| {
            b.iter(|| {
                y.copy_from_slice(black_box(&input));
                contrast.eval_block(&mut y, &mut gp);
                y[0] + gp[0]
            })
        });
        group.bench_function(BenchmarkId::new("cli_dispatch", name), |b| {
            b.iter(|| {
                y.copy_from_slice(black_box(&input));
                harness::simd::fastest(
                    #[inline(always)]
                    || contrast.eval_block(&mut y, &mut gp),
                );
                y[0] + gp[0]
            })
        });
    }
    group.finish();

    // The block pass's contrast on a 256-row block of 8 components (the 1e6 x 8 pass's unit).
    const ROWS: usize = 256;
    const K: usize = 8;
    let rows: Vec<f64> = (0..ROWS * K)
        .map(|i| ((i * 7919 % 1000) as f64 / 250.0) - 2.0)
        .collect();
    let rows32: Vec<f32> = rows.iter().map(|&v| v as f32).collect();
    let mut group = c.benchmark_group("block_pass_contrast_256x8");
    group.throughput(Throughput::Elements((ROWS * K) as u64));
    for (name, contrast) in [
        ("logcosh", ContrastKind::default()),
        ("exp", ContrastKind::Exp),
    ] {
        let (mut y, mut b) = (vec![0.0f64; ROWS * K], vec![0.0f64; K]);
        group.bench_function(BenchmarkId::new("f64", name), |bench| {
            bench.iter(|| {
                y.copy_from_slice(black_box(&rows));
                harness::simd::fastest(
                    #[inline(always)]
                    || <f64 as BlockFloat>::contrast(contrast, &mut y, &mut b, K, &[]),
                );
                y[0] + b[0]
            })
        });
        let (mut y, mut b) = (vec![0.0f32; ROWS * K], vec![0.0f32; K]);
        group.bench_function(BenchmarkId::new("f32", name), |bench| {
            bench.iter(|| {
                y.copy_from_slice(black_box(&rows32));
                harness::simd::fastest(
                    #[inline(always)]
                    || <f32 as BlockFloat>::contrast(contrast, &mut y, &mut b, K, &[]),
                );
                y[0] + b[0]
            })
        });
    }
    group.finish();
}

criterion_group!(benches, contrasts);
criterion_main!(benches);
