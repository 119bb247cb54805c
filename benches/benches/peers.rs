//! The kernels that `benches/peers/compare.py` times against scikit-learn and scipy on the same
//! data, in the same run. Reads the data the script writes to `$UNMIX_BENCH_DATA` (default
//! `target/peer-data`); without it, run the script.
//!
//! `python benches/peers/compare.py` (needs numpy, scipy, scikit-learn; see the README).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;
use unmix::ica::{FastIcaBuf, FastIcaOptions, WInit, fit_workspace_len, model_len};
use unmix::metrics::assignment::{linear_sum_assignment, workspace_len};
use unmix::metrics::auroc;

fn dir() -> PathBuf {
    std::env::var_os("UNMIX_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/peer-data"))
}

fn load<T: npyz::Deserialize>(name: &str) -> Option<Vec<T>> {
    let bytes = std::fs::read(dir().join(name)).ok()?;
    npyz::NpyFile::new(&bytes[..]).ok()?.into_vec().ok()
}

fn peers(c: &mut Criterion) {
    let (Some(scores), Some(labels)) = (
        load::<f64>("auroc_scores.npy"),
        load::<i64>("auroc_labels.npy"),
    ) else {
        eprintln!(
            "no peer data in {}: run benches/peers/compare.py",
            dir().display()
        );
        return;
    };
    let labels: Vec<bool> = labels.iter().map(|l| *l == 1).collect();
    let mut scratch = vec![0u64; scores.len()];
    c.bench_function("auroc_1e6", |b| {
        b.iter(|| auroc(black_box(&scores), &labels, &mut scratch).unwrap())
    });

    let cost = load::<f64>("lsa_cost.npy").expect("lsa_cost.npy");
    let n = (cost.len() as f64).sqrt() as usize;
    let (lf, lu) = workspace_len(n, n);
    let (mut wf, mut wu, mut cols) = (vec![0.0; lf], vec![0; lu], vec![0; n]);
    c.bench_function("assignment_256", |b| {
        b.iter(|| {
            linear_sum_assignment(black_box(&cost), n, n, false, &mut cols, &mut wf, &mut wu)
                .unwrap()
        })
    });

    let x = load::<f64>("ica_x.npy").expect("ica_x.npy");
    let w_init = load::<f64>("ica_w_init.npy").expect("ica_w_init.npy");
    let k = (w_init.len() as f64).sqrt() as usize;
    let rows = x.len() / k;
    let mut storage = vec![0.0; model_len(k, k)];
    let (mut z, mut ws) = (
        vec![0.0; unmix::ica::fit_scratch_len(rows, k, k)],
        vec![0.0; fit_workspace_len(k, k)],
    );
    let mut group = c.benchmark_group("fastica");
    group.sample_size(10);
    group.bench_function("fit_n1e5_d8", |b| {
        b.iter(|| {
            let mut model = FastIcaBuf::new(k, k, &mut storage).unwrap();
            model
                .fit(
                    black_box(&x),
                    &FastIcaOptions::DEFAULT,
                    WInit::Matrix(&w_init),
                    &mut z,
                    &mut ws,
                )
                .unwrap()
                .n_iter
        })
    });
    // The CLI's path: the same fit with the hot loops compiled for AVX2 where the CPU has it
    // (`harness::simd`), on one and on two threads.
    let table = harness::io::Matrix::new(rows, k, x.clone()).unwrap();
    for threads in [1, 2] {
        let job = harness::fastica::FitJob {
            n_components: None,
            options: FastIcaOptions::DEFAULT,
            init: WInit::Matrix(&w_init),
            threads,
            progress: &|_, _| {},
            converted_from: None,
        };
        group.bench_function(format!("cli_fit_n1e5_d8_threads{threads}"), |b| {
            b.iter(|| {
                harness::fastica::fit(black_box(&table), &job)
                    .unwrap()
                    .info
                    .n_iter
            })
        });
    }
    group.finish();
}

criterion_group!(benches, peers);
criterion_main!(benches);
