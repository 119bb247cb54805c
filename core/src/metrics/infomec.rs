//! InfoM (modularity) and InfoC (compactness) of continuous latents against discrete factors
//! (Hsu et al., *Disentanglement via latent quantization*, 2023), as Nelson et al. report them
//! (Table 2). InfoE needs a classifier and lives in the command-line tool.
//!
//! For factors `S` (`n x F`, integer labels) and latents `Z` (`n x L`):
//!
//! - each latent is standardised (mean 0, standard deviation 1, ddof 0; a constant latent stays 0);
//! - `NMI[i][j] = I(s_i; z_j) / H(s_i)`, with `I` the k-nearest-neighbour estimate of the mutual
//!   information between a continuous and a discrete variable (Ross 2014, `k = 10` by default,
//!   as scikit-learn's `mutual_info_classif`) and `H` the plug-in entropy of the factor, in nats
//!   (scikit-learn's `mutual_info_score(s, s)`);
//! - latent `j` is active when its range (max - min, before standardising) exceeds the largest
//!   range over the latents divided by 20;
//! - `InfoM = (mean over active j of max_i NMI / sum_i NMI - 1/F) / (1 - 1/F)`;
//! - `InfoC = (mean over i of max_j NMI / sum_j NMI - 1/L') / (1 - 1/L')`, over the `L'` active
//!   latents.
//!
//! # The estimator
//! In one dimension the k nearest neighbours are a window of the sorted values, so the estimate
//! is exact (no tree, no jitter): for each sample with a label seen more than once, `d` is the
//! distance to its `k`-th nearest neighbour among samples of its label (`k` capped at the label's
//! count - 1), and `m` counts the samples (of any such label, itself included) strictly closer
//! than `d`. Then `I = psi(N) + <psi(k)> - <psi(N_label)> - <psi(m)>`, floored at 0, with `N` the
//! samples counted. scikit-learn adds a jitter of 1e-10 relative to break ties, so it agrees with
//! this to about 1e-3 on continuous data; on tied values (discrete latents) they differ.
//!
//! # Conventions where the definition is silent
//! - An active latent with zero NMI against every factor counts `1/F` in InfoM (no preference
//!   among factors), and a factor with zero NMI against every active latent counts `1/L'` in
//!   InfoC; Hsu et al.'s code gives NaN there.
//! - InfoM is undefined (`None`) with one factor, InfoC with one active latent.
//! - A label seen once carries no neighbour; its samples are left out of `I`, as in
//!   scikit-learn. A factor whose every label is unique gives `I = 0`.

use crate::error::{Error, Result, prefix_mut};
use crate::float::Float;
use crate::float::{Sum, smath};
use crate::moments::check_rows;

/// scikit-learn's and Hsu et al.'s `n_neighbors`.
pub const DEFAULT_NEIGHBORS: usize = 10;

/// A latent is active when its range exceeds the largest range divided by this.
pub const ACTIVE_RANGE_DIVISOR: Sum = 20.0;

/// The digamma function at a positive integer: `-gamma + sum_{i < n} 1/i` (`-inf` at 0).
pub fn digamma_int(n: usize) -> Sum {
    #[allow(clippy::excessive_precision)] // the f64 value, rounded to f32 with `f32-sums`
    const EULER: Sum = 0.577_215_664_901_532_9;
    match n {
        0 => Sum::NEG_INFINITY,
        1..16 => -EULER + (1..n).map(|i| 1.0 / i as Sum).sum::<Sum>(),
        _ => {
            // Asymptotic series; the first omitted term is below 1e-12 for n >= 16.
            let x = n as Sum;
            let x2 = 1.0 / (x * x);
            smath::log(x) - 0.5 / x - x2 * (1.0 / 12.0 - x2 * (1.0 / 120.0 - x2 / 252.0))
        }
    }
}

