#!/usr/bin/env bash
# fuzz.sh — builds the libFuzzer harnesses of tests/fuzz/ (config, data,
# weights) with clang under AddressSanitizer + UndefinedBehaviorSanitizer and
# runs them one after the other, each for a given time, printing per harness
# the run time and the executions (libFuzzer's final stats).
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]  run (default 600 s each; all three)
#   scripts/fuzz.sh build                   only build the harnesses
#   scripts/fuzz.sh seeds                   rewrite the HDF5 seed corpora
#
# The host C of src/ is compiled by clang together with each harness; the
# CUDA objects, needed only to link, come from a normal build of the library
# in build/fuzz-lib (gcc + nvcc). Harnesses and objects go to build/fuzz.
# Each run reads the seeds in tests/fuzz/corpus/<harness>/ and the kept
# inputs in tests/fuzz/regressions/<harness>/, and writes what it finds
# interesting to build/fuzz/corpus/<harness>/. The harnesses run the loaders
# in one process, without the probe that reads each file in a child first
# (src/store/h5_probe.h; tests/fuzz/fuzz_entry.h says why), so a crash or hang
# inside HDF5 itself is a finding too: once it is confirmed to be HDF5's,
# keep it as regressions/<harness>/hdf5_crash_*, hdf5_hang_* or hdf5_asan_*
# (ASan-only), where the replay test checks that the probe stops it, or as
# hdf5_oom_* (HDF5 allocates gigabytes a corrupt size asks for, above the
# harnesses' malloc limit; elsewhere a clean error); those are left out of
# the fuzzers' seeds, which they would stop at once.
#
# A crash, leak, undefined behaviour, timeout (FN_FUZZ_TIMEOUT s per input,
# default 10) or broken promise of tests/fuzz/fuzz_entry.h is a finding: its
# input is saved under build/fuzz/findings/<harness>/, the sanitizer's
# summary and the innermost frame in src/, tests/fuzz/ or HDF5 are printed,
# and the script exits 1 after the remaining harnesses have run. With
# FN_FUZZ_KEEP_GOING=1 a harness is started again after a finding until its
# time is up, so one run collects several. Once a finding is fixed, copy its
# input to tests/fuzz/regressions/<harness>/, where
# tests/test_fuzz_regressions.c (ctest) replays it.
#
# The sanitizer options and the suppressions of leaks inside HDF5 are built
# into the harnesses (tests/fuzz/fuzz_sanitizer.h); ASAN_OPTIONS,
# LSAN_OPTIONS and UBSAN_OPTIONS still override them. Other environment:
# FN_FUZZ_NICE (default 10), CC (default clang), CUDA_HOME (default
# /usr/local/cuda). Exit status: 0 clean, 1 a finding, 2 a usage or build
# error.
set -euo pipefail
cd "$(dirname "$0")/.."

harnesses=(config data weights)
declare -A max_len=([config]=4096 [data]=16384 [weights]=24576)
out=build/fuzz
lib=build/fuzz-lib
cc=${CC:-clang}
cuda=${CUDA_HOME:-/usr/local/cuda}
nice_level=${FN_FUZZ_NICE:-10}
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
cflags=(-std=c11 -g -O1 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
        -Iinclude -Isrc -Itests/fuzz -I"$lib/generated/include" -I"$lib/generated"
        $(pkg-config --cflags hdf5 inih openblas))
libs=(-L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -lcublas -lcublasLt -lcurand
      $(pkg-config --libs hdf5 inih openblas) -lm -lstdc++)

die() { echo "fuzz.sh: $*" >&2; exit 2; }

