#!/usr/bin/env bash
# gpu_check.sh — the check for a GPU machine that cannot install
# packages: unpacks the cmocka and inih packages kept in .deps/ into
# /tmp/deps (the machine has HDF5 and OpenBLAS), builds build/gpu (Release,
# warnings as errors, CUDA required: FN_CUDA=ON, the default GPU
# architectures, docs/build.md; ARCHS=native or a list overrides them), runs every
# ctest test, then runs each GPU test executable (build/gpu/tests/test_*_cuda)
# under compute-sanitizer's memcheck and racecheck, printing each tool's
# summary line, then the PyTorch door's tests (python/tests/test_torch*.py)
# where python3 has PyTorch and pytest. Logs go to ${OUT:-/tmp/out}. Exits non-zero if any step
# failed; later steps still run, so one pass reports everything.
#
#   scripts/gpu_check.sh
#   SANITIZE=0 BENCH=1 TESTS='cuda|interop' scripts/gpu_check.sh
#   ARCHS=native scripts/gpu_check.sh     only this GPU's architecture: a faster build
#
# SANITIZE=0 leaves out compute-sanitizer (the slow part: over ten minutes
# for every GPU test); SANITIZE='graph|comm', a grep -E pattern, runs it
# over the GPU tests it matches; TESTS, a ctest -R pattern, runs only the
# tests it matches; BENCH=1
# then runs each benchmark script that exists (scripts/bench_side_by_side.sh,
# bench_small.sh, bench_scaling.sh), their tables going to $OUT too, so a
# build, its tests and its figures come from one run on one machine.
set -uo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-/tmp/out}
deps=/tmp/deps
jobs=16
mkdir -p "$out" "$deps"
export PATH=/usr/local/cuda/bin:$PATH

failed=()
note_failure() {
    echo "gpu_check.sh: FAILED: $1"
    failed+=("$1")
}

