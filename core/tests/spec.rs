//! Passes described as plain data ([`PassSpec`]) and rebuilt elsewhere give the bits of the
//! passes they describe: the mechanism behind the Python package's Dask executor.
// Properties of the default f64 path (`Sum = f64`); the `f32-sums` path is checked against it
// by firmware/check.sh.
#![cfg(not(feature = "f32-sums"))]

use unmix::Float;
use unmix::ica::{
    Algorithm, CHUNK, Contrast, ContrastKind, Cube, DeflationPass, Executor, Exp, FastIcaBuf,
    FastIcaOptions, InMemory, LogCosh, MomentsPass, ParallelPass, Pass, PassSpec, Portable, Rows,
    SourcePass, WInit, WhitenMode, fit_workspace_len, model_len,
};
use unmix::random::Normals;
use unmix::whiten::WhitenerView;

/// `n x d` rows: uniform and Laplace-like sources through a fixed mixing, with offsets.
fn data(n: usize, d: usize, seed: u64) -> Vec<f64> {
    let mut g = Normals::new(seed);
    let mix: Vec<f64> = (0..d * d).map(|_| g.next_normal()).collect();
    let mut x = vec![0.0; n * d];
    let mut s = vec![0.0; d];
    for r in 0..n {
        for (j, v) in s.iter_mut().enumerate() {
            let u = g.next_normal();
            *v = if j % 2 == 0 { u * u * u } else { libm::erf(u) };
        }
        for i in 0..d {
            x[r * d + i] = i as f64 + (0..d).map(|j| mix[i * d + j] * s[j]).sum::<f64>();
        }
    }
    x
}

/// An executor that runs every pass from its spec only, as another process would: the spec's
/// parameters are copied (as if shipped), the pass rebuilt, the rows run in `CHUNK`-row pieces
/// each into a fresh partial, merged in row order; the white rows are whitened piece by piece.
struct SpecOnly<'a, T> {
    x: &'a [T],
    d: usize,
    whitener: Option<(usize, Vec<T>)>,
    passes: usize,
}

impl<T: Float> Executor<T> for SpecOnly<'_, T> {
    fn pass<P: Pass<T>>(&mut self, rows: Rows, pass: &P, total: &mut [f64]) -> unmix::Result<()> {
        let spec = pass.spec().expect("built-in passes describe themselves");
        assert_eq!(spec.rows(), rows);
        // Ship: the parameters as owned plain data.
        let shipped: Vec<f64> = match spec {
            PassSpec::Moments { .. } => Vec::new(),
            PassSpec::Parallel { w, .. }
            | PassSpec::Deflation { w, .. }
            | PassSpec::Source { w, .. } => w.to_vec(),
        };
        let rebuilt = match spec {
            PassSpec::Moments { d } => PassSpec::Moments { d },
            PassSpec::Parallel { k, contrast, .. } => PassSpec::Parallel {
                k,
                w: &shipped,
                contrast,
            },
            PassSpec::Deflation { k, contrast, .. } => PassSpec::Deflation {
                k,
                w: &shipped,
                contrast,
            },
            PassSpec::Source { k, .. } => PassSpec::Source { k, w: &shipped },
        };
        let remote = rebuilt.pass(Portable)?;
        assert_eq!(Pass::<T>::partial_len(&remote), pass.partial_len());
        let width = spec.width();
        let mut partial = vec![0.0; pass.partial_len()];
        let mut z = Vec::new();
        for (i, piece) in self.x.chunks(CHUNK * self.d).enumerate() {
            let rows: &[T] = match (rows, &self.whitener) {
                (Rows::White, Some((k, storage))) => {
                    let view = WhitenerView::from_parts(self.d, *k, storage)?;
                    z.resize(piece.len() / self.d * k, T::ZERO);
                    view.transform_rows(piece, &mut z)?;
                    &z
                }
                _ => piece,
            };
            assert_eq!(rows.len() % width, 0);
            partial.fill(0.0);
            remote.accumulate(&mut partial, (i * CHUNK) as u64, rows)?;
            Pass::<T>::merge(&remote, total, &partial)?;
        }
        self.passes += 1;
        Ok(())
    }
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, T>>) -> unmix::Result<()> {
        self.whitener = whitener.map(|v| {
            let mut storage = v.mean().to_vec();
            storage.extend_from_slice(v.whitening());
            storage.extend_from_slice(v.unwhitening());
            storage.extend_from_slice(v.explained_variance());
            (v.n_components(), storage)
        });
        Ok(())
    }
}

