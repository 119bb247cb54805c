//! `unmix fit`, `transform`, `inverse-transform`: FastICA over files, on all cores.
//!
//! The fit is the core's one driver ([`FastIcaBuf::fit_with`]); this module supplies its
//! [`Executor`]: every pass splits the samples into the core's fixed chunks
//! ([`unmix::ica::CHUNK`] rows), runs them on a rayon pool of `threads` threads, and merges their
//! partial results in row order. The core's chunked sums make that the same bits as one
//! sequential pass, so `--threads` never changes a result.

use crate::blocks::{BLOCK_ROWS, BlockPass, HALF_CHUNK};
use crate::io::Matrix;
use crate::output::Delivery;
use crate::simd::{GemmFloat, centred_product};
use crate::widen::{Widened, Widens};
use anyhow::{Context, Result};
use rayon::prelude::*;
use unmix::Float;
use unmix::ica::{
    self, CHUNK, Executor, FastIcaBuf, FastIcaOptions, FastIcaView, IcaInfo, Pass, Rows, WInit,
    WhitenMode,
};
use unmix::whiten::{self, WhitenerBuf, WhitenerView};

/// A rayon pool of `threads` threads.
pub fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .context("could not start the worker threads")
}

/// The bound on a command's peak memory beyond 1.25 x the input's size: 50 MB.
pub const MEMORY_SLACK: usize = 50_000_000;

/// What a command holds besides its input, the stored white rows and the buffers counted by
/// [`white_chunks_to_store`]: the program, thread stacks, the model and small buffers (a
/// 5000 x 8 fit peaks at 7 MB).
pub const MEMORY_RESERVED: usize = 16_000_000;

/// From this many components a pass that reads a mapped input's rows (folded, or whitening
/// rows again) releases their pages once read ([`crate::io::Values::release`]), so that the
/// input is not held whole beside the pass's buffers; the next pass maps them again from the
/// page cache. With `fit --dtype f64` on the f32 file at 2e4 x 256 (k = 256, the whitening
/// folded in) the peak went from 69-77 MB to 57-64 (the bound 75), for up to 3-5 % of an
/// iteration on one thread. Below, the pages cost more than the pass: at 1e6 x 8 an iteration
/// took 11.5-14.0 ms instead of 7.4-7.5 on two threads, at 1e5 x 768 to 64 components 36 ms
/// instead of 21 on one (`benches/README.md`, "The input's pages released as read").
pub const RELEASE_MIN_K: usize = 128;

/// Rows a thread whitens again at a time when its chunk is not stored ([`PoolExecutor`]).
pub const REWHITEN_ROWS: usize = MAP_ROWS;
// Half a piece (a chunk's halves rewhitened at once) is still whole blocks of the pass.
const _: () = assert!((REWHITEN_ROWS / 2).is_multiple_of(BLOCK_ROWS));

/// How many leading [`CHUNK`]s of whitened rows (`k` wide, `elem` bytes a value) a fit of
/// `n x d` on `threads` threads stores, so that its peak memory stays within 1.25 x the input
/// plus [`MEMORY_SLACK`]; the other chunks are whitened again in every pass, [`REWHITEN_ROWS`]
/// rows per thread at a time. All chunks when they fit (no per-thread buffers are needed then).
/// Besides [`MEMORY_RESERVED`], the budget holds a pass's partial results (one per thread, the
/// total and the driver's workspace: `threads + 4` of the parallel pass's, the largest) and
/// [`ROUND_BYTES`]. The input is `input_elem` bytes a value: `elem`, or the file's where the
/// rows are a conversion of it (`--dtype f32` on an f64 file, whose bound is the file's).
pub fn white_chunks_to_store(
    n: usize,
    d: usize,
    k: usize,
    elem: usize,
    input_elem: usize,
    threads: usize,
) -> usize {
    let chunks = n.div_ceil(CHUNK);
    let chunk_bytes = (CHUNK * k * elem).max(1);
    let budget = white_budget(n, d, k, elem, input_elem, threads);
    if n.saturating_mul(k).saturating_mul(elem) <= budget {
        return chunks;
    }
    let buffers = threads.max(1) * REWHITEN_ROWS * k * elem;
    (budget.saturating_sub(buffers) / chunk_bytes).min(chunks)
}

/// Bytes [`white_chunks_to_store`] may give to white rows of `k` components on `threads`
/// threads: 1.25 x the input (`n x d` values of `input_elem` bytes) plus [`MEMORY_SLACK`], less
/// the rows in memory (`n x d` of `elem` bytes) and the reserve.
fn white_budget(
    n: usize,
    d: usize,
    k: usize,
    elem: usize,
    input_elem: usize,
    threads: usize,
) -> usize {
    let values = n.saturating_mul(d);
    // The rows in memory are the narrower of the two: a conversion to f32, or the file's f32
    // values widened as they are read ([`crate::widen`]).
    let (held, input) = (
        values.saturating_mul(elem.min(input_elem)),
        values.saturating_mul(input_elem),
    );
    let partial = 8 * ica::ParallelPass::<ica::LogCosh, _>::partial_len_with(
        k,
        crate::simd::CliKernel::for_this_cpu(),
    );
    let reserved = MEMORY_RESERVED + ROUND_BYTES + (threads.max(1) + 4) * partial;
    (input.saturating_add(input / 4) + MEMORY_SLACK).saturating_sub(held.saturating_add(reserved))
}

/// Whether FastICA's parallel passes over `n x d` white rows of `k` components (`elem` bytes a
/// value) fold the whitening into their products ([`BlockPass::folded`]) rather than read
/// stored white rows: when `d < 2 k` and the white rows do not all fit the memory bound on one
/// thread. Stored rows are cheaper (no centring, no `G_X V'` per chunk: f32 at 2e4 x 256 and
/// 1e6 x 8, whose white rows fit, took 8 % and 18 % longer an iteration folded); rows whitened
/// again cost `k d` more per row than folding. Decided from the shapes alone, never the thread
/// count, so that the bits do not depend on it (folding rounds differently). A fit over a mapped
/// input of its own type never folds: it releases the input as it whitens and stores every
/// white row ([`PoolExecutor::releasing`]); over an f32 file fitted in f64 it may.
///
/// `UNMIX_FOLD=always` or `never` overrides the choice (tests, benchmarks); `UNMIX_SIMD=portable`
/// never folds.
pub fn folds_whitening(n: usize, d: usize, k: usize, elem: usize, input_elem: usize) -> bool {
    if crate::simd::portable_requested() {
        return false;
    }
    fold_requested().unwrap_or_else(|| {
        d < 2 * k
            && n.saturating_mul(k).saturating_mul(elem) > white_budget(n, d, k, elem, input_elem, 1)
    })
}

/// `UNMIX_FOLD`: `always` (`Some(true)`), `never` (`Some(false)`), else `None` (read once).
fn fold_requested() -> Option<bool> {
    static FOLD: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    *FOLD.get_or_init(|| match std::env::var("UNMIX_FOLD").as_deref() {
        Ok("always") => Some(true),
        Ok("never") => Some(false),
        _ => None,
    })
}

