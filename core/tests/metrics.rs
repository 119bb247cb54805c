//! Properties of the metrics against their definitions.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]
// Matrix code indexes (i, j) pairs; iterator chains would hide the maths.
#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use unmix::Error;
use unmix::metrics::assignment::{
    linear_sum_assignment, linear_sum_assignment_square, workspace_len,
};
use unmix::metrics::sparsity::{concentration, rank_features, top_count};
use unmix::metrics::{
    amari_index, auroc, auroc_weighted, correlation::Method, hoyer_sparsity, mcc, split_fractions,
};

/// The pairwise definition, O(n^2).
fn brute_auroc(s: &[f64], y: &[bool], w: &[f64]) -> f64 {
    let (mut num, mut wp, mut wn) = (0.0, 0.0, 0.0);
    for i in 0..s.len() {
        if y[i] {
            wp += w[i]
        } else {
            wn += w[i]
        }
        for j in 0..s.len() {
            if y[i] && !y[j] {
                num += w[i]
                    * w[j]
                    * if s[i] > s[j] {
                        1.0
                    } else if s[i] == s[j] {
                        0.5
                    } else {
                        0.0
                    };
            }
        }
    }
    num / (wp * wn)
}

fn scored() -> impl Strategy<Value = (Vec<f64>, Vec<bool>, Vec<f64>)> {
    (2usize..60).prop_flat_map(|n| {
        (
            prop::collection::vec(prop_oneof![(-5i32..5).prop_map(f64::from), -1e3f64..1e3], n),
            prop::collection::vec(any::<bool>(), n),
            prop::collection::vec(prop_oneof![Just(0.0), 0.1f64..5.0], n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn auroc_equals_the_pairwise_definition((s, y, w) in scored()) {
        let ones = vec![1.0; s.len()];
        match auroc(&s, &y, &mut vec![0; s.len()]) {
            Ok(a) => prop_assert!((a - brute_auroc(&s, &y, &ones)).abs() < 1e-12),
            Err(e) => prop_assert!(e == Error::SingleClass && (y.iter().all(|v| *v) || y.iter().all(|v| !*v))),
        }
        match auroc_weighted(&s, &y, &w, &mut vec![0; s.len()]) {
            Ok(a) => prop_assert!((a - brute_auroc(&s, &y, &w)).abs() < 1e-12),
            Err(e) => prop_assert_eq!(e, Error::SingleClass),
        }
    }

    #[test]
    fn auroc_symmetries((s, y, _) in scored(), shift in -10.0f64..10.0) {
        prop_assume!(y.iter().any(|v| *v) && y.iter().any(|v| !*v));
        let a = auroc(&s, &y, &mut vec![0; s.len()]).unwrap();
        let neg: Vec<f64> = s.iter().map(|v| -v).collect();
        prop_assert!((auroc(&neg, &y, &mut vec![0; s.len()]).unwrap() - (1.0 - a)).abs() < 1e-12);
        // Strictly increasing maps change nothing (ties stay ties).
        let mapped: Vec<f64> = s.iter().map(|v| (v / 1e3).atan() * 7.0 + shift).collect();
        // In floating point a strictly increasing map can still merge close scores: require that
        // it kept every strict order.
        let strict = (0..s.len()).all(|i| (0..s.len()).all(|j| (s[i] < s[j]) == (mapped[i] < mapped[j])));
        prop_assume!(strict);
        let b = auroc(&mapped, &y, &mut vec![0; s.len()]).unwrap();
        prop_assert!((a - b).abs() < 1e-12, "{} vs {}", a, b);
        let flipped: Vec<bool> = y.iter().map(|v| !v).collect();
        prop_assert!((auroc(&s, &flipped, &mut vec![0; s.len()]).unwrap() - (1.0 - a)).abs() < 1e-12);
    }

    #[test]
    fn assignment_is_optimal_against_brute_force(nr in 1usize..=6, nc in 1usize..=7, cells in prop::collection::vec(prop_oneof![(0i32..4).prop_map(f64::from), -50.0f64..50.0], 42), maximize in any::<bool>()) {
        let cost: Vec<f64> = cells[..nr * nc].to_vec();
        let (lf, lu) = workspace_len(nr, nc);
        let (mut wf, mut wu, mut cols) = (vec![0.0; lf], vec![0; lu], vec![0; nr]);
        let total = linear_sum_assignment(&cost, nr, nc, maximize, &mut cols, &mut wf, &mut wu).unwrap();
        // Brute force over injective maps from the smaller side into the larger.
        let (small, large) = (nr.min(nc), nr.max(nc));
        let at = |a: usize, b: usize| if nr <= nc { cost[a * nc + b] } else { cost[b * nc + a] };
        let mut best = if maximize { f64::NEG_INFINITY } else { f64::INFINITY };
        let mut perm: Vec<usize> = (0..large).collect();
        permute(&mut perm, 0, &mut |p| {
            let t: f64 = (0..small).map(|a| at(a, p[a])).sum();
            if (maximize && t > best) || (!maximize && t < best) { best = t; }
        });
        prop_assert!((total - best).abs() < 1e-9, "{} vs brute force {}", total, best);
    }

    #[test]
    fn square_form_gives_the_same_result(cells in prop::collection::vec(-9.0f64..9.0, 25), maximize in any::<bool>()) {
        let mut m = [[0.0; 5]; 5];
        for (i, v) in cells.iter().enumerate() { m[i / 5][i % 5] = *v; }
        let (cols_sq, total_sq) = linear_sum_assignment_square(&m, maximize).unwrap();
        let (lf, lu) = workspace_len(5, 5);
        let (mut wf, mut wu, mut cols) = (vec![0.0; lf], vec![0; lu], vec![0; 5]);
        let total = linear_sum_assignment(&cells, 5, 5, maximize, &mut cols, &mut wf, &mut wu).unwrap();
        prop_assert_eq!(cols_sq.to_vec(), cols);
        prop_assert_eq!(total_sq.to_bits(), total.to_bits());
    }

    #[test]
    fn mcc_is_one_under_signed_permutation_and_scaling(seed in any::<u64>(), k in 1usize..6, scales in prop::collection::vec(prop_oneof![-5.0f64..-0.1, 0.1f64..5.0], 6), method in prop_oneof![Just(Method::Pearson), Just(Method::Spearman)]) {
        let n = 200;
        let mut g = unmix::random::Normals::new(seed);
        let truth: Vec<f64> = (0..n * k).map(|_| g.next_normal()).collect();
        let perm: Vec<usize> = (0..k).rev().collect();
        let mut est = vec![0.0; n * k];
        for r in 0..n {
            for j in 0..k {
                est[r * k + j] = scales[j] * truth[r * k + perm[j]] + 3.0;
            }
        }
        let (lf, lu) = mcc::workspace_len(n, k, k, method);
        let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; k]);
        let score = mcc::mcc(&truth, k, &est, k, method, &mut pairs, &mut wf, &mut wu).unwrap();
        prop_assert!((score - 1.0).abs() < 1e-12, "{}", score);
        for (i, p) in pairs.iter().enumerate() {
            prop_assert_eq!(perm[*p], i);
        }
    }

    #[test]
    fn amari_is_zero_for_scaled_permutations_of_the_inverse(seed in any::<u64>(), k in 2usize..6) {
        let mut g = unmix::random::Normals::new(seed);
        // A = I + small noise keeps A well conditioned; W = P D A^-1 via Gauss-Jordan.
        let a: Vec<f64> = (0..k * k).map(|i| if i % (k + 1) == 0 { 2.0 } else { 0.0 } + 0.3 * g.next_normal()).collect();
        let inv = invert(&a, k);
        let mut w = vec![0.0; k * k];
        for i in 0..k {
            let (src, scale) = ((i + 1) % k, if i % 2 == 0 { 3.0 } else { -0.5 });
            for j in 0..k { w[i * k + j] = scale * inv[src * k + j]; }
        }
        let index = amari_index(&w, &a, k, k, &mut vec![0.0; k * k]).unwrap();
        prop_assert!(index < 1e-12, "{}", index);
    }

    #[test]
    fn sparsity_is_in_unit_interval(c in prop::collection::vec(-1e6f64..1e6, 2..70)) {
        prop_assume!(c.iter().any(|v| *v != 0.0));
        let s = hoyer_sparsity(&c).unwrap();
        prop_assert!((0.0..=1.0).contains(&s));
        let mut one_hot = vec![0.0; c.len()];
        one_hot[c.len() / 2] = c[0].abs() + 1.0;
        prop_assert_eq!(hoyer_sparsity(&one_hot).unwrap(), 1.0);
        prop_assert!(hoyer_sparsity(&vec![c[0].abs() + 1.0; c.len()]).unwrap() < 1e-12);
    }
}

fn permute(p: &mut Vec<usize>, i: usize, f: &mut impl FnMut(&[usize])) {
    if i == p.len() {
        return f(p);
    }
    for j in i..p.len() {
        p.swap(i, j);
        permute(p, i + 1, f);
        p.swap(i, j);
    }
}

fn invert(a: &[f64], k: usize) -> Vec<f64> {
    let mut m: Vec<f64> = Vec::new();
    for i in 0..k {
        m.extend_from_slice(&a[i * k..(i + 1) * k]);
        m.extend((0..k).map(|j| if i == j { 1.0 } else { 0.0 }));
    }
    let w = 2 * k;
    for c in 0..k {
        let p = (c..k)
            .max_by(|&x, &y| m[x * w + c].abs().total_cmp(&m[y * w + c].abs()))
            .unwrap();
        for j in 0..w {
            m.swap(c * w + j, p * w + j);
        }
        let d = m[c * w + c];
        for j in 0..w {
            m[c * w + j] /= d;
        }
        for r in 0..k {
            if r != c {
                let f = m[r * w + c];
                for j in 0..w {
                    m[r * w + j] -= f * m[c * w + j];
                }
            }
        }
    }
    (0..k)
        .flat_map(|i| m[i * w + k..i * w + w].to_vec())
        .collect()
}

#[test]
fn fuzzer_findings_stay_fixed() {
    // Huge weights overflowed W+ W- into NaN.
    let w = [1e308, 1e308, 5e307, 1e308];
    let a = auroc_weighted(
        &[0.1, 0.4, 0.35, 0.8],
        &[false, false, true, true],
        &w,
        &mut [0; 4],
    )
    .unwrap();
    let b = auroc_weighted(
        &[0.1, 0.4, 0.35, 0.8],
        &[false, false, true, true],
        &[2.0, 2.0, 1.0, 2.0],
        &mut [0; 4],
    )
    .unwrap();
    assert!(a.is_finite() && (a - b).abs() < 1e-15, "{a} vs {b}");
    // Rounding must not carry a weighted AUROC past 1.
    let w: Vec<f64> = (0..50).map(|i| 0.1 + 0.37 * f64::from(i % 7)).collect();
    let s: Vec<f64> = (0..50).map(f64::from).collect();
    let y: Vec<bool> = (0..50).map(|i| i >= 25).collect();
    assert!(auroc_weighted(&s, &y, &w, &mut [0; 50]).unwrap() <= 1.0);
    // A subnormal AUROC_rest overflowed the concentration to infinity.
    assert_eq!(concentration(0.9, 5e-324), Err(Error::Overflow));
}

#[test]
fn edge_cases_are_errors() {
    let mut s8 = [0u64; 8];
    assert_eq!(
        auroc(&[1.0, 2.0], &[true, true], &mut s8),
        Err(Error::SingleClass)
    );
    assert_eq!(auroc::<f64>(&[], &[], &mut s8), Err(Error::SingleClass));
    assert!(matches!(
        auroc(&[1.0, f64::NAN], &[true, false], &mut s8),
        Err(Error::NonFinite { row: 1, .. })
    ));
    assert!(matches!(
        auroc(&[1.0, 2.0], &[true], &mut s8),
        Err(Error::DimensionMismatch { .. })
    ));
    assert_eq!(
        auroc_weighted(&[1.0, 2.0], &[true, false], &[1.0, 0.0], &mut [0; 2]),
        Err(Error::SingleClass)
    );
    assert!(matches!(
        auroc_weighted(&[1.0, 2.0], &[true, false], &[1.0, -1.0], &mut [0; 2]),
        Err(Error::InvalidParameter(_))
    ));
    assert_eq!(auroc(&[-0.0, 0.0], &[true, false], &mut s8), Ok(0.5)); // -0 ties with +0
    assert!(matches!(
        hoyer_sparsity(&[0.0, 0.0]),
        Err(Error::InvalidParameter(_))
    ));
    assert!(matches!(
        hoyer_sparsity(&[1.0]),
        Err(Error::TooFew {
            found: 1,
            needed: 2,
            ..
        })
    ));
    assert!(matches!(
        split_fractions(&[1.0, -1.0], &mut [0.0; 2]),
        Err(Error::InvalidParameter(_))
    ));
    assert!(matches!(
        split_fractions(&[0.0, 0.0], &mut [0.0; 2]),
        Err(Error::InvalidParameter(_))
    ));
    // Counts whose sum overflows still give fractions that sum to 1.
    let mut f = [0.0; 3];
    split_fractions(&[f64::MAX, f64::MAX, 0.0], &mut f).unwrap();
    assert_eq!(f, [0.5, 0.5, 0.0]);
    assert!(matches!(
        top_count(10, 0.0),
        Err(Error::InvalidParameter(_))
    ));
    assert!(matches!(
        top_count(10, 1.0),
        Err(Error::InvalidParameter(_))
    ));
    assert!(matches!(
        top_count(1, 0.5),
        Err(Error::TooFew {
            found: 1,
            needed: 2,
            ..
        })
    ));
    assert_eq!(top_count(8, 0.25), Ok(2));
    assert_eq!(top_count(3, 0.01), Ok(1));
    assert_eq!(top_count(3, 0.99), Ok(2));
    let mut order = [0; 4];
    rank_features(&[0.1, 0.5, 0.5, 0.2], &mut order).unwrap();
    assert_eq!(order, [1, 2, 3, 0]);
    assert!((concentration(0.8, 0.64).unwrap() - 0.25).abs() < 1e-15);
    assert!(concentration(0.8, 0.0).is_err() && concentration(1.5, 0.5).is_err());
    assert!(matches!(
        amari_index(&[1.0], &[1.0], 1, 1, &mut [0.0]),
        Err(Error::TooFew {
            what: "components",
            found: 1,
            needed: 2
        })
    ));
    // Finite matrices whose product would overflow: the index is scale invariant.
    let (w, a) = ([1e300, 0.0, 0.0, 2e300], [0.0, 3e300, 1e300, 0.0]);
    assert_eq!(amari_index(&w, &a, 2, 2, &mut [0.0; 4]), Ok(0.0));
    assert!(matches!(
        amari_index(&[1.0, f64::NAN, 0.0, 1.0], &a, 2, 2, &mut [0.0; 4]),
        Err(Error::NonFinite { row: 0, col: 1 })
    ));
    assert!(matches!(
        amari_index(
            &[1.0, 0.0, 0.0, 0.0],
            &[1.0, 0.0, 0.0, 1.0],
            2,
            2,
            &mut [0.0; 4]
        ),
        Err(Error::InvalidParameter(_))
    ));
    let (lf, lu) = workspace_len(2, 2);
    let (mut wf, mut wu, mut cols) = (vec![0.0; lf], vec![0; lu], vec![0; 2]);
    assert_eq!(
        linear_sum_assignment(
            &[f64::INFINITY, f64::INFINITY, 1.0, 1.0],
            2,
            2,
            false,
            &mut cols,
            &mut wf,
            &mut wu
        ),
        Err(Error::Infeasible)
    );
    assert!(matches!(
        linear_sum_assignment(
            &[1.0, f64::NAN, 1.0, 1.0],
            2,
            2,
            false,
            &mut cols,
            &mut wf,
            &mut wu
        ),
        Err(Error::InvalidParameter(_))
    ));
    assert_eq!(
        linear_sum_assignment(&[], 0, 3, false, &mut [], &mut wf, &mut wu),
        Ok(0.0)
    );
    // A constant column makes correlations undefined.
    let (lf, lu) = mcc::workspace_len(3, 2, 2, Method::Pearson);
    let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; 2]);
    let truth = [1.0, 2.0, 2.0, 2.0, 3.0, 2.0];
    let est = [1.0, 0.0, 2.0, 1.0, 3.0, 5.0];
    assert_eq!(
        mcc::mcc(
            &truth,
            2,
            &est,
            2,
            Method::Pearson,
            &mut pairs,
            &mut wf,
            &mut wu
        ),
        Err(Error::ZeroVariance { col: 1 })
    );
}
