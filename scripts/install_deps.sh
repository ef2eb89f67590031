#!/usr/bin/env bash
# install_deps.sh — installs the Debian packages fusenet's build, tests and
# example need, only those missing (Open MPI: data parallelism, whose
# tests run `mpirun -np 2` on the CPU). Used by test.sh and run_example.sh.
# The CUDA toolkit is optional: without it (no nvcc in /usr/local/cuda or on
# PATH) the build is CPU-only, and this script says so and succeeds.
set -euo pipefail

packages=(cmake pkg-config gcc g++ libhdf5-dev libcmocka-dev libinih-dev libopenblas-dev
          hdf5-tools python3-numpy python3-h5py python3-torch python3-scipy python3-matplotlib python3-venv python3-pip
          python3-sklearn python3-pytest
          libopenmpi-dev openmpi-bin dpkg-dev file)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install_deps.sh: installing ${missing[*]}"
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "install_deps.sh: warning: no CUDA toolkit (nvcc is not in /usr/local/cuda/bin or on" \
        "PATH): the build will be CPU-only (docs/build.md)" >&2
fi
