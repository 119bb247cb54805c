//! In-process timings of the CLI's pieces at embedding scale, for the figures in
//! `benches/README.md` ("Checks folded into the first read"): medians over repeated calls,
//! without a process's start-up or I/O around them.
//!
//! ```text
//! cargo run --release -p harness --example kernel_timings -- moments X.npy THREADS
//! cargo run --release -p harness --example kernel_timings -- transform X.npy
//! cargo run --release -p harness --example kernel_timings -- update K
//! cargo run --release -p harness --example kernel_timings -- products ROWS K [NB] [f32]
//! cargo run --release -p harness --example kernel_timings -- eigen K|X.npy
//! cargo run --release -p harness --example kernel_timings -- contrast ALPHA
//! cargo run --release -p harness --example kernel_timings -- peak
//! ```
//!
//! `moments`: `harness::pipeline::moments` of an f64 `.npy` on a pool of THREADS threads.
//! `transform`: `harness::simd::centred_product` of it by a D x D matrix. `update`: one
//! parallel FastICA update at K components on the CLI's kernel (`W W'`, then with the
//! eigen-decomposition, the decorrelation's products, the whole step) from a pseudo-random `W`.
//! `products`: the block pass's two products (`Y = Z W'`, `G += Y' Z` on NB-row blocks, 256 by
//! default) over ROWS x K pseudo-random rows; with `f32`, the products in f32 and each block's
//! `G` added into an f64 total, as the f32 pass does. `eigen`: faer's eigen-decomposition of
//! `W W'` (pseudo-random K x K `W`), or of the covariance of an f64 `.npy` (the whitening's),
//! sequential, at each divide-and-conquer threshold
//! (`SelfAdjointEvdParams::recursion_threshold`, faer's default 128), and the eigenvalues
//! alone, to see where the update's time goes, and the same matrix's eigen-decomposition in
//! f32 beside f64 (faer's defaults). `contrast`: the block pass's `f64` log-cosh
//! contrast (`harness::blocks::BlockFloat::contrast`, this CPU's instance) with `alpha` ALPHA
//! on a 256 x 256 block, per value, a copy of the block included. `peak`: one core's f64
//! fused multiply-add rate (GF/s) on 12 independent chains of AVX2 and of AVX-512 vectors, the
//! rate no matrix product on this core can pass: the floor under the pass's two products.

use harness::simd::{CliKernel, centred_product, fastest, gemm};
use std::time::Instant;
use unmix::ica::Kernel;

/// Median of `runs` timings of `f`, in ms.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut ts: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[runs / 2]
}