# The CUDA objects of a normal (gcc + nvcc) build of the library.
build_cuda_objects() {
    export PATH="$cuda/bin:$PATH"
    # Without -Werror: a warning in unfinished work elsewhere must not stop
    # fuzzing. One GPU architecture: the harnesses run on the CPU only.
    # Neither MPI nor NCCL: the host C here is compiled without them.
    cmake -S . -B "$lib" -DCMAKE_BUILD_TYPE=Release -DFN_WERROR=OFF -DFN_SANITIZE=OFF \
        -DCMAKE_CUDA_ARCHITECTURES=90-real -DFN_MPI=OFF -DFN_NCCL=OFF >/dev/null \
        || die "cmake configure failed"
    nice -n "$nice_level" cmake --build "$lib" --target fusenet_static -j"$(nproc)" >/dev/null \
        || die "building $lib failed (run: cmake --build $lib --target fusenet_static)"
    mkdir -p "$out/cuda"
    if [ "$lib/libfusenet.a" -nt "$out/cuda/.stamp" ]; then
        rm -f "$out/cuda"/*.o
        local archive="$PWD/$lib/libfusenet.a"
        # The kernels, and the generated source naming the commit.
        (cd "$out/cuda" && ar x "$archive" $(ar t "$archive" | grep -E '\.cu\.o$|^build_commit\.c\.o$'))
        touch "$out/cuda/.stamp"
    fi
}

# src/nn/layers/block/block.c <-> nn__layers__block__block.o (file names hold
# single underscores, so "__" stands for "/").
object_name() { local rel=${1#src/}; rel=${rel%.c}; echo "${rel//\//__}.o"; }
source_of() { local base; base=$(basename "${1%.o}"); echo "src/${base//__//}.c"; }

# The newest header the host sources or harnesses can include.
newest_header() {
    ls -t include/fusenet/*.h $(find src -name '*.h' -o -name '*.cuh') tests/fuzz/*.h 2>/dev/null |
        head -n 1
}

# src/<layer>/**.c -> build/fuzz/obj/<layer>__*.o, instrumented for coverage; only what is stale.
build_host_objects() {
    mkdir -p "$out/obj"
    local header src obj
    header=$(newest_header)
    rm -f "$out"/obj/*.o.tmp
    for src in $(find src -name '*.c' | sort); do
        # A build without CUDA's stand-ins: this one links the kernels.
        case $src in */cuda_absent*.c) continue ;; esac
        obj="$out/obj/$(object_name "$src")"
        if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$header" -nt "$obj" ]; then
            nice -n "$nice_level" "$cc" "${cflags[@]}" "${san[@]}" -fsanitize=fuzzer-no-link \
                -c "$src" -o "$obj" || die "compiling $src failed"
        fi
    done
    # Objects of sources that were removed would otherwise still be linked.
    for obj in "$out"/obj/*.o; do
        [ -f "$(source_of "$obj")" ] || rm -f "$obj"
    done
}

build_harnesses() {
    command -v "$cc" >/dev/null || die "$cc not found (clang 14 or newer is needed)"
    build_cuda_objects
    build_host_objects
    mkdir -p "$out/bin"
    local h
    for h in "${harnesses[@]}"; do
        nice -n "$nice_level" "$cc" "${cflags[@]}" "${san[@]}" -fsanitize=fuzzer \
            "tests/fuzz/fuzz_$h.c" tests/fuzz/fuzz_file.c "$out"/obj/*.o "$out"/cuda/*.o "${libs[@]}" \
            -o "$out/bin/fuzz_$h" || die "building fuzz_$h failed"
    done
    echo "fuzz.sh: built ${harnesses[*]/#/$out/bin/fuzz_}"
}

# Rewrites the HDF5 seeds with tests/fuzz/make_seeds.c (gcc, no sanitizers).
write_seeds() {
    build_cuda_objects
    mkdir -p "$out/seeds"
    gcc -std=c11 -O1 -Wall -Wextra -Iinclude -Itests/fuzz $(pkg-config --cflags hdf5 inih openblas) \
        tests/fuzz/make_seeds.c "$lib/libfusenet.a" "${libs[@]}" -o "$out/seeds/make_seeds" \
        || die "building make_seeds failed"
    local c=tests/fuzz/corpus
    mkdir -p "$c/data" "$c/weights"
    rm -f "$c"/data/*.h5 "$c"/weights/*.h5
    "$out/seeds/make_seeds" "$c" || die "make_seeds failed"
    head -c 1500 "$c/data/good.h5" >"$c/data/truncated.h5"
    head -c 3000 "$c/weights/weights.h5" >"$c/weights/truncated.h5"
    printf 'CDF\001 not an HDF5 file\n' >"$c/data/not_hdf5.h5"
    ls -l "$c/data" "$c/weights"
}

# The sum (or, for peak_rss_mb, the largest) of libFuzzer's final stat
# `stat::<name>: <value>` over the runs in a log.
stat() {
    sed -n "s/^stat::$1: *//p" "$2" | awk -v max="$([ "$1" = peak_rss_mb ] && echo 1)" \
        '{ s = max ? (s > $1 ? s : $1) : s + $1 } END { print s + 0 }'
}

