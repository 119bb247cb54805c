#!/usr/bin/env bash
# The `unmix whiten` process of several builds or settings side by side, interleaved round by
# round so that the machine's drift hits them alike: wall time of
# `whiten --input X.npy --output $OUT --threads THREADS` (the output overwritten each run, as
# benches/peers/compare.py --whiten does), median, min and max over the rounds, in s.
#
#   bash benches/whiten.sh ROUNDS THREADS X.npy LABEL=COMMAND [LABEL=COMMAND...]
#
# COMMAND is a binary, optionally after environment settings, e.g. the previous commit's build
# against this one, and this one with the writer thread forced on:
#   bash benches/whiten.sh 15 2 x.npy base=/tmp/unmix-before new=target/release/unmix \
#     behind="UNMIX_WRITE_BEHIND=always target/release/unmix"
# OUT defaults to a file in $TMPDIR (or /tmp).
set -euo pipefail
ROUNDS=$1 THREADS=$2 X=$3
shift 3
OUT=${OUT:-${TMPDIR:-/tmp}/unmix-whiten-bench.npy}
declare -A times
for _ in $(seq "$ROUNDS"); do
  for spec in "$@"; do
    label=${spec%%=*} cmd=${spec#*=}
    start=$(date +%s%N)
    # shellcheck disable=SC2086 # COMMAND is split on purpose (settings, then the binary)
    env $cmd whiten --input "$X" --output "$OUT" --threads "$THREADS" > /dev/null 2>&1
    times[$label]+="$(( $(date +%s%N) - start )) "
  done
done
for spec in "$@"; do
  label=${spec%%=*}
  echo "${times[$label]}" | tr ' ' '\n' | grep . | sort -n | awk -v l="$label" \
    '{t[NR] = $1 / 1e9} END {printf "%-10s median %.3f s  min %.3f  max %.3f  (%d runs)\n", l, t[int((NR + 1) / 2)], t[1], t[NR], NR}'
done
