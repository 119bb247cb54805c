//! Seeded standard normal draws that give the same bits on every target.
//!
//! xoshiro256++ (`rand_xoshiro`) supplies uniform bits; the Marsaglia polar method turns pairs of
//! uniforms into pairs of normals with `libm`'s `log` and `sqrt` only. (A sampler whose math
//! backend depends on cargo features elsewhere in the build, as `rand_distr`'s does through
//! `num-traits`, could change bits between a firmware build and a host build.)

use crate::float::Sum;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A stream of independent standard normal `f64`s from a seed.
#[derive(Clone, Debug)]
pub struct Normals {
    rng: Xoshiro256PlusPlus,
    spare: Option<f64>,
}

impl Normals {
    /// The stream for `seed` (expanded with SplitMix64, as `SeedableRng::seed_from_u64`).
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            spare: None,
        }
    }

    /// A uniform draw from (-1, 1) with 53 random bits.
    fn symmetric_uniform(&mut self) -> f64 {
        let bits = self.rng.next_u64() >> 11; // 53 bits
        (bits as f64) * (2.0 / (1u64 << 53) as f64) - 1.0
    }

    /// The next standard normal draw.
    pub fn next_normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        loop {
            let (u, v) = (self.symmetric_uniform(), self.symmetric_uniform());
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                let factor = libm::sqrt(-2.0 * libm::log(s) / s);
                self.spare = Some(v * factor);
                return u * factor;
            }
        }
    }

    /// A uniform integer in `0..bound` (`bound >= 1`), unbiased by rejection; for shuffles.
    pub fn below(&mut self, bound: u64) -> u64 {
        let bound = bound.max(1);
        // Reject the top partial copy of [0, bound) so every residue is equally likely.
        let zone = u64::MAX - (u64::MAX % bound) - 1;
        loop {
            let v = self.rng.next_u64();
            if v <= zone {
                return v % bound;
            }
        }
    }

    /// Fills `out` with standard normal draws, in order.
    pub fn fill(&mut self, out: &mut [f64]) {
        for x in out.iter_mut() {
            *x = self.next_normal();
        }
    }

    /// Fills `out` with standard normal draws at the precision of [`Sum`]: [`fill`](Self::fill)
    /// without the `f32-sums` feature; with it, the same polar method in `f32` (24-bit uniforms,
    /// `logf`, `sqrtf`), so that no `f64` arithmetic is linked. The two streams differ (not only
    /// by rounding): a start or rotation drawn from a seed is another draw under the feature.
    pub fn fill_sum(&mut self, out: &mut [Sum]) {
        #[cfg(not(feature = "f32-sums"))]
        self.fill(out);
        #[cfg(feature = "f32-sums")]
        for x in out.iter_mut() {
            *x = self.next_normal_f32();
        }
    }

    /// The polar method in `f32`: the `f32-sums` feature's normals.
    #[cfg(feature = "f32-sums")]
    fn next_normal_f32(&mut self) -> f32 {
        let mut uniform = || {
            let bits = (self.rng.next_u64() >> 40) as u32; // 24 bits
            bits as f32 * (2.0 / (1u32 << 24) as f32) - 1.0
        };
        loop {
            let (u, v) = (uniform(), uniform());
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                // One of the pair: the spare of the f64 stream would need a second slot.
                return u * libm::sqrtf(-2.0 * libm::logf(s) / s);
            }
        }
    }
}

/// Fills `r` (`k x k`) with a Haar-random orthogonal matrix drawn from `seed`.
///
/// The draw is row-major standard normals from [`Normals::new(seed)`](Normals)
/// ([`Normals::fill_sum`]), then
/// [`crate::linalg::orthonormalize_rows`]. Same seed and `k`, same bits on every target.
pub fn haar_orthogonal(seed: u64, r: &mut [Sum], k: usize) -> crate::Result<()> {
    if r.len() < k * k {
        return Err(crate::Error::BufferTooSmall {
            needed: k * k,
            found: r.len(),
        });
    }
    Normals::new(seed).fill_sum(&mut r[..k * k]);
    crate::linalg::orthonormalize_rows(r, k, k)
}
