//! Accuracy and algebra of the streaming moments.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]
// Matrix code indexes (i, j) pairs; iterator chains would hide the maths.
#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use unmix::Error;
use unmix::moments::{CrossMomentsBuf, Moments, MomentsBuf};
use unmix::random::Normals;

fn covariance(m: unmix::moments::MomentsRef<'_>, ddof: u32) -> Vec<f64> {
    let d = m.dim();
    let mut c = vec![0.0; d * d];
    m.covariance_into(ddof, &mut c).unwrap();
    c
}

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

/// One million f32 samples with mean 1e4 and unit variance (3 correlated features).
fn offset_samples() -> (Vec<f32>, Vec<f64>) {
    let mut normals = Normals::new(7);
    let mut x32 = Vec::with_capacity(3_000_000);
    for _ in 0..1_000_000 {
        let (a, b) = (normals.next_normal(), normals.next_normal());
        for v in [1e4 + a, 1e4 + 0.6 * a + 0.8 * b, -1e4 + b] {
            x32.push(v as f32);
        }
    }
    // The exact values the f32 path sees, in f64.
    let x64 = x32.iter().map(|v| f64::from(*v)).collect();
    (x32, x64)
}

#[test]
fn f32_covariance_of_offset_data_is_within_1e_7_of_f64() {
    let (x32, x64) = offset_samples();
    let mut m32 = Moments::<3>::new();
    m32.accumulate(&x32).unwrap();
    let mut m64 = Moments::<3>::new();
    m64.accumulate(&x64).unwrap();
    // Also one sample at a time, as firmware would feed it.
    let mut one = Moments::<3>::new();
    for row in x32.chunks(3) {
        one.accumulate(row).unwrap();
    }
    let reference = covariance(m64.as_ref(), 0);
    let err = max_rel_diff(&covariance(m32.as_ref(), 0), &reference);
    // The documented contract (moments.rs): 1e-7 relative.
    assert!(err < 1e-7, "chunked f32 path: relative error {err:e}");
    let err = max_rel_diff(&covariance(one.as_ref(), 0), &reference);
    assert!(err < 1e-7, "one-at-a-time f32 path: relative error {err:e}");

    // The test has teeth: the textbook one-pass formula in f32 fails it.
    let n = 1e6f32;
    let (mut s, mut ss) = ([0.0f32; 3], [0.0f32; 3]);
    for row in x32.chunks(3) {
        for j in 0..3 {
            s[j] += row[j];
            ss[j] += row[j] * row[j];
        }
    }
    let naive_var0 = f64::from(ss[0] / n - (s[0] / n) * (s[0] / n));
    let naive_err = (naive_var0 - reference[0]).abs() / reference[0];
    assert!(
        naive_err > 1e-4,
        "naive f32 sum of squares unexpectedly accurate: {naive_err:e}"
    );
}

#[test]
fn typed_and_buffer_moments_give_the_same_bits() {
    let (x32, _) = offset_samples();
    let x = &x32[..3 * 1000];
    let mut typed = Moments::<3>::new();
    let mut storage = vec![0.0; MomentsBuf::buffer_len(3)];
    let mut buf = MomentsBuf::new(3, &mut storage).unwrap();
    for chunk in x.chunks(3 * 37) {
        typed.accumulate(chunk).unwrap();
        buf.accumulate(chunk).unwrap();
    }
    assert_eq!(typed.as_ref().mean(), buf.as_ref().mean());
    assert_eq!(covariance(typed.as_ref(), 0), covariance(buf.as_ref(), 0));
}

