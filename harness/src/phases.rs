//! Where a command's wall time goes, from the shipped binary: with `UNMIX_PHASES` set in the
//! environment, each phase's end prints `phase NAME: T ms` (the time since the previous phase
//! ended, or since [`begin`]) to stderr, and on Linux `, peak P MB` (the process's peak resident
//! memory so far, `VmHWM`, in units of 1e6 bytes), so that a memory bound can be traced to the
//! phase that reaches it. Unset, a phase's end costs one load of a `OnceLock`.
//!
//! ```text
//! UNMIX_PHASES=1 unmix whiten --input x.npy --output z.npy
//! ```
//!
//! Phases follow one another (a fit's middle ones end on the pool thread that runs the driver,
//! while the command's thread waits), so their times add up to the command's, less the
//! process's start before `main` and its exit.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The previous phase's end, when `UNMIX_PHASES` is set.
static LAST: OnceLock<Option<Mutex<Instant>>> = OnceLock::new();

fn last() -> Option<&'static Mutex<Instant>> {
    LAST.get_or_init(|| std::env::var_os("UNMIX_PHASES").map(|_| Mutex::new(Instant::now())))
        .as_ref()
}

/// Starts the clock (the first phase runs from here); `main` calls it first.
pub fn begin() {
    last();
}

/// Ends the phase `name`: prints its time when `UNMIX_PHASES` is set.
pub fn done(name: &str) {
    let Some(last) = last() else { return };
    let now = Instant::now();
    // A poisoned lock still holds a valid instant.
    let mut prev = last.lock().unwrap_or_else(|e| e.into_inner());
    let peak = peak_bytes()
        .map(|b| format!(", peak {:.1} MB", b as f64 / 1e6))
        .unwrap_or_default();
    eprintln!(
        "phase {name}: {:.1} ms{peak}",
        now.duration_since(*prev).as_secs_f64() * 1e3
    );
    *prev = now;
}

/// The process's peak resident memory so far (`VmHWM` in `/proc/self/status`), where there is one.
fn peak_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
