#!/usr/bin/env bash
# test.sh — the test command. On a fresh Debian 12 machine with the CUDA
# toolkit in /usr/local/cuda: installs the Debian packages the build and the
# tests need (only those missing), builds with warnings as errors and the
# test-only hooks (FN_TEST_HOOKS, which test_faults needs), runs every ctest
# test, then builds the CPU tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer and runs them. Exits non-zero on any failure.
#
#   scripts/test.sh            everything
#   FN_SANITIZE_TESTS=0 ...    skip the sanitizer build
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh

export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)

cmake -S . -B build/test -DCMAKE_BUILD_TYPE=Release -DFN_WERROR=ON -DFN_TEST_HOOKS=ON
cmake --build build/test -j"$jobs"
ctest --test-dir build/test --output-on-failure -j"$jobs"

if [ "${FN_SANITIZE_TESTS:-1}" != 0 ]; then
    cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Debug -DFN_WERROR=ON -DFN_SANITIZE=ON \
        -DFN_TEST_HOOKS=ON
    cmake --build build/sanitize -j"$jobs"
    # The CUDA runtime maps memory where ASan's shadow gap would be.
    ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir build/sanitize --output-on-failure -j"$jobs" -L 'unit|gradcheck'
fi
