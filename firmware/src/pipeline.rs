//! What the firmware does, the same code on the device and on the host: a simulated sensor
//! streams mixed samples, the moments take them one at a time, a whitener and a FastICA model
//! (D = K = 4, f32) are fitted and kept in `static`s, new samples are transformed one at a time,
//! and the recovery is scored against the known sources (MCC, Amari index). Bad input is fed on
//! purpose and must come back as its error.
//!
//! Nothing here formats a float: results leave as raw IEEE bits (see [`Report::emit`]), so the
//! firmware links no formatting code and the host can compare them bit for bit.

use core::cell::RefCell;

use critical_section::Mutex;
use unmix::Error;
use unmix::float::{Float, Sum};
use unmix::ica::{
    Executor, FastIca, FastIcaOptions, FastIcaWorkspace, Pass, Rows, WInit, model_len,
};
use unmix::metrics::mcc::mcc_from_correlation;
use unmix::metrics::{amari_index, assignment};
use unmix::moments::{CrossMomentsBuf, Moments};
use unmix::whiten::{WhitenOptions, WhitenWorkspace, Whitener, WhitenerView};

/// Built with `--features fit-only`: whitening, FastICA fit and transform only (no scoring, no
/// bad-input runs), to measure the text those take against the README's goal.
const FIT_ONLY: bool = cfg!(feature = "fit-only");
/// Built with `--features baseline` (implies `fit-only`): the same sensor, buffer, transform loop
/// and output with no call into `unmix`, so that `text(fit-only) - text(baseline)` is what the
/// library costs (check.sh measures it; the baseline build is not run).
const BASELINE: bool = cfg!(feature = "baseline");

/// Features (sensor channels).
pub const D: usize = 4;
/// Components.
pub const K: usize = 4;
/// Rows per block of the FastICA passes: 16 instead of the default 64 cuts the fit's workspace
/// from 753 to 321 values of `Sum` at K = 4 (`1 + 9K^2 + 8K + (2K + 1) ROWS`) for about 6 % more
/// instructions per fit (measured in QEMU; README, "Firmware").
pub const ROWS: usize = 16;
/// Samples kept for the fit.
pub const N: usize = 1000;
/// The sensor's seed.
const SEED: u32 = 0x2545_f491;
/// The sensor emits one NaN sample (a glitch) after this many good ones.
const GLITCH_AT: usize = 500;

/// The true mixing `A` (`D x K`): x = A s.
pub const MIXING: [[f32; K]; D] = [
    [1.0, 0.5, -0.3, 0.2],
    [0.4, 1.2, 0.6, -0.5],
    [-0.7, 0.3, 1.1, 0.4],
    [0.2, -0.6, 0.5, 0.9],
];

// The state a sensor interrupt and the main loop would share: each in a critical-section mutex,
// so no `static mut` and no `unsafe`. (A fit runs under the lock here; a device that must keep
// serving interrupts fits into the same types elsewhere and swaps the result in.)
static MOMENTS: Mutex<RefCell<Moments<D>>> = Mutex::new(RefCell::new(Moments::new()));
static WHITENER: Mutex<RefCell<Whitener<f32, D, K>>> = Mutex::new(RefCell::new(Whitener::new()));
static MODEL: Mutex<RefCell<FastIca<f32, D, K>>> = Mutex::new(RefCell::new(FastIca::new()));
// The sample buffer and the fit's workspaces: the stated RAM besides the models.
static SAMPLES: Mutex<RefCell<[[f32; D]; N]>> = Mutex::new(RefCell::new([[0.0; D]; N]));
static WHITEN_WS: Mutex<RefCell<WhitenWorkspace<D, K>>> =
    Mutex::new(RefCell::new(WhitenWorkspace::new()));
static ICA_WS: Mutex<RefCell<FastIcaWorkspace<D, K, ROWS>>> =
    Mutex::new(RefCell::new(FastIcaWorkspace::new()));
static STAGING: Mutex<RefCell<[f32; model_len(D, K)]>> =
    Mutex::new(RefCell::new([0.0; model_len(D, K)]));
// Scoring: streaming cross-moments of true and recovered sources (the matching, 4 x 4, uses a
// little stack).
static SCORE_WS: Mutex<RefCell<[Sum; CrossMomentsBuf::buffer_len(K, K)]>> =
    Mutex::new(RefCell::new([0.0; CrossMomentsBuf::buffer_len(K, K)]));
const MATCH_WS: (usize, usize) = assignment::workspace_len(K, K);

