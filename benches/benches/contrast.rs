//! FastICA's contrasts over one 64-value block (the unit a pass evaluates), against `libm::tanh`
//! in a plain loop: the portable build, and the same code compiled for AVX2 through the CLI's
//! run-time dispatch (`harness::simd`). Time per block / 64 = time per value.
//! Run: `cargo bench -p unmix-benches --bench contrast`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
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
}

criterion_group!(benches, contrasts);
criterion_main!(benches);
