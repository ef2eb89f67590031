#!/usr/bin/env bash
# train_compare.sh — did a change move `train`'s steps per second? On a GPU
# machine, in one run: builds `train` of another source tree (BASE, as in
# bench_compare.sh) into build/train_base, writes a synthetic set
# (scripts/make_synthetic.c), and trains the small network where a step is
# launch- and host-bound (in 64, `block 128, block 128, linear 10`, batch
# 32, SGD momentum 0.9; the S network of docs/performance.md) with both
# programs in turn, ROUNDS times (default 3). Prints each run's steps/s
# (the last epoch's steps over its seconds from metrics.csv, the first
# epoch left out as start-up) and the medians.
#
#   BASE=build/base_src BUILD=build/gpu scripts/train_compare.sh
#
# DEVICE=cpu runs both on the CPU (a smoke test of the script).
set -euo pipefail
cd "$(dirname "$0")/.."

base_src=${BASE:?set BASE to the source tree to compare against}
build=${BUILD:-build/gpu}
rounds=${ROUNDS:-3}
rows=65536
batch=32
epochs=3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake -S "$base_src" -B build/train_base -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/train_base --target train -j"$(nproc)" >/dev/null
scripts/synthetic_set.sh "$work/train.h5" "$rows" 64 10 >/dev/null

# run <train program> <name>: prints the run's steps/s
run() {
    cat >"$work/$2.ini" <<EOF
[data]
train = train.h5
[model]
layers = block 128, block 128, linear 10
groups = 8
[train]
batch_size = $batch
epochs = $epochs
lr = 0.01
momentum = 0.9
[run]
device = ${DEVICE:-cuda}
log_every = 0
[output]
dir = $2
EOF
    "$1" "$work/$2.ini" >/dev/null
    # epoch,train_loss,train_acc,valid_loss,valid_acc,seconds (cumulative)
    awk -F, -v steps=$((rows / batch)) 'NR > 2 { s = $6 - prev } NR > 1 { prev = $6 }
        END { printf "%.0f\n", steps / s }' "$work/$2/metrics.csv"
}

base=()
new=()
for r in $(seq "$rounds"); do
    base+=("$(run build/train_base/train "base_$r")")
    new+=("$(run "$build/train" "new_$r")")
    echo "round $r: base ${base[-1]} steps/s, new ${new[-1]} steps/s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "S network, fp32, momentum 0.9, batch $batch: base $(median "${base[@]}") steps/s," \
     "new $(median "${new[@]}") steps/s (medians of $rounds)"
