#!/usr/bin/env bash
# Runs the firmware on QEMU's Cortex-M4F board and the same pipeline on the host, for both of the
# core's arithmetic paths, and compares.
#
# - f64 path (default): sums and fits in f64 (software floating point on the device).
# - f32 path (--features f32-sums): sums and fits in f32 (the FPU on the device).
#
# Within a path every compared line must be bit-identical: the arithmetic is the same on both
# (IEEE f32 on the FPU and on SSE; f64 through compiler-builtins' soft float on the device, which
# rounds exactly as the host's hardware does; libm in software on both; Rust never fuses or
# reassociates). So this is the bit-identical case, and any difference fails. Between the paths
# the arithmetic differs, so the f32 path's results are checked against the f64 path's within the
# tolerances stated in unmix::float's docs (firmware/src/compare.rs). The f32 path's fit-only
# build must link no soft-float f64 routine. The `measure` lines (instructions, stack, statics)
# exist on the device only and are printed, not compared.
set -euo pipefail
# A failed build inside $(...) must stop the script, not leave an older binary to be measured.
shopt -s inherit_errexit
cd "$(dirname "$0")"
target=thumbv7em-none-eabihf
host="$(rustc -vV | sed -n 's/^host: //p')"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

command -v qemu-system-arm >/dev/null || { echo "firmware: FAIL: qemu-system-arm is not installed" >&2; exit 1; }

# path name -> cargo features and target directory
features() { if [ "$1" = f32 ]; then echo "--features f32-sums"; fi; }
tdir() { if [ "$1" = f32 ]; then echo "target/f32"; else echo "target"; fi; }

