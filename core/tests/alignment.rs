//! Properties of the alignment errors and of the polar factor behind the rigid map.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]
#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use unmix::Error;
use unmix::ica::FastIcaOptions;
use unmix::linalg::{polar_factor, polar_workspace_len};
use unmix::metrics::alignment::{
    Alignment, AlignmentMoments, AlignmentOptions, ErrorSums, MapKind, Maps, alignment,
    alignment_with_maps, maps_len, workspace_len,
};
use unmix::random::Normals;
use unmix::whiten::haar_orthogonal;

fn run(
    a: &[f64],
    da: usize,
    b: &[f64],
    db: usize,
    opts: &AlignmentOptions,
) -> Result<Alignment, Error> {
    let n = a.len() / da.max(1);
    let (lf, lu, lt) = workspace_len(n, da, db);
    alignment(
        a,
        da,
        b,
        db,
        opts,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
        &mut vec![0.0; lt],
    )
}

fn normals(seed: u64, len: usize) -> Vec<f64> {
    let mut v = vec![0.0; len];
    Normals::new(seed).fill(&mut v);
    v
}

/// `x (n x d) * m (d x e)`.
fn matmul(x: &[f64], d: usize, m: &[f64], e: usize) -> Vec<f64> {
    x.chunks(d)
        .flat_map(|r| (0..e).map(move |j| (0..d).map(|i| r[i] * m[i * e + j]).sum::<f64>()))
        .collect()
}

