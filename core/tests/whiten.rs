//! Properties of the whitening: identity covariance, exact inverse, symmetric ZCA, orthogonal
//! rotation, typed == buffer bit for bit, and every documented error.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]
// Matrix code indexes (i, j) pairs; iterator chains would hide the maths.
#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use unmix::Error;
use unmix::moments::{Moments, MomentsBuf};
use unmix::whiten::{
    self, Method, Rotation, WhitenOptions, WhitenWorkspace, Whitener, WhitenerBuf, haar_orthogonal,
};

const D: usize = 4;

/// Rows of 4 well-conditioned correlated features: uniform latents times `I + 0.5 M`, plus offsets.
fn data() -> impl Strategy<Value = Vec<f64>> {
    (20usize..120).prop_flat_map(|n| {
        (
            prop::collection::vec(-1.0f64..1.0, n * D),
            prop::collection::vec(-0.5f64..0.5, D * D),
            prop::collection::vec(-100.0f64..100.0, D),
        )
            .prop_map(move |(latent, mix, offset)| {
                let mut x = vec![0.0; n * D];
                for r in 0..n {
                    for i in 0..D {
                        let mut v = offset[i] + latent[r * D + i];
                        for j in 0..D {
                            v += mix[i * D + j] * latent[r * D + j];
                        }
                        x[r * D + i] = v;
                    }
                }
                x
            })
    })
}

fn options() -> impl Strategy<Value = WhitenOptions> {
    (any::<bool>(), prop::option::of(any::<u64>()), 0u32..2).prop_map(|(zca, seed, ddof)| {
        WhitenOptions {
            method: if zca { Method::Zca } else { Method::Pca },
            rotation: seed.map_or(Rotation::None, |seed| Rotation::Random { seed }),
            ddof,
            ..WhitenOptions::DEFAULT
        }
    })
}

/// Condition number of the fitted covariance (largest over smallest kept eigenvalue), at least 1.
fn kappa<const K: usize>(w: &Whitener<f64, D, K>) -> f64 {
    let ev = w.view().explained_variance();
    (ev[0] / ev[K - 1]).max(1.0)
}

fn moments(x: &[f64]) -> Moments<D> {
    let mut m = Moments::<D>::new();
    m.accumulate(x).unwrap();
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn whitened_covariance_is_identity_and_inverse_restores_input(x in data(), opts in options()) {
        let m = moments(&x);
        let mut w = Whitener::<f64, D, D>::new();
        w.fit(m.as_ref(), &opts, &mut WhitenWorkspace::new()).unwrap();
        let n = x.len() / D;
        let mut z = vec![0.0; x.len()];
        w.view().transform_rows(&x, &mut z).unwrap();
        let mut mz = Moments::<D>::new();
        mz.accumulate(&z).unwrap();
        let mut cov = [0.0; D * D];
        mz.as_ref().covariance_into(opts.ddof, &mut cov).unwrap();
        // Rounding errors grow with the condition number of the covariance.
        let tol = 1e-12 * kappa(&w);
        for i in 0..D {
            for j in 0..D {
                let expected = if i == j { 1.0 } else { 0.0 };
                prop_assert!((cov[i * D + j] - expected).abs() < tol, "cov[{}][{}] = {} (kappa {})", i, j, cov[i * D + j], kappa(&w));
            }
        }
        let mut back = vec![0.0; x.len()];
        w.view().inverse_transform_rows(&z, &mut back).unwrap();
        for (a, b) in x.iter().zip(&back) {
            prop_assert!((a - b).abs() < tol * (1.0 + a.abs()));
        }
        prop_assert_eq!(n as u64, w.view().info().n_samples);
    }

    #[test]
    fn zca_matrix_is_symmetric(x in data()) {
        let opts = WhitenOptions { method: Method::Zca, ..WhitenOptions::DEFAULT };
        let mut w = Whitener::<f64, D, D>::new();
        w.fit(moments(&x).as_ref(), &opts, &mut WhitenWorkspace::new()).unwrap();
        let m = w.view().whitening();
        let scale = m.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for i in 0..D {
            for j in 0..D {
                prop_assert!((m[i * D + j] - m[j * D + i]).abs() < 1e-13 * kappa(&w) * scale);
            }
        }
    }

    #[test]
    fn random_rotation_is_orthogonal_and_rotates_pca(seed in any::<u64>(), k in 1usize..12, x in data()) {
        let mut r = vec![0.0; k * k];
        haar_orthogonal(seed, &mut r, k).unwrap();
        for i in 0..k {
            for j in 0..k {
                let dot: f64 = (0..k).map(|l| r[i * k + l] * r[j * k + l]).sum();
                let expected = if i == j { 1.0 } else { 0.0 };
                prop_assert!((dot - expected).abs() < 1e-12);
            }
        }
        // PCA + Rand whitening = R * (PCA whitening).
        let m = moments(&x);
        let mut pca = Whitener::<f64, D, 3>::new();
        let mut rot = Whitener::<f64, D, 3>::new();
        let mut ws = WhitenWorkspace::new();
        pca.fit(m.as_ref(), &WhitenOptions::DEFAULT, &mut ws).unwrap();
        let opts = WhitenOptions { rotation: Rotation::Random { seed }, ..WhitenOptions::DEFAULT };
        rot.fit(m.as_ref(), &opts, &mut ws).unwrap();
        let mut r3 = [0.0; 9];
        haar_orthogonal(seed, &mut r3, 3).unwrap();
        let (p, q) = (pca.view().whitening(), rot.view().whitening());
        for i in 0..3 {
            for j in 0..D {
                let expected: f64 = (0..3).map(|l| r3[i * 3 + l] * p[l * D + j]).sum();
                prop_assert!((q[i * D + j] - expected).abs() < 1e-10 * (1.0 + expected.abs()));
            }
        }
    }

    #[test]
    fn typed_and_buffer_whiteners_give_the_same_bits(x in data(), opts in options()) {
        let m = moments(&x);
        let x32: Vec<f32> = x.iter().map(|v| *v as f32).collect();
        same_bits::<f64>(&m, &opts, &x);
        same_bits::<f32>(&m, &opts, &x32);
    }
}

