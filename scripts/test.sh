#!/usr/bin/env bash
# test.sh — the test command. On a fresh Debian 12 machine (the CUDA
# toolkit in /usr/local/cuda, or none): installs the Debian packages the
# build and the tests need (only those missing) and the Python environment
# of the Python-side tests (scripts/python_env.sh, build/pyenv), then
#   1. builds with warnings as errors and the test-only hooks (FN_TEST_HOOKS,
#      which test_faults needs), CUDA when the toolkit is there (every GPU
#      architecture of the default), and runs every ctest test (among them
#      the Python package's install with pip in fresh environments,
#      python_install, and its self-contained wheel from
#      scripts/build_wheel.sh, python_wheel: both download from PyPI);
#   2. builds the CPU tests again under AddressSanitizer +
#      UndefinedBehaviorSanitizer and runs them (the GPU code for sm_90
#      alone: no test there runs it);
#   3. with the CUDA toolkit hidden (a mount namespace where
#      /usr/local/cuda is empty and nvcc is on no PATH), configures with
#      FN_CUDA=AUTO, builds and runs the unit and gradcheck tests, fails if
#      the library or a program links a CUDA library, and checks the
#      install, the consumer example and the .deb (scripts/check_install.sh).
# Exits non-zero on any failure.
#
#   scripts/test.sh            everything
#   FN_SANITIZE_TESTS=0 ...    skip the sanitizer build
#   FN_HIDDEN_CUDA_TESTS=0 ... skip the build with the toolkit hidden
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh
pyenv_python=$(scripts/python_env.sh)

export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)

cmake -S . -B build/test -DCMAKE_BUILD_TYPE=Release -DFN_WERROR=ON -DFN_TEST_HOOKS=ON \
    -DFN_PYENV_PYTHON="$pyenv_python"
cmake --build build/test -j"$jobs"
ctest --test-dir build/test --output-on-failure -j"$jobs"

if [ "${FN_SANITIZE_TESTS:-1}" != 0 ]; then
    cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Debug -DFN_WERROR=ON -DFN_SANITIZE=ON \
        -DFN_TEST_HOOKS=ON -DCMAKE_CUDA_ARCHITECTURES=90-real
    cmake --build build/sanitize -j"$jobs"
    # The CUDA runtime maps memory where ASan's shadow gap would be.
    ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir build/sanitize --output-on-failure -j"$jobs" -L 'unit|gradcheck'
fi

if [ "${FN_HIDDEN_CUDA_TESTS:-1}" != 0 ]; then
    # unshare needs root (CI runs as root); a new mount namespace's mounts
    # vanish with it, so the machine's /usr/local/cuda is never touched.
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo unshare --mount --propagation private env "JOBS=$jobs" bash scripts/test_cpu_only.sh
fi
