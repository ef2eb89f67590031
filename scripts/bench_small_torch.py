#!/usr/bin/env python3
"""bench_small_torch.py — PyTorch eager beside `train` at the small shapes
of scripts/bench_small.sh: the same networks (Linear -> GroupNorm ->
LeakyReLU(0.01) -> x + x blocks, a Linear head), CrossEntropyLoss, SGD with
momentum 0.9, fp32 products (torch.backends.cuda.matmul.fp32_precision =
'ieee'), the whole set already on the GPU and each batch gathered there by
a shuffled order, as a training loop without a DataLoader runs. The loss is
not read back (the loop never waits for the GPU); steps/s is the median of
REPS windows of one epoch each, after a warm-up epoch.

Prints one line a shape: `torch <name> <steps/s>`.

  python3 scripts/bench_small_torch.py --shape S:64:128,128:32 --rows 65536
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn

from bench_torch import Block  # the block as bench_side_by_side.sh times it


def net(n_in, hidden, classes, groups):
    layers, width = [], n_in
    for h in hidden:
        layers.append(Block(width, h, groups))
        width = h
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def epoch(model, opt, loss_fn, x, y, batch, gen):
    order = torch.randperm(x.shape[0], device=x.device, generator=gen)
    for start in range(0, x.shape[0], batch):
        idx = order[start:start + batch]
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", action="append", required=True,
                   help="name:in:hidden,hidden,...:batch")
    p.add_argument("--rows", type=int, default=65536)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    dev = torch.device("cuda")
    for spec in a.shape:
        name, n_in, hidden, batch = spec.split(":")
        n_in, batch = int(n_in), int(batch)
        hidden = [int(h) for h in hidden.split(",")]
        torch.manual_seed(1)
        x = torch.rand(a.rows, n_in, device=dev) * 2 - 1
        y = torch.randint(0, a.classes, (a.rows,), device=dev)
        model = net(n_in, hidden, a.classes, a.groups).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        gen = torch.Generator(device=dev)
        gen.manual_seed(1)
        steps = (a.rows + batch - 1) // batch
        epoch(model, opt, loss_fn, x, y, batch, gen)  # warm-up
        torch.cuda.synchronize()
        rates = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            epoch(model, opt, loss_fn, x, y, batch, gen)
            torch.cuda.synchronize()
            rates.append(steps / (time.perf_counter() - t0))
        print(f"torch {name} {statistics.median(rates):.1f}", flush=True)


if __name__ == "__main__":
    main()