fn same_bits<T: unmix::Float>(m: &Moments<D>, opts: &WhitenOptions, x: &[T]) {
    let mut typed = Whitener::<T, D, D>::new();
    typed
        .fit(m.as_ref(), opts, &mut WhitenWorkspace::new())
        .unwrap();
    let mut storage = vec![T::ZERO; whiten::storage_len(D, D)];
    let mut ws = vec![0.0; whiten::workspace_len(D, D)];
    let mut buf = WhitenerBuf::new(D, D, &mut storage).unwrap();
    buf.fit(m.as_ref(), opts, &mut ws).unwrap();
    let (a, b) = (typed.view(), buf.view());
    assert_eq!(a.whitening(), b.whitening());
    assert_eq!(a.unwhitening(), b.unwhitening());
    assert_eq!(a.mean(), b.mean());
    assert_eq!(a.explained_variance(), b.explained_variance());
    let (mut za, mut zb) = (vec![T::ZERO; x.len()], vec![T::ZERO; x.len()]);
    a.transform_rows(x, &mut za).unwrap();
    b.transform_rows(x, &mut zb).unwrap();
    assert_eq!(za, zb);
}

#[test]
fn every_bad_request_is_an_error_and_a_failed_fit_changes_nothing() {
    // Rank 2 data in 3 features: the third is the sum of the first two.
    let mut m = Moments::<3>::new();
    for t in 0..50 {
        let (a, b) = ((t as f64 * 0.7).sin(), (t as f64 * 1.3).cos());
        m.accumulate(&[a, b, a + b]).unwrap();
    }
    let mut ws = WhitenWorkspace::<3, 3>::new();
    let mut w = Whitener::<f64, 3, 3>::new();
    // Fit on full-rank data first, so that a failed fit has a model to spoil.
    let mut full = Moments::<3>::new();
    for t in 0..50 {
        let (a, b, c) = (
            (t as f64 * 0.7).sin(),
            (t as f64 * 1.3).cos(),
            (t % 7) as f64,
        );
        full.accumulate(&[a, b, a + b + 0.1 * c]).unwrap();
    }
    w.fit(full.as_ref(), &WhitenOptions::DEFAULT, &mut ws)
        .unwrap();
    let before = w.view();
    let parts = |v: &unmix::whiten::WhitenerView<'_, f64>| {
        [
            v.mean().to_vec(),
            v.whitening().to_vec(),
            v.unwhitening().to_vec(),
            v.explained_variance().to_vec(),
        ]
    };
    let (saved_parts, saved_info) = (parts(&before), before.info());
    assert!(saved_parts[1].iter().any(|v| *v != 0.0));
    assert_eq!(
        w.fit(m.as_ref(), &WhitenOptions::DEFAULT, &mut ws),
        Err(Error::RankDeficient {
            rank: 2,
            requested: 3
        })
    );
    let after = w.view();
    assert_eq!(parts(&after), saved_parts, "a failed fit changed the model");
    assert_eq!(
        after.info(),
        saved_info,
        "a failed fit changed the fit info"
    );
    let mut two = Whitener::<f64, 3, 2>::new();
    assert!(
        two.fit(
            m.as_ref(),
            &WhitenOptions::DEFAULT,
            &mut WhitenWorkspace::new()
        )
        .is_ok()
    );
    let zca = WhitenOptions {
        method: Method::Zca,
        ..WhitenOptions::DEFAULT
    };
    assert_eq!(
        two.fit(m.as_ref(), &zca, &mut WhitenWorkspace::new()),
        Err(Error::InvalidComponents { k: 2, d: 3 })
    );
    let bad_ddof = WhitenOptions {
        ddof: 2,
        ..WhitenOptions::DEFAULT
    };
    assert!(matches!(
        two.fit(m.as_ref(), &bad_ddof, &mut WhitenWorkspace::new()),
        Err(Error::InvalidParameter(_))
    ));
    let bad_rtol = WhitenOptions {
        rank_rtol: f64::NAN,
        ..WhitenOptions::DEFAULT
    };
    assert!(matches!(
        two.fit(m.as_ref(), &bad_rtol, &mut WhitenWorkspace::new()),
        Err(Error::InvalidParameter(_))
    ));

    let mut empty = [0.0f64; 64];
    assert_eq!(
        WhitenerBuf::<f64>::new(3, 0, &mut empty).err(),
        Some(Error::InvalidComponents { k: 0, d: 3 })
    );
    assert_eq!(
        WhitenerBuf::<f64>::new(3, 4, &mut empty).err(),
        Some(Error::InvalidComponents { k: 4, d: 3 })
    );
    let mut small = [0.0f64; 3];
    assert!(matches!(
        WhitenerBuf::<f64>::new(3, 2, &mut small),
        Err(Error::BufferTooSmall { .. })
    ));

    // One sample, constant data, dimension mismatch.
    let mut one = Moments::<3>::new();
    one.accumulate(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(
        two.fit(
            one.as_ref(),
            &WhitenOptions::DEFAULT,
            &mut WhitenWorkspace::new()
        ),
        Err(Error::TooFewSamples { n: 1, needed: 2 })
    );
    let mut constant = Moments::<3>::new();
    constant
        .accumulate(&[1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
        .unwrap();
    assert_eq!(
        two.fit(
            constant.as_ref(),
            &WhitenOptions::DEFAULT,
            &mut WhitenWorkspace::new()
        ),
        Err(Error::RankDeficient {
            rank: 0,
            requested: 2
        })
    );
    let mut mb = vec![0.0; MomentsBuf::buffer_len(2)];
    let mut m2 = MomentsBuf::new(2, &mut mb).unwrap();
    m2.accumulate(&[1.0, 2.0, 3.0, 5.0, 0.0, 1.0]).unwrap();
    assert_eq!(
        two.fit(
            m2.as_ref(),
            &WhitenOptions::DEFAULT,
            &mut WhitenWorkspace::new()
        ),
        Err(Error::DimensionMismatch {
            expected: 3,
            found: 2
        })
    );

    // Transforms check shapes and values.
    let mut z = [0.0; 2];
    assert_eq!(
        two.view().transform(&[1.0, 2.0], &mut z),
        Err(Error::RaggedRows { len: 2, width: 3 })
    );
    assert_eq!(
        two.view().transform(&[1.0, f64::NAN, 0.0], &mut z),
        Err(Error::NonFinite { row: 0, col: 1 })
    );
    assert!(matches!(
        two.view().transform(&[1.0, 2.0, 3.0], &mut [0.0; 3]),
        Err(Error::DimensionMismatch { .. })
    ));
}