/// The white rows of a fit: the whitener (its storage layout, O(K D)) and the first chunks of
/// `z = W (x - mean)`; the rest are recomputed by each pass.
struct White<T> {
    k: usize,
    whitener: Vec<T>,
    z: Vec<T>,
    stored_chunks: usize,
    /// Whether the parallel passes fold the whitening in ([`folds_whitening`]).
    fold: bool,
}

/// Passes over row-major samples in memory, chunk by chunk on a thread pool, merged in order.
///
/// The whitened rows are stored as far as the memory bound allows
/// ([`white_chunks_to_store`]), or all of them over a mapped input released as it is whitened
/// ([`Self::releasing`]); a chunk not stored is whitened again, by the same product on
/// the same rows (whole [`CHUNK`]s, each a multiple of the transform's blocks), into a buffer
/// of its thread, so a pass sees the same bits either way.
///
/// The rows may be stored in a narrower type `S` than the fit's `T` (an `f32` file fitted in
/// `f64`): every pass then widens them as it reads them ([`Widens`]), with the bits of a
/// converted copy, and the memory bound counts them at their stored size.
pub struct PoolExecutor<'a, T, S = T> {
    x: &'a [S],
    d: usize,
    white: Option<White<T>>,
    threads: usize,
    pool: &'a rayon::ThreadPool,
    store_chunks: Option<usize>,
    parallel_only: bool,
    /// The input's mapped pages, released once read ([`Self::releasing`]).
    mapped: Option<&'a crate::io::Values<S>>,
    /// Bytes a value of the file the rows were converted from ([`Self::converted_from`]).
    input_elem: Option<usize>,
}

impl<'a, T: Float + Send + Sync, S: Widens<T>> PoolExecutor<'a, T, S> {
    /// Passes over `x` (`n x d`) on `pool`.
    pub fn new(x: &'a [S], d: usize, pool: &'a rayon::ThreadPool) -> Self {
        Self {
            x,
            d,
            white: None,
            threads: pool.current_num_threads(),
            pool,
            store_chunks: None,
            parallel_only: false,
            mapped: None,
            input_elem: None,
        }
    }
    /// Says that the fit's type is not the file's, of `elem` bytes a value (`--dtype f32` on an
    /// f64 file, or f64 on an f32 one): the memory bound is 1.25 x that file plus 50 MB, of
    /// which the rows take the narrower size (an f32 copy of an f64 file, or the f32 file's rows
    /// widened as they are read, [`Widens`]). From an f64 file more white rows may be stored (at
    /// 2e4 x 256 all of them, where the rows' own size as the input left one chunk in five to
    /// be whitened again in each pass); from an f32 file, whose white rows are twice its size,
    /// fewer. The bits do not change where the whitening is not folded in
    /// ([`folds_whitening`], which reads the same budget).
    pub fn converted_from(mut self, elem: usize) -> Self {
        self.input_elem = Some(elem);
        self
    }
    /// Says that the white passes will be FastICA's parallel ones (and the sources' pass at
    /// the end): when they fold the whitening into their products ([`folds_whitening`]), no
    /// white rows are stored.
    pub fn parallel_passes(mut self) -> Self {
        self.parallel_only = true;
        self
    }
    /// Stores at most `chunks` chunks of white rows, whatever the memory bound says (tests).
    pub fn store_at_most(mut self, chunks: usize) -> Self {
        self.store_chunks = Some(chunks);
        self
    }
    /// Passes over `values` (in place of the rows given to [`Self::new`]), whose pages, when
    /// they are a file's mapped pages, are released as they are whitened
    /// ([`crate::io::Values::release`]): then every white row is stored within the memory bound
    /// (the white rows take the released rows' place) and the passes never fold the whitening
    /// in or whiten rows again. Only the white rows are read after the whitening (the sources
    /// read the input again, page by page from the page cache, after the passes).
    ///
    /// At 2e4 x 256 (one thread), where a quarter of the white rows fit beside the mapped
    /// input and the passes folded the whitening in, an iteration took 140 ms against 150.
    /// The bits are those of a fit that stores every white row, so they depend on whether the
    /// input is mapped (a large row-major little-endian `.npy`, [`crate::io::read_npy`]) or
    /// read (CSV, `--dtype` conversions, Fortran order): the same file gives the same bits.
    /// Rows widened as they are read ([`Widens`]) do not have all their white rows stored:
    /// every pass reads the rest again (folded, or whitened again), where storing white rows
    /// wider than the input would take twice the file. Their pages are released once read
    /// too: those of stored rows as they are whitened, the others after each pass that reads
    /// them from [`RELEASE_MIN_K`] components, and all of them as the sources are written
    /// ([`write_sources`]).
    pub fn releasing(mut self, values: &'a crate::io::Values<S>) -> Self {
        self.x = values;
        self.mapped = values.is_mapped().then_some(values);
        self
    }
}

/// Runs `pass` over `data` (`width` wide) on `pool`: rounds of one [`CHUNK`] per thread, each
/// into its own partial, merged into `total` in row order. Rounds bound the memory for partials
/// (15 MB each at k = 768) while the pool keeps its threads between rounds and passes.
pub fn run_pass<T: Float + Send + Sync, P: Pass<T>>(
    pool: &rayon::ThreadPool,
    threads: usize,
    data: &[T],
    width: usize,
    pass: &P,
    total: &mut [f64],
) -> unmix::Result<()> {
    let width = width.max(1);
    let n = data.len() / width;
    run_chunks(
        pool,
        threads,
        n.div_ceil(CHUNK),
        pass,
        total,
        0,
        #[inline(always)]
        |index, partial, _| {
            let rows = &data[index * CHUNK * width..((index + 1) * CHUNK * width).min(data.len())];
            pass.accumulate(partial, (index * CHUNK) as u64, rows)
        },
    )
}

/// Bytes of partials and scratch buffers a round of [`run_chunks`] may hold beyond one slot per
/// thread (counted in [`white_chunks_to_store`]'s budget).
pub const ROUND_BYTES: usize = 4 << 20;

/// Runs `chunk(index, partial, scratch)` for chunks `0..chunks` on `pool`, in rounds of as many
/// chunks as [`ROUND_BYTES`] of slots hold (at least one per thread), each chunk into its own
/// zeroed partial, merged into `total` in chunk order; `scratch` is a buffer of `scratch_len`
/// values that each slot keeps between rounds. The threads meet once a round: with one chunk
/// per thread a round, at 1e6 x 8 (245 chunks of about 60 us) two threads gave 1.5x one.
/// Each chunk's sums are the same whichever round or thread runs it, and so are the bits.
pub fn run_chunks<T: Float + Send, P: Pass<T>>(
    pool: &rayon::ThreadPool,
    threads: usize,
    chunks: usize,
    pass: &P,
    total: &mut [f64],
    scratch_len: usize,
    chunk: impl Fn(usize, &mut [f64], &mut [T]) -> unmix::Result<()> + Sync,
) -> unmix::Result<()> {
    let slot_bytes = 8 * pass.partial_len() + scratch_len * std::mem::size_of::<T>();
    let round = (ROUND_BYTES / slot_bytes.max(1))
        .max(threads)
        .min(chunks)
        .max(1);
    let mut slots = take_slots::<T>(round, pass.partial_len(), scratch_len);
    // The whole pass inside the pool: one hand-over to its threads, not one per round (with
    // one thread, a round per chunk woke a worker and put the caller to sleep 245 times a pass
    // at 1e6 rows, 5 % of an iteration).
    let result = pool.install(|| {
        let mut start = 0;
        while start < chunks {
            let end = (start + round).min(chunks);
            let results: Vec<unmix::Result<()>> = slots[..end - start]
                .par_iter_mut()
                .zip((start..end).into_par_iter())
                .map(|((partial, scratch), index)| {
                    partial.fill(0.0);
                    crate::simd::fastest(
                        #[inline(always)]
                        || chunk(index, partial, scratch),
                    )
                })
                .collect();
            for (result, (partial, _)) in results.into_iter().zip(&slots) {
                result?;
                pass.merge(total, partial)?;
            }
            start = end;
        }
        Ok(())
    });
    SLOTS.with(|cell| *cell.borrow_mut() = Some(Box::new(slots)));
    result
}

