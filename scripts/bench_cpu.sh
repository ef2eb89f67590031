#!/usr/bin/env bash
# bench_cpu.sh — `train` on the CPU beside PyTorch on the CPU, with the same
# number of threads, at a wide network: in 512, block 512, block 512,
# linear 10, batch 128, fp32, SGD momentum 0.9 (lr 0.01, groups 8, no
# validation set), on a synthetic set of ROWS rows (scripts/make_synthetic.c).
# For each thread count T, `train` runs with OPENBLAS_NUM_THREADS=T (the
# products' threads and the block's own) and PyTorch with
# torch.set_num_threads(T) (scripts/bench_cpu_torch.py); each figure is the
# median steps/s of the epochs after the first (metrics.csv's samples_per_s
# / batch_size for `train`). BASE=<another build> adds a column for that
# build's `train` (the same config), to compare two versions in one run.
#
#   BUILD=build THREADS="1 4" scripts/bench_cpu.sh
#
# ROWS (32768), EPOCHS (4), THREADS ("1 2"), WORK (a temporary directory),
# PYTHON (python3), TORCH (1; 0 leaves PyTorch out) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD:-build}
rows=${ROWS:-32768}
epochs=${EPOCHS:-4}
threads=${THREADS:-1 2}
work=${WORK:-$(mktemp -d)}
python=${PYTHON:-python3}
n_in=512 hidden=512,512 batch=128 classes=10
layers="block 512, block 512, linear $classes"
mkdir -p "$work"
[ -x "$build/train" ] || { echo "bench_cpu.sh: no $build/train (build it, or set BUILD)" >&2; exit 1; }
[ -f "$work/train.h5" ] || scripts/synthetic_set.sh "$work/train.h5" "$rows" "$n_in" "$classes"

cat >"$work/cpu.ini" <<INI
[data]
train = train.h5
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
device = cpu
log_every = 0
[output]
dir = out
INI

# train_rate <train binary> <threads> -> the median steps/s after the first epoch
train_rate() {
    OPENBLAS_NUM_THREADS=$2 "$1" "$work/cpu.ini" --overwrite >"$work/train.log" 2>&1 ||
        { cat "$work/train.log" >&2; exit 1; }
    awk -F, -v b="$batch" 'NR > 2 { print $7 / b }' "$work/out/metrics.csv" | sort -g |
        awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
              printf "%.0f", m }'
}

table="| threads | train${BASE:+ | train, $BASE} | PyTorch | train / PyTorch |
| ---: | ---:${BASE:+ | ---:} | ---: | ---: |"
for t in $threads; do
    ours=$(train_rate "$build/train" "$t")
    base=${BASE:+$(train_rate "$BASE/train" "$t")}
    theirs=-
    if [ "${TORCH:-1}" = 1 ]; then
        theirs=$("$python" scripts/bench_cpu_torch.py --in $n_in --hidden $hidden --batch $batch \
            --threads "$t" --rows "$rows" | awk '{ printf "%.0f", $2 }')
    fi
    ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')
    table+=$'\n'"| $t | $ours${BASE:+ | $base} | $theirs | $ratio |"
done
echo "$table"
echo
echo "steps/s, medians; in $n_in, $layers, batch $batch, ROWS=$rows, fp32, SGD momentum 0.9;" \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
echo "command: BUILD=$build THREADS=\"$threads\" scripts/bench_cpu.sh"
[ -n "${OUT:-}" ] && echo "$table" >"$OUT/bench_cpu.md"
exit 0
