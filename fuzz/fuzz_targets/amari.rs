//! The Amari index on arbitrary W (k x d) and A (d x k): never a panic; a value in [0, 1] or an
//! error (zero rows or columns of W A, non-finite, k < 2).
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::metrics::amari_index;

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let k = usize::from(b.byte() % 6) + 1;
    let d = usize::from(b.byte() % 6) + 1;
    let w: Vec<f64> = (0..k * d).map(|_| b.value()).collect();
    let a: Vec<f64> = (0..d * k).map(|_| b.value()).collect();
    if let Ok(index) = amari_index(&w, &a, k, d, &mut vec![0.0; k * k]) {
        assert!((0.0..=1.0).contains(&index), "{index}");
    }
});
