#!/usr/bin/env bash
# test.sh — the test command. On a fresh Debian 12 machine with the CUDA
# toolkit in /usr/local/cuda: installs the Debian packages the build and the
# tests need (only those missing), builds with warnings as errors, runs every
# ctest test, then builds the CPU tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer and runs them. Exits non-zero on any failure.
#
#   scripts/test.sh            everything
#   FN_SANITIZE_TESTS=0 ...    skip the sanitizer build
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake pkg-config gcc g++ libhdf5-dev libcmocka-dev libinih-dev libopenblas-dev
          hdf5-tools python3-numpy python3-h5py python3-torch)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: installing ${missing[*]}"
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)

cmake -S . -B build/test -DCMAKE_BUILD_TYPE=Release -DFN_WERROR=ON
cmake --build build/test -j"$jobs"
ctest --test-dir build/test --output-on-failure -j"$jobs"

if [ "${FN_SANITIZE_TESTS:-1}" != 0 ]; then
    cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Debug -DFN_WERROR=ON -DFN_SANITIZE=ON
    cmake --build build/sanitize -j"$jobs"
    # The CUDA runtime maps memory where ASan's shadow gap would be.
    ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir build/sanitize --output-on-failure -j"$jobs" -L unit -L gradcheck
fi
