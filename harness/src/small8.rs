//! The block pass's two products at exactly 8 components, on AVX2 and FMA registers.
//!
//! At `k = 8` an `f64` row of `Y = Z W'` or of `Z` is two vectors of four: `y_r = W z_r` is 16
//! multiply-adds per row with `W'` in registers, and `G = sum_r y_r z_r'` 16 more, in two halves
//! of `G` (eight accumulators each) so that every sum stays in a register. An `f32` row is one
//! vector of eight: 8 multiply-adds each, `G` in eight accumulators. The
//! `gemm` crate's packing and 8 x 6 tiles fit these shapes poorly: 16 and 29 GFLOP/s here
//! (measured on this machine: 256 x 8 x 8 blocks), about half of what these loops reach. Each
//! sum runs over its terms in order (`j` for `Y`, rows for `G`), rounded once per term: the
//! results differ from the GEMM's in the last bits, within the fast path's 1e-12 agreement with
//! the portable one (`tests/simd.rs`, `tests/simd_fixtures.rs`).
//!
//! Where the CPU has AVX-512 ([`crate::simd::uses_avx512`]), an `f64` row is one vector of
//! eight, and `Y = Z W'` takes two `f32` rows a vector: half the instructions for the same sums
//! in the same order, so the same bits (tested below against the ordered scalar sums, as the
//! AVX2 kernels are). `f32`'s `G` stays on AVX2: two rows a vector would sum each column's even
//! and odd rows apart, a different order.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m256, __m256d, _mm256_broadcast_sd, _mm256_broadcast_ss, _mm256_fmadd_pd, _mm256_fmadd_ps,
    _mm256_loadu_pd, _mm256_loadu_ps, _mm256_setzero_pd, _mm256_setzero_ps, _mm256_storeu_pd,
    _mm256_storeu_ps,
};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, __m512d, __m512i, _mm512_add_epi32, _mm512_broadcast_f32x8, _mm512_fmadd_pd,
    _mm512_fmadd_ps, _mm512_loadu_epi32, _mm512_loadu_pd, _mm512_loadu_ps, _mm512_permutexvar_ps,
    _mm512_set1_epi32, _mm512_set1_pd, _mm512_setzero_pd, _mm512_setzero_ps, _mm512_storeu_pd,
    _mm512_storeu_ps,
};

/// Components these kernels handle.
pub const K: usize = 8;

/// Whether [`unmix()`] and [`gram`] run on this CPU: x86-64 with AVX2 and FMA, unless
/// `UNMIX_SIMD=portable`.
pub fn available() -> bool {
    cfg!(target_arch = "x86_64") && crate::simd::uses_avx2()
}

