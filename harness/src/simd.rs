//! Run-time selection of wider vector instructions for the core's hot loops.
//!
//! The core is compiled for the baseline of its target (SSE2 on x86-64) so that it runs on every
//! CPU and in firmware. Its loops are written to vectorise, and Rust's floating point is strict
//! IEEE (no reassociation, no contraction into fused multiply-adds), so compiling the same code
//! for AVX2 changes the speed, never the bits. [`fastest`] runs a closure compiled for AVX2 when
//! the CPU has it. Setting `UNMIX_SIMD=portable` forces the baseline build; `tests/simd.rs`
//! checks that both give the same bytes.

use std::sync::OnceLock;

/// Runs `f`, compiled for AVX2 when this CPU supports it (and `UNMIX_SIMD` is not `portable`),
/// else as compiled.
///
/// `f` should call generic or `#[inline]` core code (the FastICA passes, the whitening
/// transform, the moments) so that it is compiled into the AVX2 instance, not called out of line.
#[inline(always)]
pub fn fastest<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if uses_avx2() {
            // SAFETY: `avx2` only requires the CPU to support AVX2, which `uses_avx2` checked.
            return unsafe { avx2(f) };
        }
    }
    f()
}

/// Whether [`fastest`] takes the AVX2 path in this process.
pub fn uses_avx2() -> bool {
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| {
        let portable = std::env::var("UNMIX_SIMD").is_ok_and(|v| v == "portable");
        #[cfg(target_arch = "x86_64")]
        {
            !portable && std::arch::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = portable;
            false
        }
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}
