//! The streaming fit (`FastIca::fit_white`): a whitener fitted from moments accumulated one sample
//! at a time, then FastICA over the same samples. It must agree with the in-memory fit (whose
//! moments are summed in another order, so to rounding, not bit for bit), refuse what it cannot
//! do, and leave the model unchanged when it fails.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]

use unmix::Error;
use unmix::ica::{
    FastIca, FastIcaOptions, InMemory, Portable, WInit, WhitenMode, fit_scratch_len,
    fit_workspace_len, model_len, white_fit_workspace_len,
};
use unmix::moments::Moments;
use unmix::whiten::{WhitenOptions, WhitenWorkspace, Whitener};

const N: usize = 3000;
const D: usize = 3;

/// Three independent non-Gaussian sources (uniform, square wave, a skewed one) mixed with offsets.
fn samples() -> Vec<f64> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut x = Vec::with_capacity(N * D);
    for t in 0..N {
        let a = uniform();
        let b = if (t / 17) % 2 == 0 { 1.0 } else { -1.0 };
        let c = {
            let u = uniform() + 0.5;
            u * u * u - 0.25
        };
        x.extend_from_slice(&[1.0 + a + 0.4 * b, -2.0 + 0.3 * a - b + c, 0.5 * b + 2.0 * c]);
    }
    x
}

fn streamed_whitener(x: &[f64]) -> Whitener<f64, D, D> {
    let mut moments = Moments::<D>::new();
    for row in x.chunks_exact(D) {
        moments.accumulate(row).unwrap();
    }
    let mut whitener = Whitener::new();
    let mut ws = WhitenWorkspace::new();
    whitener
        .fit(moments.as_ref(), &WhitenOptions::DEFAULT, &mut ws)
        .unwrap();
    whitener
}

#[test]
fn streaming_fit_agrees_with_the_in_memory_fit() {
    let x = samples();
    let opts = FastIcaOptions {
        ica: unmix::ica::IcaOptions {
            tol: 1e-10,
            ..unmix::ica::IcaOptions::DEFAULT
        },
        ..FastIcaOptions::DEFAULT
    };
    let mut reference = FastIca::<f64, D, D>::new();
    let mut scratch = vec![0.0; fit_scratch_len(N, D, D)];
    let mut ws = vec![0.0; fit_workspace_len(D, D)];
    let expected = reference
        .fit(&x, &opts, WInit::Seed(3), &mut scratch, &mut ws)
        .unwrap();

    let whitener = streamed_whitener(&x);
    let mut model = FastIca::<f64, D, D>::new();
    let mut z = vec![0.0; N * D];
    let mut exec = InMemory::new(&x, &mut z);
    let mut staging = [0.0; model_len(D, D)];
    let mut ws = [0.0; white_fit_workspace_len(D)];
    let info = model
        .fit_white(
            &whitener,
            &mut exec,
            Portable,
            &opts,
            WInit::Seed(3),
            &mut staging,
            &mut ws,
        )
        .unwrap();
    assert!(info.converged && expected.converged);
    assert_eq!(info.n_iter, expected.n_iter);
    assert_eq!(model.view().whitener().info().n_samples, N as u64);
    for (name, a, b) in [
        (
            "components",
            model.view().components(),
            reference.view().components(),
        ),
        ("mixing", model.view().mixing(), reference.view().mixing()),
        ("mean", model.view().mean(), reference.view().mean()),
    ] {
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = a
            .iter()
            .zip(b)
            .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
        assert!(err <= 1e-9 * scale, "{name}: {err:e} of {scale:e}");
    }
}

#[test]
fn streaming_fit_refuses_bad_input_and_leaves_the_model_unchanged() {
    let x = samples();
    let whitener = streamed_whitener(&x);
    let mut model = FastIca::<f64, D, D>::new();
    let (mut staging, mut ws) = ([0.0; model_len(D, D)], [0.0; white_fit_workspace_len(D)]);
    let opts = FastIcaOptions::DEFAULT;
    let mut z = vec![0.0; N * D];
    model
        .fit_white(
            &whitener,
            &mut InMemory::new(&x, &mut z),
            Portable,
            &opts,
            WInit::Seed(1),
            &mut staging,
            &mut ws,
        )
        .unwrap();
    let before = model.clone();
    let same = |m: &FastIca<f64, D, D>| {
        m.view().components() == before.view().components()
            && m.view().mixing() == before.view().mixing()
            && m.view().info() == before.view().info()
    };

    // A workspace one element short.
    let r = model.fit_white(
        &whitener,
        &mut InMemory::new(&x, &mut z),
        Portable,
        &opts,
        WInit::Seed(2),
        &mut staging,
        &mut ws[1..],
    );
    assert!(matches!(r, Err(Error::BufferTooSmall { .. })), "{r:?}");
    assert!(same(&model));

    // A non-finite sample: found when the executor whitens the rows.
    let mut bad = x.clone();
    bad[10 * D + 1] = f64::NAN;
    let r = model.fit_white(
        &whitener,
        &mut InMemory::new(&bad, &mut z),
        Portable,
        &opts,
        WInit::Seed(2),
        &mut staging,
        &mut ws,
    );
    assert_eq!(r, Err(Error::NonFinite { row: 10, col: 1 }));
    assert!(same(&model));

    // A single sample: too few for the iterations.
    let r = model.fit_white(
        &whitener,
        &mut InMemory::new(&x[..D], &mut z),
        Portable,
        &opts,
        WInit::Seed(2),
        &mut staging,
        &mut ws,
    );
    assert!(matches!(r, Err(Error::TooFewSamples { n: 1, .. })), "{r:?}");
    assert!(same(&model));

    // No whitening to take: refused.
    let none = FastIcaOptions {
        whiten: WhitenMode::None,
        ..opts
    };
    let r = model.fit_white(
        &whitener,
        &mut InMemory::new(&x, &mut z),
        Portable,
        &none,
        WInit::Seed(2),
        &mut staging,
        &mut ws,
    );
    assert!(matches!(r, Err(Error::InvalidParameter(_))), "{r:?}");
    assert!(same(&model));
}
