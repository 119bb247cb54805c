//! Properties of the kNN mutual information, NMI, InfoM and InfoC.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]
#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use unmix::Error;
use unmix::metrics::infomec::{
    active_latents, digamma_int, entropy_from_counts, info_m_c, infomec, mutual_information, nmi,
    tie_break, workspace_len,
};
use unmix::random::Normals;

/// Ross's estimator written from its definition, O(n^2): neighbours by brute force under the
/// distance `(|x_s - x_t|, |tie_break(s) - tie_break(t)| when the values are equal)` compared
/// lexicographically, digamma by its series at every integer.
fn brute_mi(x: &[f64], labels: &[i64], k: usize) -> f64 {
    let n = x.len();
    let count = |l: i64| labels.iter().filter(|&&m| m == l).count();
    let kept: Vec<usize> = (0..n).filter(|&t| count(labels[t]) > 1).collect();
    if kept.is_empty() {
        return 0.0;
    }
    let dist = |s: usize, t: usize| -> (f64, u64) {
        let d = (x[s] - x[t]).abs();
        if d == 0.0 {
            (0.0, tie_break(s).abs_diff(tie_break(t)))
        } else {
            (d, 0)
        }
    };
    let less = |a: (f64, u64), b: (f64, u64)| a.0 < b.0 || (a.0 == b.0 && a.1 < b.1);
    let psi = |m: usize| -0.5772156649015329 + (1..m).map(|i| 1.0 / i as f64).sum::<f64>();
    let (mut sk, mut sl, mut sm) = (0.0, 0.0, 0.0);
    for &t in &kept {
        let nl = count(labels[t]);
        let kc = k.min(nl - 1);
        let mut d: Vec<(f64, u64)> = kept
            .iter()
            .filter(|&&s| s != t && labels[s] == labels[t])
            .map(|&s| dist(s, t))
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let r = d[kc - 1];
        let m = kept.iter().filter(|&&s| less(dist(s, t), r)).count();
        sk += psi(kc);
        sl += psi(nl);
        sm += psi(m);
    }
    let nk = kept.len() as f64;
    (psi(kept.len()) + (sk - sl - sm) / nk).max(0.0)
}

fn run_mi(x: &[f64], labels: &[i64], k: usize) -> Result<f64, Error> {
    let (lf, lu) = workspace_len(x.len());
    mutual_information(x, labels, k, &mut vec![0.0; lf], &mut vec![0; lu])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The sorted-window estimator equals the brute-force definition, ties and rare labels
    /// included.
    #[test]
    fn mutual_information_equals_the_brute_force_definition(
        data in prop::collection::vec((prop_oneof![(-4i32..4).prop_map(f64::from), -50.0f64..50.0], 0i64..4), 2..80),
        k in 1usize..12,
    ) {
        let (x, labels): (Vec<f64>, Vec<i64>) = data.into_iter().unzip();
        let got = run_mi(&x, &labels, k).unwrap();
        let want = brute_mi(&x, &labels, k);
        prop_assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }

    /// I(s; z) does not depend on the scale or offset of z.
    #[test]
    fn mutual_information_is_affine_invariant(seed in any::<u64>(), scale in 0.01f64..100.0, shift in -1e3f64..1e3) {
        let mut rng = Normals::new(seed);
        let labels: Vec<i64> = (0..300).map(|_| rng.below(3) as i64).collect();
        let x: Vec<f64> = labels.iter().map(|&l| l as f64 + rng.next_normal()).collect();
        let y: Vec<f64> = x.iter().map(|v| scale * v + shift).collect();
        let (a, b) = (run_mi(&x, &labels, 10).unwrap(), run_mi(&y, &labels, 10).unwrap());
        prop_assert!((a - b).abs() < 1e-3, "{a} vs {b}");
    }
}

#[test]
fn digamma_at_integers() {
    // scipy.special.digamma.
    for (n, want) in [
        (1, -0.5772156649015329),
        (2, 0.42278433509846713),
        (10, 2.251752589066721),
        (15, 2.6743466616607936),
        (16, 2.7410133283274605),
        (100, 4.600161852738087),
        (1_000_000, 13.815510057964275),
    ] {
        assert!((digamma_int(n) - want).abs() < 1e-12, "psi({n})");
    }
    assert_eq!(digamma_int(0), f64::NEG_INFINITY);
}

/// A quantised latent that equals the factor carries all its information (an exact estimator
/// without a tie-break would return 0 here).
#[test]
fn quantised_latents_keep_their_information() {
    let labels: Vec<i64> = (0..1000).map(|t| (t % 4 == 0) as i64).collect();
    let x: Vec<f64> = labels.iter().map(|&l| 3.0 * l as f64 - 1.0).collect();
    let h = entropy_from_counts(&[750, 250], 1000);
    let mi = run_mi(&x, &labels, 10).unwrap();
    assert!((mi / h - 1.0).abs() < 0.02, "NMI {}", mi / h);
    // Constant: the tie-break is an arbitrary order, independent of the labels: about 0.
    assert!(run_mi(&vec![2.0; 1000], &labels, 10).unwrap() < 0.02 * h);
}

#[test]
fn plug_in_entropy() {
    assert!((entropy_from_counts(&[5, 5], 10) - core::f64::consts::LN_2).abs() < 1e-15);
    assert!((entropy_from_counts(&[1, 1, 1, 1], 4) - 4f64.ln()).abs() < 1e-15);
    assert_eq!(entropy_from_counts(&[7], 7), 0.0);
}

