#!/usr/bin/env bash
# test_cpu_only.sh — a CPU-only build where no CUDA toolkit can be found,
# run by test.sh inside a mount namespace of its own (unshare --mount):
# hides /usr/local/cuda (and any /usr/local/cuda-*) under empty folders,
# drops every CUDA folder from PATH and hides any other nvcc on it,
# configures build/cpu-only with the
# default FN_CUDA=AUTO (which must find no toolkit), builds it with
# warnings as errors, runs the unit and gradcheck tests (the GPU tests are
# not built), fails if libfusenet.so, train or predict needs a CUDA or
# NCCL library (ldd), and checks the install, the consumer example and the
# .deb (check_install.sh). Outside such a namespace it refuses to run:
# it would hide the toolkit from the whole machine.
#
#   unshare --mount --propagation private scripts/test_cpu_only.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ]; then
    echo "test_cpu_only.sh: run me in a mount namespace of my own (unshare --mount)" >&2
    exit 2
fi
empty=$(mktemp -d)
for dir in /usr/local/cuda /usr/local/cuda-*; do
    if [ -d "$dir" ]; then
        mount --bind "$empty" "$dir"
    fi
done
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -i cuda | paste -sd: -)
export PATH
unset CUDACXX CUDA_HOME CUDA_PATH
# An nvcc elsewhere on PATH (a wrapper in /usr/local/bin) becomes an empty,
# non-executable file.
not_a_program=$(mktemp)
chmod 644 "$not_a_program"
# The executable nvcc files on PATH (bash's `command -v` also names
# non-executable ones).
nvccs() {
    local dir
    IFS=: read -ra dirs <<<"$PATH"
    for dir in "${dirs[@]}"; do
        [ -f "$dir/nvcc" ] && [ -x "$dir/nvcc" ] && echo "$dir/nvcc"
    done
    return 0
}
for found in $(nvccs); do
    mount --bind "$not_a_program" "$found"
done
if [ -n "$(nvccs)" ]; then
    echo "test_cpu_only.sh: nvcc is still found: $(nvccs)" >&2
    exit 1
fi

build=build/cpu-only
mkdir -p "$build"
rm -f "$build/CMakeCache.txt" # a cache from outside the namespace names the toolkit
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFN_WERROR=ON -DFN_TEST_HOOKS=ON |
    tee "$build.configure.log" | grep "fusenet:"
grep -q "fusenet: CUDA OFF" "$build.configure.log"
cmake --build "$build" -j"${JOBS:-2}"
"$build/train" --version

linked=$(for f in "$build/libfusenet.so" "$build/train" "$build/predict"; do ldd "$f"; done |
    grep -i -E "cuda|cublas|curand|nccl|nvidia" || true)
if [ -n "$linked" ]; then
    echo "test_cpu_only.sh: the CPU-only build links CUDA:" >&2
    echo "$linked" >&2
    exit 1
fi
echo "test_cpu_only.sh: ldd names no CUDA library"

ctest --test-dir "$build" --output-on-failure -j"${JOBS:-2}" -L 'unit|gradcheck'
scripts/check_install.sh "$build" "$(mktemp -d)"
