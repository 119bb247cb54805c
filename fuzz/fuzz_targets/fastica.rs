//! FastICA on small arbitrary data (constant columns, duplicates, huge and tiny magnitudes,
//! non-finite values) with arbitrary options: never a panic; a model or an error; a model is
//! finite and its transform gives finite sources or `Overflow`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::ica::{
    Algorithm, ContrastKind, FastIcaBuf, FastIcaOptions, IcaOptions, LogCosh, WInit, WhitenMode,
    fit_workspace_len, model_len,
};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let d = usize::from(b.byte() % 4) + 1;
    let k = usize::from(b.byte()) % d + 1;
    let flags = b.byte();
    let contrast = match flags % 4 {
        0 => ContrastKind::LogCosh(LogCosh::DEFAULT),
        1 => ContrastKind::LogCosh(LogCosh::new(2.0).unwrap()),
        2 => ContrastKind::Exp,
        _ => ContrastKind::Cube,
    };
    let whiten = [
        WhitenMode::UnitVariance,
        WhitenMode::ArbitraryVariance,
        WhitenMode::None,
    ][usize::from(flags >> 2) % 3];
    let opts = FastIcaOptions {
        ica: IcaOptions {
            algorithm: if flags & 0x10 != 0 {
                Algorithm::Deflation
            } else {
                Algorithm::Parallel
            },
            max_iter: usize::from(b.byte() % 30), // includes the invalid 0
            tol: [1e-4, 0.0, 1e-12, -1.0][usize::from(flags >> 5) % 4],
        },
        contrast,
        whiten,
        canonical: flags & 0x80 != 0,
        ..FastIcaOptions::DEFAULT
    };
    let seeded = b.byte() & 1 == 0;
    let w_init: Vec<f64> = (0..k * k).map(|_| b.value()).collect();
    let init = if seeded {
        WInit::Seed(u64::from(flags))
    } else {
        WInit::Matrix(&w_init)
    };
    let mut x = Vec::new();
    while !b.is_empty() && x.len() < 240 {
        x.push(b.value());
    }
    x.truncate(x.len() / d * d);
    let n = x.len() / d;

    let mut storage = vec![0.0f64; model_len(d, k)];
    let Ok(mut model) = FastIcaBuf::new(d, k, &mut storage) else {
        return;
    };
    let (mut z, mut ws) = (
        vec![0.0; unmix::ica::fit_scratch_len(n, d, k)],
        vec![0.0; fit_workspace_len(d, k)],
    );
    if model.fit(&x, &opts, init, &mut z, &mut ws).is_err() {
        return;
    }
    let view = model.view();
    for part in [
        view.components(),
        view.mixing(),
        view.unmixing(),
        view.mean(),
    ] {
        assert!(
            part.iter().all(|v| v.is_finite()),
            "fit succeeded with a non-finite model"
        );
    }
    let mut s = vec![0.0; n * k];
    if view.transform_rows(&x, &mut s).is_ok() {
        assert!(s.iter().all(|v| v.is_finite()));
    }
});
