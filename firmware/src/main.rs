//! The unmix core on a Cortex-M4F (QEMU's `mps2-an386`), and the same pipeline on the host.
//!
//! On the device (`cargo run --release`, see `.cargo/config.toml`): stream, whiten, fit FastICA,
//! transform and score ([`pipeline`]), print the results as hex bits through semihosting, measure
//! instructions (SysTick under `qemu -icount shift=0`) and the stack high-water mark (painted
//! stack), and exit with status 0 only if every check passed. On the host
//! (`cargo run --release --target x86_64-unknown-linux-gnu`): the same pipeline and the same
//! lines, for `check.sh` to compare.
//!
//! Features: `f32-sums` builds the core's f32 path (sums and fits in f32, no soft-float f64;
//! the default is the f64 path); `fit-only` keeps whitening, fit and transform only (for the
//! text against the README's goal); `baseline` calls nothing in unmix (its text is subtracted
//! to get the library's). On the host, `unmix-firmware compare F64_RESULTS F32_RESULTS` checks
//! the f32 path's results against the f64 path's within the bounds `unmix::float` states
//! ([`compare`]). `check.sh` runs all of it; the README's "On a microcontroller" has the figures.
#![cfg_attr(target_os = "none", no_std, no_main)]

mod pipeline;

// The f32-sums path against the f64 path: run by the host build of the default (f64) path.
#[cfg(all(not(target_os = "none"), not(feature = "f32-sums")))]
mod compare;

#[cfg(target_os = "none")]
mod device {
    use core::sync::atomic::{AtomicU32, Ordering};

    use cortex_m::peripheral::SYST;
    use cortex_m::peripheral::syst::SystClkSource;
    use cortex_m_rt::{ExceptionFrame, entry, exception};
    use cortex_m_semihosting::{debug, hio};

    use crate::pipeline::{self, Board};

    /// SysTick wraps, each `RELOAD + 1` ticks.
    static WRAPS: AtomicU32 = AtomicU32::new(0);
    const RELOAD: u32 = 0x00ff_ffff;
    /// QEMU's mps2-an386 clocks the core (and SysTick on the processor clock) at 25 MHz; with
    /// `-icount shift=0` one instruction takes 1 ns of virtual time, so one tick is 40 instructions.
    const INSTRUCTIONS_PER_TICK: u64 = 40;
    /// Pattern painted over the free stack before the run.
    const PAINT: u32 = 0x5a5a_5a5a;

    struct Qemu {
        /// Owned so that nothing else reconfigures the counter.
        _syst: SYST,
        out: Option<hio::HostStream>,
    }

    impl Board for Qemu {
        fn instructions(&mut self) -> Option<u64> {
            loop {
                let before = WRAPS.load(Ordering::Acquire);
                let current = SYST::get_current();
                if WRAPS.load(Ordering::Acquire) == before {
                    let ticks =
                        u64::from(before) * (u64::from(RELOAD) + 1) + u64::from(RELOAD - current);
                    return Some(ticks * INSTRUCTIONS_PER_TICK);
                }
            }
        }
        fn write(&mut self, bytes: &[u8]) {
            if let Some(out) = self.out.as_mut() {
                // Nothing to do about a failed console write but carry on.
                let _ = out.write_all(bytes);
            }
        }
    }

    unsafe extern "C" {
        /// End of .data/.bss/.uninit (cortex-m-rt's heap start: there is no heap).
        static __sheap: u32;
        /// Top of RAM, where the stack starts.
        static _stack_start: u32;
    }

    fn stack_bounds() -> (usize, usize) {
        (
            &raw const __sheap as usize,
            &raw const _stack_start as usize,
        )
    }

    /// Paints the free stack from the end of the statics to 256 bytes below the current stack
    /// pointer (this function's own frame stays clear).
    #[inline(never)]
    fn paint_stack() {
        let (bottom, _) = stack_bounds();
        let limit = cortex_m::register::msp::read() as usize - 256;
        let mut p = bottom;
        while p < limit {
            // SAFETY: [bottom, limit) is RAM between the statics and the live stack, which
            // nothing uses yet; volatile so that the writes are not elided.
            unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
            p += 4;
        }
    }

    /// Bytes of stack ever used: from the top down to the lowest word no longer painted.
    fn stack_high_water() -> usize {
        let (bottom, top) = stack_bounds();
        let mut p = bottom;
        // SAFETY: reads of RAM painted above.
        while p < top && unsafe { core::ptr::read_volatile(p as *const u32) } == PAINT {
            p += 4;
        }
        top - p
    }

