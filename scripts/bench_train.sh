#!/usr/bin/env bash
# bench_train.sh — does `train` keep up with the step? On a GPU machine, in
# one run: writes a synthetic set at the benchmark shape (X float32
# [ROWS, 8192], y int32 labels of 16 classes; scripts/make_synthetic.c built
# with h5cc), trains `layers = block 8192, linear 16` (groups 512,
# batch_size 1024, momentum 0, no validation set) in fp32, tf32 and bf16, takes the
# mean epoch time from metrics.csv (the first epoch left out: start-up),
# runs `bench` at the same shape and math, and prints the trainer's steps/s
# over bench's.
#
#   BUILD=build/gpu scripts/bench_train.sh
#
# The comparison: a network's first layer computes no dx, so the step to
# match is bench's `step_nodx_m0` (the fused plain-SGD step), which train
# runs too with momentum 0 (fn_sgd_fused_backward), plus a linear 8192 -> 16
# head, the cross-entropy loss and one 8-byte read per step (loss and
# correct count); its ratio is also printed against
# `step_nodx_unfused_m0`, the step with the update as a pass of its own.
# Each math is also trained with FN_LOADER_THREADS=1: whether one gathering
# thread would keep up. ROWS (default 65536: 64 steps an epoch), EPOCHS_FP32
# (6), EPOCHS_TF32 (12, also bf16's), WORK (default a temporary directory) may be set,
# and IN, NGROUPS, DEVICE for a smoke test off the benchmark shape; with OUT
# set, the table also goes to $OUT/bench_train.md.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD:-build/gpu}
rows=${ROWS:-65536}
in=${IN:-8192}
groups=${NGROUPS:-512}
device=${DEVICE:-cuda}
classes=16
batch=1024
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
for p in train bench; do
    [ -x "$build/$p" ] || { echo "bench_train.sh: no $build/$p (build it, or set BUILD)" >&2; exit 1; }
done

echo "bench_train.sh: writing $rows x $in rows to $work/train.h5" >&2
scripts/synthetic_set.sh "$work/train.h5" "$rows" "$in" "$classes"

# train <math> <epochs> <threads or ''> -> the run's directory
train() {
    local math=$1 epochs=$2 threads=$3 name=run_$1${3:+_t$3}
    cat >"$work/$name.ini" <<EOF
[data]
train = train.h5
memory_budget_mb = $(( rows * (in * 4 + 4) / 1048576 + 64 ))
[model]
layers = block $in, linear $classes
groups = $groups
[train]
batch_size = $batch
epochs = $epochs
lr = 0.001
momentum = 0
seed = 1
[run]
device = $device
math = $math
log_every = 0
[output]
dir = $name
EOF
    echo "bench_train.sh: ./train $name.ini${threads:+ (FN_LOADER_THREADS=$threads)}" >&2
    FN_LOADER_THREADS=$threads "$build/train" "$work/$name.ini" >"$work/$name.log" 2>&1 ||
        { cat "$work/$name.log" >&2; exit 1; }
    cat "$work/$name.log" >&2
}

# mean seconds of an epoch after the first, from metrics.csv's running total
# (printed to the millisecond: the mean over several epochs is finer than one)
epoch_seconds() {
    awk -F, 'NR == 2 { first = $6 } NR > 2 { last = $6; n++ } END { print (last - first) / n }' \
        "$work/$1/metrics.csv"
}

steps=$(( (rows + batch - 1) / batch ))
table="| math | train steps/s (auto threads) | train steps/s (1 thread) | bench step_nodx_m0 ms → steps/s | train / bench | bench step_nodx_unfused_m0 ms | train / unfused |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for math in fp32 tf32 bf16; do
    epochs=$([ "$math" = fp32 ] && echo "${EPOCHS_FP32:-6}" || echo "${EPOCHS_TF32:-12}")
    train "$math" "$epochs" ""
    train "$math" "$epochs" 1
    "$build/bench" --math "$math" --momentum 0 --batch $batch --in $in --hidden $in --groups $groups \
        | tee "$work/bench_$math.txt" >&2
    fused=$(awk '$3 == "step_nodx_m0" { print $4 }' "$work/bench_$math.txt")
    unfused=$(awk '$3 == "step_nodx_unfused_m0" { print $4 }' "$work/bench_$math.txt")
    t_all=$(epoch_seconds "run_$math")
    t_one=$(epoch_seconds "run_${math}_t1")
    table+=$'\n'$(awk -v m="$math" -v s="$steps" -v a="$t_all" -v o="$t_one" -v f="$fused" \
        -v u="$unfused" 'BEGIN {
            ta = s / a; to = s / o; bf = 1000 / f; bu = 1000 / u
            printf "| %s | %.1f | %.1f | %.3f → %.1f | %.3f | %.3f → %.1f | %.3f |",
                   m, ta, to, f, bf, ta / bf, u, bu, ta / bu }')
    grep -h "^loader:" "$work/run_$math.log" "$work/run_${math}_t1.log" >&2 || true
done
echo "$table"
echo
echo "ROWS=$rows ($steps steps an epoch), batch $batch, block $in + linear $classes, groups $groups," \
     "momentum 0; mean epoch after the first; $(nproc) CPUs"
[ -n "${OUT:-}" ] && echo "$table" >"$OUT/bench_train.md"
exit 0
