//! Split fractions, Hoyer sparsity, feature ranking, top-k and concentration on arbitrary
//! vectors: never a panic; results in their documented ranges.
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::metrics::sparsity::{
    concentration, hoyer_sparsity, rank_features, split_fractions, top_count,
};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let fraction = b.value();
    let (auc_top, auc_rest) = (b.value(), b.value());
    let mut c = Vec::new();
    while !b.is_empty() && c.len() < 256 {
        c.push(b.value());
    }
    if let Ok(s) = hoyer_sparsity(&c) {
        assert!((0.0..=1.0).contains(&s), "{s}");
    }
    let mut f = vec![0.0; c.len()];
    if split_fractions(&c, &mut f).is_ok() {
        assert!(f.iter().all(|v| v.is_finite() && *v >= 0.0));
        let total: f64 = f.iter().sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
    }
    let mut order = vec![0; c.len()];
    if rank_features(&c, &mut order).is_ok() {
        let mut seen = order.clone();
        seen.sort_unstable();
        assert!(seen.iter().enumerate().all(|(i, v)| i == *v));
    }
    if let Ok(n) = top_count(c.len(), fraction) {
        assert!(n >= 1 && n < c.len());
    }
    if let Ok(v) = concentration(auc_top, auc_rest) {
        assert!(v.is_finite() && v >= -1.0);
    }
});
