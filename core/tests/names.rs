//! Every option's names come from one table: each name parses to a value that spells it back, the
//! tables are complete, and an unknown name is an error that lists the accepted ones.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]

use core::str::FromStr;
use unmix::ica::{Algorithm, ContrastKind, LogCosh, WhitenMode};
use unmix::metrics::correlation::Method as Correlation;
use unmix::whiten::{Method, Rotation};

fn round_trip<T>(names: &[&str], all: &[T], as_str: fn(&T) -> &'static str)
where
    T: FromStr<Err = unmix::names::UnknownName> + PartialEq + core::fmt::Debug,
{
    assert_eq!(
        names.len(),
        all.len(),
        "a value without a name, or a name too many"
    );
    for (name, value) in names.iter().zip(all) {
        assert_eq!(as_str(value), *name);
        assert_eq!(&name.parse::<T>().unwrap(), value);
    }
    let err = "no such name".parse::<T>().unwrap_err();
    assert_eq!(err.expected, names);
    let message = err.to_string();
    assert!(names.iter().all(|n| message.contains(n)), "{message}");
}

#[test]
fn every_name_round_trips_and_unknown_names_fail() {
    round_trip(
        Algorithm::NAMES,
        &[Algorithm::Parallel, Algorithm::Deflation],
        Algorithm::as_str,
    );
    round_trip(
        WhitenMode::NAMES,
        &[
            WhitenMode::UnitVariance,
            WhitenMode::ArbitraryVariance,
            WhitenMode::None,
        ],
        WhitenMode::as_str,
    );
    round_trip(
        ContrastKind::NAMES,
        &[
            ContrastKind::LogCosh(LogCosh::default()),
            ContrastKind::Exp,
            ContrastKind::Cube,
        ],
        ContrastKind::as_str,
    );
    round_trip(Method::NAMES, &[Method::Pca, Method::Zca], Method::as_str);
    round_trip(
        Rotation::NAMES,
        &[Rotation::None, Rotation::Random { seed: 0 }],
        Rotation::as_str,
    );
    round_trip(
        Correlation::NAMES,
        &[Correlation::Pearson, Correlation::Spearman],
        Correlation::as_str,
    );
    // scikit-learn's spellings, which the model files and fixtures use.
    assert_eq!(WhitenMode::None.as_str(), "false");
    assert_eq!(
        "random".parse::<Rotation>().unwrap().with_seed(7),
        Rotation::Random { seed: 7 }
    );
    assert_eq!(Rotation::None.with_seed(7), Rotation::None);
}