fn fit_both<T: Float>(x: &[T], d: usize, k: usize, opts: &FastIcaOptions) -> (Vec<T>, Vec<T>) {
    let n = x.len() / d;
    let mut ws = vec![0.0; fit_workspace_len(d, k)];
    let mut staging = vec![T::ZERO; model_len(d, k)];

    let mut direct = vec![T::ZERO; model_len(d, k)];
    let mut z = vec![T::ZERO; n * k];
    let mut exec = InMemory::new(x, &mut z);
    let mut model = FastIcaBuf::new(d, k, &mut direct).unwrap();
    let a = model
        .fit_with(
            &mut exec,
            Portable,
            opts,
            WInit::Seed(3),
            &mut staging,
            &mut ws,
            &mut |_, _| {},
        )
        .unwrap();

    let mut shipped = vec![T::ZERO; model_len(d, k)];
    let mut exec = SpecOnly {
        x,
        d,
        whitener: None,
        passes: 0,
    };
    let mut model = FastIcaBuf::new(d, k, &mut shipped).unwrap();
    let b = model
        .fit_with(
            &mut exec,
            Portable,
            opts,
            WInit::Seed(3),
            &mut staging,
            &mut ws,
            &mut |_, _| {},
        )
        .unwrap();
    assert_eq!(a, b);
    assert!(exec.passes >= 2);
    (direct, shipped)
}

fn bits<T: Float>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

#[test]
fn fits_run_from_specs_equal_in_memory_fits_bit_for_bit() {
    // 2.5 chunks of rows, so that the last piece is short.
    let (d, k) = (5, 4);
    let x = data(CHUNK * 5 / 2, d, 1);
    let x32: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    for algorithm in [Algorithm::Parallel, Algorithm::Deflation] {
        for contrast in [
            ContrastKind::LogCosh(LogCosh::new(1.5).unwrap()),
            ContrastKind::Exp,
            ContrastKind::Cube,
        ] {
            for (whiten, canonical) in [
                (WhitenMode::UnitVariance, false),
                (WhitenMode::ArbitraryVariance, true),
            ] {
                let mut opts = FastIcaOptions::DEFAULT;
                opts.ica.algorithm = algorithm;
                opts.contrast = contrast;
                opts.whiten = whiten;
                opts.canonical = canonical;
                let (a, b) = fit_both(&x, d, k, &opts);
                assert_eq!(bits(&a), bits(&b), "{algorithm:?} {contrast:?} {whiten:?}");
                let (a, b) = fit_both(&x32, d, k, &opts);
                assert_eq!(
                    bits(&a),
                    bits(&b),
                    "f32 {algorithm:?} {contrast:?} {whiten:?}"
                );
            }
        }
    }
    // Without whitening the white rows are the input (k = d).
    let mut opts = FastIcaOptions::DEFAULT;
    opts.whiten = WhitenMode::None;
    let (a, b) = fit_both(&x, d, d, &opts);
    assert_eq!(bits(&a), bits(&b));
}

#[test]
fn each_pass_and_its_rebuilt_spec_give_the_same_partials() {
    let k = 3;
    let z = data(CHUNK + 100, k, 2);
    let w: Vec<f64> = (0..k * k)
        .map(|i| [0.8, -0.3, 0.5][i % 3] + i as f64 * 0.01)
        .collect();
    let contrast = ContrastKind::Exp;
    let check =
        |direct: &dyn Fn(&mut [f64]) -> unmix::Result<()>, spec: PassSpec<'_>, len: usize| {
            let mut a = vec![0.0; len];
            direct(&mut a).unwrap();
            let p = spec.pass(Portable).unwrap();
            let mut b = vec![0.0; len];
            Pass::<f64>::accumulate(&p, &mut b, 0, &z).unwrap();
            assert_eq!(bits(&a), bits(&b), "{spec:?}");
        };
    let m = MomentsPass::new(k).unwrap();
    check(
        &|t| m.accumulate(t, 0, &z),
        Pass::<f64>::spec(&m).unwrap(),
        Pass::<f64>::partial_len(&m),
    );
    let p = ParallelPass::new(&w, k, &contrast, Portable).unwrap();
    check(
        &|t| p.accumulate(t, 0, &z),
        Pass::<f64>::spec(&p).unwrap(),
        Pass::<f64>::partial_len(&p),
    );
    let q = DeflationPass::new(&w[..k], k, &contrast).unwrap();
    check(
        &|t| q.accumulate(t, 0, &z),
        Pass::<f64>::spec(&q).unwrap(),
        Pass::<f64>::partial_len(&q),
    );
    let s = SourcePass::new(&w, k, Portable).unwrap();
    check(
        &|t| s.accumulate(t, 0, &z),
        Pass::<f64>::spec(&s).unwrap(),
        Pass::<f64>::partial_len(&s),
    );
}

/// `pass` over `z` (`k` wide) one chunk per partial, merged in row order, each chunk fed in the
/// pieces that `cuts` (row offsets inside a chunk, ascending) make.
fn chunked<P: Pass<f64>>(pass: &P, z: &[f64], k: usize, cuts: &[usize]) -> Vec<f64> {
    let mut total = vec![0.0; pass.partial_len()];
    for (c, chunk) in z.chunks(CHUNK * k).enumerate() {
        let mut partial = vec![0.0; pass.partial_len()];
        let rows = chunk.len() / k;
        let mut start = 0;
        for end in cuts.iter().map(|&c| c.min(rows)).chain([rows]) {
            let first = (c * CHUNK + start) as u64;
            pass.accumulate(&mut partial, first, &chunk[start * k..end * k])
                .unwrap();
            start = end;
        }
        pass.merge(&mut total, &partial).unwrap();
    }
    total
}

