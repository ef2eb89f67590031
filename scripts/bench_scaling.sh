#!/usr/bin/env bash
# bench_scaling.sh — the weak-scaling table of docs/many-processes.md, on one
# machine of several GPUs:
#
#   BUILD=build/gpu scripts/bench_scaling.sh [N ...]
#
# For each GPU count N given (default: every GPU of the machine) and each
# math of MATHS (default "fp32 tf32"; bf16 too with MATHS="fp32 tf32 bf16",
# DDP then under autocast bf16): `train` on 1 GPU at global batch 1024 (the plain run,
# no mpirun) against `mpirun -np N train` at global batch N x 1024 (1024
# rows a GPU), the network `block 8192` x4, `linear 16`, groups 512, SGD
# momentum 0, on a synthetic HDF5 set (scripts/make_synthetic.c); the same
# N-GPU run with NCCL forced onto its network transport
# (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: a stand-in for N nodes), whose
# last train loss must match the NVLink run's (a different NCCL algorithm
# changes only the summation order); and PyTorch DDP (scripts/bench_ddp.py
# under torchrun) on the same network, batch and precision, on 1 and N
# GPUs; and the N-GPU run with the optimiser sharded ([run] shard =
# optimizer: a reduce-scatter and an all-gather a layer in place of its
# all-reduce). Efficiency = samples/s on N GPUs / (N x samples/s on 1),
# against the plain 1-GPU run and against 1 GPU under `mpirun -np 1` (see
# below). The exposed communication a step is the N-GPU step's time less
# the `-np 1` step's (each rank runs that same step on its 1024 rows, so
# the rest is communication the backward did not hide).
# fusenet's
# samples/s are the mean of metrics.csv's samples_per_s over the epochs
# after the first (start-up). NCCL_NVLS_ENABLE=0 is set for every run (NCCL's
# NVLink SHARP off, which some machines need). Variables: BUILD (build/gpu),
# PYTHON (python3, with PyTorch), STEPS (steps an epoch at the largest N, default 16), EPOCHS (4),
# WORK (a temporary directory), OUT (the table also to $OUT/bench_scaling.md),
# and WIDTH, NGROUPS, PER_GPU, DEVICE, GPUS for a smoke test (below).
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0

