#!/usr/bin/env bash
# bench_small.sh — `train` at small shapes, where a step's arithmetic is
# microseconds and launches and the host decide, with PyTorch eager beside
# it (the small-network table of docs/performance.md). On a GPU machine:
# writes a synthetic set for each input width (X float32 [ROWS, in], y int32 of 10 classes;
# scripts/make_synthetic.c), trains each shape in fp32 with SGD momentum
# 0.9 (lr 0.01, groups 8, no validation set) three ways, and prints one
# table of steps/s, each the median over the epochs after the first of
# metrics.csv's samples_per_s / batch_size:
#   graphs    the default: deferred steps replayed as CUDA graphs
#   no graphs [run] cuda_graphs = false: deferred steps, launched one by one
#   eager     the loss read back every step (FN_TEST_DEFER_LAG=0: builds with
#             -DFN_TEST_HOOKS=ON, as scripts/gpu_check.sh's; elsewhere this
#             column repeats "no graphs" and says so)
# and PyTorch three ways (scripts/bench_small_torch.py: the set on the GPU,
# batches gathered there, the loss not read; median of 5 epochs): eager, the
# whole step as a CUDA graph, and torch.compile inside that graph; the last
# column is fusenet's graphs over the fastest PyTorch way.
#
#   BUILD=build/gpu scripts/bench_small.sh
#
# Shapes: S: in 64, block 128, block 128, linear 10, batch 32;
#         M: in 256, block 512 x3, linear 10, batch 256;
#         L: in 1024, block 2048 x3, linear 10, batch 1024;
#         X (not by default): in 8192, block 8192 x3, linear 10, batch 1024,
#         where a layer's update pass is long beside the products (with
#         ROWS=16384, the set takes 512 MiB).
# ROWS (65536), EPOCHS (S 4, M 6, L 6 by default: EPOCHS overrides all),
# WORK (a temporary directory), PYTHON (python3), SHAPES ("S M L"), MODES
# ("graphs plain eager"), TORCH (1; 0 leaves PyTorch out), DEVICE (cuda; cpu
# for a smoke test), MATH ([run] math: fp32), DATA_ON_DEVICE ([run] data_on_device: auto; false
# gathers every batch on the host), LAYER_UPDATES ([run] layer_updates: false;
# true queues each layer's update beside the backward, docs/gpus.md) may be
# set; with OUT set, the table also goes to
# $OUT/bench_small.md. The configs and sets stay in WORK, for a profiler:
#   WORK=/tmp/bs SHAPES=M MODES=graphs TORCH=0 scripts/bench_small.sh
#   ncu --clock-control none build/gpu/train /tmp/bs/M_graphs.ini --overwrite
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD:-build/gpu}
rows=${ROWS:-65536}
work=${WORK:-$(mktemp -d)}
python=${PYTHON:-python3}
shapes=${SHAPES:-S M L}
modes=${MODES:-graphs plain eager}
classes=10
device=${DEVICE:-cuda}
mkdir -p "$work"
[ -x "$build/train" ] || { echo "bench_small.sh: no $build/train (build it, or set BUILD)" >&2; exit 1; }

# shape -> "in|layers|batch|epochs|torch hidden"
spec() {
    case $1 in
    S) echo "64|block 128, block 128, linear $classes|32|4|128,128" ;;
    M) echo "256|block 512, block 512, block 512, linear $classes|256|6|512,512,512" ;;
    L) echo "1024|block 2048, block 2048, block 2048, linear $classes|1024|6|2048,2048,2048" ;;
    X) echo "8192|block 8192, block 8192, block 8192, linear $classes|1024|4|8192,8192,8192" ;;
    *) echo "bench_small.sh: unknown shape $1" >&2; exit 1 ;;
    esac
}