/// Whether `pass` over `z` chunk by chunk ([`chunked`] at `cuts`) finishes with the bits of one
/// sequential call. `finish` turns a total into the pass's results (`k * k + 4 * k` values at
/// most) and its row count: the partials also hold block scratch, which may differ.
fn same_as_sequential<P: Pass<f64>>(
    pass: &P,
    finish: impl Fn(&mut [f64], &mut [f64]) -> unmix::Result<u64>,
    z: &[f64],
    k: usize,
    cuts: &[usize],
) -> bool {
    let finished = |mut total: Vec<f64>| {
        let mut out = vec![0.0; k * k + 4 * k];
        let rows = finish(&mut total, &mut out).unwrap();
        (rows, bits(&out))
    };
    let mut one = vec![0.0; pass.partial_len()];
    pass.accumulate(&mut one, 0, z).unwrap();
    finished(chunked(pass, z, k, cuts)) == finished(one)
}

#[test]
fn each_pass_gives_the_bits_of_one_sequential_pass_on_the_splits_it_allows() {
    // 2.5 chunks, so that the last chunk is short; cuts inside a block of 32 rows and across.
    let k = 3;
    let z = data(CHUNK * 5 / 2, k, 3);
    let w: Vec<f64> = (0..k * k)
        .map(|i| [0.8, -0.3, 0.5][i % 3] + i as f64 * 0.01)
        .collect();
    let contrast = ContrastKind::LogCosh(LogCosh::new(1.2).unwrap());
    let m = MomentsPass::new(k).unwrap();
    let p = ParallelPass::new(&w, k, &contrast, Portable).unwrap();
    let q = DeflationPass::new(&w[..k], k, &contrast).unwrap();
    let s = SourcePass::new(&w, k, Portable).unwrap();
    // The moments as the mean then the covariance.
    let moments = |total: &mut [f64], out: &mut [f64]| {
        let view = m.view(total)?;
        out[..k].copy_from_slice(view.mean());
        view.covariance_into(0, &mut out[k..])?;
        Ok(view.n_samples())
    };
    for cuts in [&[][..], &[1, 33, 1000, 2049][..]] {
        let whole = cuts.is_empty();
        // Every pass on whole chunks; the deflation and source passes on any pieces of a chunk
        // too. The moments and parallel passes gather each call's rows into blocks, so pieces
        // change their bits (`Pass` says so; should they start to agree, widen its doc).
        let (fp, fq, fs) = (
            |t: &mut [f64], o: &mut [f64]| p.finish(t, o),
            |t: &mut [f64], o: &mut [f64]| q.finish(t, o),
            |t: &mut [f64], o: &mut [f64]| s.finish(t, o),
        );
        let agree = |name, same| assert_eq!(same, whole, "{name} at {cuts:?}");
        agree("moments", same_as_sequential(&m, moments, &z, k, cuts));
        agree("parallel", same_as_sequential(&p, fp, &z, k, cuts));
        assert!(
            same_as_sequential(&q, fq, &z, k, cuts),
            "deflation at {cuts:?}"
        );
        assert!(
            same_as_sequential(&s, fs, &z, k, cuts),
            "sources at {cuts:?}"
        );
    }
}

/// A contrast the core does not know: its passes cannot be described.
struct Tanh2;
impl Contrast for Tanh2 {
    fn eval(&self, u: f64) -> (f64, f64) {
        let t = libm::tanh(2.0 * u);
        (t, 2.0 * (1.0 - t * t))
    }
}

#[test]
fn user_contrasts_and_bad_specs_are_refused_without_panicking() {
    let w = [1.0, 0.0, 0.0, 1.0];
    let p = ParallelPass::new(&w, 2, &Tanh2, Portable).unwrap();
    assert!(Pass::<f64>::spec(&p).is_none());
    assert_eq!(
        LogCosh::DEFAULT.kind(),
        Some(ContrastKind::LogCosh(LogCosh::DEFAULT))
    );
    assert_eq!(Exp.kind(), Some(ContrastKind::Exp));
    assert_eq!(Cube.kind(), Some(ContrastKind::Cube));
    // A w of the wrong length, zero features: errors, not panics.
    let bad = PassSpec::Parallel {
        k: 3,
        w: &w,
        contrast: ContrastKind::Cube,
    };
    assert!(bad.pass(Portable).is_err());
    assert!(
        PassSpec::Source { k: 2, w: &w[..3] }
            .pass(Portable)
            .is_err()
    );
    assert!(PassSpec::Moments { d: 0 }.pass(Portable).is_err());
}