/// Bytes of each static (with its mutex and borrow flag), for the RAM budget.
pub const STATICS: [(&str, usize); 8] = [
    ("moments", cell::<Moments<D>>()),
    ("whitener", cell::<Whitener<f32, D, K>>()),
    ("model", cell::<FastIca<f32, D, K>>()),
    ("samples", cell::<[[f32; D]; N]>()),
    ("whiten_workspace", cell::<WhitenWorkspace<D, K>>()),
    ("ica_workspace", cell::<FastIcaWorkspace<D, K, ROWS>>()),
    (
        "score_workspace",
        cell::<[Sum; CrossMomentsBuf::buffer_len(K, K)]>(),
    ),
    ("staging_model", cell::<[f32; model_len(D, K)]>()),
];
/// Bytes of a `static` holding a `T` as these do.
const fn cell<T>() -> usize {
    core::mem::size_of::<Mutex<RefCell<T>>>()
}

/// The fit's [`Executor`]: every pass runs over the sample buffer, which [`whiten`] whitens in
/// place (D = K), so the fit needs no second `N x K` buffer.
///
/// [`whiten`]: Executor::whiten
struct InPlace<'a> {
    samples: &'a mut [[f32; D]; N],
    white: bool,
}

impl Executor<f32> for InPlace<'_> {
    fn pass<P: Pass<f32>>(&mut self, rows: Rows, pass: &P, total: &mut [Sum]) -> Result<(), Error> {
        if rows == Rows::Input && self.white {
            return Err(Error::InvalidParameter("the input was whitened in place"));
        }
        pass.accumulate(total, 0, self.samples.as_flattened())
    }
    fn whiten(&mut self, whitener: Option<&WhitenerView<'_, f32>>) -> Result<(), Error> {
        if let Some(w) = whitener {
            for x in self.samples.iter_mut() {
                let mut z = [0.0f32; K];
                w.transform(x, &mut z)?;
                *x = z;
            }
        }
        self.white = true;
        Ok(())
    }
}

/// A deterministic sensor: four independent non-Gaussian sources (uniform, Laplace, square wave,
/// sine), mixed by [`MIXING`]. Integer state, f32 arithmetic and libm's `logf` only, so every
/// target draws the same bits and no `f64` is linked (libm's `sinf` computes in `f64`: the sine
/// is a rotation instead).
pub struct Sensor {
    state: u32,
    t: u32,
    emitted: usize,
    /// `(cos, sin)` of `0.173 t`, by rotation.
    phase: (f32, f32),
}

/// `(cos, sin)` of the sine's step, 0.173 radians (f32-rounded).
const STEP: (f32, f32) = (0.985_072_8, 0.172_138_34);

impl Sensor {
    /// From the beginning of the recording.
    pub const fn new() -> Self {
        Self {
            state: SEED,
            t: 0,
            emitted: 0,
            phase: (1.0, 0.0),
        }
    }
    fn uniform(&mut self) -> f32 {
        // xorshift32, then 24 bits: an exact f32 in (0, 1].
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        ((self.state >> 8) + 1) as f32 * (1.0 / 16_777_216.0)
    }
    /// The next sample `x` and the sources `s` behind it.
    pub fn next(&mut self) -> ([f32; D], [f32; K]) {
        self.emitted += 1;
        if self.emitted == GLITCH_AT + 1 {
            return ([0.0, f32::NAN, 0.0, 0.0], [0.0; K]);
        }
        let uniform = (self.uniform() - 0.5) * 3.464_101_6;
        let laplace = {
            let sign = if self.uniform() < 0.5 { -1.0 } else { 1.0 };
            sign * -libm::logf(self.uniform()) * core::f32::consts::FRAC_1_SQRT_2
        };
        let square = if (self.t / 23).is_multiple_of(2) {
            1.0
        } else {
            -1.0
        };
        let sine = core::f32::consts::SQRT_2 * self.phase.1;
        let (c, s) = self.phase;
        self.phase = (c * STEP.0 - s * STEP.1, s * STEP.0 + c * STEP.1);
        self.t += 1;
        let s = [uniform, laplace, square, sine];
        let mut x = [0.0f32; D];
        for (xi, ai) in x.iter_mut().zip(&MIXING) {
            *xi = ai.iter().zip(&s).map(|(a, v)| a * v).sum();
        }
        (x, s)
    }
}

/// Where the firmware counts instructions and how it emits text; the host counts nothing.
pub trait Board {
    /// A running instruction count (any origin), or `None` where there is none.
    fn instructions(&mut self) -> Option<u64>;
    /// Writes bytes to the console.
    fn write(&mut self, bytes: &[u8]);
}

