#!/usr/bin/env python3
"""check_layers_selftest.py — scripts/check_layers.py reads a file's room from
its path at any depth and catches each breach of the folder rules, and passes
a clean tree.

Each case writes a small tree (a room's root, two kinds' folders, a kernel
mirroring its host C) into a fresh temporary directory, changes one file,
runs the check and expects its exit status and, on failure, the offending
file and the problem in its message.

Usage: check_layers_selftest.py <path of check_layers.py>; exit 1 on the
first case that does not behave.
"""
import sys

from selftest_tree import selftest

CLEAN = {
    "src/core/status.c": '#include "core/hash.h"\n',
    "src/core/hash.h": "",
    "src/nn/layer.c": '#include "nn/layers/block/block_impl.h"\n',
    "src/nn/layer_parts.h": '#include "core/hash.h"\n',
    "src/nn/layers/block/block_impl.h": '#include "fusenet/block.h"\n',
    "src/nn/layers/block/block.c": ('#include "nn/layers/block/block_impl.h"\n'
                                    '#include "nn/layer_parts.h"\n'),
    "src/nn/layers/dense/dense.c": '#include "nn/layer_parts.h"\n#include "fusenet/block.h"\n',
    "src/trainer/trainer.c": '#include "nn/layers/dense/dense_impl.h"\n',
    "include/fusenet/block.h": "",
    "kernels/nn/layers/block/block_cuda.cu": '#include "nn/layers/block/block_impl.h"\n',
    "kernels/core/memory_cuda.cu": '#include "core/hash.h"\n',
    "train/train.c": '#include "fusenet/block.h"\n',
}

# (name, files changed or added, the file named in the message, its words).
BROKEN = [
    ("a kind includes another kind's folder",
     {"src/nn/layers/dense/dense.c": '#include "nn/layers/block/block_impl.h"\n'},
     "src/nn/layers/dense/dense.c:1", "includes another kind's folder"),
    ("a kernel of a kind includes another kind's folder",
     {"kernels/nn/layers/block/block_cuda.cu": '#include "nn/layers/dense/dense_impl.h"\n'},
     "kernels/nn/layers/block/block_cuda.cu:1", "includes another kind's folder"),
    ("a kernel without its src/ folder",
     {"kernels/nn/layers/conv/conv_cuda.cu": '#include "core/hash.h"\n'},
     "kernels/nn/layers/conv/conv_cuda.cu", "src/nn/layers/conv/ does not exist"),
    ("a kernel outside any room",
     {"kernels/block_cuda.cu": '#include "core/hash.h"\n'},
     "kernels/block_cuda.cu", "no layer"),
    ("a kind's file includes a higher room (room read at depth)",
     {"src/nn/layers/block/block.c": '#include "trainer/trainer_impl.h"\n'},
     "src/nn/layers/block/block.c:1", "nn includes trainer, a higher layer"),
    ("a deep kernel includes a higher room",
     {"kernels/core/memory_cuda.cu": '#include "nn/layer_parts.h"\n'},
     "kernels/core/memory_cuda.cu:1", "core includes nn, a higher layer"),
]


def caught(where, words):
    """Whether the check's output has a line at `where` saying `words`."""
    return lambda out: any(line.startswith(where) and words in line for line in out.splitlines())


def main(argv):
    cases = [(name, {**CLEAN, **change}, f"'{where}' and '{words}'", caught(where, words))
             for name, change, where, words in BROKEN]
    return selftest(argv[1], CLEAN, cases, "the clean tree")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
