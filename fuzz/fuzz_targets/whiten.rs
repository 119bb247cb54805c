//! Moments, whitening fit, transform and inverse on arbitrary data: never a panic; a successful fit
//! gives a finite model; transforms give finite values or `Overflow`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::moments::MomentsBuf;
use unmix::whiten::{self, Method, Rotation, WhitenOptions, WhitenerBuf};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let d = usize::from(b.byte() % 6) + 1;
    let k = usize::from(b.byte()) % (d + 1); // includes the invalid k = 0
    let flags = b.byte();
    let opts = WhitenOptions {
        method: if flags & 1 != 0 {
            Method::Zca
        } else {
            Method::Pca
        },
        rotation: if flags & 2 != 0 {
            Rotation::Random {
                seed: u64::from(flags),
            }
        } else {
            Rotation::None
        },
        ddof: u32::from((flags >> 2) & 3), // includes invalid values
        rank_rtol: [1e-10, 0.0, 0.5, -1.0, f64::NAN][usize::from(flags >> 4) % 5],
    };
    let chunk_rows = usize::from(b.byte() % 40) + 1;
    let mut x = Vec::new();
    while !b.is_empty() && x.len() < 4096 {
        x.push(b.value());
    }
    x.truncate(x.len() / d * d);

    let mut mbuf = vec![0.0; MomentsBuf::buffer_len(d)];
    let mut moments = MomentsBuf::new(d, &mut mbuf).unwrap();
    let mut accepted = Vec::new();
    for chunk in x.chunks(chunk_rows * d) {
        if moments.accumulate(chunk).is_ok() {
            accepted.extend_from_slice(chunk);
        }
    }
    let mut storage = vec![0.0f64; whiten::storage_len(d, d)];
    let mut ws = vec![0.0; whiten::workspace_len(d, d)];
    let Ok(mut w) = WhitenerBuf::new(d, k, &mut storage) else {
        assert_eq!(k, 0);
        return;
    };
    if w.fit(moments.as_ref(), &opts, &mut ws).is_err() {
        return;
    }
    let view = w.view();
    for part in [
        view.mean(),
        view.whitening(),
        view.unwhitening(),
        view.explained_variance(),
    ] {
        assert!(
            part.iter().all(|v| v.is_finite()),
            "fit succeeded with a non-finite model"
        );
    }
    let n = accepted.len() / d;
    let mut z = vec![0.0; n * k];
    if view.transform_rows(&accepted, &mut z).is_ok() {
        assert!(z.iter().all(|v| v.is_finite()));
        let mut back = vec![0.0; n * d];
        if view.inverse_transform_rows(&z, &mut back).is_ok() {
            assert!(back.iter().all(|v| v.is_finite()));
        }
    }
});
