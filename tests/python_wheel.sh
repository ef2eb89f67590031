#!/usr/bin/env bash
# python_wheel.sh — the self-contained wheel (scripts/build_wheel.sh, CPU):
# built, then installed into a fresh virtual environment (the python3 on
# PATH, scikit-learn from PyPI) inside a mount namespace where the system's
# libhdf5, OpenBLAS, libgfortran and inih are empty files, where it must
# train the digits through the estimators with the copies it carries (the
# process's maps must show them). Needs root or unprivileged user
# namespaces (unshare; skipped with code 77 otherwise); the namespace's
# mounts vanish with it.
#
#   bash tests/python_wheel.sh            (ctest's python_wheel)
set -euo pipefail
src=${FN_SOURCE_DIR:?ctest sets FN_SOURCE_DIR}

if [ "${1:-}" = --hidden ]; then
    work=$2
    wheel=$3
    hidden=0
    for lib in /usr/lib/x86_64-linux-gnu/libhdf5* /usr/lib/x86_64-linux-gnu/libopenblas* \
               /usr/lib/x86_64-linux-gnu/openblas*/libopenblas* \
               /usr/lib/x86_64-linux-gnu/libgfortran* /usr/lib/x86_64-linux-gnu/libinih*; do
        if [ -f "$lib" ] && [[ "$lib" == *.so* ]]; then
            mount --bind /dev/null "$lib"
            hidden=$((hidden + 1))
        fi
    done
    # The test could not fail if nothing were hidden.
    if [ "$hidden" -lt 3 ] || [ -s /usr/lib/x86_64-linux-gnu/libinih.so.1 ]; then
        echo "python_wheel: the system's libraries are not hidden ($hidden files)" >&2
        exit 1
    fi
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" scikit-learn
    site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
    cd /
    "$work/venv/bin/python" - "$src/tests" "$site" "$work/digits.npz" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
sys.argv[1:] = ["--site", sys.argv[2], "--digits", sys.argv[3]]
import python_install_check
python_install_check.main()
maps = open("/proc/self/maps").read()
for name in ("libhdf5", "libopenblas", "libinih"):
    lines = [l.split()[-1] for l in maps.splitlines() if name in l]
    assert lines and all("/fusenet.libs/" in path for path in lines), (name, set(lines))
print("python_wheel: the wheel's own libhdf5, OpenBLAS and inih")
PY
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    namespace=(unshare --mount --propagation private)
else
    namespace=(unshare --map-root-user --mount --propagation private)
fi
if ! "${namespace[@]}" true 2>/dev/null; then
    echo "python_wheel: skipped: no mount namespace here (${namespace[*]} failed;" \
        "run as root, or allow unprivileged user namespaces)"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheel=$("$src/scripts/build_wheel.sh" "$work/wheel")
case "$wheel" in
    */fusenet-*-manylinux_*_x86_64.whl) ;;
    *) echo "python_wheel: not a manylinux wheel: $wheel" >&2; exit 1 ;;
esac
/usr/bin/python3 "$src/tests/digits_npz.py" "$src/data" "$work/digits.npz"
"${namespace[@]}" env FN_SOURCE_DIR="$src" bash "$0" --hidden "$work" "$wheel"
