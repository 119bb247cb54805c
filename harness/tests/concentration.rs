//! The concentration pipeline against scikit-learn's `GradientBoostingClassifier` (committed
//! fixtures), its tie-breaking, seeds and one-vs-rest.

mod common;
use common::*;
use harness::concentration::{ConcentrationJob, Trees, concentration, rank_with_random_ties};
use harness::io::Matrix;

fn labels_of(name: &str) -> Vec<i64> {
    load(name).data.iter().map(|v| *v as i64).collect()
}

fn quiet() {}

/// Our pipeline over seeds 0..4 against scikit-learn's over the same seeds: the same top
/// features on every seed, and mean concentrations within the fixture's tolerance (the splits
/// differ, so single seeds need not agree).
#[test]
fn agrees_with_scikit_learn_on_average_over_seeds() {
    for case in manifest()["concentration"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let x = load(case["features"].as_str().unwrap());
        let y = labels_of(case["labels"].as_str().unwrap());
        let ours = concentration(&x, &y, None, &ConcentrationJob::default(), &quiet).unwrap();
        let expected_top: Vec<u64> = case["runs"][0]["top_features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        for run in &ours.runs {
            let top: Vec<u64> = run.top_features.iter().map(|&f| f as u64).collect();
            assert_eq!(top, expected_top, "{name}, seed {}", run.seed);
        }
        let theirs = case["mean_concentration"].as_f64().unwrap();
        let tol = case["tolerance_mean_concentration"].as_f64().unwrap();
        assert!(
            (ours.concentration.mean - theirs).abs() < tol,
            "{name}: ours {} (per seed {:?}) vs scikit-learn {theirs}",
            ours.concentration.mean,
            ours.concentration.per_seed
        );
        assert_eq!(ours.concentration.per_seed.len(), 5);
    }
}

/// The constructed case of issue 10: without a minimum split gain, forust takes splits whose
/// gain is `f32` rounding noise, the noise feature gets most splits and concentration turns
/// negative (about -0.45; scikit-learn gives +0.83). This keeps the reason for the setting
/// checked.
#[test]
fn without_a_minimum_gain_noise_ranks_first_in_the_777_row_case() {
    let x = load("concentration_binary_and_noise_777_x.npy");
    let y = labels_of("concentration_binary_and_noise_777_y.npy");
    let no_floor = ConcentrationJob {
        trees: Trees {
            gamma: 0.0,
            ..Trees::default()
        },
        ..ConcentrationJob::default()
    };
    let bad = concentration(&x, &y, None, &no_floor, &quiet).unwrap();
    let good = concentration(&x, &y, None, &ConcentrationJob::default(), &quiet).unwrap();
    assert!(
        bad.runs.iter().all(|r| r.top_features == vec![1]) && bad.concentration.mean < 0.0,
        "{:?}",
        bad.concentration
    );
    assert!(good.runs.iter().all(|r| r.top_features == vec![0]));
    assert!(good.runs.iter().all(|r| r.split_fractions[0] == 1.0));
    assert!(good.concentration.mean > 0.5);
}

/// Ties at the cut do not favour low indices: with every fraction equal, each feature leads
/// about equally often over many seeds.
#[test]
fn ties_are_broken_without_favouring_low_indices() {
    let d = 8;
    let mut first = vec![0usize; d];
    for seed in 0..4000 {
        first[rank_with_random_ties(&vec![0.125; d], seed)[0]] += 1;
    }
    for (i, count) in first.iter().enumerate() {
        assert!(
            (400..600).contains(count),
            "feature {i} led {count} of 4000 times: {first:?}"
        );
    }
    // Strict order is kept where there is no tie.
    assert_eq!(rank_with_random_ties(&[0.1, 0.5, 0.0, 0.4], 3)[..2], [1, 3]);
}

fn three_classes() -> (Matrix<f64>, Vec<i64>) {
    let mut g = unmix::random::Normals::new(5);
    let n = 600;
    let mut data = Vec::new();
    let mut y = Vec::new();
    for r in 0..n {
        let class = (r % 3) as i64;
        for j in 0..6 {
            let shift = if j == class as usize { 2.0 } else { 0.0 };
            data.push(g.next_normal() + shift);
        }
        y.push(class * 10);
    }
    (Matrix::new(n, 6, data).unwrap(), y)
}

/// More than two classes: one-vs-rest over every class, averaged per seed.
#[test]
fn more_than_two_classes_are_scored_one_vs_rest() {
    let (x, y) = three_classes();
    let job = ConcentrationJob {
        n_seeds: 3,
        ..ConcentrationJob::default()
    };
    let r = concentration(&x, &y, None, &job, &quiet).unwrap();
    assert_eq!(r.tasks, vec![0, 10, 20]);
    assert_eq!(r.runs.len(), 9);
    for run in &r.runs {
        // ceil(0.25 * 6) = 2 features; class c is carried by feature c / 10.
        assert!(
            run.top_features.contains(&((run.class / 10) as usize)),
            "{run:?}"
        );
    }
    for (s, seed_runs) in r.runs.chunks(3).enumerate() {
        let mean = seed_runs.iter().map(|r| r.concentration).sum::<f64>() / 3.0;
        assert!((r.concentration.per_seed[s] - mean).abs() < 1e-15);
    }
    assert!(r.concentration.std > 0.0);
    // Same input and seeds: same bits.
    let again = concentration(&x, &y, None, &job, &quiet).unwrap();
    assert_eq!(
        r.concentration.per_seed, again.concentration.per_seed,
        "not deterministic"
    );
}

#[test]
fn bad_inputs_are_clear_errors() {
    let (x, y) = three_classes();
    let job = ConcentrationJob::default();
    let err = |x: &Matrix<f64>, y: &[i64], g: Option<&[i64]>| {
        format!("{:#}", concentration(x, y, g, &job, &quiet).unwrap_err())
    };
    assert!(err(&x, &y[1..], None).contains("599 values for 600 rows"));
    assert!(err(&x, &vec![1; 600], None).contains("a single class (1)"));
    assert!(err(&x, &y, Some(&vec![4; 600])).contains("a single group (4)"));
    let mut bad = x.clone();
    bad.data[6 * 7 + 2] = f64::NAN;
    assert!(err(&bad, &y, None).contains("row 7, column 2"));
}
