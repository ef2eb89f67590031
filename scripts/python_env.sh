#!/usr/bin/env bash
# python_env.sh — makes the Python environment the Python-side tests use:
# a virtual environment at build/pyenv (or $1) over Debian's python3, which
# sees Debian's packages (h5py, torch, matplotlib) and adds from PyPI what
# Debian lacks (scripts/python-requirements.txt: ONNX, ONNX Runtime,
# safetensors, scikit-learn, pandas, pytest). numpy stays below 2: Debian's
# h5py and torch are built against numpy 1. Idempotent: an environment
# made from the same requirements is kept. Prints the interpreter's path.
#
#   scripts/python_env.sh              -> build/pyenv/bin/python
#   scripts/python_env.sh /tmp/env     -> /tmp/env/bin/python
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
env_dir="${1:-$root/build/pyenv}"
requirements="$root/scripts/python-requirements.txt"
stamp="$env_dir/.requirements"

if [ -x "$env_dir/bin/python" ] && cmp -s "$requirements" "$stamp"; then
    echo "$env_dir/bin/python"
    exit 0
fi
rm -rf "$env_dir"
/usr/bin/python3 -m venv --system-site-packages "$env_dir" >&2
"$env_dir/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$requirements" >&2
cp "$requirements" "$stamp"
echo "$env_dir/bin/python"