/// A round's partials and scratch buffers, one pair a slot.
type Slots<T> = Vec<(Vec<f64>, Vec<T>)>;

thread_local! {
    /// The slots of this thread's last [`run_chunks`], kept for its next pass: fresh ones each
    /// pass (5 MB at 2e4 x 256) cost page faults and the kernel's zeroing, 1.4 % of an iteration
    /// at 12288 x 256 (perf). A slot's partial is zeroed before each chunk anyway.
    static SLOTS: std::cell::RefCell<Option<Box<dyn std::any::Any>>> =
        const { std::cell::RefCell::new(None) };
}

/// Drops this thread's kept slots ([`run_chunks`]): after a pass whose partials no later pass
/// reuses (the moments', 31 MB at D = 768 on two threads), and after the last pass, so that
/// they do not stay for the rest of the command.
pub fn release_slots() {
    SLOTS.with(|cell| cell.borrow_mut().take());
}

/// `round` slots of `partial_len` and `scratch_len` values: this thread's last ones when they
/// hold the same type and are at most twice as large, else new ones.
fn take_slots<T: Float>(round: usize, partial_len: usize, scratch_len: usize) -> Slots<T> {
    let fits = |(p, s): &(Vec<f64>, Vec<T>)| {
        p.capacity() <= 2 * partial_len.max(1) && s.capacity() <= 2 * scratch_len.max(1)
    };
    let mut slots: Slots<T> = SLOTS
        .with(|cell| cell.borrow_mut().take())
        .and_then(|b| b.downcast::<Slots<T>>().ok())
        .map(|b| *b)
        .unwrap_or_default();
    slots.retain(fits);
    slots.truncate(round);
    for (partial, scratch) in &mut slots {
        partial.resize(partial_len, 0.0);
        scratch.resize(scratch_len, T::ZERO);
    }
    while slots.len() < round {
        slots.push((
            crate::io::zeroed(partial_len, 0.0),
            crate::io::zeroed(scratch_len, T::ZERO),
        ));
    }
    slots
}

impl<T: GemmFloat, S: Widens<T>> Executor<T> for PoolExecutor<'_, T, S> {
    fn pass<P: Pass<T>>(&mut self, rows: Rows, pass: &P, total: &mut [f64]) -> unmix::Result<()> {
        // The parallel pass on row-major blocks (`blocks`); other passes as given.
        let pass = &BlockPass::new(pass);
        let d = self.d;
        let white = match (rows, &self.white) {
            (Rows::White, Some(white)) => white,
            _ => {
                let pass = &Widened::new(pass);
                return run_pass(self.pool, self.threads, self.x, d, pass, total);
            }
        };
        let k = white.k;
        let n = self.x.len() / d;
        let chunks = n.div_ceil(CHUNK);
        let view = WhitenerView::from_parts(d, k, &white.whitener)?;
        let (x, z) = (self.x, &white.z);
        let mapped = self.mapped.filter(|_| k >= RELEASE_MIN_K);
        if let Some(folded) = white
            .fold
            .then(|| pass.folded(view.mean(), view.whitening(), d))
            .flatten()
        {
            // Every chunk with the whitening folded in, stored or not: the bits then depend
            // on neither the memory bound nor the thread count.
            return run_chunks(
                self.pool,
                self.threads,
                chunks,
                pass,
                total,
                0,
                #[inline(always)]
                |index, partial, _| {
                    let first = index * CHUNK;
                    let end = (first + CHUNK).min(n);
                    folded.accumulate(partial, &x[first * d..end * d])?;
                    if let Some(values) = mapped {
                        values.release(first * d..end * d);
                    }
                    Ok(())
                },
            );
        }
        if white.stored_chunks >= chunks {
            return run_pass(self.pool, self.threads, z, k, pass, total);
        }
        let split_transform = k >= crate::simd::GEMM_MIN_K && !crate::simd::portable_requested();
        run_chunks(
            self.pool,
            self.threads,
            chunks,
            pass,
            total,
            REWHITEN_ROWS * k,
            #[inline(always)]
            |index, partial, scratch| {
                let first = index * CHUNK;
                let end = (first + CHUNK).min(n);
                if index < white.stored_chunks {
                    return pass.accumulate(partial, first as u64, &z[first * k..end * k]);
                }
                // Consecutive pieces of one chunk into one partial: the bits of the whole chunk
                // (the `Pass` contract), and the pieces are whole blocks of the transform.
                let whiten = |rows: std::ops::Range<usize>, zi: &mut [T]| {
                    centred_product(
                        &x[rows.start * d..rows.end * d],
                        d,
                        view.mean(),
                        view.whitening(),
                        zi,
                        k,
                        |xi, zi| view.transform_rows(xi, zi),
                    )
                };
                // Rows `range` whitened a piece of `buf` at a time, each piece added to `sums`:
                // the whole partial, or with `region` one of the block pass's two regions. (A
                // flag, not a closure for the addition: a closure passed down would not be
                // inlined into the caller's AVX2 instance, nor the contrast with it.)
                let rewhiten = |range: std::ops::Range<usize>,
                                buf: &mut [T],
                                sums: &mut [f64],
                                region: bool|
                 -> unmix::Result<()> {
                    let piece = buf.len() / k.max(1);
                    for start in range.clone().step_by(piece.max(1)) {
                        let stop = (start + piece).min(range.end);
                        let zi = &mut buf[..(stop - start) * k];
                        // On the GEMM, the piece's two halves (whole 256-row blocks of the
                        // transform, so the same products) under `rayon::join`: an idle thread
                        // takes one, as it does the pass products' halves.
                        let mid = start + (stop - start).div_ceil(2).next_multiple_of(256);
                        if split_transform && mid < stop {
                            let (za, zb) = zi.split_at_mut((mid - start) * k);
                            let (a, b) = crate::simd::join_fastest(
                                #[inline(always)]
                                || whiten(start..mid, za),
                                #[inline(always)]
                                || whiten(mid..stop, zb),
                            );
                            a?;
                            b?;
                        } else {
                            whiten(start..stop, zi)?;
                        }
                        if region {
                            pass.accumulate_region(sums, start as u64, zi)?;
                        } else {
                            pass.accumulate(sums, start as u64, zi)?;
                        }
                    }
                    Ok(())
                };
                // Where the pass sums the chunk's halves apart, the two at once, half the
                // scratch each: a lone chunk then runs on both threads, as a stored one does
                // (at 2e4 x 256 f32 with four of five chunks stored, the fifth took as long
                // as two chunks on two threads).
                let middle = (first + HALF_CHUNK).min(end);
                if middle < end
                    && let Some((pa, pb)) = pass.regions(partial)
                {
                    let (sa, sb) = scratch.split_at_mut(scratch.len() / 2);
                    let (a, b) = crate::simd::join_fastest(
                        #[inline(always)]
                        || rewhiten(first..middle, sa, pa, true),
                        #[inline(always)]
                        || rewhiten(middle..end, sb, pb, true),
                    );
                    a.and(b)?;
                } else {
                    rewhiten(first..end, scratch, partial, false)?;
                }
                if let Some(values) = mapped {
                    values.release(first * d..end * d);
                }
                Ok(())
            },
        )
    }
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, T>>) -> unmix::Result<()> {
        self.white = match whitener {
            None => None,
            Some(v) => {
                let (d, k) = (self.d, v.n_components());
                let n = self.x.len() / d;
                let mapped = self.mapped;
                // Over a mapped input of the fit's own type every white row is stored: they
                // take the released rows' place.
                let store_all = mapped.is_some() && S::SAME;
                let elem = std::mem::size_of::<T>();
                let input_elem = self.input_elem.unwrap_or(elem);
                let fold = !store_all && folds_whitening(n, d, k, elem, input_elem);
                let stored_chunks = match self.store_chunks {
                    _ if fold && self.parallel_only => 0,
                    Some(c) => c,
                    // The white rows (`k <= d` wide) take the released input's place.
                    None if store_all => n.div_ceil(CHUNK),
                    None => white_chunks_to_store(n, d, k, elem, input_elem, self.threads),
                };
                let stored_rows = stored_chunks.saturating_mul(CHUNK).min(n);
                let mut z = crate::io::zeroed(stored_rows * k, T::ZERO);
                let x = self.x;
                map_rows(
                    self.pool,
                    &x[..stored_rows * d],
                    d,
                    &mut z,
                    k,
                    #[inline(always)]
                    |xi, zi| {
                        centred_product(xi, d, v.mean(), v.whitening(), zi, k, |xi, zi| {
                            v.transform_rows(xi, zi)
                        })?;
                        // Stored white rows are all the passes read of these rows.
                        if let Some(values) = mapped {
                            values.release_piece(xi);
                        }
                        Ok(())
                    },
                )?;
                let mut whitener = Vec::with_capacity(whiten::storage_len(d, k));
                for part in [
                    v.mean(),
                    v.whitening(),
                    v.unwhitening(),
                    v.explained_variance(),
                ] {
                    whitener.extend_from_slice(part);
                }
                Some(White {
                    k,
                    whitener,
                    z,
                    stored_chunks,
                    fold,
                })
            }
        };
        Ok(())
    }
}

