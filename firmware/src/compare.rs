//! Host only: the accuracy contract of the core's `f32-sums` path against the `f64` path, on the
//! firmware's results (`unmix-firmware compare F64_RESULTS F32_RESULTS`, as `check.sh` runs it on
//! the device's outputs of both builds).
//!
//! The two paths draw their start `W` from the same seed at different precisions (see
//! `unmix::random::Normals::fill_sum`), so FastICA may find the components in another order or
//! sign: components are compared through the Amari index of `components_f32 * mixing_f64` (0
//! when they agree up to order, sign and scale) and row by row after matching. Everything else is
//! compared entry by entry. Each bound is stated in [`BOUNDS`] and in `unmix::float`'s docs; the
//! measured value of each is printed, and any bound exceeded fails.

use std::collections::BTreeMap;

use crate::pipeline::{D, K};

/// `(quantity, bound)`: the contract `check.sh` enforces (see the module docs).
pub const BOUNDS: [(&str, f64); 7] = [
    ("whitener mean, max |f32 - f64| / max |f64|", 5e-6),
    ("whitening matrix, max |f32 - f64| / max |f64|", 1e-4),
    ("explained variance, max |f32 - f64| / max |f64|", 5e-6),
    (
        "components: Amari index of components_f32 * mixing_f64",
        1e-3,
    ),
    (
        "components matched by row up to sign, max |f32 - f64| / max |f64|",
        2e-3,
    ),
    ("MCC against the true sources, |f32 - f64|", 2e-5),
    ("Amari index against the true mixing, |f32 - f64|", 1e-4),
];

/// Every `name hex` line of a results file, values in order per name, as `f64` (16 hex digits
/// are an `f64`'s bits, 8 an `f32`'s or an integer's).
fn parse(text: &str) -> Result<BTreeMap<String, Vec<(u64, f64)>>, String> {
    let mut out: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for line in text.lines() {
        let Some((name, hex)) = line.split_once(' ') else {
            continue;
        };
        if name == "measure" || name == "firmware:" {
            continue;
        }
        let bits = u64::from_str_radix(hex, 16).map_err(|e| format!("{line:?}: {e}"))?;
        let value = match hex.len() {
            16 => f64::from_bits(bits),
            8 => f64::from(f32::from_bits(bits as u32)),
            _ => return Err(format!("{line:?}: neither 8 nor 16 hex digits")),
        };
        out.entry(name.to_string()).or_default().push((bits, value));
    }
    Ok(out)
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// Compares the results of the `f64` path (`reference`) with those of the `f32-sums` path;
/// prints each measured quantity against its bound and returns whether all hold.
pub fn compare(reference: &str, candidate: &str) -> Result<bool, String> {
    let (r, c) = (parse(reference)?, parse(candidate)?);
    let get = |m: &BTreeMap<String, Vec<(u64, f64)>>, name: &str| -> Result<Vec<f64>, String> {
        m.get(name)
            .map(|v| v.iter().map(|p| p.1).collect())
            .ok_or_else(|| format!("no {name} line"))
    };
    let mut ok = true;
    // The statuses, counts and convergence must be the same.
    for name in [
        "n_samples",
        "glitch_status",
        "glitch_row",
        "converged",
        "transform_glitch_status",
        "few_samples_status",
        "one_sample_status",
        "small_buffer_status",
    ] {
        let (a, b) = (&r.get(name), &c.get(name));
        let same = match (a, b) {
            (Some(a), Some(b)) => {
                a.iter().map(|p| p.0).collect::<Vec<_>>()
                    == b.iter().map(|p| p.0).collect::<Vec<_>>()
            }
            _ => false,
        };
        if !same {
            println!("  FAIL {name}: f64 {a:?}, f32 {b:?}");
            ok = false;
        }
    }
    let (w64, w32) = (get(&r, "whitener")?, get(&c, "whitener")?);
    let (m64, m32) = (get(&r, "model")?, get(&c, "model")?);
    let mean = max_rel(&w32[..D], &w64[..D]);
    let whitening = max_rel(&w32[D..D + K * D], &w64[D..D + K * D]);
    let variance = max_rel(&w32[D + K * D..], &w64[D + K * D..]);
    // components (K x D) then mixing (D x K).
    let (comp32, comp64, mix64) = (&m32[..K * D], &m64[..K * D], &m64[K * D..]);
    let mut p = [0.0; K * K];
    let amari = unmix::metrics::amari_index(comp32, mix64, K, D, &mut p)
        .map_err(|e| format!("amari: {e}"))?;
    // Row i of components_f32 matched to the row of components_f64 nearest up to sign.
    let mut matched = 0.0f64;
    let scale = comp64.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for row in comp32.chunks_exact(D) {
        let best = comp64
            .chunks_exact(D)
            .flat_map(|other| [1.0, -1.0].map(|s| (other, s)))
            .map(|(other, s)| {
                row.iter()
                    .zip(other)
                    .fold(0.0f64, |m, (x, y)| m.max((x - s * y).abs()))
            })
            .fold(f64::INFINITY, f64::min);
        matched = matched.max(best / scale);
    }
    let mcc = (get(&c, "mcc")?[0] - get(&r, "mcc")?[0]).abs();
    let amari_truth = (get(&c, "amari")?[0] - get(&r, "amari")?[0]).abs();
    let measured = [mean, whitening, variance, amari, matched, mcc, amari_truth];
    for ((name, bound), value) in BOUNDS.iter().zip(measured) {
        let holds = value <= *bound;
        ok &= holds;
        println!(
            "  {} {name}: {value:.2e} (bound {bound:.0e})",
            if holds { "ok  " } else { "FAIL" }
        );
    }
    let iters = |m: &BTreeMap<String, Vec<(u64, f64)>>| m.get("n_iter").map(|v| v[0].0);
    println!(
        "  n_iter: f64 path {:?}, f32 path {:?}",
        iters(&r).unwrap_or(0),
        iters(&c).unwrap_or(0)
    );
    Ok(ok)
}