#[test]
fn bad_rows_are_rejected_and_nothing_is_added() {
    let mut m = Moments::<2>::new();
    m.accumulate(&[1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let before = covariance(m.as_ref(), 0);
    assert_eq!(
        m.accumulate(&[1.0, 2.0, f64::NAN, 1.0]),
        Err(Error::NonFinite { row: 3, col: 0 })
    );
    assert_eq!(
        m.accumulate(&[1.0, f64::INFINITY]),
        Err(Error::NonFinite { row: 2, col: 1 })
    );
    assert_eq!(
        m.accumulate(&[1.0, 2.0, 3.0]),
        Err(Error::RaggedRows { len: 3, width: 2 })
    );
    assert_eq!(m.as_ref().n_samples(), 2);
    assert_eq!(covariance(m.as_ref(), 0), before);
    let mut single = Moments::<2>::new();
    single.accumulate(&[1.0f32, 2.0]).unwrap();
    let mut out = [0.0; 4];
    assert_eq!(
        single.as_ref().covariance_into(0, &mut out),
        Err(Error::TooFewSamples { n: 1, needed: 2 })
    );
    assert!(MomentsBuf::new(0, &mut [0.0; 8]).is_err());
    assert!(matches!(
        MomentsBuf::new(3, &mut [0.0; 8]),
        Err(Error::BufferTooSmall { .. })
    ));
}

fn rows(d: usize) -> impl Strategy<Value = (usize, Vec<f64>)> {
    (2usize..80).prop_flat_map(move |n| (Just(n), prop::collection::vec(-1e3f64..1e3, n * d)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn merge_of_parts_equals_accumulate_of_whole((n, x) in rows(4), cut in 0usize..80) {
        let d = 4;
        let cut = cut.min(n) * d;
        let mut whole = Moments::<4>::new();
        whole.accumulate(&x).unwrap();
        let (mut a, mut b) = (Moments::<4>::new(), Moments::<4>::new());
        a.accumulate(&x[..cut]).unwrap();
        b.accumulate(&x[cut..]).unwrap();
        a.merge(b.as_ref()).unwrap();
        prop_assert_eq!(a.as_ref().n_samples(), whole.as_ref().n_samples());
        let scale = 1e3;
        for (p, q) in a.as_ref().mean().iter().zip(whole.as_ref().mean()) {
            prop_assert!((p - q).abs() <= 1e-12 * scale);
        }
        let (ca, cw) = (covariance(a.as_ref(), 0), covariance(whole.as_ref(), 0));
        for (p, q) in ca.iter().zip(&cw) {
            prop_assert!((p - q).abs() <= 1e-10 * scale * scale, "{} vs {}", p, q);
        }
    }

    #[test]
    fn cross_moments_equal_the_joint_covariance_block((n, x) in rows(5), cut in 0usize..80) {
        // x has 5 columns: the first 2 are "x", the last 3 are "y".
        let (dx, dy) = (2, 3);
        let xs: Vec<f64> = x.chunks(5).flat_map(|r| r[..dx].to_vec()).collect();
        let ys: Vec<f64> = x.chunks(5).flat_map(|r| r[dx..].to_vec()).collect();
        let cut = cut.min(n);
        let mut sa = vec![0.0; CrossMomentsBuf::buffer_len(dx, dy)];
        let mut sb = sa.clone();
        let mut a = CrossMomentsBuf::new(dx, dy, &mut sa).unwrap();
        let mut b = CrossMomentsBuf::new(dx, dy, &mut sb).unwrap();
        a.accumulate(&xs[..cut * dx], &ys[..cut * dy]).unwrap();
        b.accumulate(&xs[cut * dx..], &ys[cut * dy..]).unwrap();
        a.merge(b.as_ref()).unwrap();
        let mut cross = vec![0.0; dx * dy];
        a.as_ref().cross_covariance_into(1, &mut cross).unwrap();
        let mut joint = Moments::<5>::new();
        joint.accumulate(&x).unwrap();
        let full = covariance(joint.as_ref(), 1);
        for i in 0..dx {
            for j in 0..dy {
                prop_assert!((cross[i * dy + j] - full[i * 5 + dx + j]).abs() <= 1e-9 * 1e6);
            }
        }
    }
}
