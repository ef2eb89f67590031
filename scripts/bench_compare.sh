#!/usr/bin/env bash
# bench_compare.sh — did a change move bench's figures? On a GPU machine, in
# one run: builds `bench` of another source tree (BASE, e.g. an older
# revision unpacked with `git archive REV | tar -x -C build/base_src`) into
# build/bench_base (with its `train`, for BUILD=build/bench_base
# scripts/bench_small.sh), then runs that bench and this tree's ($BENCH,
# default build/gpu/bench) in turn, ROUNDS times (default 3) for each math
# mode in MATHS (default "fp32 tf32"), and prints, per figure, both medians
# over the rounds and new/base.
#
#   BASE=build/base_src BENCH=build/gpu/bench scripts/bench_compare.sh [bench flags]
#   BASE=build/base_src MATHS="tf32 bf16" scripts/bench_compare.sh --momentum 0.9
#
# Alternating the two programs spreads clock and thermal drift over both.
set -euo pipefail
cd "$(dirname "$0")/.."

base_src=${BASE:?set BASE to the source tree to compare against}
bench=${BENCH:-build/gpu/bench}
rounds=${ROUNDS:-3}
maths=${MATHS:-fp32 tf32}
raw=${OUT:-/tmp}/bench_compare_raw.txt
: >"$raw"

cmake -S "$base_src" -B build/bench_base -DCMAKE_BUILD_TYPE=Release -DFN_TESTS=OFF \
    ${ARCHS:+-DCMAKE_CUDA_ARCHITECTURES="$ARCHS"} >/dev/null
cmake --build build/bench_base --target bench train -j"$(nproc)" >/dev/null

for round in $(seq "$rounds"); do
    for math in $maths; do
        for who in base new; do
            exe=$bench
            [ "$who" = base ] && exe=build/bench_base/bench
            "$exe" --math "$math" "$@" | grep '^fusenet ' | sed "s/^/$who $round /" >>"$raw"
        done
    done
done

# Lines: "<who> <round> fusenet <math> <what> <value> ..."
awk '
function median(list,   m, a, i, j, t) {
    m = split(list, a, " ")
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
{ key = $4 " " $5; v[$1, key] = v[$1, key] " " $6; if (!(key in seen)) { seen[key] = 1; order[++n_keys] = key } }
END {
    print "| math | figure | base | new | new/base |"
    print "| --- | --- | --- | --- | --- |"
    for (r = 1; r <= n_keys; r++) {
        k = order[r]; b = median(v["base", k]); w = median(v["new", k])
        split(k, p, " ")
        printf "| %s | %s | %.4g | %.4g | %.3f |\n", p[1], p[2], b, w, (b > 0 ? w / b : 0)
    }
}' "$raw"
