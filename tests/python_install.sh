#!/usr/bin/env bash
# python_install.sh — the README's install command for the Python package,
# run as written in a fresh virtual environment over Debian's python3: pip
# builds libfusenet with CMake into the package (CPU-only here, through
# FUSENET_CMAKE_ARGS, to keep the build short), then the installed package,
# run from outside the copy, reports its version, loads its own library and
# trains the example through fusenet.train (Debian's python3 has no
# scikit-learn: the estimators are the python_estimators test's).
set -euo pipefail
src=${FN_SOURCE_DIR:?ctest sets FN_SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# A copy of the checkout without its builds: pip's build writes beside setup.py.
tar -C "$src" --exclude=./build --exclude=./.git --exclude=./runs -cf - . | tar -xf -
export FUSENET_CMAKE_ARGS="-DFN_CUDA=OFF"
/usr/bin/python3 -m venv --system-site-packages .venv && .venv/bin/pip install --no-build-isolation ./python -q
cd /
"$work/.venv/bin/python" - "$work" <<'PY'
import os
import sys

import h5py
import fusenet

work = sys.argv[1]
assert fusenet.__version__, "no version"
lib = fusenet._lib.lib._name
assert lib.startswith(os.path.join(work, ".venv")), f"the package loaded {lib}, not its own"
model = fusenet.train(os.path.join(work, "data", "example.ini"), train__epochs=3,
                      **{"output.dir": os.path.join(work, "run")})
with h5py.File(os.path.join(work, "data", "digits_valid.h5"), "r") as f:
    X, y = f["X"][...], f["y"][...]
accuracy = (model.predict(X) == y).mean()
assert accuracy > 0.8, accuracy
print(f"python_install: fusenet {fusenet.__version__} from {lib}: accuracy {accuracy:.3f}")
PY