/// A small, stable code for each [`Error`] variant: the C API's `unmix_status` values.
pub fn error_code(e: &Error) -> u32 {
    match e {
        Error::NonFinite { .. } => 2,
        Error::TooFewSamples { .. } => 3,
        Error::DimensionMismatch { .. } => 4,
        Error::BufferTooSmall { .. } => 5,
        Error::InvalidComponents { .. } => 6,
        Error::RankDeficient { .. } => 7,
        Error::NoConvergence { .. } => 8,
        Error::InvalidParameter(_) => 9,
        Error::Overflow => 10,
        Error::SingleClass => 11,
        Error::ZeroVariance { .. } => 12,
        Error::Infeasible => 13,
        Error::RaggedRows { .. } => 14,
        // `Error` is non_exhaustive; as in the C API, a later variant is still an error.
        _ => 9,
    }
}

/// 0 for success, else [`error_code`].
fn status<T>(r: &Result<T, Error>) -> u32 {
    r.as_ref().err().map_or(0, error_code)
}

/// Everything the firmware computes; compared bit for bit with the host.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Samples the moments accepted.
    pub n_samples: u64,
    /// Status of the glitch sample at the moments (expected: non-finite), and its row.
    pub glitch_status: u32,
    /// Row the glitch was reported at.
    pub glitch_row: u64,
    /// The fitted whitener's mean, whitening (row-major) and explained variance.
    pub whitener: [f32; D + K * D + K],
    /// FastICA iterations, whether it converged, and the last change.
    pub n_iter: u32,
    /// 1 if converged.
    pub converged: u32,
    /// The last change.
    pub last_change: Sum,
    /// The model's components (`K x D`) and mixing (`D x K`).
    pub model: [f32; 2 * K * D],
    /// FNV-1a of the bits of every transformed sample's sources, in order.
    pub sources_hash: u32,
    /// Status of transforming the glitch sample (expected: non-finite).
    pub transform_glitch_status: u32,
    /// MCC of the recovered sources against the true ones.
    pub mcc: Sum,
    /// Amari index of `components * A`.
    pub amari: Sum,
    /// Fewer samples than components (3 < K): expected rank-deficient.
    pub few_samples_status: u32,
    /// A single sample: expected too few samples.
    pub one_sample_status: u32,
    /// The FastICA fit with a workspace one element short: expected buffer too small.
    pub small_buffer_status: u32,
    /// Instructions to stream one sample through the moments (mean over `N`).
    pub insn_per_streamed_sample: Option<u64>,
    /// Instructions of the whitener fit.
    pub insn_whiten_fit: Option<u64>,
    /// Instructions of the FastICA fit (whitening the buffer in place included).
    pub insn_ica_fit: Option<u64>,
    /// Instructions per transformed sample (mean over `N`).
    pub insn_per_transform: Option<u64>,
}

fn delta(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.wrapping_sub(a?))
}