build=${BUILD:-build/gpu}
python=${PYTHON:-python3}
steps=${STEPS:-16}
epochs=${EPOCHS:-4}
# Off the benchmark only for a smoke test of this script (WIDTH=32 NGROUPS=4
# PER_GPU=16 DEVICE=cpu GPUS=2 on a machine without GPUs).
width=${WIDTH:-8192}
groups=${NGROUPS:-512}
per_gpu=${PER_GPU:-1024}
device=${DEVICE:-auto}
classes=16
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
mpirun=(mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE)
[ -x "$build/train" ] || { echo "bench_scaling.sh: no $build/train (set BUILD)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "bench_scaling.sh: no mpirun (Open MPI)" >&2; exit 1; }

gpus=${GPUS:-$(nvidia-smi -L | wc -l)}
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=("$gpus")
max=1
for n in "${counts[@]}"; do
    [ "$n" -ge 2 ] && [ "$n" -le "$gpus" ] ||
        { echo "bench_scaling.sh: $n GPUs asked for, 2..$gpus possible" >&2; exit 1; }
    [ "$n" -gt "$max" ] && max=$n
done

# One set for every run: `steps` steps an epoch at the largest N.
rows=$(( max * per_gpu * steps ))
echo "bench_scaling.sh: writing $rows x $width rows to $work/train.h5" >&2
scripts/synthetic_set.sh "$work/train.h5" "$rows" "$width" "$classes"

# config <name> <math> <global batch> [shard]: writes $work/<name>.ini
config() {
    cat >"$work/$1.ini" <<INI
[data]
train = train.h5
memory_budget_mb = $(( rows * (width * 4 + 4) / 1048576 + 64 ))
[model]
layers = block $width, block $width, block $width, block $width, linear $classes
groups = $groups
[train]
batch_size = $3
epochs = $epochs
lr = 0.001
momentum = 0
seed = 1
[run]
device = $device
math = $2
log_every = 0
shard = ${4:-none}
[output]
dir = $1
INI
}

# mean samples_per_s (column 7 of metrics.csv) of the epochs after the first
rate() { awk -F, 'NR > 2 { s += $7; n++ } END { printf "%.1f", s / n }' "$work/$1/metrics.csv"; }
last_loss() { awk -F, 'END { print $2 }' "$work/$1/metrics.csv"; }

# fusenet <name> <math> <N> [ENV=VALUE ...]: trains, 1 GPU without mpirun;
# n = 0: 1 GPU under `mpirun -np 1` (the data-parallel step, unfused); a
# name starting with "shard" shards the optimiser
fusenet() {
    local name=$1 math=$2 n=$3 shard=none; shift 3
    [[ $name == shard* ]] && shard=optimizer
    config "$name" "$math" $(( (n > 0 ? n : 1) * per_gpu )) "$shard"
    echo "bench_scaling.sh: $name ($n GPU, $math${*:+, $*})" >&2
    if [ "$n" -eq 0 ]; then
        "${mpirun[@]}" -np 1 "$build/train" "$work/$name.ini" --overwrite >"$work/$name.log" 2>&1
    elif [ "$n" -eq 1 ]; then
        "$build/train" "$work/$name.ini" --overwrite >"$work/$name.log" 2>&1
    else
        local envs=()
        for e in "$@"; do envs+=(-x "$e"); done
        env "$@" "${mpirun[@]}" "${envs[@]}" -np "$n" "$build/train" "$work/$name.ini" \
            --overwrite >"$work/$name.log" 2>&1
    fi || { cat "$work/$name.log" >&2; exit 1; }
}

ddp() { # ddp <math> <N> -> samples/s; empty (0 in the table) when it failed
    echo "bench_scaling.sh: DDP ($2 GPU, $1)" >&2
    "$python" -m torch.distributed.run --standalone --nproc_per_node "$2" scripts/bench_ddp.py \
        --precision "$1" --batch $per_gpu --width $width --depth 4 --classes $classes \
        --groups $groups 2>"$work/ddp_$1_$2.err" | awk '$1 == "ddp" { print $4 }' ||
        { echo "bench_scaling.sh: DDP failed, see $work/ddp_$1_$2.err" >&2; tail -5 "$work/ddp_$1_$2.err" >&2; }
}

# Efficiency is against the plain 1-GPU run, which with momentum 0 folds
# the update into the dW product (the fused plain-SGD step); several ranks
# cannot (the update waits for the sum), so the table also gives the 1-GPU
# run under `mpirun -np 1` (the data-parallel step: sums of one rank, the
# update a pass of its own) and the efficiency against it: what the sums
# themselves cost.
# exposed <N> <samples/s on N> <samples/s of -np 1>: ms a step beyond -np 1's
exposed() { awk -v n="$1" -v r="$2" -v o="$3" -v b="$per_gpu" \
    'BEGIN { printf "%.3f", 1000 * (n * b / r - b / o) }'; }

table="| math | GPUs | fusenet 1 GPU samples/s | 1 GPU, -np 1 | fusenet N GPUs samples/s | efficiency | vs -np 1 | exposed ms/step | sharded optimiser: samples/s | efficiency | exposed ms/step | N GPUs, NCCL network transport: samples/s | efficiency | loss vs NVLink run | DDP 1 GPU | DDP N GPUs | DDP efficiency | fusenet / DDP on N |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
for math in ${MATHS:-fp32 tf32}; do
    fusenet "one_$math" "$math" 1
    one=$(rate "one_$math")
    fusenet "np1_$math" "$math" 0
    np1=$(rate "np1_$math")
    ddp_one=$(ddp "$math" 1)
    for n in "${counts[@]}"; do
        fusenet "n${n}_$math" "$math" "$n"
        fusenet "shard_n${n}_$math" "$math" "$n"
        fusenet "n${n}_net_$math" "$math" "$n" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
        many=$(rate "n${n}_$math")
        sharded=$(rate "shard_n${n}_$math")
        net=$(rate "n${n}_net_$math")
        # The transports may pick other NCCL algorithms: the same run up to
        # summation order, so the last epoch's loss agrees to ~1e-4.
        agree=$(awk -v a="$(last_loss "n${n}_$math")" -v b="$(last_loss "n${n}_net_$math")" \
            'BEGIN { d = a - b; if (d < 0) d = -d; same = d <= 1e-4 * (a < 0 ? -a : a) + 1e-6
                     printf "%s (%.5f vs %.5f)", (same ? "same" : "DIFFERS"), a, b }')
        ddp_n=$(ddp "$math" "$n")
        table+=$'\n'$(awk -v m="$math" -v n="$n" -v o="$one" -v o1="$np1" -v p="$many" \
            -v x="$(exposed "$n" "$many" "$np1")" -v s="$sharded" \
            -v xs="$(exposed "$n" "$sharded" "$np1")" \
            -v q="$net" -v g="$agree" -v d1="${ddp_one:-0}" -v dn="${ddp_n:-0}" 'BEGIN {
            printf "| %s | %d | %.0f | %.0f | %.0f | %.1f %% | %.1f %% | %s | %.0f | %.1f %% | %s | %.0f | %.1f %% | %s | %.0f | %.0f | %.1f %% | %.3f |",
                   m, n, o, o1, p, 100 * p / (n * o), 100 * p / (n * o1), x, s, 100 * s / (n * o),
                   xs, q, 100 * q / (n * o), g, d1, dn, (d1 > 0 ? 100 * dn / (n * d1) : 0),
                   (dn > 0 ? p / dn : 0) }')
    done
done
echo "$table"
echo
echo "weak scaling: $per_gpu rows a GPU a step; block $width x4 + linear $classes, groups $groups," \
     "SGD momentum 0; $rows rows, $epochs epochs (mean samples/s after the first);" \
     "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $gpus GPUs;" \
     "NCCL_NVLS_ENABLE=0"
[ -n "${OUT:-}" ] && echo "$table" >"$OUT/bench_scaling.md"
exit 0
