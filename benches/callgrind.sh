#!/usr/bin/env bash
# Instruction counts of the dense kernels (covariance, whitening transform, one FastICA pass) at
# fixed sizes, under callgrind: independent of the machine's load, so a kernel change can be
# judged on a busy machine. No target-cpu=native: the run-time dispatch picks the instruction set
# (under valgrind, which lacks AVX-512, matrixmultiply takes its FMA kernel).
#
#   bash benches/callgrind.sh            # N x D = 8192 x 64 and 2048 x 256
#   bash benches/callgrind.sh 4096x128   # other sizes
#
# Prints, per kernel: instructions (inclusive, Ir) and instructions per multiply-add of the
# kernel's products (covariance: N D^2 / 2 for the upper triangle; transform: N D^2; pass:
# 2 N D^2), which compares sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(8192x64 2048x256)
cargo build --release --quiet -p unmix-benches --bin kernel_counts
exe=target/release/kernel_counts
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-12s %-22s %15s %10s\n' "N x D" kernel instructions "per madd"
for size in "${sizes[@]}"; do
  n=${size%x*}
  d=${size#*x}
  if ! valgrind --tool=callgrind --callgrind-out-file="$out/cg.$size" "$exe" "$n" "$d" \
    >/dev/null 2>"$out/log.$size"; then
    # e.g. D below 16, which kernel_counts refuses: say why instead of stopping silently.
    grep -v '^==' "$out/log.$size" | head -5 >&2
    echo "callgrind.sh: kernel_counts $n $d failed" >&2
    exit 1
  fi
  callgrind_annotate --inclusive=yes "$out/cg.$size" >"$out/ann.$size" 2>/dev/null
  for kernel in covariance_core covariance_core_avx2 covariance_gemm \
    transform_core transform_core_avx2 transform_gemm pass_core pass_core_avx2 pass_gemm; do
    ir=$(grep -E "kernel_counts::${kernel} " "$out/ann.$size" | head -1 | awk '{gsub(",", "", $1); print $1}')
    case $kernel in
      covariance*) madds=$((n * d * d / 2)) ;;
      transform*) madds=$((n * d * d)) ;;
      pass*) madds=$((2 * n * d * d)) ;;
    esac
    awk -v s="$n x $d" -v k="$kernel" -v ir="${ir:-0}" -v m="$madds" \
      'BEGIN { printf "%-12s %-22s %15d %10.2f\n", s, k, ir, ir / m }'
  done
done