/// Random data with a random number of rows and dimensions, `db <= da`.
fn shapes() -> impl Strategy<Value = (usize, usize, usize, u64)> {
    (1usize..5)
        .prop_flat_map(|da| (Just(da), 1usize..=da, 12usize..60, any::<u64>()))
        .prop_map(|(da, db, n, seed)| (n, da, db, seed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The fits minimise squared error, so the RMS errors are ordered whatever the data
    /// (permutation >= rigid needs da >= db; see the module docs).
    #[test]
    fn rms_errors_are_ordered((n, da, db, seed) in shapes()) {
        let a = normals(seed, n * da);
        // B: a noisy nonlinear function of A, or independent data, depending on the seed.
        let m = normals(seed ^ 1, da * db);
        let noise = normals(seed ^ 2, n * db);
        let b: Vec<f64> = matmul(&a, da, &m, db)
            .iter()
            .zip(&noise)
            .map(|(x, e)| if seed % 3 == 0 { *e } else { x.tanh() + 0.3 * e })
            .collect();
        let al = run(&a, da, &b, db, &AlignmentOptions::DEFAULT).unwrap();
        let eps = 1e-10 * al.rms.permutation.max(1.0);
        prop_assert!(al.rms.permutation + eps >= al.rms.rigid, "{:?}", al.rms);
        prop_assert!(al.rms.rigid + eps >= al.rms.linear, "{:?}", al.rms);
        for k in MapKind::ALL {
            prop_assert!(al.raw.get(k) <= al.rms.get(k) * (1.0 + 1e-12)); // mean <= RMS
            prop_assert!((al.normalized.get(k) * al.diameter - al.raw.get(k)).abs() <= 1e-12 * al.raw.get(k).max(1.0));
        }
    }

    /// B = A Q + t: an exact rigid map, so rigid = linear = 0.
    #[test]
    fn rigid_motion_has_zero_rigid_and_linear_error((n, d, _, seed) in shapes(), shift in -100.0f64..100.0) {
        let a = normals(seed, n * d);
        let mut q = vec![0.0; d * d];
        haar_orthogonal(seed ^ 7, &mut q, d).unwrap();
        let b: Vec<f64> = matmul(&a, d, &q, d).iter().enumerate().map(|(i, x)| x + shift * (i % d) as f64).collect();
        let al = run(&a, d, &b, d, &AlignmentOptions::DEFAULT).unwrap();
        prop_assert!(al.normalized.rigid < 1e-10, "{:?}", al.normalized);
        prop_assert!(al.normalized.linear < 1e-10, "{:?}", al.normalized);
    }

    /// B a signed permutation of A (plus a translation): permutation = 0.
    #[test]
    fn signed_permutation_has_zero_permutation_error((n, d, _, seed) in shapes()) {
        let a = normals(seed, n * d);
        let mut rng = Normals::new(seed ^ 3);
        let mut perm: Vec<usize> = (0..d).collect();
        for i in (1..d).rev() {
            perm.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let signs: Vec<f64> = (0..d).map(|_| if rng.below(2) == 0 { -1.0 } else { 1.0 }).collect();
        let b: Vec<f64> = a.chunks(d).flat_map(|r| (0..d).map(|j| signs[j] * r[perm[j]] + 5.0).collect::<Vec<_>>()).collect();
        let al = run(&a, d, &b, d, &AlignmentOptions::DEFAULT).unwrap();
        prop_assert!(al.normalized.permutation < 1e-12, "{:?}", al.normalized);
        prop_assert!(al.normalized.rigid < 1e-10 && al.normalized.linear < 1e-10);
    }
}

/// Independent non-Gaussian sources: A holds them, B mixes them by an invertible matrix. Whitening
/// and FastICA on each recover the same sources, so the unsupervised map is nearly exact.
#[test]
fn ica_aligns_mixed_independent_sources() {
    let (n, d) = (20_000, 4);
    let mut rng = Normals::new(11);
    let mut a = vec![0.0; n * d];
    for row in a.chunks_mut(d) {
        // Uniform, Laplace, a signed square and a two-level source: all non-Gaussian.
        let u = |r: &mut Normals| r.below(1 << 20) as f64 / (1u64 << 20) as f64;
        row[0] = 2.0 * u(&mut rng) - 1.0;
        row[1] = -libm::log(u(&mut rng) + 1e-12) * if rng.below(2) == 0 { -1.0 } else { 1.0 };
        row[2] = rng.next_normal().powi(2) * if rng.below(2) == 0 { -1.0 } else { 1.0 };
        row[3] = if rng.below(3) == 0 { 2.0 } else { -1.0 };
    }
    let m = normals(5, d * d);
    let b = matmul(&a, d, &m, d);
    let mut opts = AlignmentOptions::DEFAULT;
    opts.ica = FastIcaOptions {
        ica: unmix::ica::IcaOptions {
            tol: 1e-8,
            ..unmix::ica::IcaOptions::DEFAULT
        },
        ..FastIcaOptions::DEFAULT
    };
    let al = run(&a, d, &b, d, &opts).unwrap();
    assert!(al.normalized.ica < 0.01, "{:?}", al.normalized);
    assert!(
        al.normalized.linear < 1e-10,
        "B is an exact linear map of A"
    );
    assert!(
        al.normalized.permutation > 1e3 * al.normalized.ica,
        "mixing is no permutation: {:?}",
        al.normalized
    );
    assert!(al.efficiency > 95.0, "efficiency {}", al.efficiency);
}

/// The passes are reductions: chunked accumulation and merging give the one-shot result.
#[test]
fn chunked_and_merged_passes_agree_with_one_shot() {
    let (n, da, db) = (301, 3, 2);
    let a = normals(1, n * da);
    let b: Vec<f64> = matmul(&a, da, &normals(2, da * db), db)
        .iter()
        .map(|x| x.sin())
        .collect();
    let opts = AlignmentOptions::DEFAULT;
    let (lf, lu, lt) = workspace_len(n, da, db);
    let mut maps = vec![0.0; maps_len(da, db)];
    let whole = alignment_with_maps(
        &a,
        da,
        &b,
        db,
        &opts,
        &mut maps,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
        &mut vec![0.0; lt],
    )
    .unwrap();
    let maps = Maps::from_parts(da, db, &maps).unwrap();

    // Moments: two shards merged equal one pass (to rounding).
    let len = AlignmentMoments::buffer_len(da, db);
    let (mut b1, mut b2, mut b3) = (vec![0.0; len], vec![0.0; len], vec![0.0; len]);
    let mut all = AlignmentMoments::new(da, db, &mut b1).unwrap();
    all.accumulate(&a, &b).unwrap();
    let mut first = AlignmentMoments::new(da, db, &mut b2).unwrap();
    first.accumulate(&a[..100 * da], &b[..100 * db]).unwrap();
    let mut second = AlignmentMoments::new(da, db, &mut b3).unwrap();
    second.accumulate(&a[100 * da..], &b[100 * db..]).unwrap();
    first.merge(second.as_ref()).unwrap();
    let (x, y) = (all.as_ref(), first.as_ref());
    assert_eq!(x.n_samples(), y.n_samples());
    for i in 0..da + db {
        assert!((x.mean()[i] - y.mean()[i]).abs() < 1e-13);
        for j in 0..da + db {
            assert!(
                (x.comoment(i, j) - y.comoment(i, j)).abs()
                    < 1e-11 * x.comoment(i, i).abs().max(1.0)
            );
        }
    }

    // Errors: any chunking, merged, gives the same sums.
    let mut sums = ErrorSums::new();
    for (ca, cb) in a.chunks(37 * da).zip(b.chunks(37 * db)) {
        let mut part = ErrorSums::new();
        part.accumulate(&maps, ca, cb).unwrap();
        sums.merge(&part);
    }
    let merged = sums.finish().unwrap();
    for k in MapKind::ALL {
        assert!((merged.raw.get(k) - whole.raw.get(k)).abs() < 1e-12 * whole.raw.get(k));
    }
    assert_eq!(merged.diameter, whole.diameter);
    assert_eq!(merged.n_samples, n as u64);
}

/// With da != db the permutation matches min(da, db) pairs and sends the rest to zero; the rigid
/// map is semi-orthogonal.
#[test]
fn unequal_dimensions_give_partial_permutations_and_semi_orthogonal_maps() {
    let (n, da, db) = (200, 2, 4);
    let b = normals(3, n * db);
    // A = (-B_2, B_0): a signed selection of B's columns.
    let a: Vec<f64> = b.chunks(db).flat_map(|r| [-r[2], r[0]]).collect();
    let (lf, lu, lt) = workspace_len(n, da, db);
    let mut maps = vec![0.0; maps_len(da, db)];
    let al = alignment_with_maps(
        &a,
        da,
        &b,
        db,
        &AlignmentOptions::DEFAULT,
        &mut maps,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
        &mut vec![0.0; lt],
    )
    .unwrap();
    let maps = Maps::from_parts(da, db, &maps).unwrap();
    assert_eq!(
        maps.map(MapKind::Permutation),
        &[0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    );
    assert!(al.normalized.permutation < 1e-12, "{:?}", al.normalized);
    // Procrustes with da < db maximises trace(M' C_AB) only: B's sample correlations pull it a
    // little off the exact selection.
    assert!(al.normalized.rigid < 0.05, "{:?}", al.normalized);
    let m = maps.map(MapKind::Rigid);
    for i in 0..da {
        for j in 0..da {
            let dot: f64 = (0..db).map(|k| m[i * db + k] * m[j * db + k]).sum();
            assert!(
                (dot - f64::from(u8::from(i == j))).abs() < 1e-12,
                "rows orthonormal"
            );
        }
    }
    // And the other way round: B (4-D) mapped into A (2-D)... swapped roles.
    let al = run(&b, db, &a, da, &AlignmentOptions::DEFAULT).unwrap();
    assert!(
        al.normalized.permutation > 0.1,
        "two of B's dimensions cannot be reached from A"
    );
}

#[test]
fn bad_input_is_an_error() {
    let a = normals(1, 40 * 2);
    let b = normals(2, 39 * 2);
    assert_eq!(
        run(&a, 2, &b, 2, &AlignmentOptions::DEFAULT),
        Err(Error::DimensionMismatch {
            expected: 40,
            found: 39
        })
    );
    // Fewer samples than dimensions (plus one).
    let a3 = normals(3, 3 * 3);
    assert_eq!(
        run(&a3, 3, &a3, 3, &AlignmentOptions::DEFAULT),
        Err(Error::TooFewSamples { n: 3, needed: 4 })
    );
    let mut nan = a.clone();
    nan[7] = f64::NAN;
    assert_eq!(
        run(&nan, 2, &a, 2, &AlignmentOptions::DEFAULT),
        Err(Error::NonFinite { row: 3, col: 1 })
    );
    assert_eq!(
        run(&a, 2, &nan, 2, &AlignmentOptions::DEFAULT),
        Err(Error::NonFinite { row: 3, col: 1 })
    );
    // A constant column in B: its covariance is singular.
    let flat: Vec<f64> = a.chunks(2).flat_map(|r| [r[0], 1.0]).collect();
    assert!(matches!(
        run(&a, 2, &flat, 2, &AlignmentOptions::DEFAULT),
        Err(Error::RankDeficient { .. })
    ));
    assert!(matches!(
        run(&a, 0, &a, 2, &AlignmentOptions::DEFAULT),
        Err(Error::RaggedRows { .. }) | Err(Error::BufferTooSmall { .. })
    ));
}

/// Rows whose distances fit in an f64 but whose squared radius does not: an error, never an
/// infinite diameter with zero normalised errors (found by the `alignment` fuzz target).
#[test]
fn a_radius_past_f64_max_is_an_overflow() {
    // Zero means and every map the identity: B = A predicts A exactly, so the errors are 0,
    // while the row's squared distance from the mean, 2e308, is past f64::MAX.
    let identity = scaled_identities([1.0; 4]);
    let maps = Maps::from_parts(2, 2, &identity).unwrap();
    let row = [1e154, 1e154];
    let mut sums = ErrorSums::new();
    assert_eq!(sums.accumulate(&maps, &row, &row), Err(Error::Overflow));
    assert_eq!(sums, ErrorSums::new(), "nothing is added on error");
    sums.accumulate(&maps, &[1e154, 0.0], &[1e154, 0.0])
        .unwrap();
    let one = sums.finish().unwrap();
    assert_eq!((one.raw.rigid, one.diameter), (0.0, 2e154));
    // Merged partial sums are checked too: with zero maps and means, a row's squared error is
    // its squared norm. Each shard's sum (1e308) fits; the merged sum (2e308) does not.
    let zero = vec![0.0; maps_len(2, 2)];
    let maps = Maps::from_parts(2, 2, &zero).unwrap();
    let mut sums = ErrorSums::new();
    for row in [[1e154, 0.0], [0.0, 1e154]] {
        let mut shard = ErrorSums::new();
        shard.accumulate(&maps, &row, &[0.0, 0.0]).unwrap();
        assert!(shard.finish().is_ok());
        sums.merge(&shard);
    }
    assert_eq!(sums.finish(), Err(Error::Overflow));
}

/// `c_k I` for the four maps (permutation, rigid, linear, ICA) of a 2 x 2 alignment, with zero
/// means.
fn scaled_identities(c: [f64; 4]) -> Vec<f64> {
    let mut parts = vec![0.0; maps_len(2, 2)];
    for (m, ck) in parts[4..].chunks_exact_mut(4).zip(c) {
        m.copy_from_slice(&[ck, 0.0, 0.0, ck]);
    }
    parts
}

/// Finite sums whose quotients do not fit: errors far larger than a tiny diameter are an
/// overflow; an efficiency whose share overflows is NaN, like an empty gap, never infinite.
#[test]
fn quotients_past_f64_max_are_an_overflow_or_nan() {
    // One row: distance 1e150 (squared 1e300) against a diameter of 2e-160.
    let parts = scaled_identities([1.0; 4]);
    let maps = Maps::from_parts(2, 2, &parts).unwrap();
    let mut sums = ErrorSums::new();
    sums.accumulate(&maps, &[1e-160, 0.0], &[1e150, 0.0])
        .unwrap();
    assert_eq!(sums.finish(), Err(Error::Overflow));

    // a = b = [x, 0], so each error is x |1 - c_k| exactly: the permutation's 2^-511, the
    // rigid map's 2^-52 x less, the ICA map's about 2^500 (every square a normal f64). Against
    // the diameter 2x, the gap is 2^-53 and the ICA error 2^970: the share, about
    // -2^970 / 2^-53 x 100, is past f64::MAX.
    let x = 2f64.powi(-471);
    let c = [
        1.0 - 2f64.powi(-40),
        1.0 - 2f64.powi(-40) + 2f64.powi(-52),
        1.0,
        -2f64.powi(971),
    ];
    let parts = scaled_identities(c);
    let maps = Maps::from_parts(2, 2, &parts).unwrap();
    let mut sums = ErrorSums::new();
    sums.accumulate(&maps, &[x, 0.0], &[x, 0.0]).unwrap();
    let al = sums.finish().unwrap();
    assert!(al.normalized.permutation > al.normalized.rigid);
    assert!(al.normalized.ica.is_finite());
    assert!(al.efficiency.is_nan(), "{al:?}");
}

/// The polar factor: semi-orthogonal, and `Q' C` symmetric positive semi-definite (so `C = Q P`
/// with `P` the positive factor), also for rank-deficient `C`.
#[test]
fn polar_factor_is_semi_orthogonal_and_leaves_a_positive_factor() {
    for (rows, cols, rank, seed) in [
        (4, 4, 4, 1),
        (5, 3, 3, 2),
        (3, 5, 3, 3),
        (6, 6, 3, 4),
        (1, 4, 1, 5),
        (7, 2, 1, 6),
    ] {
        // C = X Y' of the given rank.
        let x = normals(seed, rows * rank);
        let y = normals(seed ^ 9, cols * rank);
        let c: Vec<f64> = (0..rows * cols)
            .map(|e| {
                (0..rank)
                    .map(|k| x[(e / cols) * rank + k] * y[(e % cols) * rank + k])
                    .sum()
            })
            .collect();
        let mut q = vec![0.0; rows * cols];
        polar_factor(
            &c,
            rows,
            cols,
            &mut q,
            &mut vec![0.0; polar_workspace_len(rows, cols)],
        )
        .unwrap();
        // Orthonormal columns (tall) or rows (wide).
        let (outer, inner) = if rows >= cols {
            (cols, rows)
        } else {
            (rows, cols)
        };
        let at = |i: usize, k: usize| {
            if rows >= cols {
                q[k * cols + i]
            } else {
                q[i * cols + k]
            }
        };
        for i in 0..outer {
            for j in 0..outer {
                let dot: f64 = (0..inner).map(|k| at(i, k) * at(j, k)).sum();
                assert!(
                    (dot - f64::from(u8::from(i == j))).abs() < 1e-12,
                    "{rows}x{cols}: {dot}"
                );
            }
        }
        // P = Q' C (cols x cols) when tall, C Q' (rows x rows) when wide: symmetric, PSD.
        let p: Vec<f64> = if rows >= cols {
            (0..cols * cols)
                .map(|e| {
                    (0..rows)
                        .map(|k| q[k * cols + e / cols] * c[k * cols + e % cols])
                        .sum()
                })
                .collect()
        } else {
            (0..rows * rows)
                .map(|e| {
                    (0..cols)
                        .map(|k| c[(e / rows) * cols + k] * q[(e % rows) * cols + k])
                        .sum()
                })
                .collect()
        };
        let s = outer;
        let scale = c.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..s {
            assert!(p[i * s + i] >= -1e-12 * scale);
            for j in 0..s {
                assert!(
                    (p[i * s + j] - p[j * s + i]).abs() < 1e-12 * scale * s as f64,
                    "{rows}x{cols} symmetric"
                );
            }
        }
    }
    // The rotation in the doctest, and bad input.
    let mut q = [0.0; 4];
    let mut ws = [0.0; 16];
    assert_eq!(
        polar_factor(&[1.0, f64::NAN, 0.0, 1.0], 2, 2, &mut q, &mut ws),
        Err(Error::NonFinite { row: 0, col: 1 })
    );
    assert!(polar_factor(&[1.0; 4], 2, 2, &mut q, &mut ws[..3]).is_err());
}