    #[entry]
    fn main() -> ! {
        paint_stack();
        let mut core = cortex_m::Peripherals::take().expect("first and only take");
        core.SYST.set_clock_source(SystClkSource::Core);
        core.SYST.set_reload(RELOAD);
        core.SYST.clear_current();
        core.SYST.enable_interrupt();
        core.SYST.enable_counter();
        // The cleared counter reads 0 until its first reload to RELOAD; count from there.
        while SYST::get_current() == 0 {}
        let mut board = Qemu {
            _syst: core.SYST,
            out: hio::hstdout().ok(),
        };
        // Calibration: delay(n) runs n + 1 iterations of `subs; bne`, 2 (n + 1) instructions, so
        // this should read 2 000 000 plus the few instructions of the two reads.
        let before = board.instructions();
        cortex_m::asm::delay(999_999);
        let calibration = board.instructions().zip(before).map(|(b, a)| b - a);
        let result = pipeline::run(&mut board);
        let high_water = stack_high_water();
        let ok = match &result {
            Ok(report) => {
                report.emit(&mut board);
                report.emit_measures(&mut board);
                board.write(b"measure ");
                write_hex(&mut board, "stack_high_water", high_water as u64);
                board.write(b"measure ");
                write_hex(&mut board, "calibration_2000000", calibration.unwrap_or(0));
                report.ok()
            }
            Err(e) => {
                board.write(b"error ");
                write_hex(&mut board, "code", pipeline::error_code(e).into());
                false
            }
        };
        board.write(if ok {
            b"firmware: ok\n"
        } else {
            b"firmware: FAIL\n"
        });
        debug::exit(if ok {
            debug::EXIT_SUCCESS
        } else {
            debug::EXIT_FAILURE
        });
        #[allow(clippy::empty_loop)]
        loop {}
    }

    fn write_hex(board: &mut Qemu, name: &str, v: u64) {
        let mut digits = [0u8; 16];
        for (i, d) in digits.iter_mut().enumerate() {
            *d = b"0123456789abcdef"[((v >> (4 * (15 - i))) & 0xf) as usize];
        }
        board.write(name.as_bytes());
        board.write(b" ");
        board.write(&digits);
        board.write(b"\n");
    }

    #[exception]
    fn SysTick() {
        WRAPS.fetch_add(1, Ordering::AcqRel);
    }

    #[exception]
    unsafe fn HardFault(_frame: &ExceptionFrame) -> ! {
        debug::exit(debug::EXIT_FAILURE);
        #[allow(clippy::empty_loop)]
        loop {}
    }

    /// A panic is a bug (the core returns errors on data): leave QEMU with a failure status.
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        debug::exit(debug::EXIT_FAILURE);
        #[allow(clippy::empty_loop)]
        loop {}
    }
}

#[cfg(not(target_os = "none"))]
fn main() -> std::process::ExitCode {
    use std::io::Write;

    // `unmix-firmware compare F64_RESULTS F32_RESULTS`: the f32-sums accuracy contract.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("compare") {
        #[cfg(not(feature = "f32-sums"))]
        {
            let read = |i: usize| {
                args.get(i)
                    .ok_or_else(|| "usage: unmix-firmware compare F64_RESULTS F32_RESULTS".into())
                    .and_then(|p| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}")))
            };
            let result = read(2)
                .and_then(|r| Ok((r, read(3)?)))
                .and_then(|(r, c)| compare::compare(&r, &c));
            return match result {
                Ok(true) => std::process::ExitCode::SUCCESS,
                Ok(false) => std::process::ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("compare: {e}");
                    std::process::ExitCode::FAILURE
                }
            };
        }
        #[cfg(feature = "f32-sums")]
        {
            eprintln!("compare runs in the default (f64) build");
            return std::process::ExitCode::FAILURE;
        }
    }

    struct Host(Vec<u8>);
    impl pipeline::Board for Host {
        fn instructions(&mut self) -> Option<u64> {
            None
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.extend_from_slice(bytes);
        }
    }
    let mut host = Host(Vec::new());
    match pipeline::run(&mut host) {
        Ok(report) => {
            report.emit(&mut host);
            let ok = report.ok();
            host.0.extend_from_slice(if ok {
                b"firmware: ok\n"
            } else {
                b"firmware: FAIL\n"
            });
            std::io::stdout().write_all(&host.0).expect("stdout");
            eprintln!("{report:#?}");
            if ok {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("firmware pipeline failed: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