/// Runs the whole pipeline. Returns the report, or the first unexpected error.
pub fn run<B: Board>(board: &mut B) -> Result<Report, Error> {
    let mut r = Report::default();
    let mut sensor = Sensor::new();

    // 1. Stream: each sample goes through the moments as it arrives, and into the buffer.
    let start = board.instructions();
    let mut kept = 0;
    while kept < N {
        let (x, _) = sensor.next();
        let accepted = if BASELINE {
            match x.iter().position(|v| !v.is_finite()) {
                None => Ok(()),
                Some(col) => Err(Error::NonFinite {
                    row: kept as u64,
                    col,
                }),
            }
        } else {
            critical_section::with(|cs| MOMENTS.borrow_ref_mut(cs).accumulate(&x))
        };
        match accepted {
            Ok(()) => {
                critical_section::with(|cs| SAMPLES.borrow_ref_mut(cs)[kept] = x);
                kept += 1;
            }
            Err(e @ Error::NonFinite { row, .. }) => {
                r.glitch_status = error_code(&e);
                r.glitch_row = row;
            }
            Err(e) => return Err(e),
        }
    }
    r.insn_per_streamed_sample = delta(start, board.instructions()).map(|i| i / N as u64);
    if BASELINE {
        let mut sensor = Sensor::new();
        let mut hash: u32 = 0x811c_9dc5;
        for _ in 0..=N {
            let (x, _) = sensor.next();
            for v in x {
                for byte in v.to_bits().to_le_bytes() {
                    hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
                }
            }
        }
        r.sources_hash = hash;
        return Ok(r);
    }

    critical_section::with(|cs| -> Result<(), Error> {
        let moments = MOMENTS.borrow_ref(cs);
        let mut whitener = WHITENER.borrow_ref_mut(cs);
        let mut model = MODEL.borrow_ref_mut(cs);
        let mut samples = SAMPLES.borrow_ref_mut(cs);
        let mut whiten_ws = WHITEN_WS.borrow_ref_mut(cs);
        let mut ica_ws = ICA_WS.borrow_ref_mut(cs);
        r.n_samples = moments.as_ref().n_samples();

        // 2. Whitener from the streamed moments.
        let start = board.instructions();
        whitener.fit(moments.as_ref(), &WhitenOptions::DEFAULT, &mut whiten_ws)?;
        r.insn_whiten_fit = delta(start, board.instructions());
        let view = whitener.view();
        let parts = view
            .mean()
            .iter()
            .chain(view.whitening())
            .chain(view.explained_variance());
        for (o, v) in r.whitener.iter_mut().zip(parts) {
            *o = *v;
        }

        // 3. FastICA over the buffer, whitened in place by the streamed whitener.
        let start = board.instructions();
        let mut staging = STAGING.borrow_ref_mut(cs);
        let mut exec = InPlace {
            samples: &mut samples,
            white: false,
        };
        let opts = FastIcaOptions::DEFAULT;
        let kernel = ica_ws.kernel();
        let ws = ica_ws.as_mut_slice();
        let seed = WInit::Seed(7);
        // Bad input: one element short of the workspace (checked before anything is touched).
        let short = model.fit_white(
            &whitener,
            &mut exec,
            kernel,
            &opts,
            seed,
            &mut staging[..],
            &mut ws[1..],
        );
        r.small_buffer_status = status(&short);
        let info = model.fit_white(
            &whitener,
            &mut exec,
            kernel,
            &opts,
            seed,
            &mut staging[..],
            ws,
        )?;
        r.insn_ica_fit = delta(start, board.instructions());
        r.n_iter = info.n_iter as u32;
        r.converged = info.converged as u32;
        r.last_change = info.last_change;
        let view = model.view();
        for (o, v) in r
            .model
            .iter_mut()
            .zip(view.components().iter().chain(view.mixing()))
        {
            *o = *v;
        }

        // 4. Amari index of components * A.
        if FIT_ONLY {
            return Ok(());
        }
        let mut w: [Sum; K * D] = [0.0; K * D];
        let mut a: [Sum; D * K] = [0.0; D * K];
        for (o, v) in w.iter_mut().zip(view.components()) {
            *o = v.to_sum();
        }
        for (o, v) in a.iter_mut().zip(MIXING.as_flattened()) {
            *o = v.to_sum();
        }
        let mut p: [Sum; K * K] = [0.0; K * K];
        r.amari = amari_index(&w, &a, K, D, &mut p)?;
        Ok(())
    })?;

    // 5. The sensor again from the start: transform each sample as it arrives, and score the
    //    sources against the truth as they come (streaming cross-moments, then the matching).
    let mut sensor = Sensor::new();
    critical_section::with(|cs| {
        score(
            board,
            &mut sensor,
            &mut r,
            &mut SCORE_WS.borrow_ref_mut(cs)[..],
        )
    })?;

    // 6. Bad input: fewer samples than components, and a single sample, through the statics
    //    (a failed fit leaves the whitener as it was).
    if FIT_ONLY {
        return Ok(r);
    }
    let mut sensor = Sensor::new();
    critical_section::with(|cs| -> Result<(), Error> {
        let mut few = MOMENTS.borrow_ref_mut(cs);
        let mut whitener = WHITENER.borrow_ref_mut(cs);
        let mut ws = WHITEN_WS.borrow_ref_mut(cs);
        few.reset();
        for _ in 0..3 {
            few.accumulate(&sensor.next().0)?;
        }
        let opts = WhitenOptions::DEFAULT;
        r.few_samples_status = status(&whitener.fit(few.as_ref(), &opts, &mut ws));
        few.reset();
        few.accumulate(&sensor.next().0)?;
        r.one_sample_status = status(&whitener.fit(few.as_ref(), &opts, &mut ws));
        Ok(())
    })?;
    Ok(r)
}

