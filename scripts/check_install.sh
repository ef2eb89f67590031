#!/usr/bin/env bash
# check_install.sh — checks what a build installs, as a user of the library
# meets it: `cmake --install` into a scratch prefix (headers, libraries,
# programs, CMake package, fusenet.pc); the consumer example
# (tests/consumer/) built against that prefix once with find_package(fusenet)
# and once with pkg-config alone, each run on the digits (trains, predicts,
# exits 0 above 80 % accuracy); the installed `train --version`; then
# CPack's .deb: its contents, its dependencies resolved against this
# machine's packages (apt-get --simulate: what `apt-get install ./x.deb`
# would do, without doing it) and its files unpacked into a scratch root,
# whose programs must run. Exits non-zero on the first failure.
#
#   scripts/check_install.sh build/cpu [scratch dir]
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:?usage: check_install.sh BUILD_DIR [SCRATCH_DIR]}
scratch=${2:-$(mktemp -d)}
prefix=$scratch/prefix
rm -rf "$prefix" "$scratch/consumer-cmake" "$scratch/run-cmake" "$scratch/run-pc" "$scratch/root"
mkdir -p "$scratch/run-cmake" "$scratch/run-pc"

echo "check_install.sh: cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
(cd "$prefix" && find . \( -type f -o -type l \) | sort | sed 's|^\./|  |')
"$prefix/bin/train" --version

echo "check_install.sh: the consumer with find_package(fusenet)"
cmake -S tests/consumer -B "$scratch/consumer-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$scratch/consumer-cmake" >/dev/null
"$scratch/consumer-cmake/consumer" data/digits_train.h5 data/digits_valid.h5 "$scratch/run-cmake"

echo "check_install.sh: the consumer with pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
libdir=$(pkg-config --variable=libdir fusenet)
# shellcheck disable=SC2046 # pkg-config's words are the compiler's arguments
cc -std=c11 -Wall -Wextra -Werror tests/consumer/consumer.c $(pkg-config --cflags --libs fusenet) \
    -Wl,-rpath,"$libdir" -o "$scratch/consumer-pc"
"$scratch/consumer-pc" data/digits_train.h5 data/digits_valid.h5 "$scratch/run-pc"

echo "check_install.sh: the .deb"
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls -t "$build"/fusenet*.deb | head -1)
dpkg-deb --info "$deb" | grep -E "Package|Version|Depends"
dpkg-deb --contents "$deb" | awk '{print "  " $NF}'
# Its Depends resolve to this machine's Debian packages (nothing installed).
apt-get install --simulate --no-install-recommends "./$deb" >/dev/null
# Its files unpacked into an empty root: the programs run from there.
root=$scratch/root
dpkg-deb -x "$deb" "$root"
LD_LIBRARY_PATH=$root/usr/lib "$root/usr/bin/train" --version >/dev/null
LD_LIBRARY_PATH=$root/usr/lib "$root/usr/bin/predict" --version >/dev/null
echo "check_install.sh: all passed"