/// Encodes `labels(t)` for `t < n` as class indices `0..c` in increasing label order (as
/// scikit-learn's `LabelEncoder`) into `classes`, the class sizes into `counts`; returns `c`.
fn encode(
    n: usize,
    labels: impl Fn(usize) -> i64,
    classes: &mut [usize],
    counts: &mut [usize],
    order: &mut [usize],
) -> usize {
    for (t, o) in order[..n].iter_mut().enumerate() {
        *o = t;
    }
    order[..n].sort_unstable_by_key(|&t| labels(t));
    let mut c = 0;
    for p in 0..n {
        if p > 0 && labels(order[p]) != labels(order[p - 1]) {
            c += 1;
        }
        classes[order[p]] = c;
    }
    let c = if n == 0 { 0 } else { c + 1 };
    counts[..c].fill(0);
    for &k in &classes[..n] {
        counts[k] += 1;
    }
    c
}

/// Plug-in entropy (nats) of a distribution given by counts summing to `n`.
pub fn entropy_from_counts(counts: &[usize], n: usize) -> Sum {
    let n = n as Sum;
    -counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as Sum / n;
            p * smath::log(p)
        })
        .sum::<Sum>()
}

/// The tie-break of sample `index`: equal values are ordered by it, at an infinitesimal spacing
/// (splitmix64, a bijection of `u64`, so no two samples tie). This stands in for the tiny random
/// jitter scikit-learn adds: without either, a latent with repeated values (a quantised one) has
/// a k-th neighbour at distance 0 and the estimate collapses to 0 however informative it is.
pub fn tie_break(index: usize) -> u64 {
    let mut z = (index as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Distance between samples `a` and `b` of `c`: `|c_a - c_b|`, or for equal values the
/// infinitesimal one between their tie-breaks (smaller than any nonzero distance).
fn distance(c: &[Sum], a: usize, b: usize) -> (Sum, u64) {
    let dv = (c[a] - c[b]).abs();
    if dv == 0.0 {
        (0.0, tie_break(a).abs_diff(tie_break(b)))
    } else {
        (dv, 0)
    }
}

fn less(x: (Sum, u64), y: (Sum, u64)) -> bool {
    x.0 < y.0 || (x.0 == y.0 && x.1 < y.1)
}

/// The Ross (2014) estimate for the continuous `c` (`n`, finite) and the encoded `classes`.
/// `sorted` needs `n` elements, `order` `2n`.
fn mi_encoded(
    c: &[Sum],
    classes: &[usize],
    counts: &[usize],
    k: usize,
    sorted: &mut [Sum],
    order: &mut [usize],
) -> Sum {
    let n = c.len();
    let (order, global) = order.split_at_mut(n);
    let mut nm = 0;
    for t in 0..n {
        if counts[classes[t]] > 1 {
            order[nm] = t;
            nm += 1;
        }
    }
    if nm == 0 {
        return 0.0;
    }
    let key = |t: usize| (c[t], tie_break(t));
    let by_key = |s: &usize, t: &usize| {
        let (a, b) = (key(*s), key(*t));
        a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
    };
    let order = &mut order[..nm];
    order.sort_unstable_by(|s, t| classes[*s].cmp(&classes[*t]).then(by_key(s, t)));
    let global = &mut global[..nm];
    global.copy_from_slice(order);
    global.sort_unstable_by(by_key);
    let sorted = &mut sorted[..nm];
    for (x, &t) in sorted.iter_mut().zip(global.iter()) {
        *x = c[t];
    }
    let (mut sum_k, mut sum_label, mut sum_m) = (0.0, 0.0, 0.0);
    let mut start = 0;
    while start < nm {
        let class = classes[order[start]];
        let count = counts[class];
        let end = start + count;
        let kc = k.min(count - 1);
        let (psi_k, psi_label) = (digamma_int(kc), digamma_int(count));
        for p in start..end {
            let i = order[p];
            let v = c[i];
            // The k nearest neighbours within the class: a window around p of the sorted keys.
            let (mut lo, mut hi, mut r) = (p, p, (0.0, 0));
            for _ in 0..kc {
                let left = (lo > start).then(|| distance(c, i, order[lo - 1]));
                let right = (hi + 1 < end).then(|| distance(c, i, order[hi + 1]));
                match (left, right) {
                    (Some(l), Some(rt)) if !less(rt, l) => {
                        r = l;
                        lo -= 1;
                    }
                    (Some(l), None) => {
                        r = l;
                        lo -= 1;
                    }
                    (_, Some(rt)) => {
                        r = rt;
                        hi += 1;
                    }
                    (None, None) => {}
                }
            }
            // m: samples strictly closer than the k-th neighbour (scikit-learn counts distances
            // <= nextafter(r, 0)), itself included.
            let m = if r.0 > 0.0 {
                let lower = sorted.partition_point(|&x| x < v && v - x >= r.0);
                let upper = sorted.partition_point(|&x| x <= v || x - v < r.0);
                upper - lower
            } else {
                let h = tie_break(i);
                let lower = global.partition_point(|&t| {
                    c[t] < v || (c[t] == v && tie_break(t) < h && h - tie_break(t) >= r.1)
                });
                let upper = global.partition_point(|&t| {
                    c[t] < v || (c[t] == v && (tie_break(t) <= h || tie_break(t) - h < r.1))
                });
                upper - lower
            };
            sum_k += psi_k;
            sum_label += psi_label;
            sum_m += digamma_int(m);
        }
        start = end;
    }
    let nm_f = nm as Sum;
    let mi = digamma_int(nm) + (sum_k - sum_label - sum_m) / nm_f;
    mi.max(0.0)
}

/// `(f64, usize)` workspace of [`mutual_information`] and [`nmi`] for `n` samples.
pub const fn workspace_len(n: usize) -> (usize, usize) {
    (2 * n, 4 * n)
}

fn check_k(k: usize) -> Result<()> {
    if k == 0 {
        return Err(Error::InvalidParameter("n_neighbors must be at least 1"));
    }
    Ok(())
}

/// The estimated mutual information (nats) between the continuous `x` and the discrete `labels`
/// (both `n` long), with `k` neighbours. Workspace: [`workspace_len`]. Unlike [`nmi`], `x` is
/// used as it is (the estimate does not depend on the scale of `x`).
///
/// ```
/// use unmix::metrics::infomec::{mutual_information, workspace_len};
/// // x separates the two labels completely: I = H(labels) = ln 2, up to the estimator's bias
/// // (on evenly spaced points about psi(k) - psi(k - 1) = 1/9 away from the ends).
/// let x: Vec<f64> = (0..400).map(|i| i as f64 + if i < 200 { 0.0 } else { 1000.0 }).collect();
/// let labels: Vec<i64> = (0..400).map(|i| (i >= 200) as i64).collect();
/// let (lf, lu) = workspace_len(400);
/// let mi = mutual_information(&x, &labels, 10, &mut vec![0.0; lf], &mut vec![0; lu])?;
/// assert!(mi > core::f64::consts::LN_2 && mi < core::f64::consts::LN_2 + 0.12);
/// # Ok::<(), unmix::Error>(())
/// ```
pub fn mutual_information<T: Float>(
    x: &[T],
    labels: &[i64],
    k: usize,
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<Sum> {
    check_k(k)?;
    let n = check_rows(x, 1, 0)?;
    if labels.len() != n {
        return Err(Error::DimensionMismatch {
            expected: n,
            found: labels.len(),
        });
    }
    let (lf, lu) = workspace_len(n);
    let (col, sorted) = prefix_mut(ws_f64, lf)?.split_at_mut(n);
    let wu = prefix_mut(ws_usize, lu)?;
    let (classes, rest) = wu.split_at_mut(n);
    let (counts, order) = rest.split_at_mut(n);
    for (cv, xv) in col.iter_mut().zip(x) {
        *cv = xv.to_sum();
    }
    encode(n, |t| labels[t], classes, counts, order);
    Ok(mi_encoded(col, classes, counts, k, sorted, order))
}

/// Column `j` of the `n x l` `z`, standardised (ddof 0) into `out`; a constant column becomes 0.
fn standardize<T: Float>(z: &[T], l: usize, j: usize, out: &mut [Sum]) {
    // Scale by a power of two first (exact), so no sum can overflow whatever the magnitude.
    let amax = z
        .iter()
        .skip(j)
        .step_by(l)
        .fold(0.0 as Sum, |m, v| m.max(v.to_sum().abs()));
    let exponent = if amax > 0.0 { smath::frexp(amax).1 } else { 0 };
    for (o, v) in out.iter_mut().zip(z.iter().skip(j).step_by(l)) {
        *o = smath::ldexp(v.to_sum(), -exponent);
    }
    let n = out.len() as Sum;
    let mean = out.iter().sum::<Sum>() / n;
    let var = out.iter().map(|v| (v - mean) * (v - mean)).sum::<Sum>() / n;
    let sd = smath::sqrt(var);
    for o in out.iter_mut() {
        *o = if sd > 0.0 { (*o - mean) / sd } else { 0.0 };
    }
}

/// The normalised mutual information `NMI[i][j] = I(s_i; z_j) / H(s_i)` of every factor `i` of
/// `factors` (`n x f`, row-major integer labels) with every standardised latent `j` of `latents`
/// (`n x l`), into `out` (`f x l`, row-major). Workspace: [`workspace_len`]`(n)`.
///
/// A factor with a single level has zero entropy: [`Error::SingleClass`].
#[allow(clippy::too_many_arguments)]
pub fn nmi<T: Float>(
    factors: &[i64],
    f: usize,
    latents: &[T],
    l: usize,
    k: usize,
    out: &mut [Sum],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<()> {
    check_k(k)?;
    let n = check_rows(latents, l, 0)?;
    if f == 0 || factors.len() % f != 0 {
        return Err(Error::RaggedRows {
            len: factors.len(),
            width: f,
        });
    }
    if factors.len() / f != n {
        return Err(Error::DimensionMismatch {
            expected: n,
            found: factors.len() / f,
        });
    }
    if n < 2 {
        return Err(Error::TooFewSamples {
            n: n as u64,
            needed: 2,
        });
    }
    let out = prefix_mut(out, f * l)?;
    let (lf, lu) = workspace_len(n);
    let (col, sorted) = prefix_mut(ws_f64, lf)?.split_at_mut(n);
    let wu = prefix_mut(ws_usize, lu)?;
    let (classes, rest) = wu.split_at_mut(n);
    let (counts, order) = rest.split_at_mut(n);
    for i in 0..f {
        let c = encode(n, |t| factors[t * f + i], classes, counts, order);
        if c < 2 {
            return Err(Error::SingleClass);
        }
        let h = entropy_from_counts(&counts[..c], n);
        for j in 0..l {
            standardize(latents, l, j, col);
            out[i * l + j] = mi_encoded(col, classes, counts, k, sorted, order) / h;
        }
    }
    Ok(())
}

/// Marks the active latents of `latents` (`n x l`) in `active` (`l`): range above the largest
/// range divided by [`ACTIVE_RANGE_DIVISOR`]. Returns how many are active; none (every latent
/// constant) is [`Error::InvalidParameter`].
pub fn active_latents<T: Float>(latents: &[T], l: usize, active: &mut [bool]) -> Result<usize> {
    let n = check_rows(latents, l, 0)?;
    let active = prefix_mut(active, l)?;
    if n == 0 {
        return Err(Error::TooFewSamples { n: 0, needed: 1 });
    }
    // Halved so that the range of finite values cannot overflow.
    let half_range = |j: usize| {
        let (lo, hi) = latents
            .iter()
            .skip(j)
            .step_by(l)
            .fold((Sum::INFINITY, Sum::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v.to_sum()), hi.max(v.to_sum()))
            });
        hi / 2.0 - lo / 2.0
    };
    let largest = (0..l).map(half_range).fold(0.0 as Sum, Sum::max);
    if largest <= 0.0 {
        return Err(Error::InvalidParameter(
            "every latent is constant: no latent is active",
        ));
    }
    let mut count = 0;
    for (j, a) in active.iter_mut().enumerate() {
        *a = half_range(j) > largest / ACTIVE_RANGE_DIVISOR;
        count += usize::from(*a);
    }
    Ok(count)
}

/// InfoM and InfoC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InfoMc {
    /// Modularity in [0, 1]; `None` with a single factor.
    pub infom: Option<Sum>,
    /// Compactness in [0, 1]; `None` with a single active latent.
    pub infoc: Option<Sum>,
    /// Active latents.
    pub n_active: usize,
}

/// InfoM and InfoC from `nmi` (`f x l`) over the latents marked in `active` (`l`).
pub fn info_m_c(nmi: &[Sum], f: usize, l: usize, active: &[bool]) -> Result<InfoMc> {
    if nmi.len() != f * l || active.len() != l {
        return Err(Error::DimensionMismatch {
            expected: f * l,
            found: nmi.len(),
        });
    }
    if let Some(pos) = nmi.iter().position(|v| !v.is_finite()) {
        return Err(Error::NonFinite {
            row: (pos / l) as u64,
            col: pos % l,
        });
    }
    let n_active = active.iter().filter(|a| **a).count();
    let share = |values: &mut dyn Iterator<Item = Sum>, count: usize| {
        let (mut max, mut sum) = (0.0 as Sum, 0.0);
        for v in values {
            max = max.max(v);
            sum += v;
        }
        if sum > 0.0 {
            max / sum
        } else {
            1.0 / count as Sum
        }
    };
    let normalise = |mean: Sum, count: usize| {
        let u = 1.0 / count as Sum;
        ((mean - u) / (1.0 - u)).clamp(0.0, 1.0)
    };
    let infom = (f >= 2 && n_active >= 1).then(|| {
        let total: Sum = (0..l)
            .filter(|&j| active[j])
            .map(|j| share(&mut (0..f).map(|i| nmi[i * l + j]), f))
            .sum();
        normalise(total / n_active as Sum, f)
    });
    let infoc = (n_active >= 2 && f >= 1).then(|| {
        let total: Sum = (0..f)
            .map(|i| {
                share(
                    &mut (0..l).filter(|&j| active[j]).map(|j| nmi[i * l + j]),
                    n_active,
                )
            })
            .sum();
        normalise(total / f as Sum, n_active)
    });
    Ok(InfoMc {
        infom,
        infoc,
        n_active,
    })
}

/// NMI, the active latents, InfoM and InfoC in one call: `nmi_out` (`f x l`), `active` (`l`).
/// Workspace: [`workspace_len`]`(n)`.
///
/// ```
/// use unmix::metrics::infomec::{infomec, workspace_len};
/// // Two factors, each read by one latent (plus a little noise): modular and compact.
/// let n = 1000;
/// let mut factors = vec![0i64; 2 * n];
/// let mut latents = vec![0.0f64; 2 * n];
/// for t in 0..n {
///     let (a, b) = ((t % 4) as i64, ((t / 4) % 3) as i64);
///     factors[2 * t] = a;
///     factors[2 * t + 1] = b;
///     let noise = ((t * 7919) % 1000) as f64 / 1e5;
///     latents[2 * t] = b as f64 + noise;
///     latents[2 * t + 1] = a as f64 - noise;
/// }
/// let (lf, lu) = workspace_len(n);
/// let (mut nmi, mut active) = ([0.0; 4], [false; 2]);
/// let s = infomec(&factors, 2, &latents, 2, 10, &mut nmi, &mut active,
///                 &mut vec![0.0; lf], &mut vec![0; lu])?;
/// assert!(s.infom.unwrap() > 0.95 && s.infoc.unwrap() > 0.95);
/// assert!(nmi[1] > 0.95 && nmi[2] > 0.95); // factor 0 in latent 1, factor 1 in latent 0
/// # Ok::<(), unmix::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn infomec<T: Float>(
    factors: &[i64],
    f: usize,
    latents: &[T],
    l: usize,
    k: usize,
    nmi_out: &mut [Sum],
    active: &mut [bool],
    ws_f64: &mut [Sum],
    ws_usize: &mut [usize],
) -> Result<InfoMc> {
    nmi(factors, f, latents, l, k, nmi_out, ws_f64, ws_usize)?;
    active_latents(latents, l, active)?;
    info_m_c(&nmi_out[..f * l], f, l, &active[..l])
}
