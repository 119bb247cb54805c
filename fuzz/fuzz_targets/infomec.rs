//! NMI, InfoM and InfoC of arbitrary small factors and latents: never a panic; NMI >= 0 and
//! InfoM, InfoC in [0, 1] when they are defined.
#![no_main]

use libfuzzer_sys::fuzz_target;
use unmix::metrics::infomec::{infomec, workspace_len};

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let f = usize::from(b.byte() % 3) + 1;
    let l = usize::from(b.byte() % 4) + 1;
    let k = usize::from(b.byte() % 12);
    let (mut s, mut z) = (Vec::new(), Vec::new());
    while !b.is_empty() && z.len() < 400 {
        for _ in 0..f {
            s.push(i64::from(b.byte() as i8 % 5));
        }
        for _ in 0..l {
            z.push(b.value());
        }
    }
    let n = z.len() / l;
    let (lf, lu) = workspace_len(n);
    let (mut nmi, mut active) = (vec![0.0; f * l], vec![false; l]);
    let (mut wf, mut wu) = (vec![0.0; lf], vec![0; lu]);
    if let Ok(r) = infomec(&s, f, &z, l, k, &mut nmi, &mut active, &mut wf, &mut wu) {
        assert!(nmi.iter().all(|v| v.is_finite() && *v >= 0.0), "{nmi:?}");
        for v in [r.infom, r.infoc].into_iter().flatten() {
            assert!((0.0..=1.0).contains(&v), "{r:?}");
        }
    }
});