/// `len` values in [-0.5, 0.5) from a fixed linear congruential sequence.
fn values(len: usize) -> Vec<f64> {
    let mut seed = 1u64;
    (0..len)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| anyhow::anyhow!("missing argument {i}; see the example's docs"))
    };
    match arg(0)? {
        "moments" => {
            let x = harness::io::read_table(std::path::Path::new(arg(1)?))?.into_f64();
            let threads: usize = arg(2)?.parse()?;
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()?;
            let ms = median_ms(15, || {
                pool.install(|| harness::pipeline::moments(&x, &pool).map(|_| ()))
                    .expect("moments");
            });
            println!("moments, {threads} threads: median of 15 {ms:.2} ms");
        }
        "transform" => {
            let x = harness::io::read_table(std::path::Path::new(arg(1)?))?.into_f64();
            let d = x.cols;
            let m = values(d * d);
            let mean = vec![0.1; d];
            let mut out = vec![0.0; x.rows * d];
            let ms = median_ms(21, || {
                fastest(|| centred_product(&x.data, d, &mean, &m, &mut out, d, |_, _| Ok(())))
                    .expect("transform");
            });
            println!("centred_product: median of 21 {ms:.2} ms");
        }
        "update" => {
            let k: usize = arg(1)?.parse()?;
            let kernel = CliKernel::for_this_cpu();
            let w = values(k * k);
            let gb: Vec<f64> = values(k * k + k).iter().map(|v| v * 1e3).collect();
            let (mut m, mut p, mut out) = (vec![0.0; k * k], vec![0.0; k * k], vec![0.0; k * k]);
            let (mut vals, mut work) = (vec![0.0; k], vec![0.0; k]);
            let mut ws = vec![0.0; k * k + unmix::ica::update::sym_workspace_len(k)];
            let gram = median_ms(51, || kernel.gram(&w, k, &mut m));
            let eigen = median_ms(51, || {
                kernel.gram(&w, k, &mut m);
                kernel
                    .symmetric_eigen(&mut m, k, &mut vals, &mut work)
                    .expect("eigen");
            });
            let decorrelate = median_ms(51, || {
                kernel.decorrelate(&m, &vals, &w, k, &mut p, &mut out)
            });
            let step = median_ms(51, || {
                let mut w = w.clone();
                unmix::ica::update::parallel_step_with(&mut w, &gb, 20_000, k, &mut ws, kernel)
                    .expect("step");
            });
            println!(
                "update at k = {k}, medians of 51: W W' {gram:.3} ms, W W' and eigen {eigen:.3} ms, \
                 decorrelate {decorrelate:.3} ms, whole step {step:.3} ms"
            );
        }
        "products" => {
            let (rows, k): (usize, usize) = (arg(1)?.parse()?, arg(2)?.parse()?);
            let nb: usize = args.get(3).map_or(Ok(256), |a| a.parse())?;
            let f32 = args.get(4).is_some_and(|a| a == "f32");
            let z = values(rows.next_multiple_of(nb) * k);
            let w = values(k * k);
            let ms = if f32 {
                let (z, w): (Vec<f32>, Vec<f32>) = (
                    z.iter().map(|&v| v as f32).collect(),
                    w.iter().map(|&v| v as f32).collect(),
                );
                let (mut y, mut gb) = (vec![0.0f32; nb * k], vec![0.0f32; k * k]);
                let mut g = vec![0.0f64; k * k];
                median_ms(9, || {
                    fastest(|| {
                        for zb in z.chunks_exact(nb * k) {
                            gemm(nb, k, k, zb, (k, 1), &w, (1, k), &mut y, k, false);
                            gemm(k, nb, k, &y, (1, k), zb, (k, 1), &mut gb, k, false);
                            for (t, &b) in g.iter_mut().zip(&gb) {
                                *t += f64::from(b);
                            }
                        }
                    })
                })
            } else {
                let (mut y, mut g) = (vec![0.0; nb * k], vec![0.0; k * k]);
                median_ms(9, || {
                    fastest(|| {
                        for zb in z.chunks_exact(nb * k) {
                            gemm(nb, k, k, zb, (k, 1), &w, (1, k), &mut y, k, false);
                            gemm(k, nb, k, &y, (1, k), zb, (k, 1), &mut g, k, true);
                        }
                    })
                })
            };
            let flops = 4.0 * z.len() as f64 * k as f64;
            println!(
                "the pass's two products over {} rows of {k} in blocks of {nb} ({}): \
                 median of 9 {ms:.2} ms, {:.1} GF/s",
                z.len() / k,
                if f32 { "f32, G added in f64" } else { "f64" },
                flops / ms / 1e6
            );
        }
        "contrast" => {
            use harness::blocks::BlockFloat;
            let alpha: f64 = arg(1)?.parse()?;
            let c = unmix::ica::ContrastKind::LogCosh(unmix::ica::LogCosh::new(alpha)?);
            let y0: Vec<f64> = values(256 * 256).iter().map(|v| v * 6.0).collect();
            let (mut y, mut b) = (y0.clone(), vec![0.0; 256]);
            let ms = median_ms(51, || {
                for _ in 0..20 {
                    y.copy_from_slice(&y0);
                    assert!(<f64 as BlockFloat>::contrast(c, &mut y, &mut b, 256, &[]));
                }
            });
            println!(
                "log-cosh contrast, alpha {alpha}, 256 x 256 block: median of 51 {:.3} ns a value",
                ms * 1e6 / (20.0 * 65536.0)
            );
        }
        "eigen" => {
            use faer::dyn_stack::{MemBuffer, MemStack};
            use faer::linalg::evd::{self, ComputeEigenvectors, SelfAdjointEvdParams};
            let (k, m) = match arg(1)?.parse::<usize>() {
                Ok(k) => {
                    let (w, mut m) = (values(k * k), vec![0.0; k * k]);
                    CliKernel::for_this_cpu().gram(&w, k, &mut m);
                    (k, m)
                }
                // A table: the covariance its whitening decomposes.
                Err(_) => {
                    let x = harness::io::read_table(std::path::Path::new(arg(1)?))?.into_f64();
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
                    let moments = harness::pipeline::moments(&x, &pool)?;
                    let mut c = vec![0.0; x.cols * x.cols];
                    moments.view().covariance_into(0, &mut c)?;
                    (x.cols, c)
                }
            };
            let a = faer::Mat::<f64>::from_fn(k, k, |i, j| m[i * k + j]);
            let par = faer::Par::Seq;
            let time = |vectors: ComputeEigenvectors, threshold: usize| -> anyhow::Result<f64> {
                let mut params = <SelfAdjointEvdParams as faer::Auto<f64>>::auto();
                params.recursion_threshold = threshold;
                let mut buf = MemBuffer::new(evd::self_adjoint_evd_scratch::<f64>(
                    k,
                    vectors,
                    par,
                    params.into(),
                ));
                let (mut s, mut u) = (
                    faer::diag::Diag::<f64>::zeros(k),
                    faer::Mat::<f64>::zeros(k, k),
                );
                let mut failed = false;
                let ms = median_ms(31, || {
                    let u = matches!(vectors, ComputeEigenvectors::Yes).then(|| u.as_mut());
                    failed |= evd::self_adjoint_evd(
                        a.as_ref(),
                        s.as_mut(),
                        u,
                        par,
                        MemStack::new(&mut buf),
                        params.into(),
                    )
                    .is_err();
                });
                anyhow::ensure!(!failed, "faer's eigen-decomposition failed");
                Ok(ms)
            };
            let default = <SelfAdjointEvdParams as faer::Auto<f64>>::auto().recursion_threshold;
            for threshold in [8, 16, 32, 64, 128] {
                println!(
                    "eigen at k = {k}, recursion threshold {threshold}{}: median of 31 {:.3} ms",
                    if threshold == default {
                        " (faer's default)"
                    } else {
                        ""
                    },
                    time(ComputeEigenvectors::Yes, threshold)?
                );
            }
            println!(
                "eigenvalues alone at k = {k}: median of 31 {:.3} ms",
                time(ComputeEigenvectors::No, default)?
            );
            // The same matrix rounded to f32: would an f32 update be faster for f32 data?
            // Both through faer's allocating call, so that only the type differs.
            let a32 = faer::Mat::<f32>::from_fn(k, k, |i, j| a[(i, j)] as f32);
            let mut failed = false;
            let f64_ms = median_ms(31, || {
                failed |= std::hint::black_box(a.self_adjoint_eigen(faer::Side::Lower)).is_err();
            });
            let f32_ms = median_ms(31, || {
                failed |= std::hint::black_box(a32.self_adjoint_eigen(faer::Side::Lower)).is_err();
            });
            anyhow::ensure!(!failed, "faer's eigen-decomposition failed");
            println!(
                "eigen at k = {k}, faer's defaults (allocating): f64 {f64_ms:.3} ms, \
                 the same matrix in f32 {f32_ms:.3} ms (medians of 31)"
            );
        }
        "peak" => peak::print(),
        other => {
            anyhow::bail!(
                "unknown mode {other}: moments, transform, update, products, eigen, contrast or peak"
            )
        }
    }
    Ok(())
}