/// Transforms each new sample and scores the sources against the truth as they come.
fn score<B: Board>(
    board: &mut B,
    sensor: &mut Sensor,
    r: &mut Report,
    cross_buf: &mut [Sum],
) -> Result<(), Error> {
    let mut cross = CrossMomentsBuf::new(K, K, cross_buf)?;
    let mut hash: u32 = 0x811c_9dc5;
    let mut elapsed = Some(0u64);
    for _ in 0..=N {
        let (x, s) = sensor.next();
        let mut y = [0.0f32; K];
        let start = board.instructions();
        let t = critical_section::with(|cs| MODEL.borrow_ref(cs).transform(&x, &mut y));
        elapsed = elapsed.and_then(|e| Some(e + delta(start, board.instructions())?));
        if let Err(e) = t {
            r.transform_glitch_status = error_code(&e);
            continue;
        }
        for v in y {
            for byte in v.to_bits().to_le_bytes() {
                hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
            }
        }
        if !FIT_ONLY {
            cross.accumulate(&s, &y)?;
        }
    }
    r.insn_per_transform = elapsed.map(|e| e / (N as u64 + 1));
    r.sources_hash = hash;
    if FIT_ONLY {
        return Ok(());
    }
    let mut corr: [Sum; K * K] = [0.0; K * K];
    cross.as_ref().correlation_into(&mut corr)?;
    for c in corr.iter_mut() {
        *c = c.abs();
    }
    let mut pairs = [0usize; K];
    let (mut wf, mut wu): ([Sum; MATCH_WS.0], _) = ([0.0; MATCH_WS.0], [0usize; MATCH_WS.1]);
    r.mcc = mcc_from_correlation(&corr, K, K, &mut pairs, &mut wf, &mut wu)?;
    Ok(())
}

/// Hex digits of a [`Sum`]'s bits: 16 for `f64`, 8 with the `f32-sums` feature.
const SUM_DIGITS: usize = 2 * core::mem::size_of::<Sum>();

/// The bits of a [`Sum`] (printed with [`SUM_DIGITS`] digits).
#[allow(clippy::useless_conversion)] // u64 -> u64 by default, u32 -> u64 with f32-sums
fn sum_bits(v: Sum) -> u64 {
    v.to_bits().into()
}

/// Writes `name` and `value` as a line of 8 or 16 hex digits.
fn line(board: &mut impl Board, name: &str, bits: u64, digits: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 16];
    for (i, b) in buf[..digits].iter_mut().enumerate() {
        *b = HEX[((bits >> (4 * (digits - 1 - i))) & 0xf) as usize];
    }
    board.write(name.as_bytes());
    board.write(b" ");
    board.write(&buf[..digits]);
    board.write(b"\n");
}

impl Report {
    /// The results as `name hexbits` lines, the same on every target: these are compared.
    pub fn emit(&self, board: &mut impl Board) {
        line(board, "n_samples", self.n_samples, 16);
        line(board, "glitch_status", self.glitch_status.into(), 8);
        line(board, "glitch_row", self.glitch_row, 16);
        for v in &self.whitener {
            line(board, "whitener", v.to_bits().into(), 8);
        }
        line(board, "n_iter", self.n_iter.into(), 8);
        line(board, "converged", self.converged.into(), 8);
        line(board, "last_change", sum_bits(self.last_change), SUM_DIGITS);
        for v in &self.model {
            line(board, "model", v.to_bits().into(), 8);
        }
        line(board, "sources_hash", self.sources_hash.into(), 8);
        line(
            board,
            "transform_glitch_status",
            self.transform_glitch_status.into(),
            8,
        );
        line(board, "mcc", sum_bits(self.mcc), SUM_DIGITS);
        line(board, "amari", sum_bits(self.amari), SUM_DIGITS);
        line(
            board,
            "few_samples_status",
            self.few_samples_status.into(),
            8,
        );
        line(board, "one_sample_status", self.one_sample_status.into(), 8);
        line(
            board,
            "small_buffer_status",
            self.small_buffer_status.into(),
            8,
        );
    }
    /// The measurements, as `measure name hex` lines (not compared: the host has none).
    #[cfg_attr(not(target_os = "none"), allow(dead_code))]
    pub fn emit_measures(&self, board: &mut impl Board) {
        let measures = [
            ("insn_per_streamed_sample", self.insn_per_streamed_sample),
            ("insn_whiten_fit", self.insn_whiten_fit),
            ("insn_ica_fit", self.insn_ica_fit),
            ("insn_per_transform", self.insn_per_transform),
        ];
        for (name, v) in measures {
            if let Some(v) = v {
                board.write(b"measure ");
                line(board, name, v, 16);
            }
        }
        for (name, bytes) in STATICS {
            board.write(b"measure static_");
            line(board, name, bytes as u64, 16);
        }
    }
    /// Whether every expected error came back and the sources were recovered.
    pub fn ok(&self) -> bool {
        self.glitch_status == 2
            && self.glitch_row == GLITCH_AT as u64
            && self.transform_glitch_status == 2
            && self.few_samples_status == 7
            && self.one_sample_status == 3
            && self.small_buffer_status == 5
            && self.converged == 1
            && self.mcc > 0.95
            && self.amari < 0.1
    }
}
