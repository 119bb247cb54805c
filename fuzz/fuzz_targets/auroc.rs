//! AUROC (plain and weighted) on arbitrary scores, labels and weights: never a panic; finite
//! input gives a value in [0, 1] or an error; both forms agree when the weights are all 1.
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::metrics::{auroc, auroc_weighted};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let (mut s, mut y, mut w) = (Vec::new(), Vec::new(), Vec::new());
    while !b.is_empty() && s.len() < 512 {
        let flags = b.byte();
        y.push(flags & 1 == 1);
        s.push(b.value());
        w.push(if flags & 2 == 0 { 1.0 } else { b.value() });
    }
    let plain = auroc(&s, &y, &mut vec![0; s.len()]);
    if let Ok(a) = plain {
        assert!((0.0..=1.0).contains(&a), "{a}");
    }
    if let Ok(a) = auroc_weighted(&s, &y, &w, &mut vec![0; s.len()]) {
        assert!((0.0..=1.0).contains(&a), "{a}");
        if w.iter().all(|v| *v == 1.0) {
            assert!((a - plain.unwrap()).abs() < 1e-12);
        }
    }
});