/// One core's peak f64 multiply-add rate, measured: 12 independent chains, enough to cover the
/// latency of every x86-64 FMA unit (4 cycles, 2 ports), so that only the throughput counts.
#[cfg(target_arch = "x86_64")]
mod peak {
    use super::median_ms;
    use std::arch::x86_64::*;

    const STEPS: usize = 4_000_000;

    /// `fn $name()`: `STEPS x 12` multiply-adds on 12 chains of one vector type, kept from
    /// being optimised away by `black_box`.
    macro_rules! chains {
        ($name:ident, $features:literal, $splat:ident, $fma:ident) => {
            #[target_feature(enable = $features)]
            fn $name() {
                let (b, c) = ($splat(1.000_000_1), $splat(1e-9));
                let mut acc = [c; 12];
                for _ in 0..STEPS {
                    for a in &mut acc {
                        *a = $fma(*a, b, c);
                    }
                }
                std::hint::black_box(acc);
            }
        };
    }
    chains!(avx2, "avx2,fma", _mm256_set1_pd, _mm256_fmadd_pd);
    chains!(avx512, "avx512f", _mm512_set1_pd, _mm512_fmadd_pd);

    pub fn print() {
        let report = |isa: &str, lanes: usize, run: &dyn Fn()| {
            let ms = median_ms(9, run);
            let flops = (2 * lanes * 12 * STEPS) as f64;
            println!(
                "f64 FMA peak, one core, {isa}: median of 9 {:.1} GF/s",
                flops / ms / 1e6
            );
        };
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: the features `avx2` needs were detected just above.
            report("AVX2", 4, &|| unsafe { avx2() });
        }
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: as above, for `avx512f`.
            report("AVX-512", 8, &|| unsafe { avx512() });
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod peak {
    pub fn print() {
        println!("peak: measured on x86-64 only");
    }
}
