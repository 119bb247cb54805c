//! Shared inputs for the benchmarks (the benches themselves are in `benches/`).

use unmix::random::Normals;

/// `n x d` row-major samples: Laplace-like latents mixed by a fixed random matrix, plus offsets.
pub fn mixed_data(n: usize, d: usize, seed: u64) -> Vec<f64> {
    let mut normals = Normals::new(seed);
    let mut normal = || normals.next_normal();
    let mix: Vec<f64> = (0..d * d).map(|_| normal()).collect();
    let mut x = vec![0.0; n * d];
    let mut s = vec![0.0; d];
    for row in x.chunks_mut(d) {
        for v in s.iter_mut() {
            let (a, b) = (normal(), normal());
            *v = a * b; // heavy-tailed, non-Gaussian
        }
        for (i, out) in row.iter_mut().enumerate() {
            *out = 3.0 * i as f64 + (0..d).map(|j| mix[i * d + j] * s[j]).sum::<f64>();
        }
    }
    x
}
