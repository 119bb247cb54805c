//! The dense kernels of a fit, once each at a fixed size, for instruction counts under
//! `valgrind --tool=callgrind` (`benches/callgrind.sh`): counts do not depend on the load of the
//! machine, so a change to a kernel can be judged on a busy one.
//!
//! `kernel_counts N D` builds `N x D` mixed data and runs, each in its own `#[inline(never)]`
//! function whose inclusive count callgrind reports:
//! - `covariance_{core,core_avx2,gemm}`: the moments pass (mean and comoment of the rows);
//! - `transform_{core,core_avx2,gemm}`: the whitening transform `z = W (x - mean)`, K = D;
//! - `pass_{core,core_avx2,gemm}`: one parallel FastICA pass (logcosh) over the white rows.
//!
//! `core` is the no_std core as built for the baseline target (SSE2, what firmware and
//! `UNMIX_SIMD=portable` run), `core_avx2` the same code compiled for AVX2 through
//! `harness::simd::fastest` (the CLI's path for the core's loops), `gemm` the CLI's
//! `gemm` crate products (`harness::moments::GemmMoments`, `harness::simd::centred_product`,
//! `harness::simd::CliKernel::Gemm`), all on a rayon pool of one thread. No `target-cpu=native`: the run-time dispatch picks the
//! instruction set (the `gemm` crate's FMA kernel under valgrind, which lacks AVX-512).

use harness::moments::GemmMoments;
use harness::simd::{CliKernel, centred_product, fastest};
use std::hint::black_box;
use unmix::ica::{Kernel, LogCosh, MomentsPass, ParallelPass, Pass, Portable};
use unmix::whiten::{self, WhitenOptions, WhitenerBuf, WhitenerView};

// inline(always) down to the core's code, so that `fastest` compiles it for AVX2.
#[inline(always)]
fn moments<P: Pass<f64>>(pass: &P, x: &[f64]) -> Vec<f64> {
    let mut total = vec![0.0; pass.partial_len()];
    pass.accumulate(&mut total, 0, x).expect("finite rows");
    total
}

#[inline(never)]
fn covariance_core(x: &[f64], d: usize) -> Vec<f64> {
    moments(&MomentsPass::new(d).unwrap(), x)
}

#[inline(never)]
fn covariance_core_avx2(x: &[f64], d: usize) -> Vec<f64> {
    let pass = MomentsPass::new(d).unwrap();
    fastest(
        #[inline(always)]
        || moments(&pass, x),
    )
}

#[inline(never)]
fn covariance_gemm(x: &[f64], d: usize) -> Vec<f64> {
    moments(&GemmMoments::new(d).unwrap(), x)
}

#[inline(never)]
fn transform_core(v: &WhitenerView<'_, f64>, x: &[f64], z: &mut [f64]) {
    v.transform_rows(x, z).unwrap();
}

#[inline(never)]
fn transform_core_avx2(v: &WhitenerView<'_, f64>, x: &[f64], z: &mut [f64]) {
    fastest(
        #[inline(always)]
        || v.transform_rows(x, z),
    )
    .unwrap();
}

#[inline(never)]
fn transform_gemm(v: &WhitenerView<'_, f64>, x: &[f64], z: &mut [f64]) {
    let (d, k) = (v.n_features(), v.n_components());
    centred_product(x, d, v.mean(), v.whitening(), z, k, |_, _| {
        unreachable!("the GEMM path takes K >= 16")
    })
    .unwrap();
}

#[inline(always)]
fn pass<K: Kernel>(kernel: K, w: &[f64], k: usize, z: &[f64]) -> Vec<f64> {
    let contrast = LogCosh::DEFAULT;
    let pass = ParallelPass::new(w, k, &contrast, kernel).unwrap();
    moments(&pass, z)
}

#[inline(never)]
fn pass_core(w: &[f64], k: usize, z: &[f64]) -> Vec<f64> {
    pass(Portable, w, k, z)
}

#[inline(never)]
fn pass_core_avx2(w: &[f64], k: usize, z: &[f64]) -> Vec<f64> {
    fastest(
        #[inline(always)]
        || pass(Portable, w, k, z),
    )
}

#[inline(never)]
fn pass_gemm(w: &[f64], k: usize, z: &[f64]) -> Vec<f64> {
    pass(CliKernel::Gemm, w, k, z)
}

fn main() {
    // One worker: the CLI kernel's halves (`rayon::join` from k = 64) then run on this thread,
    // so each count is all of its kernel's work.
    harness::fastica::pool(1).unwrap().install(run);
}

fn run() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("N D"))
        .collect();
    let [n, d] = args[..] else {
        panic!("usage: kernel_counts N D")
    };
    assert!(d >= harness::simd::GEMM_MIN_K, "D >= 16 (the GEMM's range)");
    let x = unmix_benches::mixed_data(n, d, 7);
    let core = covariance_core(black_box(&x), d);
    black_box(covariance_core_avx2(black_box(&x), d));
    black_box(covariance_gemm(black_box(&x), d));
    let m = MomentsPass::new(d).unwrap();
    let mut storage = vec![0.0; whiten::storage_len(d, d)];
    let mut ws = vec![0.0; whiten::workspace_len(d, d)];
    let mut w = WhitenerBuf::new(d, d, &mut storage).unwrap();
    w.fit(m.view(&core).unwrap(), &WhitenOptions::DEFAULT, &mut ws)
        .unwrap();
    let v = w.view();
    let mut z = vec![0.0; n * d];
    transform_core(&v, black_box(&x), &mut z);
    transform_core_avx2(&v, black_box(&x), &mut z);
    transform_gemm(&v, black_box(&x), &mut z);
    // An orthogonal-ish start: the identity plus a little noise.
    let mut normals = unmix::random::Normals::new(3);
    let unmixing: Vec<f64> = (0..d * d)
        .map(|i| f64::from(u8::from(i % (d + 1) == 0)) + 0.01 * normals.next_normal())
        .collect();
    black_box(pass_core(&unmixing, d, black_box(&z)));
    black_box(pass_core_avx2(&unmixing, d, black_box(&z)));
    black_box(pass_gemm(&unmixing, d, black_box(&z)));
}
