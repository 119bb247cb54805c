//! Linear sum assignment on arbitrary rectangular costs (ties, infinities, NaN): never a panic or a
//! hang; on success a valid one-to-one matching of min(nr, nc) pairs whose total is reported.
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::metrics::assignment::{UNASSIGNED, linear_sum_assignment, workspace_len};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let nr = usize::from(b.byte() % 12);
    let nc = usize::from(b.byte() % 12);
    let maximize = b.byte() & 1 == 1;
    let cost: Vec<f64> = (0..nr * nc).map(|_| b.value()).collect();
    let (lf, lu) = workspace_len(nr, nc);
    let (mut wf, mut wu, mut cols) = (vec![0.0; lf], vec![0; lu], vec![0; nr]);
    if let Ok(total) = linear_sum_assignment(&cost, nr, nc, maximize, &mut cols, &mut wf, &mut wu) {
        let assigned: Vec<usize> = cols.iter().copied().filter(|c| *c != UNASSIGNED).collect();
        assert_eq!(assigned.len(), nr.min(nc));
        let mut seen = assigned.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), assigned.len(), "a column used twice");
        assert!(assigned.iter().all(|c| *c < nc));
        if cost.iter().all(|c| c.is_finite()) {
            assert!(total.is_finite() || cost.iter().any(|c| c.abs() > 1e300));
        }
    }
});
