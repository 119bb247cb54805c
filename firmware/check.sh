#!/usr/bin/env bash
# Runs the firmware on QEMU's Cortex-M4F board and the same pipeline on the host, and compares.
#
# Every compared line must be bit-identical: the arithmetic is the same on both (IEEE f32 on the
# FPU and on SSE, f64 through compiler-builtins' soft float on the device, which rounds exactly as
# the host's hardware does; libm in software on both; Rust never fuses or reassociates). So this
# is the bit-identical case, and any difference fails. The `measure` lines (instructions, stack,
# statics) exist on the device only and are printed, not compared.
set -euo pipefail
cd "$(dirname "$0")"
target=thumbv7em-none-eabihf
host="$(rustc -vV | sed -n 's/^host: //p')"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

command -v qemu-system-arm >/dev/null || { echo "firmware: FAIL: qemu-system-arm is not installed" >&2; exit 1; }

cargo build --release --quiet --target "$target"
cargo build --release --quiet --target "$host"

elf="target/$target/release/unmix-firmware"
# Bounded: a hang (it should never) fails here instead of stalling CI.
status=0
timeout 120 qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic -icount shift=0 \
  -semihosting-config enable=on,target=native -kernel "$elf" >"$out/device.txt" || status=$?
if [ "$status" -ne 0 ] || ! grep -qx 'firmware: ok' "$out/device.txt"; then
  cat "$out/device.txt"
  echo "firmware: FAIL: the device run exited with status $status" >&2
  exit 1
fi
"target/$host/release/unmix-firmware" >"$out/host.txt" 2>"$out/host-report.txt"

grep -v '^measure ' "$out/device.txt" >"$out/device-results.txt"
lines=$(wc -l <"$out/host.txt")
if ! diff -u "$out/host.txt" "$out/device-results.txt"; then
  echo "firmware: FAIL: device and host results differ (above; - host, + device)" >&2
  exit 1
fi
echo "firmware: device (qemu mps2-an386, Cortex-M4F) and host ($host) agree bit for bit on all $lines result lines"
grep -E '^ *(n_iter|converged|mcc|amari):' "$out/host-report.txt" | sed 's/^ */  /'

echo "firmware: measured on the device (instructions: SysTick under -icount shift=0):"
while read -r _ name hex; do
  printf '  %-28s %d\n' "$name" "$((16#$hex))"
done < <(grep '^measure ' "$out/device.txt")

measure() { printf '%d' "$((16#$(sed -n "s/^measure $1 //p" "$out/device.txt")))"; }
# The instruction counter must count instructions: delay(999_999) runs exactly 2 000 000.
calibration=$(measure calibration_2000000)
if [ "$calibration" -lt 1999900 ] || [ "$calibration" -gt 2000100 ]; then
  echo "firmware: FAIL: the instruction counter read $calibration for 2000000 instructions" >&2
  exit 1
fi
# The goal the README states: at most 4 KiB of stack for the whole run.
if [ "$(measure stack_high_water)" -gt 4096 ]; then
  echo "firmware: FAIL: the stack high-water mark exceeds 4 KiB" >&2
  exit 1
fi

# Nothing hidden in RAM: .data + .bss is the statics listed above plus a few bytes (the SysTick
# wrap counter, cortex-m-rt's and critical-section's flags).
listed=0
for name in $(sed -n 's/^measure \(static_[a-z_]*\) .*/\1/p' "$out/device.txt"); do
  listed=$((listed + $(measure "$name")))
done
ram=$(size "$elf" | awk 'NR == 2 { print $2 + $3 }')
echo "firmware: RAM: .data + .bss = $ram bytes, of which the listed statics are $listed"
if [ $((ram - listed)) -gt 32 ] || [ "$ram" -lt "$listed" ]; then
  echo "firmware: FAIL: RAM holds more than the listed statics" >&2
  exit 1
fi

echo "firmware: text, data, bss in bytes (LTO; no formatting code is linked):"
printf '  opt-level = "s": '
size "$elf" | awk 'NR == 2 { print $1, $2, $3 }'
CARGO_PROFILE_RELEASE_OPT_LEVEL=3 cargo build --release --quiet --target "$target" --target-dir target/o3
printf '  opt-level = 3:   '
size "target/o3/$target/release/unmix-firmware" | awk 'NR == 2 { print $1, $2, $3 }'
# The part the README's goal is about: whitening, FastICA fit and transform (the sensor included),
# without the scoring and the bad-input runs.
for level in s 3; do
  CARGO_PROFILE_RELEASE_OPT_LEVEL=$level cargo build --release --quiet --target "$target" \
    --features fit-only --target-dir "target/fit-only-$level"
  printf '  whitening + fit + transform only, opt-level = %s: ' "$level"
  size "target/fit-only-$level/$target/release/unmix-firmware" | awk 'NR == 2 { print $1, $2, $3 }'
done
if nm -C "$elf" | grep -qE 'core::fmt::float|float_to_decimal|flt2dec'; then
  echo "firmware: FAIL: float formatting code is linked" >&2
  exit 1
fi
