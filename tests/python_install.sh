#!/usr/bin/env bash
# python_install.sh — docs/python.md's install command, `pip install
# ./python` with pip's build isolation (scikit-build-core, CMake and Ninja
# from PyPI build the library into the package; CPU-only here through
# --config-settings, to keep the build short), straight from the checkout,
# in two fresh virtual environments:
#   A. over the `python3` first on PATH (a pyenv-style CPython where there is
#      one), without system site packages: everything from PyPI, numpy 2,
#      the [sklearn] extra; trains the digits through the estimators. Then
#      the same install with FUSENET_LIBRARY set builds nothing and the
#      package loads that library.
#   B. over Debian's /usr/bin/python3 with --system-site-packages: Debian's
#      numpy 1 stays (pip installs none), trains through fusenet.train.
# Each run from outside the checkout loads its own installation's library.
# The checkout gains no file (pip builds in a temporary folder).
set -euo pipefail
src=${FN_SOURCE_DIR:?ctest sets FN_SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check="$src/tests/python_install_check.py"
pip_quiet=(--quiet --disable-pip-version-check)
cpu=--config-settings=cmake.define.FN_CUDA=OFF
listing() { (cd "$src/python" && find . -name __pycache__ -prune -o -print | sort); }
listing >"$work/before"

# The digits as arrays, read with Debian's h5py (environment A has none).
/usr/bin/python3 "$src/tests/digits_npz.py" "$src/data" "$work/digits.npz"

site_of() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])'; }

# A: the python3 on PATH, PyPI's packages only.
python3 -m venv "$work/a"
"$work/a/bin/pip" install "${pip_quiet[@]}" "$cpu" "$src/python[sklearn]"
site_a=$(site_of "$work/a/bin/python")
(cd / && "$work/a/bin/python" "$check" --site "$site_a" --numpy 2 --digits "$work/digits.npz")
# FUSENET_LIBRARY: nothing built, that library loaded.
cp "$site_a/fusenet/lib/libfusenet.so" "$work/libfusenet.so"
FUSENET_LIBRARY="$work/libfusenet.so" "$work/a/bin/pip" install "${pip_quiet[@]}" \
    --force-reinstall --no-deps "$src/python"
if [ -e "$site_a/fusenet/lib" ]; then
    echo "python_install: with FUSENET_LIBRARY set, pip still built a library" >&2
    exit 1
fi
(cd / && FUSENET_LIBRARY="$work/libfusenet.so" "$work/a/bin/python" "$check" --site "$work" \
    --digits "$work/digits.npz")

# B: Debian's python3 and its packages.
/usr/bin/python3 -m venv --system-site-packages "$work/b"
"$work/b/bin/pip" install "${pip_quiet[@]}" "$cpu" "$src/python"
local_packages=$("$work/b/bin/pip" list --local --format=freeze --disable-pip-version-check)
if grep -qi '^numpy=' <<<"$local_packages"; then
    echo "python_install: pip installed a numpy over Debian's" >&2
    exit 1
fi
(cd / && "$work/b/bin/python" "$check" --site "$(site_of "$work/b/bin/python")" --numpy 1 \
    --repo "$src" --run-dir "$work/run")

listing >"$work/after"
if ! diff "$work/before" "$work/after" >&2; then
    echo "python_install: pip install left files in $src/python (above)" >&2
    exit 1
fi
echo "python_install: both environments trained"