# run <shape> <mode: graphs|plain|eager> -> prints the median steps/s
run() {
    local shape=$1 mode=$2 in layers batch epochs hidden
    IFS='|' read -r in layers batch epochs hidden <<<"$(spec "$shape")"
    epochs=${EPOCHS:-$epochs}
    local name=${shape}_$mode graphs=true lag=
    [ "$mode" = graphs ] || graphs=false
    [ "$mode" = eager ] && lag=0
    cat >"$work/$name.ini" <<INI
[data]
train = train_$in.h5
memory_budget_mb = $(( rows * (in * 4 + 4) / 1048576 + 64 ))
[model]
layers = $layers
groups = 8
[train]
batch_size = $batch
epochs = $epochs
lr = 0.01
momentum = 0.9
seed = 1
[run]
device = $device
math = ${MATH:-fp32}
log_every = 0
cuda_graphs = $graphs
data_on_device = ${DATA_ON_DEVICE:-auto}
layer_updates = ${LAYER_UPDATES:-false}
[output]
dir = $name
INI
    echo "bench_small.sh: ./train $name.ini" >&2
    FN_TEST_DEFER_LAG=$lag "$build/train" "$work/$name.ini" --overwrite >"$work/$name.log" 2>&1 ||
        { cat "$work/$name.log" >&2; exit 1; }
    grep -h "^loader:\|^done:" "$work/$name.log" >&2 || true
    # column 7: the epoch's samples/s; the median of the epochs after the first
    awk -F, -v b="$batch" 'NR > 2 { print $7 / b }' "$work/$name/metrics.csv" | sort -g |
        awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
              printf "%.0f", m }'
}

torch_args=()
for s in $shapes; do
    IFS='|' read -r in layers batch epochs hidden <<<"$(spec "$s")"
    [ -f "$work/train_$in.h5" ] || scripts/synthetic_set.sh "$work/train_$in.h5" "$rows" "$in" "$classes"
    torch_args+=(--shape "$s:$in:$hidden:$batch")
done

# fusenet's graphs over the fastest PyTorch way, e.g. 2.41x
over_best() {
    awk -v f="$1" -v a="${2:--}" -v b="${3:--}" -v c="${4:--}" 'BEGIN {
        best = 0; n = split(a " " b " " c, t, " ")
        for (i = 1; i <= n; i++) if (t[i] != "-" && t[i] + 0 > best) best = t[i] + 0
        if (best > 0 && f != "-") printf "%.2fx", f / best; else printf "-" }'
}
declare -A torch
if [ "${TORCH:-1}" = 1 ] && "$python" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    while read -r _ way name rate; do torch[$way.$name]=$rate; done \
        < <("$python" scripts/bench_small_torch.py --rows "$rows" "${torch_args[@]}")
fi

table="| shape | net | batch | train, graphs | train, no graphs | train, eager (loss read each step) | PyTorch eager | PyTorch, step as CUDA graph | PyTorch, compile in CUDA graph | train graphs / PyTorch best |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in $shapes; do
    IFS='|' read -r in layers batch epochs hidden <<<"$(spec "$s")"
    declare -A rate=([graphs]=- [plain]=- [eager]=-)
    for m in $modes; do rate[$m]=$(run "$s" "$m"); done
    g=${rate[graphs]} p=${rate[plain]} e=${rate[eager]}
    te=${torch[eager.$s]:--} tg=${torch[graph.$s]:--} tc=${torch[compile_graph.$s]:--}
    table+=$'\n'"| $s | in $in, $layers | $batch | $g | $p | $e | $te | $tg | $tc | $(over_best "$g" "$te" "$tg" "$tc") |"
done
echo "$table"
echo
echo "steps/s, medians; ROWS=$rows, ${MATH:-fp32}, SGD momentum 0.9, groups 8, data_on_device ${DATA_ON_DEVICE:-auto}; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); $(nproc) CPUs"
echo "command: BUILD=$build scripts/bench_small.sh"
[ -n "${OUT:-}" ] && echo "$table" >"$OUT/bench_small.md"
exit 0
