//! Rows read in a wider type than they are stored in: an `f32` file fitted in `f64`
//! (`unmix fit --dtype f64`) without an `f64` copy of the whole input.
//!
//! Widening `f32` to `f64` is exact, so a pass over widened rows gives the bits it gives over a
//! converted copy; the copy took twice the file's size (41 MB for a 20 MB file at 2e4 x 256),
//! where widening takes a block at a time. [`Widens`] says which types widen into which;
//! [`Widened`] runs any [`Pass`] over narrower rows, a piece at a time.

use unmix::Float;
use unmix::ica::Pass;

/// A value type whose rows can be read as `T`'s, exactly: `T` itself, or `f32` as `f64`.
pub trait Widens<T>: Float + Send + Sync + 'static {
    /// Whether `Self` is `T`.
    const SAME: bool;
    /// The value in `T` (exact).
    fn widen(self) -> T;
    /// The rows themselves when they already are `T`'s (no copy), else `None`.
    fn as_same(rows: &[Self]) -> Option<&[T]>;
}

impl<T: Float + Send + Sync + 'static> Widens<T> for T {
    const SAME: bool = true;
    #[inline(always)]
    fn widen(self) -> T {
        self
    }
    #[inline(always)]
    fn as_same(rows: &[T]) -> Option<&[T]> {
        Some(rows)
    }
}

impl Widens<f64> for f32 {
    const SAME: bool = false;
    #[inline(always)]
    fn widen(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn as_same(_: &[f32]) -> Option<&[f64]> {
        None
    }
}

/// `rows` as `T`'s: themselves, or widened into `buf` (resized to fit).
pub fn widened<'a, S: Widens<T>, T: Float>(rows: &'a [S], buf: &'a mut Vec<T>) -> &'a [T] {
    if let Some(same) = S::as_same(rows) {
        return same;
    }
    buf.clear();
    buf.extend(rows.iter().map(|v| v.widen()));
    buf
}

/// The pass `P` over `T` rows, run over rows stored as `S`: each piece an executor hands it (a
/// chunk, in the CLI) is widened whole into a buffer and given to `P`, so that the partials
/// are the bits `P` gives over a widened copy of the whole input. (Whole: the core's moments
/// pass sums each piece apart before adding it to the partial, so smaller pieces would change
/// its last bits.)
pub struct Widened<'a, P, T> {
    pass: &'a P,
    _t: core::marker::PhantomData<fn() -> T>,
}

impl<'a, P, T> Widened<'a, P, T> {
    /// `pass`, over rows stored in another type.
    pub fn new(pass: &'a P) -> Self {
        Self {
            pass,
            _t: core::marker::PhantomData,
        }
    }
}

impl<S: Widens<T>, T: Float, P: Pass<T>> Pass<S> for Widened<'_, P, T> {
    fn partial_len(&self) -> usize {
        self.pass.partial_len()
    }
    fn accumulate(&self, partial: &mut [f64], first: u64, rows: &[S]) -> unmix::Result<()> {
        self.pass
            .accumulate(partial, first, widened(rows, &mut Vec::new()))
    }
    fn merge(&self, total: &mut [f64], next: &[f64]) -> unmix::Result<()> {
        self.pass.merge(total, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unmix::ica::MomentsPass;

    /// The moments of `f32` rows through [`Widened`] are the bits of the moments of their `f64`
    /// copy, over several chunks and a ragged last one.
    #[test]
    fn a_widened_pass_has_the_bits_of_the_converted_rows() {
        let (n, d) = (unmix::ica::CHUNK + 700, 5);
        let rows: Vec<f32> = (0..n * d)
            .map(|i| ((i * 7919 % 2003) as f32 - 1001.0) / 37.0)
            .collect();
        let copy: Vec<f64> = rows.iter().map(|&v| f64::from(v)).collect();
        let pass = MomentsPass::new(d).unwrap();
        let len = MomentsPass::partial_len_for(d);
        let (mut a, mut b) = (vec![0.0; len], vec![0.0; len]);
        let chunk = unmix::ica::CHUNK * d;
        let widened = Widened::<_, f64>::new(&pass);
        for (i, (r, c)) in rows.chunks(chunk).zip(copy.chunks(chunk)).enumerate() {
            let first = (i * unmix::ica::CHUNK) as u64;
            let (mut pa, mut pb) = (vec![0.0; len], vec![0.0; len]);
            Pass::<f32>::accumulate(&widened, &mut pa, first, r).unwrap();
            Pass::<f64>::accumulate(&pass, &mut pb, first, c).unwrap();
            Pass::<f32>::merge(&widened, &mut a, &pa).unwrap();
            Pass::<f64>::merge(&pass, &mut b, &pb).unwrap();
        }
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    /// The CLI's GEMM moments read `f32` rows as they are (`crate::pipeline::moments_widened`):
    /// the bits of their `f64` copy's, without a widened copy of each chunk.
    #[test]
    fn the_gemm_moments_of_f32_rows_are_those_of_their_f64_copy() {
        let (n, d) = (unmix::ica::CHUNK + 300, 40);
        let rows: Vec<f32> = (0..n * d)
            .map(|i| ((i * 7919 % 2003) as f32 - 1001.0) / 37.0 + (i % d) as f32)
            .collect();
        let copy: Vec<f64> = rows.iter().map(|&v| f64::from(v)).collect();
        let pool = crate::fastica::pool(2).unwrap();
        let a = crate::pipeline::moments_widened::<f64, f32>(
            &crate::io::Matrix::new(n, d, rows).unwrap(),
            &pool,
        )
        .unwrap();
        let b =
            crate::pipeline::moments(&crate::io::Matrix::new(n, d, copy).unwrap(), &pool).unwrap();
        let bits = |m: &crate::pipeline::OwnedMoments| {
            let v = m.view();
            (
                v.n_samples(),
                v.mean()
                    .iter()
                    .chain(v.comoment_upper())
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
            )
        };
        // On the GEMM unless UNMIX_SIMD=portable asks for the core's pass (then `Widened`).
        assert!(crate::pipeline::uses_gemm(d) || crate::simd::portable_requested());
        assert_eq!(bits(&a), bits(&b));
    }
}