# The kept inputs of harness $1 that a fuzzer may read, copied to a folder
# whose name is printed: all but those that crash or hang HDF5 itself.
kept_inputs() {
    local h=$1 dir="$out/kept/$1" f
    rm -rf "$dir"
    mkdir -p "$dir"
    for f in "tests/fuzz/regressions/$h"/*; do
        [ -f "$f" ] || continue
        case "$(basename "$f")" in
            *.md | hdf5_crash_* | hdf5_hang_* | hdf5_asan_* | hdf5_oom_*) ;;
            *) cp "$f" "$dir/" ;;
        esac
    done
    echo "$dir"
}

# One libFuzzer run of harness $1 for $2 seconds, appending to log $3.
run_once() {
    local h=$1 seconds=$2 log=$3
    local dirs=("$out/corpus/$h" "tests/fuzz/corpus/$h")
    [ -d "tests/fuzz/regressions/$h" ] && dirs+=("$(kept_inputs "$h")")
    local extra=()
    [ -f "tests/fuzz/$h.dict" ] && extra+=("-dict=tests/fuzz/$h.dict")
    nice -n "$nice_level" "$out/bin/fuzz_$h" -max_total_time="$seconds" \
        -max_len="${max_len[$h]}" -timeout="${FN_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$out/findings/$h/" "${extra[@]}" "${dirs[@]}" \
        >>"$log" 2>&1
}

# Per finding in the log: the sanitizer's summary and the innermost frame in
# fusenet (src/), the harness (tests/fuzz/) or HDF5, which says whose it is.
triage() {
    awk '/^==[0-9]+== ?ERROR|^fuzz: |runtime error:/ { print "    " $0; want = 1; next }
         want && /^ +#[0-9]+ / && /libhdf5|\/src\/|\/tests\/fuzz\// { print "      at" substr($0, index($0, " in ")); want = 0 }
         /^SUMMARY: / { print "    " $0 }
         /Test unit written to/ { print "    input: " $NF }' "$1" | head -n 40
}

# Runs harness $1 for $2 seconds (again after each finding while time is
# left, if FN_FUZZ_KEEP_GOING=1); prints its summary; returns 1 on a finding.
run_harness() {
    local h=$1 seconds=$2 log="$out/logs/fuzz_$h.log"
    mkdir -p "$out/corpus/$h" "$out/findings/$h" "$out/logs"
    : >"$log"
    echo "fuzz.sh: fuzz_$h for $seconds s (max_len ${max_len[$h]})"
    local start end left runs=0 found=0
    start=$(date +%s)
    end=$((start + seconds))
    left=$seconds
    while [ "$left" -gt 0 ]; do
        runs=$((runs + 1))
        run_once "$h" "$left" "$log" && break
        found=$((found + 1))
        [ "${FN_FUZZ_KEEP_GOING:-0}" = 1 ] || break
        left=$((end - $(date +%s)))
    done
    local took=$(( $(date +%s) - start )) execs
    execs=$(stat number_of_executed_units "$log")
    printf 'fuzz_%s: %s s, %s executions (%s/s), %s new units, peak RSS %s MB, %s run(s): ' \
        "$h" "$took" "$execs" "$((execs / (took > 0 ? took : 1)))" \
        "$(stat new_units_added "$log")" "$(stat peak_rss_mb "$log")" "$runs"
    if [ "$found" -eq 0 ]; then
        echo "no findings"
        return 0
    fi
    echo "$found FINDING(S), log $log"
    triage "$log"
    return 1
}

run_all() {
    local seconds=$1; shift
    local chosen=("$@") h found=0
    [ ${#chosen[@]} -gt 0 ] || chosen=("${harnesses[@]}")
    for h in "${chosen[@]}"; do
        [ -n "${max_len[$h]:-}" ] || die "unknown harness '$h' (expected: ${harnesses[*]})"
    done
    build_harnesses
    for h in "${chosen[@]}"; do
        run_harness "$h" "$seconds" || found=1
    done
    if [ "$found" -ne 0 ]; then
        echo "fuzz.sh: findings; inputs under $out/findings/"
        exit 1
    fi
}

case "${1:-}" in
    build) build_harnesses ;;
    seeds) write_seeds ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' ;;
    ''|[0-9]*) seconds=${1:-600}; [ $# -gt 0 ] && shift; run_all "$seconds" "$@" ;;
    *) die "usage: scripts/fuzz.sh [SECONDS] [HARNESS...] | build | seeds" ;;
esac
