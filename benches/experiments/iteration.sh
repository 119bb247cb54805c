#!/usr/bin/env bash
# One FastICA iteration of an `unmix` binary, as compare.py measures it but without
# scikit-learn, for comparing two builds: (median of REPS fits at --max-iter MANY - median of
# REPS fits at --max-iter 1) / (MANY - 1), --tol 0, the fits of 1 and MANY iterations
# interleaved. Run it on each build in turn, twice, and quote both runs.
#
#   bash benches/experiments/iteration.sh EXE INPUT.npy W_INIT.npy K [THREADS] [REPS] [MANY]
#
# e.g. with compare.py's files: bash benches/experiments/iteration.sh target/release/unmix \
#   target/peer-data/emb_1000000_8.npy target/peer-data/emb_w_8.npy 8 1 5 31
set -euo pipefail
exe=$1 input=$2 w_init=$3 k=$4 threads=${5:-1} reps=${6:-5} many=${7:-31}
model=$(mktemp --suffix .json)
trap 'rm -f "$model"' EXIT
fit() {
    local start end
    start=$(date +%s%N)
    "$exe" fit --input "$input" --model "$model" --n-components "$k" --w-init "$w_init" \
        --tol 0 --threads "$threads" --max-iter "$1" > /dev/null 2>&1
    end=$(date +%s%N)
    echo $(((end - start) / 1000))
}
one=() all=()
for _ in $(seq "$reps"); do
    one+=("$(fit 1)")
    all+=("$(fit "$many")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
m1=$(median "${one[@]}") mm=$(median "${all[@]}")
awk -v a="$m1" -v b="$mm" -v n="$many" \
    'BEGIN {printf "fit at 1 iteration %.1f ms, at %d %.1f ms: one iteration %.3f ms\n", a / 1e3, n, b / 1e3, (b - a) / 1e3 / (n - 1)}'
