#!/usr/bin/env bash
# One FastICA iteration of several `unmix` builds side by side, interleaved round by round so
# that the machine's drift hits them alike: per build, the median of `fit --max-iter 11` minus
# the median of `fit --max-iter 1` (`--tol 0`, the given start matrix), over 10, in ms. The
# same differencing as benches/peers/compare.py, without the peers.
#
#   bash benches/iteration.sh ROUNDS THREADS X.npy W_INIT.npy BINARY [BINARY...]
#
# X.npy is N x D; W_INIT.npy is K x K (K = D here). E.g. the previous commit's build against
# this one: bash benches/iteration.sh 5 1 x.npy w.npy /tmp/unmix-before target/release/unmix
# UNMIX_ITERATIONS=51 times `--max-iter 51` instead of 11 (and divides by 50): less noise a
# round where an iteration is short against a process's start-up (1e6 x 8).
set -euo pipefail
rounds=$1 threads=$2 x=$3 w=$4
many=${UNMIX_ITERATIONS:-11}
shift 4
k=$(python3 -c "import sys,ast; h=open(sys.argv[1],'rb').read(256).decode('latin1'); print(ast.literal_eval(h[h.index('{'):h.index('}')+1])['shape'][0])" "$w")
model=$(mktemp)
trap 'rm -f "$model"' EXIT
declare -A one eleven
now() { date +%s.%N; }
for _ in $(seq "$rounds"); do
  for bin in "$@"; do
    for it in 1 "$many"; do
      start=$(now)
      "$bin" fit --input "$x" --model "$model" --n-components "$k" --w-init "$w" --tol 0 \
        --threads "$threads" --max-iter "$it" >/dev/null 2>&1
      t=$(echo "$(now) - $start" | bc)
      if [ "$it" = 1 ]; then one[$bin]+="$t "; else eleven[$bin]+="$t "; fi
    done
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for bin in "$@"; do
  a=$(median "${one[$bin]}") b=$(median "${eleven[$bin]}")
  printf '%s: max-iter 1 %.3f s, max-iter %s %.3f s, one iteration %.1f ms\n' \
    "$bin" "$a" "$many" "$b" "$(echo "($b - $a) * 1000 / ($many - 1)" | bc -l)"
done
