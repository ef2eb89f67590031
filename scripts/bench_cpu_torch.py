#!/usr/bin/env python3
"""bench_cpu_torch.py — PyTorch on the CPU beside `train` for
scripts/bench_cpu.sh: the same network (Linear -> GroupNorm ->
LeakyReLU(0.01) -> x + x blocks, a Linear head; scripts/bench_small_torch.py's
`net`, `eager_stepper` and `epoch`), CrossEntropyLoss, SGD with momentum
0.9, the set in memory and each batch gathered by a shuffled order (full
batches: the last partial one is left out, as bench_small_torch.py does).
torch.set_num_threads(--threads) before anything runs; steps/s is the
median of REPS epochs after a warm-up epoch.

Prints one line: `torch <steps/s>`.

  python3 scripts/bench_cpu_torch.py --in 512 --hidden 512,512 --batch 128 --threads 4
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn

from bench_small_torch import eager_stepper, epoch, net


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--in", dest="n_in", type=int, required=True)
    p.add_argument("--hidden", required=True, help="widths, comma-separated")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--rows", type=int, default=32768)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    x = torch.rand(a.rows, a.n_in) * 2 - 1
    y = torch.randint(0, a.classes, (a.rows,))
    model = net(a.n_in, [int(h) for h in a.hidden.split(",")], a.classes, a.groups)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = eager_stepper(model, opt, nn.CrossEntropyLoss(), x, y, a.batch)
    gen = torch.Generator()
    gen.manual_seed(1)
    steps = a.rows // a.batch
    if steps < 1:
        p.error(f"--rows {a.rows} is less than one batch of {a.batch}")
    epoch(step, a.rows, a.batch, gen, "cpu")  # warm-up
    rates = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        epoch(step, a.rows, a.batch, gen, "cpu")
        rates.append(steps / (time.perf_counter() - t0))
    print(f"torch {statistics.median(rates):.1f}", flush=True)


if __name__ == "__main__":
    main()