/// Rows per piece of [`map_rows`]: a row-wise map has no reduction to keep in order, so pieces
/// smaller than a [`CHUNK`] balance the threads better (2e4 rows are 20 pieces, not 5 chunks).
/// A multiple of the transforms' GEMM blocks (256 rows), so that the products, hence the bits,
/// are the same for any piece size and thread count.
pub const MAP_ROWS: usize = 1024;

/// Applies `f` to row-chunks of `x` (width `in_w`) writing `out` (width `out_w`) on `pool`, in
/// [`MAP_ROWS`]-row pieces; an error names its row counted from the start of `x`.
pub fn map_rows<S: Float + Send + Sync, T: Float + Send + Sync>(
    pool: &rayon::ThreadPool,
    x: &[S],
    in_w: usize,
    out: &mut [T],
    out_w: usize,
    f: impl Fn(&[S], &mut [T]) -> unmix::Result<()> + Sync,
) -> unmix::Result<()> {
    let (in_w, out_w) = (in_w.max(1), out_w.max(1));
    pool.install(|| {
        x.par_chunks(MAP_ROWS * in_w)
            .zip(out.par_chunks_mut(MAP_ROWS * out_w))
            .enumerate()
            .try_for_each(|(index, (xi, oi))| map_pieces(xi, in_w, oi, out_w, index * MAP_ROWS, &f))
    })
}

/// [`map_rows`]'s work on this thread: `f` on each [`MAP_ROWS`]-row piece of `x` (whose first
/// row is row `first` of the table) into `out`, in the AVX2 instance where the CPU has it; an
/// error names its row counted from the start of the table.
fn map_pieces<S: Float, T: Float>(
    x: &[S],
    in_w: usize,
    out: &mut [T],
    out_w: usize,
    first: usize,
    f: &impl Fn(&[S], &mut [T]) -> unmix::Result<()>,
) -> unmix::Result<()> {
    let (in_w, out_w) = (in_w.max(1), out_w.max(1));
    let pieces = x
        .chunks(MAP_ROWS * in_w)
        .zip(out.chunks_mut(MAP_ROWS * out_w));
    for (i, (xi, oi)) in pieces.enumerate() {
        crate::simd::fastest(
            #[inline(always)]
            || f(xi, oi),
        )
        .map_err(|e| renumber(e, (first + i * MAP_ROWS) as u64))?;
    }
    Ok(())
}

/// `e` with a non-finite value's row counted `offset` rows further: from the start of the table
/// instead of the start of its piece.
pub fn renumber(e: unmix::Error, offset: u64) -> unmix::Error {
    match e {
        unmix::Error::NonFinite { row, col } => unmix::Error::NonFinite {
            row: row + offset,
            col,
        },
        other => other,
    }
}

/// What `unmix fit` needs beyond the data.
pub struct FitJob<'a> {
    /// Components (default: all features, or the effective rank must allow it).
    pub n_components: Option<usize>,
    /// Core options.
    pub options: FastIcaOptions,
    /// Start matrix or seed.
    pub init: WInit<'a>,
    /// Worker threads.
    pub threads: usize,
    /// Called after each iteration with (iteration, change).
    pub progress: &'a (dyn Fn(usize, f64) + Sync),
    /// Bytes a value of the file the rows were converted from, if they were
    /// ([`PoolExecutor::converted_from`]).
    pub converted_from: Option<usize>,
}

/// A fitted model plus its sources.
pub struct Fitted<T> {
    /// The model file's content.
    pub model: crate::model::FastIcaModel,
    /// Sources of the training data, `n x k`.
    pub sources: Matrix<T>,
    /// How the iterations ended.
    pub info: IcaInfo,
}

/// Fits FastICA on `x` through the core's driver on a thread pool.
/// The sources are held in memory (the report's pipelines use them); `unmix fit` writes them a
/// block at a time instead ([`fit_then`], [`write_sources`]).
pub fn fit<T: GemmFloat + serde::Serialize>(x: &Matrix<T>, job: &FitJob<'_>) -> Result<Fitted<T>> {
    let (n, d) = (x.rows, x.cols);
    let (model, info, sources) = fit_then::<T, T, _>(x, job, None, |view, pool| {
        let k = view.n_components();
        let mut sources = vec![T::ZERO; n * k];
        map_rows(
            pool,
            &x.data,
            d,
            &mut sources,
            k,
            #[inline(always)]
            |xi, si| sources_of(view, xi, si),
        )?;
        Matrix::new(n, k, sources)
    })?;
    Ok(Fitted {
        model,
        sources,
        info,
    })
}

