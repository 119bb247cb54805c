//! The normal sampler and the Haar rotation, checked statistically (fixed seeds, so these are
//! deterministic; the bounds are 5+ standard errors wide).
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]

use unmix::random::Normals;
use unmix::whiten::haar_orthogonal;

#[test]
fn normals_have_the_moments_of_a_standard_normal() {
    let n = 1_000_000;
    let mut z = vec![0.0; n];
    Normals::new(11).fill(&mut z);
    let mean = z.iter().sum::<f64>() / n as f64;
    let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    let skew = z.iter().map(|v| (v - mean).powi(3)).sum::<f64>() / n as f64;
    let kurt = z.iter().map(|v| (v - mean).powi(4)).sum::<f64>() / n as f64;
    assert!(mean.abs() < 0.005, "mean {mean}");
    assert!((var - 1.0).abs() < 0.007, "variance {var}");
    assert!(skew.abs() < 0.013, "third moment {skew}");
    assert!((kurt - 3.0).abs() < 0.05, "fourth moment {kurt}");
    let tail = z.iter().filter(|v| v.abs() > 3.0).count() as f64 / n as f64;
    assert!((tail - 0.0026998).abs() < 0.0003, "P(|z| > 3) = {tail}");
    // Same seed, same bits; different seed, different stream.
    let mut again = vec![0.0; 16];
    Normals::new(11).fill(&mut again);
    assert_eq!(again[..], z[..16]);
    Normals::new(12).fill(&mut again);
    assert_ne!(again[..], z[..16]);
}

#[test]
fn haar_rotations_have_uniform_entries_and_both_orientations() {
    // For Haar-distributed R (k x k): E[r_ij] = 0, E[r_ij^2] = 1/k, det = +1 or -1 equally often.
    let k = 3;
    let trials = 20_000;
    let (mut sum, mut sum_sq, mut positive) = (0.0, 0.0, 0usize);
    let mut r = [0.0; 9];
    for seed in 0..trials {
        haar_orthogonal(seed, &mut r, k).unwrap();
        sum += r[5];
        sum_sq += r[5] * r[5];
        let det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6])
            + r[2] * (r[3] * r[7] - r[4] * r[6]);
        assert!((det.abs() - 1.0).abs() < 1e-12);
        positive += usize::from(det > 0.0);
    }
    let t = trials as f64;
    assert!((sum / t).abs() < 0.02, "mean entry {}", sum / t);
    assert!(
        (sum_sq / t - 1.0 / 3.0).abs() < 0.01,
        "mean square {}",
        sum_sq / t
    );
    assert!(
        (positive as f64 / t - 0.5).abs() < 0.02,
        "P(det > 0) = {}",
        positive as f64 / t
    );
}
