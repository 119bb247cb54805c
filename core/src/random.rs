//! Seeded standard normal draws that give the same bits on every target.
//!
//! xoshiro256++ (`rand_xoshiro`) supplies uniform bits; the Marsaglia polar method turns pairs of
//! uniforms into pairs of normals with `libm`'s `log` and `sqrt` only. (A sampler whose math
//! backend depends on cargo features elsewhere in the build, as `rand_distr`'s does through
//! `num-traits`, could change bits between a firmware build and a host build.)

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
}

/// Fills `r` (`k x k`) with a Haar-random orthogonal matrix drawn from `seed`.
///
/// The draw is row-major standard normals from [`Normals::new(seed)`](Normals), then
/// [`crate::linalg::orthonormalize_rows`]. Same seed and `k`, same bits on every target.
pub fn haar_orthogonal(seed: u64, r: &mut [f64], k: usize) -> crate::Result<()> {
    if r.len() < k * k {
        return Err(crate::Error::BufferTooSmall {
            needed: k * k,
            found: r.len(),
        });
    }
    Normals::new(seed).fill(&mut r[..k * k]);
    crate::linalg::orthonormalize_rows(r, k, k)
}