shopt -s nullglob
debs=(.deps/*.deb)
if [ ${#debs[@]} -eq 0 ]; then
    echo "gpu_check.sh: no packages in .deps/ (cmocka, inih); the build will need them installed"
fi
for deb in "${debs[@]}"; do
    dpkg-deb -x "$deb" "$deps" || note_failure "unpacking $deb"
done
# The packages' .pc files name /usr; they are pointed at the unpacked copy
# instead of setting PKG_CONFIG_SYSROOT_DIR, which would also move the paths
# of the machine's own packages (openblas, hdf5) under /tmp/deps.
for pc in "$deps"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
    sed -i "s|/usr|$deps/usr|g" "$pc"
done
export PKG_CONFIG_PATH=$deps/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 |
    tee "$out/gpu.txt"

# pkg-config's answers are cached; a cache from another environment would
# keep stale paths.
rm -f build/gpu/CMakeCache.txt
# The interop test runs with the python3 that has PyTorch and h5py here; the
# test-only hooks are compiled in (test_faults aims its kills with them).
if ! cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DFN_WERROR=ON -DFN_TEST_HOOKS=ON \
        -DFN_CUDA=ON ${ARCHS:+-DCMAKE_CUDA_ARCHITECTURES="$ARCHS"} \
        -DFN_PYTHON="$(command -v python3)" >"$out/configure.log" 2>&1; then
    tail -40 "$out/configure.log"
    note_failure "configure"
fi
if [ ${#failed[@]} -eq 0 ]; then
    if ! cmake --build build/gpu -j"$jobs" >"$out/build.log" 2>&1; then
        grep -E "error|warning" "$out/build.log" | head -60
        note_failure "build"
    fi
    [ -x build/gpu/train ] && build/gpu/train --version | tee "$out/version.txt"
fi

if [ ${#failed[@]} -eq 0 ]; then
    ctest --test-dir build/gpu --output-on-failure -j4 ${TESTS:+-R "$TESTS"} 2>&1 |
        tee "$out/ctest.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || note_failure "ctest"

    gpu_tests=(build/gpu/tests/test_*_cuda)
    [ ${#gpu_tests[@]} -gt 0 ] || note_failure "no GPU test executables in build/gpu/tests"
    case ${SANITIZE:-1} in
    0) gpu_tests=() ;;
    1) ;;
    *) mapfile -t gpu_tests < <(printf '%s\n' "${gpu_tests[@]}" | grep -E "$SANITIZE") ;;
    esac
    for exe in "${gpu_tests[@]}"; do
        name=$(basename "$exe")
        # test_device_cuda runs out of device memory on purpose, and NCCL
        # (test_comm_cuda) probes for kernel images of other GPUs
        # (cudaFuncGetAttributes: no kernel image), and test_pdl_cuda
        # makes a launch fail on purpose; the library checks
        # every API call's status itself, so only memory faults count.
        api_errors=()
        case $name in test_device_cuda | test_comm_cuda | test_pdl_cuda) api_errors=(--report-api-errors no) ;; esac
        for tool in memcheck racecheck; do
            log="$out/sanitize_${name}_${tool}.log"
            (cd tests && FN_SOURCE_DIR=$PWD/.. FN_BUILD_DIR=$PWD/../build/gpu \
                compute-sanitizer --tool "$tool" "${api_errors[@]}" --error-exitcode 99 "../$exe") \
                >"$log" 2>&1
            rc=$?
            summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
            echo "$name $tool: ${summary:-no summary line (rc $rc)}"
            if [ "$rc" -ne 0 ]; then
                grep -E "=========" "$log" | head -30
                note_failure "$name under $tool (rc $rc)"
            else
                rm -f "$log" # the summary line above says it; fewer files to fetch
            fi
        done
    done
fi

# The PyTorch door (python/tests/test_torch*.py: the custom operators,
# torch.compile, CUDA graphs, autocast on the GPU) with the python3 that has
# PyTorch here, on this build's library; skipped where it has no PyTorch or
# no pytest.
if [ ${#failed[@]} -eq 0 ] && [ -z "${TESTS:-}" ]; then
    if python3 -c "import torch, pytest" 2>/dev/null; then
        FUSENET_LIBRARY=$PWD/build/gpu/libfusenet.so python3 -m pytest -q -p no:cacheprovider \
            python/tests/test_torch.py python/tests/test_torch_op.py 2>&1 |
            tee "$out/pytest_torch.log" | tail -15
        [ "${PIPESTATUS[0]}" -eq 0 ] || note_failure "python/tests/test_torch*.py"
    else
        echo "gpu_check.sh: python3 has no torch or pytest; the PyTorch door's tests are skipped"
    fi
fi

if [ "${BENCH:-0}" = 1 ] && python3 -c "import torch" 2>/dev/null; then
    echo "gpu_check.sh: scripts/bench_fused_block_torch.py"
    FUSENET_LIBRARY=$PWD/build/gpu/libfusenet.so PYTHONPATH=$PWD/python \
        python3 scripts/bench_fused_block_torch.py >"$out/bench_fused_block_torch.log" 2>&1 ||
        note_failure "scripts/bench_fused_block_torch.py"
    tail -25 "$out/bench_fused_block_torch.log"
fi

if [ "${BENCH:-0}" = 1 ] && [ -x build/gpu/bench ]; then
    for script in bench_side_by_side bench_small bench_scaling; do
        [ -x "scripts/$script.sh" ] || continue
        echo "gpu_check.sh: scripts/$script.sh"
        BUILD=build/gpu BENCH=build/gpu/bench OUT="$out" "scripts/$script.sh" \
            >"$out/$script.log" 2>"$out/$script.err" || note_failure "scripts/$script.sh"
        cat "$out/$script.log"
        tail -5 "$out/$script.err"
    done
fi

if [ ${#failed[@]} -ne 0 ]; then
    echo "gpu_check.sh: ${#failed[@]} failure(s): ${failed[*]}"
    exit 1
fi
echo "gpu_check.sh: all passed"
