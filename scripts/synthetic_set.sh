#!/usr/bin/env bash
# synthetic_set.sh — writes a synthetic training set (scripts/make_synthetic.c:
# X float32 [rows, cols] uniform in [-1, 1), y int32 labels of `classes`)
# for the benchmark scripts, building make_synthetic beside the output
# first (HDF5's h5cc, or Debian's serial HDF5 where h5cc is missing) unless
# it is already there.
#
#   scripts/synthetic_set.sh out.h5 rows cols classes
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 out.h5 rows cols classes" >&2; exit 2; }
src=$(cd "$(dirname "$0")" && pwd)/make_synthetic.c
dir=$(cd "$(dirname "$1")" && pwd)
if [ ! -x "$dir/make_synthetic" ]; then
    if command -v h5cc >/dev/null; then
        (cd "$dir" && h5cc -O2 -o make_synthetic "$src")
    else
        cc -O2 -I/usr/include/hdf5/serial -o "$dir/make_synthetic" "$src" \
            -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5
    fi
fi
"$dir/make_synthetic" "$@"
