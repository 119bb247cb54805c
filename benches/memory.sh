#!/usr/bin/env bash
# Peak memory (max RSS, /usr/bin/time -v) of `unmix fit` and `unmix whiten` against the input's
# size, at the sizes of issue 7, f64 and f32. Memory does not depend on the iteration count, so
# the fits run 3 iterations (--tol 0).
#
#   bash benches/memory.sh [UNMIX_BINARY] [DATA_DIR]
#
# UNMIX_BINARY defaults to target/release/unmix; DATA_DIR (default /tmp/unmix-memory) receives
# Laplace mixtures made by numpy (PYTHON, default python3) unless the files are there already.
# Prints one line per run: command, input MB, peak MB, peak / input, and the issue's bound
# (1.25 x input + 50 MB). `fit-f64` is `fit --dtype f64` on the f32 file, `fit-f32` `fit --dtype
# f32` on the f64 one.
set -euo pipefail
BIN=${1:-target/release/unmix}
DIR=${2:-/tmp/unmix-memory}
PY=${PYTHON:-python3}
mkdir -p "$DIR"
SIZES="1000000x8 100000x64 20000x256 100000x768"
for s in $SIZES; do
  n=${s%x*}; d=${s#*x}
  for t in f64 f32; do
    f="$DIR/x_${n}_${d}_$t.npy"
    [ -e "$f" ] || "$PY" - "$n" "$d" "$t" "$f" <<'PYEOF'
import sys, numpy as np
n, d, t, f = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = np.random.default_rng(0)
x = rng.laplace(size=(n, d)) @ rng.normal(size=(d, d)).T
np.save(f, x.astype(np.float32 if t == "f32" else np.float64))
PYEOF
  done
done
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
peak() { # prints max RSS in kB of the command
  /usr/bin/time -v "$@" 2>&1 >/dev/null | awk '/Maximum resident set size/ {print $6}'
}
printf '%-8s %-12s %-4s %9s %9s %8s %9s\n' cmd size type input_MB peak_MB ratio bound_MB
for s in $SIZES; do
  n=${s%x*}; d=${s#*x}
  k=$d; [ "$d" -gt 256 ] && k=64
  for t in f64 f32; do
    f="$DIR/x_${n}_${d}_$t.npy"
    in_mb=$(( $(stat -c %s "$f") / 1000000 ))
    other=f32; [ $t = f32 ] && other=f64
    for cmd in fit "fit-$other" whiten; do
      if [ $cmd = fit ]; then
        kb=$(peak "$BIN" fit --input "$f" --n-components "$k" --max-iter 3 --tol 0 \
          --model "$OUT/m.json" --sources "$OUT/s.npy")
      elif [ $cmd = "fit-$other" ]; then
        # The file read as the other type (`--dtype`); the bound is still the file's.
        kb=$(peak "$BIN" fit --input "$f" --dtype "$other" --n-components "$k" --max-iter 3 \
          --tol 0 --model "$OUT/m.json" --sources "$OUT/s.npy")
      else
        kb=$(peak "$BIN" whiten --input "$f" --n-components "$k" --output "$OUT/z.npy")
      fi
      mb=$(( kb / 1000 ))
      awk -v c=$cmd -v s="${n}x$d" -v t=$t -v i=$in_mb -v p=$mb 'BEGIN {
        printf "%-8s %-12s %-4s %9d %9d %8.2f %9d\n", c, s, t, i, p, p / i, 1.25 * i + 50 }'
    done
  done
done
