//! MCC (Pearson and Spearman) on arbitrary small matrices: never a panic; finite input gives a
//! value in [0, 1] or an error (zero variance, non-finite, shapes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::metrics::{correlation::Method, mcc};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let dt = usize::from(b.byte() % 5) + 1;
    let de = usize::from(b.byte() % 5) + 1;
    let method = if b.byte() & 1 == 0 {
        Method::Pearson
    } else {
        Method::Spearman
    };
    let (mut t, mut e) = (Vec::new(), Vec::new());
    while !b.is_empty() && t.len() < 400 {
        for _ in 0..dt {
            t.push(b.value());
        }
        for _ in 0..de {
            e.push(b.value());
        }
    }
    let n = t.len() / dt;
    let (lf, lu) = mcc::workspace_len(n, dt, de, method);
    let (mut wf, mut wu, mut pairs) = (vec![0.0; lf], vec![0; lu], vec![0; dt]);
    if let Ok(score) = mcc::mcc(&t, dt, &e, de, method, &mut pairs, &mut wf, &mut wu) {
        assert!((0.0..=1.0).contains(&score), "{score}");
    }
});
