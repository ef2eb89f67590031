#!/usr/bin/env python3
"""bench_small_torch.py — PyTorch beside `train` at the small shapes of
scripts/bench_small.sh: the same networks (Linear -> GroupNorm ->
LeakyReLU(0.01) -> x + x blocks, a Linear head), CrossEntropyLoss, SGD with
momentum 0.9, fp32 products (torch.backends.cuda.matmul.fp32_precision =
'ieee'), the whole set already on the GPU and each batch gathered there by
a shuffled order, as a training loop without a DataLoader runs. Three ways,
PyTorch's strongest for small networks last:
  eager          the loop as written
  graph          the whole step (forward, backward, update) captured once as
                 a CUDA graph and replayed each batch, the batch gathered into
                 the graph's static input first (torch.cuda.graph)
  compile_graph  the same with the model under torch.compile
The loss is not read back (the loop never waits for the GPU); steps/s is the
median of REPS windows of one epoch each, after a warm-up epoch.

Prints one line a shape and way: `torch <way> <name> <steps/s>`.

  python3 scripts/bench_small_torch.py --shape S:64:128,128:32 --rows 65536 [--ways eager,graph]
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


def eager_stepper(model, opt, loss_fn, x, y, batch):
    """One step on the rows idx, as the loop is written."""
    def step(idx):
        opt.zero_grad(set_to_none=False)
        loss_fn(model(x[idx]), y[idx]).backward()
        opt.step()
    return step


def graph_stepper(model, opt, loss_fn, x, y, batch):
    """The whole step captured as one CUDA graph over static batch buffers
    (the recipe of PyTorch's CUDA-graphs notes: warm-up on a side stream,
    then capture); each call gathers the rows into the buffers and replays."""
    static_x = x[:batch].clone()
    static_y = y[:batch].clone()

    def body():
        opt.zero_grad(set_to_none=False)
        loss_fn(model(static_x), static_y).backward()
        opt.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()

    def step(idx):
        torch.index_select(x, 0, idx, out=static_x)
        torch.index_select(y, 0, idx, out=static_y)
        graph.replay()
    return step


def epoch(step, rows, batch, gen, device):
    """One epoch of full batches in a shuffled order (a graph's shapes are
    fixed, so every way drops the last partial batch alike)."""
    order = torch.randperm(rows, device=device, generator=gen)
    for start in range(0, rows - batch + 1, batch):
        step(order[start:start + batch])


def rate(way, spec, a, dev):
    name, n_in, hidden, batch = spec.split(":")
    n_in, batch = int(n_in), int(batch)
    hidden = [int(h) for h in hidden.split(",")]
    torch.manual_seed(1)
    x = torch.rand(a.rows, n_in, device=dev) * 2 - 1
    y = torch.randint(0, a.classes, (a.rows,), device=dev)
    model = net(n_in, hidden, a.classes, a.groups).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    run = torch.compile(model) if way == "compile_graph" else model
    make = eager_stepper if way == "eager" else graph_stepper
    step = make(run, opt, nn.CrossEntropyLoss(), x, y, batch)
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    steps = a.rows // batch
    epoch(step, a.rows, batch, gen, dev)  # warm-up
    torch.cuda.synchronize()
    rates = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        epoch(step, a.rows, batch, gen, dev)
        torch.cuda.synchronize()
        rates.append(steps / (time.perf_counter() - t0))
    return name, statistics.median(rates)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", action="append", required=True,
                   help="name:in:hidden,hidden,...:batch")
    p.add_argument("--rows", type=int, default=65536)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--ways", default="eager,graph,compile_graph")
    a = p.parse_args()
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    dev = torch.device("cuda")
    for way in a.ways.split(","):
        for spec in a.shape:
            name, steps_per_s = rate(way, spec, a, dev)
            print(f"torch {way} {name} {steps_per_s:.1f}", flush=True)


if __name__ == "__main__":
    main()