/// Latents that are the factors themselves (plus tiny noise): InfoM = InfoC = 1, up to the
/// estimator's sampling error (off-diagonal NMI of independent variables is about 0.01 at
/// n = 3000 and 0.003 at n = 20000, for scikit-learn's estimator as for this one).
#[test]
fn factors_as_latents_are_modular_and_compact() {
    let (n, f) = (20_000, 3);
    let mut rng = Normals::new(4);
    let factors: Vec<i64> = (0..n * f)
        .map(|i| rng.below(2 + (i % f) as u64) as i64)
        .collect();
    let latents: Vec<f64> = factors
        .iter()
        .map(|&s| s as f64 + 1e-6 * rng.next_normal())
        .collect();
    let (lf, lu) = workspace_len(n);
    let (mut m, mut active) = (vec![0.0; f * f], vec![false; f]);
    let s = infomec(
        &factors,
        f,
        &latents,
        f,
        10,
        &mut m,
        &mut active,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
    )
    .unwrap();
    assert_eq!(s.n_active, f);
    for i in 0..f {
        assert!(m[i * f + i] > 0.99, "NMI {m:?}");
    }
    assert!(
        s.infom.unwrap() > 0.99 && s.infoc.unwrap() > 0.99,
        "{s:?} {m:?}"
    );
    // Permuting the latents changes nothing.
    let permuted: Vec<f64> = latents.chunks(f).flat_map(|r| [r[2], r[0], r[1]]).collect();
    let s2 = infomec(
        &factors,
        f,
        &permuted,
        f,
        10,
        &mut m,
        &mut active,
        &mut vec![0.0; lf],
        &mut vec![0; lu],
    )
    .unwrap();
    assert!((s2.infom.unwrap() - s.infom.unwrap()).abs() < 1e-12);
}

#[test]
fn info_m_and_c_from_known_nmi() {
    let identity = [1.0, 0.0, 0.0, 1.0];
    let s = info_m_c(&identity, 2, 2, &[true, true]).unwrap();
    assert_eq!((s.infom, s.infoc), (Some(1.0), Some(1.0)));
    let uniform = [0.5; 4];
    let s = info_m_c(&uniform, 2, 2, &[true, true]).unwrap();
    assert_eq!((s.infom, s.infoc), (Some(0.0), Some(0.0)));
    // One latent carries both factors: compact but not modular.
    let shared = [0.9, 0.0, 0.0, 0.9, 0.0, 0.0];
    let s = info_m_c(&shared, 2, 3, &[true, true, false]).unwrap();
    // Latent 0 splits evenly (share 1/2 -> 0), latent 1 has no information (share 1/F -> 0).
    assert_eq!(s.infom, Some(0.0));
    assert_eq!(s.infoc, Some(1.0));
    assert_eq!(s.n_active, 2);
    // Undefined: one factor (InfoM), one active latent (InfoC).
    let s = info_m_c(&[0.3, 0.1], 1, 2, &[true, false]).unwrap();
    assert_eq!((s.infom, s.infoc), (None, None));
    assert!(info_m_c(&[f64::NAN, 0.0], 1, 2, &[true, true]).is_err());
}

#[test]
fn bad_input_is_an_error() {
    let (lf, lu) = workspace_len(6);
    let (mut wf, mut wu) = (vec![0.0; lf], vec![0; lu]);
    let mut out = [0.0; 4];
    let latents = [0.1, 1.0, 0.2, 2.0, 0.3, 3.0, 0.4, 4.0, 0.5, 5.0, 0.6, 6.0];
    // A factor with one level.
    let single = [1i64, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1];
    assert_eq!(
        nmi(&single, 2, &latents, 2, 3, &mut out, &mut wf, &mut wu),
        Err(Error::SingleClass)
    );
    // Non-finite latents.
    let good = [0i64, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1];
    let mut nan = latents;
    nan[5] = f64::INFINITY;
    assert_eq!(
        nmi(&good, 2, &nan, 2, 3, &mut out, &mut wf, &mut wu),
        Err(Error::NonFinite { row: 2, col: 1 })
    );
    // Factors and latents of different lengths; k = 0.
    assert!(matches!(
        nmi(&good[..10], 2, &latents, 2, 3, &mut out, &mut wf, &mut wu),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        nmi(&good, 2, &latents, 2, 0, &mut out, &mut wf, &mut wu),
        Err(Error::InvalidParameter(_))
    ));
    // Every latent constant: none is active.
    let mut active = [false; 2];
    assert!(matches!(
        active_latents(&[1.0, 2.0, 1.0, 2.0], 2, &mut active),
        Err(Error::InvalidParameter(_))
    ));
    // Huge finite values neither overflow the range nor the standardisation.
    let huge = [
        f64::MAX,
        -f64::MAX,
        -f64::MAX,
        f64::MAX,
        f64::MAX,
        0.0,
        0.0,
        1.0,
        -f64::MAX,
        2.0,
        1.0,
        3.0,
    ];
    assert_eq!(active_latents(&huge, 2, &mut active), Ok(2));
    nmi(&good, 2, &huge, 2, 3, &mut out, &mut wf, &mut wu).unwrap();
    assert!(out.iter().all(|v| v.is_finite() && *v >= 0.0));
}
