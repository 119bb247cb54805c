//! The symmetric eigensolver on arbitrary symmetric matrices: never a panic or a hang; on success
//! finite, descending eigenvalues and unit eigenvectors.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let n = usize::from(b.byte() % 12) + 1;
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            let v = b.value();
            a[i * n + j] = v;
            a[j * n + i] = v;
        }
    }
    let (mut values, mut work) = (vec![0.0; n], vec![0.0; n]);
    if unmix::linalg::symmetric_eigen(&mut a, n, &mut values, &mut work).is_ok() {
        assert!(values.iter().all(|v| v.is_finite()));
        assert!(
            values.windows(2).all(|w| w[0] >= w[1]),
            "not descending: {values:?}"
        );
        for row in a.chunks(n) {
            let norm: f64 = row.iter().map(|v| v * v).sum();
            assert!((norm - 1.0).abs() < 1e-9, "eigenvector norm {norm}");
        }
    }
});
