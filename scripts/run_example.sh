#!/usr/bin/env bash
# run_example.sh — the README's first command: installs what is missing,
# builds (Release) into build/ the programs the docs' commands run (train,
# predict, export; the test doc_commands runs them with these alone), and
# trains data/example.ini (two blocks and a linear head on the handwritten
# digits). Output: runs/example/, replaced
# on every run (--overwrite) unless --resume is given. Extra arguments go
# to train, e.g. scripts/run_example.sh --set run.device=cpu
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target train predict export
fresh=(--overwrite)
for a in "$@"; do
    [ "$a" = --resume ] && fresh=()
done
exec ./build/train data/example.ini "${fresh[@]}" "$@"