/// `y_r = W z_r` for every row `r` of `z` (8 wide), from `wt = W'` (`wt[8 j + i] = w[8 i + j]`).
/// Returns whether it ran: only where [`available`], with `z` and `y` of the same whole number
/// of rows (nothing is written otherwise).
#[inline(always)]
pub fn unmix(wt: &[f64], z: &[f64], y: &mut [f64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && wt.len() >= K * K && z.len() == y.len() && z.len().is_multiple_of(K) {
        if crate::simd::uses_avx512() {
            // SAFETY: `uses_avx512` checked AVX-512 F, VL and DQ, AVX2 and FMA.
            unsafe { unmix_avx512(wt, z, y) };
        } else {
            // SAFETY: `available` checked AVX2 and FMA.
            unsafe { unmix_avx2(wt, z, y) };
        }
        return true;
    }
    let _ = (wt, z, y);
    false
}

/// `g = sum_r y_r z_r'` (8 x 8, row-major, overwritten) over the rows of `y` and `z`. Returns
/// whether it ran, as [`unmix()`].
#[inline(always)]
pub fn gram(y: &[f64], z: &[f64], g: &mut [f64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && g.len() >= K * K && z.len() == y.len() && z.len().is_multiple_of(K) {
        if crate::simd::uses_avx512() {
            // SAFETY: as in `unmix`.
            unsafe { gram_avx512(y, z, g) };
        } else {
            // SAFETY: as in `unmix`.
            unsafe { gram_avx2(y, z, g) };
        }
        return true;
    }
    let _ = (y, z, g);
    false
}

/// [`unmix()`] for `f32`.
#[inline(always)]
pub fn unmix_f32(wt: &[f32], z: &[f32], y: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && wt.len() >= K * K && z.len() == y.len() && z.len().is_multiple_of(K) {
        if crate::simd::uses_avx512() {
            // SAFETY: `uses_avx512` checked AVX-512 F, VL and DQ, AVX2 and FMA.
            unsafe { unmix_f32_avx512(wt, z, y) };
        } else {
            // SAFETY: `available` checked AVX2 and FMA.
            unsafe { unmix_f32_avx2(wt, z, y) };
        }
        return true;
    }
    let _ = (wt, z, y);
    false
}

/// [`gram`] for `f32`.
#[inline(always)]
pub fn gram_f32(y: &[f32], z: &[f32], g: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && g.len() >= K * K && z.len() == y.len() && z.len().is_multiple_of(K) {
        // SAFETY: as in `unmix`.
        unsafe { gram_f32_avx2(y, z, g) };
        return true;
    }
    let _ = (y, z, g);
    false
}

/// Eight `f32` from `v[at..at + 8]` (bounds-checked).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
fn load8(v: &[f32], at: usize) -> __m256 {
    let eight = &v[at..at + 8];
    // SAFETY: `eight` holds eight f32 (checked by the slice above).
    unsafe { _mm256_loadu_ps(eight.as_ptr()) }
}

/// Writes eight `f32` to `v[at..at + 8]` (bounds-checked).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
fn store8(v: &mut [f32], at: usize, x: __m256) {
    let eight = &mut v[at..at + 8];
    // SAFETY: `eight` holds eight f32 (checked by the slice above).
    unsafe { _mm256_storeu_ps(eight.as_mut_ptr(), x) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn unmix_f32_avx2(wt: &[f32], z: &[f32], y: &mut [f32]) {
    let wt: [__m256; K] = std::array::from_fn(|j| load8(wt, K * j));
    // Four rows a step: four independent chains of eight multiply-adds.
    for (zq, yq) in z.chunks_exact(4 * K).zip(y.chunks_exact_mut(4 * K)) {
        let mut acc = [_mm256_setzero_ps(); 4];
        for j in 0..K {
            for (r, a) in acc.iter_mut().enumerate() {
                *a = _mm256_fmadd_ps(_mm256_broadcast_ss(&zq[r * K + j]), wt[j], *a);
            }
        }
        for (r, a) in acc.into_iter().enumerate() {
            store8(yq, r * K, a);
        }
    }
    // The last rows (fewer than four), the same sums.
    let done = z.len() / (4 * K) * 4 * K;
    for (zr, yr) in z[done..].chunks_exact(K).zip(y[done..].chunks_exact_mut(K)) {
        let mut a = _mm256_setzero_ps();
        for j in 0..K {
            a = _mm256_fmadd_ps(_mm256_broadcast_ss(&zr[j]), wt[j], a);
        }
        store8(yr, 0, a);
    }
}

/// [`unmix_f32_avx2`] with two rows in one register: `W'` row `j` in both halves of register
/// `j`, and each pair's `z_r[j]` and `z_s[j]` spread over the halves by one permute. Four pairs
/// a step (four independent chains, as on AVX2), the same sums in the same order, so the same
/// bits. At 1e6 x 8 the AVX2 kernel was a quarter of a one-thread `f32` iteration.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
fn unmix_f32_avx512(wt: &[f32], z: &[f32], y: &mut [f32]) {
    let w2: [__m512; K] = std::array::from_fn(|j| _mm512_broadcast_f32x8(load8(wt, K * j)));
    // Lane l of `spread[j]` picks z[j] of the pair's first row (l < 8) or its second.
    let halves: [i32; 2 * K] = std::array::from_fn(|l| if l < K { 0 } else { K as i32 });
    // SAFETY: `halves` holds sixteen i32.
    let halves: __m512i = unsafe { _mm512_loadu_epi32(halves.as_ptr()) };
    let spread: [__m512i; K] =
        std::array::from_fn(|j| _mm512_add_epi32(halves, _mm512_set1_epi32(j as i32)));
    const STEP: usize = 8 * K;
    for (zq, yq) in z.chunks_exact(STEP).zip(y.chunks_exact_mut(STEP)) {
        let pairs: [__m512; 4] = std::array::from_fn(|p| {
            let sixteen = &zq[2 * K * p..2 * K * (p + 1)];
            // SAFETY: `sixteen` holds sixteen f32 (checked by the slice above).
            unsafe { _mm512_loadu_ps(sixteen.as_ptr()) }
        });
        let mut acc = [_mm512_setzero_ps(); 4];
        for j in 0..K {
            for (a, pair) in acc.iter_mut().zip(&pairs) {
                *a = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread[j], *pair), w2[j], *a);
            }
        }
        for (p, a) in acc.into_iter().enumerate() {
            let sixteen = &mut yq[2 * K * p..2 * K * (p + 1)];
            // SAFETY: `sixteen` holds sixteen f32 (checked by the slice above).
            unsafe { _mm512_storeu_ps(sixteen.as_mut_ptr(), a) };
        }
    }
    // The last rows (fewer than eight), the same sums.
    let done = z.len() / STEP * STEP;
    unmix_f32_avx2(wt, &z[done..], &mut y[done..]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gram_f32_avx2(y: &[f32], z: &[f32], g: &mut [f32]) {
    let mut acc = [_mm256_setzero_ps(); K];
    for (yr, zr) in y.chunks_exact(K).zip(z.chunks_exact(K)) {
        let zv = load8(zr, 0);
        for (i, a) in acc.iter_mut().enumerate() {
            *a = _mm256_fmadd_ps(_mm256_broadcast_ss(&yr[i]), zv, *a);
        }
    }
    for (i, a) in acc.into_iter().enumerate() {
        store8(g, i * K, a);
    }
}

/// Four values from `v[at..at + 4]` (bounds-checked).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
fn load(v: &[f64], at: usize) -> __m256d {
    let four = &v[at..at + 4];
    // SAFETY: `four` holds four f64 (checked by the slice above); unaligned loads are allowed.
    unsafe { _mm256_loadu_pd(four.as_ptr()) }
}

/// Writes four values to `v[at..at + 4]` (bounds-checked).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
fn store(v: &mut [f64], at: usize, x: __m256d) {
    let four = &mut v[at..at + 4];
    // SAFETY: `four` holds four f64 (checked by the slice above).
    unsafe { _mm256_storeu_pd(four.as_mut_ptr(), x) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn unmix_avx2(wt: &[f64], z: &[f64], y: &mut [f64]) {
    let wt: [__m256d; 2 * K] = std::array::from_fn(|v| load(wt, 4 * v));
    // Two rows a step: four independent chains of eight multiply-adds.
    let mut pairs = z.chunks_exact(2 * K).zip(y.chunks_exact_mut(2 * K));
    for (zp, yp) in &mut pairs {
        let (mut a0, mut a1, mut b0, mut b1) = (
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
        );
        for j in 0..K {
            let s = _mm256_broadcast_sd(&zp[j]);
            let t = _mm256_broadcast_sd(&zp[K + j]);
            a0 = _mm256_fmadd_pd(s, wt[2 * j], a0);
            a1 = _mm256_fmadd_pd(s, wt[2 * j + 1], a1);
            b0 = _mm256_fmadd_pd(t, wt[2 * j], b0);
            b1 = _mm256_fmadd_pd(t, wt[2 * j + 1], b1);
        }
        store(yp, 0, a0);
        store(yp, 4, a1);
        store(yp, K, b0);
        store(yp, K + 4, b1);
    }
    // An odd last row, the same sums.
    let (zr, yr) = (
        &z[z.len() / (2 * K) * 2 * K..],
        &mut y[z.len() / (2 * K) * 2 * K..],
    );
    if zr.len() == K {
        let (mut a0, mut a1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for j in 0..K {
            let s = _mm256_broadcast_sd(&zr[j]);
            a0 = _mm256_fmadd_pd(s, wt[2 * j], a0);
            a1 = _mm256_fmadd_pd(s, wt[2 * j + 1], a1);
        }
        store(yr, 0, a0);
        store(yr, 4, a1);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gram_avx2(y: &[f64], z: &[f64], g: &mut [f64]) {
    // Rows 0..4 of G, then rows 4..8: eight accumulators (two vectors per row of G), the row's
    // z in two more.
    for half in 0..2 {
        let mut acc = [_mm256_setzero_pd(); K];
        for (yr, zr) in y.chunks_exact(K).zip(z.chunks_exact(K)) {
            let (z0, z1) = (load(zr, 0), load(zr, 4));
            for i in 0..4 {
                let s = _mm256_broadcast_sd(&yr[4 * half + i]);
                acc[2 * i] = _mm256_fmadd_pd(s, z0, acc[2 * i]);
                acc[2 * i + 1] = _mm256_fmadd_pd(s, z1, acc[2 * i + 1]);
            }
        }
        for i in 0..4 {
            let row = (4 * half + i) * K;
            store(g, row, acc[2 * i]);
            store(g, row + 4, acc[2 * i + 1]);
        }
    }
}

/// Eight values from `v[at..at + 8]` (bounds-checked).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
fn load_row(v: &[f64], at: usize) -> __m512d {
    let eight = &v[at..at + K];
    // SAFETY: `eight` holds eight f64 (checked by the slice above); unaligned loads are allowed.
    unsafe { _mm512_loadu_pd(eight.as_ptr()) }
}

/// Writes eight values to `v[at..at + 8]` (bounds-checked).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
fn store_row(v: &mut [f64], at: usize, x: __m512d) {
    let eight = &mut v[at..at + K];
    // SAFETY: `eight` holds eight f64 (checked by the slice above).
    unsafe { _mm512_storeu_pd(eight.as_mut_ptr(), x) }
}

/// [`unmix_avx2`] with a row in one register: `W'` in eight, four rows a step (four
/// independent chains of eight multiply-adds).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
fn unmix_avx512(wt: &[f64], z: &[f64], y: &mut [f64]) {
    let wt: [__m512d; K] = std::array::from_fn(|j| load_row(wt, K * j));
    let mut quads = z.chunks_exact(4 * K).zip(y.chunks_exact_mut(4 * K));
    for (zq, yq) in &mut quads {
        let mut acc = [_mm512_setzero_pd(); 4];
        for j in 0..K {
            for (r, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_pd(_mm512_set1_pd(zq[r * K + j]), wt[j], *a);
            }
        }
        for (r, a) in acc.into_iter().enumerate() {
            store_row(yq, r * K, a);
        }
    }
    // The last rows (fewer than four), the same sums.
    let done = z.len() / (4 * K) * 4 * K;
    for (zr, yr) in z[done..].chunks_exact(K).zip(y[done..].chunks_exact_mut(K)) {
        let mut a = _mm512_setzero_pd();
        for j in 0..K {
            a = _mm512_fmadd_pd(_mm512_set1_pd(zr[j]), wt[j], a);
        }
        store_row(yr, 0, a);
    }
}

/// [`gram_avx2`] with a row of `G` in one register: all of `G` in eight accumulators, one pass
/// over the rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
fn gram_avx512(y: &[f64], z: &[f64], g: &mut [f64]) {
    let mut acc = [_mm512_setzero_pd(); K];
    for (yr, zr) in y.chunks_exact(K).zip(z.chunks_exact(K)) {
        let zv = load_row(zr, 0);
        for (i, a) in acc.iter_mut().enumerate() {
            *a = _mm512_fmadd_pd(_mm512_set1_pd(yr[i]), zv, *a);
        }
    }
    for (i, a) in acc.into_iter().enumerate() {
        store_row(g, i * K, a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `f32` kernels against the same sums in scalar `mul_add`s: bit for bit, every row count
    /// from 0 to 19 (so the tails of fewer than four rows, and of eight on AVX-512, too), the
    /// dispatched kernel and the AVX2 one.
    #[test]
    fn f32_kernels_are_the_ordered_sums() {
        if !available() {
            eprintln!("SKIPPED small8 kernels: no AVX2 and FMA here");
            return;
        }
        let w: Vec<f32> = (0..K * K)
            .map(|i| ((i * 37 % 19) as f32 - 9.0) / 7.0)
            .collect();
        let wt: Vec<f32> = (0..K * K).map(|e| w[(e % K) * K + e / K]).collect();
        for rows in 0..20 {
            let z: Vec<f32> = (0..rows * K)
                .map(|i| ((i * 53 % 31) as f32 - 15.0) / 11.0)
                .collect();
            let mut y = vec![f32::NAN; rows * K];
            #[cfg(target_arch = "x86_64")]
            {
                // SAFETY: `available` checked AVX2 and FMA.
                unsafe { unmix_f32_avx2(&wt, &z, &mut y) };
                let mut dispatched = vec![f32::NAN; rows * K];
                assert!(unmix_f32(&wt, &z, &mut dispatched));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y), bits(&dispatched), "rows {rows}");
            }
            assert!(unmix_f32(&wt, &z, &mut y));
            for (zr, yr) in z.chunks_exact(K).zip(y.chunks_exact(K)) {
                for i in 0..K {
                    let want = (0..K).fold(0.0, |a: f32, j| zr[j].mul_add(w[i * K + j], a));
                    assert_eq!(yr[i].to_bits(), want.to_bits(), "rows {rows}, y {i}");
                }
            }
            let mut g = vec![f32::NAN; K * K];
            assert!(gram_f32(&y, &z, &mut g));
            for i in 0..K {
                for j in 0..K {
                    let want = y
                        .chunks_exact(K)
                        .zip(z.chunks_exact(K))
                        .fold(0.0, |a: f32, (yr, zr)| yr[i].mul_add(zr[j], a));
                    assert_eq!(
                        g[i * K + j].to_bits(),
                        want.to_bits(),
                        "rows {rows}, g {i} {j}"
                    );
                }
            }
        }
    }

    /// Against the same sums in scalar `mul_add`s, in the same order: equal bit for bit (every
    /// row count from 0 to 9, so the odd tail and the AVX-512 tail of fewer than four rows too),
    /// for the AVX2 kernels and, where the CPU has AVX-512, for those.
    #[test]
    fn kernels_are_the_ordered_sums() {
        if !available() {
            eprintln!("SKIPPED small8 kernels: no AVX2 and FMA here");
            return;
        }
        type Kernel = fn(&[f64], &[f64], &mut [f64]);
        // SAFETY (both): `available` checked AVX2 and FMA.
        let avx2: (Kernel, Kernel) = (
            |wt, z, y| unsafe { unmix_avx2(wt, z, y) },
            |y, z, g| unsafe { gram_avx2(y, z, g) },
        );
        let mut instances = vec![("avx2", avx2)];
        if crate::simd::uses_avx512() {
            // SAFETY (both): `uses_avx512` checked AVX-512 F, VL and DQ, AVX2 and FMA.
            let avx512: (Kernel, Kernel) = (
                |wt, z, y| unsafe { unmix_avx512(wt, z, y) },
                |y, z, g| unsafe { gram_avx512(y, z, g) },
            );
            instances.push(("avx512", avx512));
        } else {
            eprintln!("SKIPPED small8 AVX-512 kernels: no AVX-512 here");
        }
        let w: Vec<f64> = (0..K * K)
            .map(|i| ((i * 37 % 19) as f64 - 9.0) / 7.0)
            .collect();
        let wt: Vec<f64> = (0..K * K).map(|e| w[(e % K) * K + e / K]).collect();
        for (name, (unmix, gram)) in instances {
            for rows in 0..10 {
                let z: Vec<f64> = (0..rows * K)
                    .map(|i| ((i * 53 % 31) as f64 - 15.0) / 11.0)
                    .collect();
                let mut y = vec![f64::NAN; rows * K];
                unmix(&wt, &z, &mut y);
                for (zr, yr) in z.chunks_exact(K).zip(y.chunks_exact(K)) {
                    for i in 0..K {
                        let want = (0..K).fold(0.0, |a: f64, j| zr[j].mul_add(w[i * K + j], a));
                        assert_eq!(yr[i].to_bits(), want.to_bits(), "{name} rows {rows}, y {i}");
                    }
                }
                let mut g = vec![f64::NAN; K * K];
                gram(&y, &z, &mut g);
                for i in 0..K {
                    for j in 0..K {
                        let want = y
                            .chunks_exact(K)
                            .zip(z.chunks_exact(K))
                            .fold(0.0, |a: f64, (yr, zr)| yr[i].mul_add(zr[j], a));
                        assert_eq!(
                            g[i * K + j].to_bits(),
                            want.to_bits(),
                            "{name} rows {rows}, g {i} {j}"
                        );
                    }
                }
            }
        }
        // The dispatching entry points run one of them.
        let z = vec![0.5; 3 * K];
        let (mut y, mut g) = (vec![0.0; 3 * K], vec![0.0; K * K]);
        assert!(super::unmix(&wt, &z, &mut y) && super::gram(&y, &z, &mut g));
    }
}
