//! Alignment errors of arbitrary small representations: never a panic; finite input gives
//! finite non-negative errors (raw, normalised, RMS), a positive finite diameter and a finite or
//! NaN efficiency, or an error (shapes, too few samples, rank deficiency, non-finite, overflow).
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::metrics::alignment::{AlignmentOptions, alignment, workspace_len};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let da = usize::from(b.byte() % 4) + 1;
    let db = usize::from(b.byte() % 4) + 1;
    let mut opts = AlignmentOptions::DEFAULT;
    opts.random_state = u64::from(b.byte());
    // Few iterations: the fuzzer looks for panics, not for converged fits.
    opts.ica.ica.max_iter = 20;
    let (mut x, mut y) = (Vec::new(), Vec::new());
    while !b.is_empty() && x.len() < 240 {
        for _ in 0..da {
            x.push(b.value());
        }
        for _ in 0..db {
            y.push(b.value());
        }
    }
    let n = x.len() / da;
    let (lf, lu, lt) = workspace_len(n, da, db);
    let (mut wf, mut wu, mut wt) = (vec![0.0; lf], vec![0; lu], vec![0.0; lt]);
    if let Ok(al) = alignment(&x, da, &y, db, &opts, &mut wf, &mut wu, &mut wt) {
        let errors = [al.raw, al.normalized, al.rms];
        let values = errors
            .iter()
            .flat_map(|e| [e.permutation, e.rigid, e.linear, e.ica]);
        for v in values.chain([al.diameter]) {
            assert!(v >= 0.0 && v.is_finite(), "{al:?}");
        }
        assert!(al.diameter > 0.0, "{al:?}");
        assert!(!al.efficiency.is_infinite(), "{al:?}");
    }
});