measure() { printf '%d' "$((16#$(sed -n "s/^measure $2 //p" "$out/device-$1.txt")))"; }

run_path() {
  local path=$1 dir elf status=0
  dir=$(tdir "$path")
  # shellcheck disable=SC2046
  cargo build --release --quiet --target "$target" --target-dir "$dir" $(features "$path")
  # shellcheck disable=SC2046
  cargo build --release --quiet --target "$host" --target-dir "$dir" $(features "$path")
  elf="$dir/$target/release/unmix-firmware"
  # Bounded: a hang (it should never) fails here instead of stalling CI.
  timeout 120 qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic -icount shift=0 \
    -semihosting-config enable=on,target=native -kernel "$elf" >"$out/device-$path.txt" || status=$?
  if [ "$status" -ne 0 ] || ! grep -qx 'firmware: ok' "$out/device-$path.txt"; then
    cat "$out/device-$path.txt"
    echo "firmware: FAIL ($path path): the device run exited with status $status" >&2
    exit 1
  fi
  "$dir/$host/release/unmix-firmware" >"$out/host-$path.txt" 2>"$out/host-report-$path.txt"
  grep -v '^measure ' "$out/device-$path.txt" >"$out/device-results-$path.txt"
  local lines
  lines=$(wc -l <"$out/host-$path.txt")
  if ! diff -u "$out/host-$path.txt" "$out/device-results-$path.txt"; then
    echo "firmware: FAIL ($path path): device and host results differ (above; - host, + device)" >&2
    exit 1
  fi
  echo "firmware ($path path): device (qemu mps2-an386, Cortex-M4F) and host ($host) agree bit for bit on all $lines result lines"
  grep -E '^ *(n_iter|converged|mcc|amari):' "$out/host-report-$path.txt" | sed 's/^ */  /'

  echo "firmware ($path path): measured on the device (instructions: SysTick under -icount shift=0):"
  while read -r _ name hex; do
    printf '  %-28s %d\n' "$name" "$((16#$hex))"
  done < <(grep '^measure ' "$out/device-$path.txt")

  # The instruction counter must count instructions: delay(999_999) runs exactly 2 000 000.
  local calibration
  calibration=$(measure "$path" calibration_2000000)
  if [ "$calibration" -lt 1999900 ] || [ "$calibration" -gt 2000100 ]; then
    echo "firmware: FAIL ($path path): the instruction counter read $calibration for 2000000 instructions" >&2
    exit 1
  fi
  # The goal the README states: at most 4 KiB of stack for the whole run.
  if [ "$(measure "$path" stack_high_water)" -gt 4096 ]; then
    echo "firmware: FAIL ($path path): the stack high-water mark exceeds 4 KiB" >&2
    exit 1
  fi
  # Nothing hidden in RAM: .data + .bss is the statics listed above plus a few bytes (the SysTick
  # wrap counter, cortex-m-rt's and critical-section's flags).
  local listed=0 ram name
  for name in $(sed -n 's/^measure \(static_[a-z_]*\) .*/\1/p' "$out/device-$path.txt"); do
    listed=$((listed + $(measure "$path" "$name")))
  done
  ram=$(size "$elf" | awk 'NR == 2 { print $2 + $3 }')
  echo "firmware ($path path): RAM: .data + .bss = $ram bytes, of which the listed statics are $listed"
  if [ $((ram - listed)) -gt 32 ] || [ "$ram" -lt "$listed" ]; then
    echo "firmware: FAIL ($path path): RAM holds more than the listed statics" >&2
    exit 1
  fi
  if nm -C "$elf" | grep -qE 'core::fmt::float|float_to_decimal|flt2dec'; then
    echo "firmware: FAIL ($path path): float formatting code is linked" >&2
    exit 1
  fi
}

run_path f64
run_path f32

for where in device host; do
  echo "firmware: the f32 path against the f64 path, $where results:"
  if ! "target/$host/release/unmix-firmware" compare "$out/$where-f64.txt" "$out/$where-f32.txt"; then
    echo "firmware: FAIL: the f32-sums path is outside its stated tolerance of the f64 path ($where)" >&2
    exit 1
  fi
done

# Code size. The part the README's goal is about: whitening, FastICA fit and transform (fit-only:
# no scoring, no bad-input runs), and the same program without any call into unmix (baseline), so
# that fit-only minus baseline is what the library costs.
build_size() { # level dir features... -> "text data bss"
  local level=$1 dir=$2
  shift 2
  CARGO_PROFILE_RELEASE_OPT_LEVEL=$level cargo build --release --quiet --target "$target" \
    --target-dir "$dir" "$@"
  size "$dir/$target/release/unmix-firmware" | awk 'NR == 2 { print $1, $2, $3 }'
}
text() { echo "$1" | cut -d' ' -f1; }
echo "firmware: text, data, bss in bytes (LTO, panic = abort; no formatting code is linked):"
baseline=$(build_size s target/baseline --features baseline)
echo "  baseline (sensor, buffer, output; no unmix), opt-level = \"s\": $baseline"
for path in f64 f32; do
  extra=""
  [ "$path" = f32 ] && extra=",f32-sums"
  whole_s=$(size "$(tdir "$path")/$target/release/unmix-firmware" | awk 'NR == 2 { print $1, $2, $3 }')
  whole_3=$(build_size 3 "target/o3-$path" $(features "$path"))
  fit_s=$(build_size s "target/fit-only-s-$path" --features "fit-only$extra")
  fit_3=$(build_size 3 "target/fit-only-3-$path" --features "fit-only$extra")
  echo "  $path path, whole program:           opt-level = \"s\": $whole_s; opt-level = 3: $whole_3"
  echo "  $path path, whitening + fit + transform only: opt-level = \"s\": $fit_s; opt-level = 3: $fit_3"
  echo "  $path path, the library's text (fit-only minus baseline, opt-level = \"s\"): $(($(text "$fit_s") - $(text "$baseline")))"
done

# No soft-float f64 in the f32 path's fit: arithmetic (__aeabi_dadd, __adddf3, ...), comparisons
# (__aeabi_dcmp*, __ledf2, ...) and conversions (__aeabi_f2d, __aeabi_d2f, __extendsfdf2, ...).
# The pattern must find them in the f64 path's build, or it checks nothing.
soft_f64='(__aeabi_d[a-z0-9]+|__aeabi_[a-z0-9]+2d|__[a-z0-9]*df[0-9]?)$'
f64_syms=$(nm "target/fit-only-s-f64/$target/release/unmix-firmware" | grep -cE "$soft_f64" || true)
if [ "$f64_syms" -eq 0 ]; then
  echo "firmware: FAIL: the soft-float pattern finds nothing in the f64 path's build" >&2
  exit 1
fi
for dir in target/fit-only-s-f32 target/fit-only-3-f32; do
  if nm "$dir/$target/release/unmix-firmware" | grep -E "$soft_f64"; then
    echo "firmware: FAIL: soft-float f64 routines (above) are linked in the f32 path's fit ($dir)" >&2
    exit 1
  fi
done
echo "firmware: no soft-float f64 routine is linked in the f32 path's fit (the f64 path's links $f64_syms)"