/// Fits FastICA on `x` through the core's driver on a thread pool, then calls `then` with the
/// fitted model and the pool (to write the sources, while the model's storage lives).
/// `store_chunks` caps the white chunks kept in memory (`None`: as the memory bound allows,
/// [`white_chunks_to_store`]); it changes no bit. Rows stored in a narrower type `S` are
/// widened as each pass reads them ([`crate::widen`]): the bits of a converted copy, without
/// it.
pub fn fit_then<T: GemmFloat + serde::Serialize, S: Widens<T>, R>(
    x: &Matrix<S>,
    job: &FitJob<'_>,
    store_chunks: Option<usize>,
    then: impl FnOnce(&FastIcaView<'_, T>, &rayon::ThreadPool) -> Result<R>,
) -> Result<(crate::model::FastIcaModel, IcaInfo, R)> {
    let (n, d) = (x.rows, x.cols);
    let opts = &job.options;
    let k = opts.components(d, job.n_components);
    if opts.whiten == WhitenMode::None && job.n_components.is_some_and(|c| c != d) {
        eprintln!(
            "note: --n-components is ignored with --whiten false (as in scikit-learn): k = {d}"
        );
    }
    opts.check(d, k)?;
    // Reading `--w-init`, converting to `--dtype`.
    crate::phases::done("setup");
    let pool = pool(job.threads)?;
    let mut storage = vec![T::ZERO; ica::model_len(d, k)];
    let mut model = FastIcaBuf::new(d, k, &mut storage)?;
    let mut staging = vec![T::ZERO; ica::model_len(d, k)];
    let kernel = crate::simd::CliKernel::for_this_cpu();
    let mut exec = PoolExecutor::new(&x.data, d, &pool).releasing(&x.data);
    if let Some(c) = store_chunks {
        exec = exec.store_at_most(c);
    }
    if let Some(elem) = job.converted_from {
        exec = exec.converted_from(elem);
    }
    if opts.ica.algorithm == ica::Algorithm::Parallel {
        exec = exec.parallel_passes();
    }
    let explain = |e: unmix::Error| match e {
        unmix::Error::RankDeficient { rank, .. } if rank > 0 => {
            anyhow::anyhow!("{e}; keep at most {rank} components (--n-components {rank})")
        }
        e => anyhow::Error::new(e),
    };
    let mut on_iteration = |it, change| (job.progress)(it, change);
    // The whole fit inside the pool, so that the update between passes (its products split in
    // halves: `simd::gemm_halves`) runs on the pool's threads (outside it, on this one alone).
    let info = pool.install(|| -> Result<IcaInfo> {
        let mut fit = || -> Result<IcaInfo> {
            Ok(if opts.whiten == WhitenMode::None {
                let mut ws = vec![0.0; ica::fit_workspace_len_with(d, k, kernel)];
                model
                    .fit_with(
                        &mut exec,
                        kernel,
                        opts,
                        job.init,
                        &mut staging,
                        &mut ws,
                        &mut on_iteration,
                    )
                    .map_err(explain)?
            } else {
                // The moments on the CLI's GEMM (the core's pass with UNMIX_SIMD=portable or
                // few features), then the core's fit from the whitener: the same computation
                // as `fit_with`.
                let m = crate::pipeline::moments_widened::<T, S>(x, &pool)?;
                crate::phases::done("moments");
                let mut wstorage = vec![T::ZERO; whiten::storage_len(d, k)];
                let mut wws = vec![0.0; whiten::workspace_len(d, k)];
                let mut whitener = WhitenerBuf::new(d, k, &mut wstorage)?;
                whitener
                    .fit_with(m.view(), &opts.pca_options(), &mut wws, kernel)
                    .map_err(explain)?;
                crate::phases::done("whitener");
                let mut ws = vec![0.0; ica::white_fit_workspace_len_with(k, kernel)];
                model
                    .fit_white_with(
                        &whitener.view(),
                        &mut exec,
                        kernel,
                        opts,
                        job.init,
                        &mut staging,
                        &mut ws,
                        &mut on_iteration,
                    )
                    .map_err(explain)?
            })
        };
        let info = fit();
        crate::phases::done("whitening the rows and iterating");
        // The passes are over: their slots, kept on this thread, would only take memory from
        // writing the sources.
        release_slots();
        info
    })?;
    drop(exec);
    let view = model.view();
    let effective_rank = view.whitener().info().effective_rank;
    let out = then(&view, &pool)?;
    crate::phases::done("sources");
    Ok((
        crate::model::FastIcaModel::new(&view, opts, effective_rank, n as u64),
        info,
        out,
    ))
}

/// Rows per block of a streamed output `k` wide (`elem` bytes a value) on `threads` threads: whole
/// [`map_rows`] pieces, one per thread, or as many such rounds as fit in
/// [`OUTPUT_BLOCK_BYTES`]. Small enough that the last block, whose writing nothing overlaps
/// ([`crate::output::write_behind`]), is short, and that the two buffers in flight stay in the
/// memory budget; large enough that a block's dispatch and its write call are amortised.
pub fn output_block_rows(k: usize, elem: usize, threads: usize) -> usize {
    let round = MAP_ROWS * threads.max(1);
    let round_bytes = round * (k * elem).max(1);
    round * (OUTPUT_BLOCK_BYTES / round_bytes).max(1)
}

/// The size a block of a streamed output aims at (see [`output_block_rows`]).
pub const OUTPUT_BLOCK_BYTES: usize = 4 << 20;

/// Maps the rows of `x` to rows `k` wide with `f`, a block of [`output_block_rows`] rows at a
/// time on `pool` ([`map_rows`]), and hands each block to `sink` in row order: one read of `x`,
/// no copy of the whole output held. With `behind`, `sink` runs on a second thread while the next
/// block is computed ([`crate::output::write_behind`]). An error names its row counted from the
/// start of `x`. The row-order streamer of the whitening and the sources.
pub fn stream_rows<S: Float + Send + Sync, T: GemmFloat>(
    pool: &rayon::ThreadPool,
    x: &Matrix<S>,
    k: usize,
    f: impl Fn(&[S], &mut [T]) -> unmix::Result<()> + Sync,
    behind: bool,
    sink: impl FnMut(&[T]) -> Result<()> + Send,
) -> Result<()> {
    let (n, d, threads) = (x.rows, x.cols.max(1), pool.current_num_threads());
    let block = output_block_rows(k, std::mem::size_of::<T>(), threads);
    let xs: Vec<&[S]> = x.data.chunks(block * d).collect();
    let fill = |b: usize, out: &mut [T]| -> Result<usize> {
        let out = &mut out[..xs[b].len() / d * k];
        map_rows(pool, xs[b], d, out, k, &f).map_err(|e| renumber(e, (b * block) as u64))?;
        Ok(out.len())
    };
    crate::output::write_behind(xs.len(), block.min(n) * k, T::ZERO, behind, fill, sink)
}

/// Writes the rows that `f` maps `x` to (`k` wide) as a `.npy` into the file that `w` wraps,
/// without holding them whole: the bytes of [`crate::io::write_npy_to`] on the whole matrix,
/// whatever the `delivery` ([`Delivery::for_threads`] chooses one for a pool). In row order
/// ([`Delivery::Behind`], [`Delivery::InTurn`]) the blocks go through [`stream_rows`]. In
/// place, each worker writes the rows it computed at their offset after the header
/// ([`write_rows_in_place`]), so that no worker waits while another copies a block into the
/// page cache. Each write starts the file's writeback ([`crate::output::start_writeback`]). An
/// error names its row counted from the start of `x`.
pub fn write_rows_npy<S: Float + Send + Sync, T: GemmFloat + crate::io::NpyFloat>(
    delivery: Delivery,
    pool: &rayon::ThreadPool,
    x: &Matrix<S>,
    k: usize,
    f: impl Fn(&[S], &mut [T]) -> unmix::Result<()> + Sync,
    w: &mut std::io::BufWriter<&std::fs::File>,
) -> Result<()> {
    use std::io::{Seek, Write};
    let file = *w.get_ref();
    if delivery == Delivery::InPlace && k > 0 {
        w.write_all(&crate::io::npy_header(T::DESCR, x.rows, k))?;
        let start = w.stream_position()?; // flushes the header first
        return write_rows_in_place(pool, x, k, f, file, start);
    }
    let mut out = crate::io::NpyRows::begin(w, x.rows, k)?;
    let sink = |b: &[T]| -> Result<()> {
        out.push(b)?;
        crate::output::start_writeback(file);
        Ok(())
    };
    stream_rows(pool, x, k, f, delivery == Delivery::Behind, sink)?;
    out.finish()
}

/// The bytes of an output piece that one worker computes, then writes in place
/// ([`write_rows_in_place`]): half of [`OUTPUT_BLOCK_BYTES`], so that the file sees writes of
/// the same size as from the row-order writer on two threads, and a worker holds one such piece.
pub const IN_PLACE_PIECE_BYTES: usize = OUTPUT_BLOCK_BYTES / 2;

/// Rows per piece written in place for an output `k` wide of `elem`-byte values: whole
/// [`map_rows`] pieces (hence the same bits), about [`IN_PLACE_PIECE_BYTES`].
pub fn in_place_piece_rows(k: usize, elem: usize) -> usize {
    MAP_ROWS * (IN_PLACE_PIECE_BYTES / (MAP_ROWS * (k * elem).max(1))).max(1)
}

/// Maps the rows of `x` with `f` to rows `k >= 1` wide on `pool`, in pieces of
/// [`in_place_piece_rows`] rows; each worker writes the piece it computed at its offset in
/// `file` (`start` is where row 0 goes) and starts the file's writeback. The pieces reach the
/// page cache in any order, each by the worker that computed it. Measured at 2e4 x 256 on two
/// threads of two cores (`unmix whiten`, the phase "transform and write", which ends with the
/// `fsync`): 31-36 ms, against 38-44 ms with the blocks written in turn (`benches/README.md`).
fn write_rows_in_place<S: Float + Send + Sync, T: GemmFloat + crate::io::NpyFloat>(
    pool: &rayon::ThreadPool,
    x: &Matrix<S>,
    k: usize,
    f: impl Fn(&[S], &mut [T]) -> unmix::Result<()> + Sync,
    file: &std::fs::File,
    start: u64,
) -> Result<()> {
    // Elsewhere [`Delivery::for_threads`] never chooses in place: positional writes of the
    // values' memory would not be the file's bytes.
    #[cfg(not(all(unix, target_endian = "little")))]
    {
        let _ = (pool, x, k, f, file, start);
        anyhow::bail!("internal: no in-place writes on this target")
    }
    #[cfg(all(unix, target_endian = "little"))]
    {
        use std::os::unix::fs::FileExt;
        let (d, elem) = (x.cols.max(1), std::mem::size_of::<T>());
        let rows = in_place_piece_rows(k, elem);
        pool.install(|| {
            x.data.par_chunks(rows * d).enumerate().try_for_each_init(
                Vec::new,
                |buf: &mut Vec<T>, (p, xp)| -> Result<()> {
                    buf.resize(xp.len() / d * k, T::ZERO);
                    map_pieces(xp, d, buf, k, p * rows, &f)?;
                    let offset = (p * rows * k * elem) as u64;
                    file.write_all_at(T::as_bytes(buf), start + offset)?;
                    crate::output::start_writeback(file);
                    Ok(())
                },
            )
        })
    }
}

/// Writes the sources of `x` under `view` as a `.npy` into the file `w` wraps, delivered as
/// `delivery` says ([`write_rows_npy`]). A mapped `x`'s pages are released once read
/// ([`crate::io::Values::release_piece`]), the sources' pieces taking their place, and all of
/// them once more at the end.
pub fn write_sources<T: GemmFloat + crate::io::NpyFloat, S: Widens<T>>(
    view: &FastIcaView<'_, T>,
    x: &Matrix<S>,
    pool: &rayon::ThreadPool,
    delivery: Delivery,
    w: &mut std::io::BufWriter<&std::fs::File>,
) -> Result<()> {
    write_rows_npy(
        delivery,
        pool,
        x,
        view.n_components(),
        #[inline(always)]
        |xi, si| {
            sources_of(view, xi, si)?;
            x.data.release_piece(xi);
            Ok(())
        },
        w,
    )?;
    // Then what the kernel mapped again about pieces already released: a page read maps its
    // neighbours too (up to a whole large folio of the page cache), and in place the workers
    // read neighbouring pieces at different times (2 MB of a 5 MB map was left in half the runs
    // of `a_widened_mapped_input_released_as_read_changes_no_bit` without this).
    x.data.release(0..x.data.len());
    Ok(())
}

/// Sources of rows `x` under `view`: the CLI's one source transform (`fit` and `transform`
/// give the same bytes).
#[inline(always)]
pub fn sources_of<S: Widens<T>, T: GemmFloat>(
    view: &FastIcaView<'_, T>,
    x: &[S],
    s: &mut [T],
) -> unmix::Result<()> {
    let (d, k) = (view.n_features(), view.n_components());
    centred_product(x, d, view.mean(), view.components(), s, k, |x, s| {
        view.transform_rows(x, s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use unmix::ica::{ContrastKind, IcaOptions};

    /// Laplace sources mixed by a fixed matrix, `n x d`.
    fn mixtures(n: usize, d: usize) -> Matrix<f64> {
        let mut normals = unmix::random::Normals::new(11);
        let s: Vec<f64> = (0..n * d)
            .map(|_| {
                let (a, b) = (normals.next_normal(), normals.next_normal());
                a * b // heavy-tailed
            })
            .collect();
        let a: Vec<f64> = (0..d * d).map(|_| normals.next_normal()).collect();
        let mut x = vec![0.0; n * d];
        for r in 0..n {
            for i in 0..d {
                x[r * d + i] = 1.0 + (0..d).map(|j| a[i * d + j] * s[r * d + j]).sum::<f64>();
            }
        }
        Matrix::new(n, d, x).unwrap()
    }

    /// The model and sources of a fit, as bytes of their files.
    fn run<T: GemmFloat + serde::Serialize + crate::io::NpyFloat>(
        x: &Matrix<T>,
        k: usize,
        options: FastIcaOptions,
        threads: usize,
        store: Option<usize>,
    ) -> (String, Vec<u8>) {
        run_widened::<T, T>(x, k, options, threads, store, None)
    }

    /// [`run`] of rows `S` fitted as `T`, converted from a file of `converted_from` bytes a
    /// value.
    fn run_widened<T: GemmFloat + serde::Serialize + crate::io::NpyFloat, S: Widens<T>>(
        x: &Matrix<S>,
        k: usize,
        options: FastIcaOptions,
        threads: usize,
        store: Option<usize>,
        converted_from: Option<usize>,
    ) -> (String, Vec<u8>) {
        let progress = |_: usize, _: f64| {};
        let job = FitJob {
            n_components: Some(k),
            options,
            init: WInit::Seed(3),
            threads,
            progress: &progress,
            converted_from,
        };
        let (model, _, sources) = fit_then::<T, S, _>(x, &job, store, |view, pool| {
            let delivery = Delivery::for_threads(threads);
            npy_written(|w| write_sources(view, x, pool, delivery, w))
        })
        .unwrap();
        (serde_json::to_string(&model).unwrap(), sources)
    }

    /// The bytes that `write` puts in a new file through a `BufWriter`, as `Outputs::write`
    /// hands it.
    fn npy_written(
        write: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> Result<()>,
    ) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, Write};
        let mut file = tempfile::tempfile()?;
        let mut w = std::io::BufWriter::new(&file);
        write(&mut w)?;
        w.flush()?;
        drop(w);
        let mut bytes = Vec::new();
        file.rewind()?;
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    const DELIVERIES: [Delivery; 3] = [Delivery::Behind, Delivery::InTurn, Delivery::InPlace];

    /// Sources written behind, in turn or in place, on 1 and 2 threads: the bytes of the whole
    /// matrix's `.npy`, for f64 and f32, whole and partial pieces (in place at k = 3, a piece
    /// holds many `MAP_ROWS`), and f32 rows fitted in f64.
    #[test]
    fn sources_delivered_any_way_are_the_npy_of_the_whole_matrix() {
        fn check<T, S: Widens<T>>(x: &Matrix<S>, k: usize)
        where
            T: GemmFloat + crate::io::NpyFloat + serde::Serialize + npyz::AutoSerialize,
        {
            let progress = |_: usize, _: f64| {};
            let job = FitJob {
                n_components: Some(k),
                options: FastIcaOptions::default(),
                init: WInit::Seed(3),
                threads: 1,
                progress: &progress,
                converted_from: None,
            };
            let (.., ()) = fit_then::<T, S, _>(x, &job, None, |view, _| {
                // What `unmix transform` writes: the whole matrix mapped at once, then saved.
                let mut whole = vec![T::ZERO; x.rows * k];
                map_rows(&pool(1)?, &x.data, x.cols, &mut whole, k, |xi, si| {
                    sources_of(view, xi, si)
                })?;
                let whole = Matrix::new(x.rows, k, whole)?;
                let expected = npy_written(|w| crate::io::write_npy_to(w, &whole))?;
                for threads in [1, 2] {
                    let pool = pool(threads)?;
                    for delivery in DELIVERIES {
                        let bytes = npy_written(|w| write_sources(view, x, &pool, delivery, w))?;
                        assert!(bytes == expected, "{delivery:?}, {threads} threads");
                    }
                }
                Ok(())
            })
            .unwrap();
        }
        let rows = in_place_piece_rows(3, 8) + 3 * MAP_ROWS + 17;
        let x = mixtures(rows, 3);
        check::<f64, f64>(&x, 3);
        let x32 = Matrix::new(x.rows, x.cols, x.data.iter().map(|v| *v as f32).collect()).unwrap();
        check::<f32, f32>(&x32, 3);
        check::<f64, f32>(&x32, 2);
        let x = mixtures(3 * MAP_ROWS + 5, 40);
        check::<f64, f64>(&x, 40);
    }

    /// A non-finite value past the first block of the streamed sources is named by its row in
    /// the whole table, on 1 and 2 threads, written behind, in turn and in place.
    #[test]
    fn streamed_sources_name_rows_of_the_table() {
        let (d, k) = (2, 2);
        let x = mixtures(3000, d);
        let block = output_block_rows(k, 8, 2).max(in_place_piece_rows(k, 8));
        let (bad_row, bad_col) = (block + 1234, 1);
        let mut long = mixtures(block + 3000, d);
        long.data[bad_row * d + bad_col] = f64::NAN;
        for (threads, delivery) in [1, 2].into_iter().flat_map(|t| DELIVERIES.map(|d| (t, d))) {
            let progress = |_: usize, _: f64| {};
            let job = FitJob {
                n_components: Some(k),
                options: FastIcaOptions::default(),
                init: WInit::Seed(3),
                threads,
                progress: &progress,
                converted_from: None,
            };
            let (.., err) = fit_then(&x, &job, None, |view, pool| {
                Ok(npy_written(|w| write_sources(view, &long, pool, delivery, w)).unwrap_err())
            })
            .unwrap();
            let found = err.downcast_ref::<unmix::Error>().copied();
            let expected = unmix::Error::NonFinite {
                row: bad_row as u64,
                col: bad_col,
            };
            assert_eq!(
                found,
                Some(expected),
                "{delivery:?}, {threads} threads: {err:#}"
            );
        }
    }

    /// Whitened rows stored, recomputed in every pass, or some of each: the same model and
    /// sources, bit for bit, on 1 and 2 threads, for the core's kernel (k < 16) and the GEMM
    /// (split in halves at k = 64), both algorithms, the sources' pass (canonical), f64 and f32
    /// (whose parallel passes run on row-major blocks, `blocks`).
    #[test]
    fn recomputing_white_rows_changes_no_bit() {
        let n = 2 * CHUNK + 1500;
        let parallel = FastIcaOptions {
            ica: IcaOptions {
                max_iter: 4,
                tol: 0.0,
                ..IcaOptions::default()
            },
            canonical: true,
            ..FastIcaOptions::default()
        };
        let deflation = FastIcaOptions {
            ica: IcaOptions {
                algorithm: ica::Algorithm::Deflation,
                ..parallel.ica
            },
            contrast: ContrastKind::Cube,
            ..parallel
        };
        for (d, k, options) in [
            (6, 5, parallel),
            (20, 18, parallel),
            (20, 16, deflation),
            (66, 64, parallel),
        ] {
            let x = mixtures(n, d);
            let all = run(&x, k, options, 1, None);
            for (threads, store) in [(1, Some(0)), (2, Some(0)), (2, Some(1)), (1, Some(2))] {
                let other = run(&x, k, options, threads, store);
                assert!(
                    other == all,
                    "d {d}, k {k}, {threads} threads, {store:?} chunks stored"
                );
            }
            let x32 = x.map(|v| v as f32);
            assert!(run(&x32, k, options, 2, Some(0)) == run(&x32, k, options, 1, None));
        }
    }

    /// Four iterations at `tol` 0, the rest scikit-learn's defaults.
    fn four_iterations() -> FastIcaOptions {
        FastIcaOptions {
            ica: IcaOptions {
                max_iter: 4,
                tol: 0.0,
                ..IcaOptions::default()
            },
            ..FastIcaOptions::default()
        }
    }

    /// `x` written to `dir` as `x.npy` and read back (mapped from 1 MiB): the path and table.
    fn written_and_read<T: npyz::AutoSerialize + Copy + 'static>(
        x: &Matrix<T>,
        dir: &tempfile::TempDir,
    ) -> (std::path::PathBuf, crate::io::Table) {
        let path = dir.path().join("x.npy");
        crate::io::write_npy(&path, x).unwrap();
        let table = crate::io::read_npy(&path).unwrap();
        (path, table)
    }

    /// A mapped input released as it is whitened (`PoolExecutor::releasing`): the model and
    /// the sources (which read the released pages again) of the same values in a vector whose
    /// white rows are all stored, bit for bit, on 1 and 2 threads; the file's values are
    /// unchanged.
    #[test]
    fn releasing_a_mapped_input_stores_every_white_row() {
        let (n, d, k) = (2 * CHUNK + 1500, 40, 32);
        let x = mixtures(n, d);
        let dir = tempfile::tempdir().unwrap();
        let (_, crate::io::Table::F64(mapped)) = written_and_read(&x, &dir) else {
            panic!("not f64")
        };
        assert!(mapped.data.is_mapped());
        let options = four_iterations();
        let stored = run(&x, k, options, 1, Some(usize::MAX));
        for threads in [1, 2] {
            assert!(
                run(&mapped, k, options, threads, None) == stored,
                "{threads} threads"
            );
        }
        assert!(mapped.data[..] == x.data[..]);
    }

    /// A mapped f32 file fitted in f64 (rows widened as every pass reads them): its pages are
    /// released once read, by the whitening of stored rows, by each pass that whitens rows
    /// again (at `RELEASE_MIN_K` components) and by the sources, and read back from the page
    /// cache. The model and the sources are those of the same values in a vector, bit for bit,
    /// whatever is stored, on 1 and 2 threads; the file's values are unchanged.
    #[test]
    fn a_widened_mapped_input_released_as_read_changes_no_bit() {
        let (n, d, k) = (2 * CHUNK + 1500, 128, RELEASE_MIN_K);
        let x = mixtures(n, d).map(|v| v as f32);
        let dir = tempfile::tempdir().unwrap();
        let (path, crate::io::Table::F32(mapped)) = written_and_read(&x, &dir) else {
            panic!("not f32")
        };
        assert!(mapped.data.is_mapped());
        let options = FastIcaOptions {
            canonical: true,
            ..four_iterations()
        };
        let widened = |x: &Matrix<f32>, threads: usize, store: Option<usize>| {
            run_widened::<f64, f32>(x, k, options, threads, store, Some(4))
        };
        let owned = widened(&x, 1, None);
        for (threads, store) in [(1, None), (2, None), (1, Some(0)), (2, Some(1))] {
            assert!(
                widened(&mapped, threads, store) == owned,
                "{threads} threads, {store:?} chunks stored"
            );
        }
        // What of the map this process still holds (Linux), against the 5 MB it was populated
        // with: the sources' pass releases each piece as read and the whole map at its end
        // (8 kB measured: the first and last pages; 2 MB in half the runs with the pieces' releases
        // alone, written in place; 4.8 MB with neither).
        #[cfg(target_os = "linux")]
        {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let name = path.to_str().unwrap();
            let rss_kb: usize = smaps
                .lines()
                .skip_while(|l| !l.ends_with(name))
                .find_map(|l| l.strip_prefix("Rss:"))
                .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap())
                .expect("the map is listed");
            assert!(rss_kb * 1024 < n * d * 4 / 6, "{rss_kb} kB still mapped");
        }
        assert!(mapped.data[..] == x.data[..]);
    }

    /// Within 1.25 x the input plus 50 MB: everything stored while it fits, nothing beyond the
    /// budget, and at least the input's quarter when the rows do not all fit.
    #[test]
    fn the_memory_budget_decides_what_is_stored() {
        // 1e6 x 8 f64 (64 MB): 64 MB of white rows do not fit in 16 + 50 MB less the reserve.
        let (n, d, k) = (1_000_000, 8, 8);
        let stored = white_chunks_to_store(n, d, k, 8, 8, 2);
        let chunks = n.div_ceil(CHUNK);
        assert!(0 < stored && stored < chunks, "{stored} of {chunks}");
        let held = stored * CHUNK * k * 8 + 2 * REWHITEN_ROWS * k * 8 + MEMORY_RESERVED;
        assert!(held <= n * d * 8 / 4 + MEMORY_SLACK, "{held} bytes");
        assert!(stored * CHUNK * k * 8 >= n * d * 8 / 4);
        // 1e5 x 768 to 64 components (614 MB): 51 MB of white rows fit.
        assert_eq!(white_chunks_to_store(100_000, 768, 64, 8, 8, 2), 25);
        // Small inputs are held whole whatever k.
        assert_eq!(white_chunks_to_store(5000, 64, 64, 8, 8, 4), 2);
        // Nothing stored when the partials of 64 threads at k = 768 take the whole budget.
        assert_eq!(white_chunks_to_store(100_000, 768, 768, 8, 8, 64), 0);
        // 2e4 x 256 read as f32 (20 MB): bounded by the f64 file it came from (41 MB), all
        // five chunks are stored on two threads (bounded by its own size, four with the AVX-512
        // kernel's partials), and the f32 rows, the white rows and the reserve stay within
        // 1.25 x the file plus 50 MB.
        let (n, d, k) = (20_000, 256, 256);
        let stored = white_chunks_to_store(n, d, k, 4, 8, 2);
        assert_eq!(stored, 5);
        let held = n * d * 4 + (stored * CHUNK).min(n) * k * 4 + MEMORY_RESERVED;
        assert!(held <= n * d * 8 * 5 / 4 + MEMORY_SLACK, "{held} bytes");
        // The other way (f64 rows from an f32 file of 1e6 x 8), the budget shrinks.
        let (n, d, k) = (1_000_000, 8, 8);
        assert!(white_chunks_to_store(n, d, k, 8, 4, 2) < white_chunks_to_store(n, d, k, 8, 8, 2));
    }

    /// The whitening is folded into the parallel passes where the white rows do not fit and
    /// `d < 2 k`, from the shapes alone (the sizes).
    #[test]
    fn folding_is_chosen_by_the_shapes() {
        if std::env::var_os("UNMIX_FOLD").is_some() || crate::simd::portable_requested() {
            return; // overridden for this process
        }
        assert!(folds_whitening(20_000, 256, 256, 8, 8));
        assert!(folds_whitening(100_000, 64, 64, 8, 8));
        assert!(folds_whitening(1_000_000, 8, 8, 8, 8));
        // f32: the white rows fit, the more so bounded by an f64 file's size.
        assert!(!folds_whitening(20_000, 256, 256, 4, 4));
        assert!(!folds_whitening(20_000, 256, 256, 4, 8));
        assert!(!folds_whitening(1_000_000, 8, 8, 4, 4));
        // 64 of 768 features: whitening again is cheaper than folding.
        assert!(!folds_whitening(10_000_000, 768, 64, 8, 8));
        assert!(!folds_whitening(5000, 64, 64, 8, 8));
    }
}
