#!/usr/bin/env python3
"""bench_ddp.py — PyTorch DistributedDataParallel on the network of
scripts/bench_scaling.sh, for its table: `layers = block W x DEPTH, linear
CLASSES`, groups G (each block y = 2 * leaky_relu(group_norm(x W^T + b))),
SGD with momentum 0, cross-entropy, BATCH rows per GPU (a weak-scaling
step), in fp32 ('ieee'), tf32 (torch.backends.cuda.matmul.fp32_precision) or
bf16 (autocast).
The inputs and labels are random tensors made on each GPU once (no loader:
this favours PyTorch, whose step then waits for no data). DDP sums the
gradients with NCCL in buckets during backward, as fusenet sums its layers.
Timed with CUDA events after warm-up: rank 0 prints one line,
`ddp <precision> <world> <samples/s>` (the global samples a second).

Launch with torchrun (NCCL_NVLS_ENABLE=0 where a machine needs NVLink SHARP off):
  torchrun --standalone --nproc_per_node N scripts/bench_ddp.py --precision tf32
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn

from bench_torch import Block  # the block as bench_side_by_side.sh times it


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32")
    p.add_argument("--batch", type=int, default=1024, help="rows per GPU")
    p.add_argument("--width", type=int, default=8192)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--groups", type=int, default=512)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=50)
    a = p.parse_args()

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    world = dist.get_world_size()
    torch.backends.cuda.matmul.fp32_precision = "ieee" if a.precision == "fp32" else "tf32"

    torch.manual_seed(1)  # the same initial weights on every rank (DDP broadcasts them too)
    layers = [Block(a.width, a.width, a.groups) for _ in range(a.depth)]
    model = nn.Sequential(*layers, nn.Linear(a.width, a.classes)).cuda()
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator(device="cuda").manual_seed(100 + dist.get_rank())
    x = torch.rand(a.batch, a.width, device="cuda", generator=gen) * 2 - 1
    y = torch.randint(0, a.classes, (a.batch,), device="cuda", generator=gen)

    # bf16: autocast, as PyTorch users train (fp32 parameters, gradients and
    # optimiser state; the products on bf16 operands), like fusenet's bf16.
    amp = torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.precision == "bf16")

    def step():
        opt.zero_grad(set_to_none=False)
        with amp:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(a.steps):
        loss = step()
    end.record()
    end.synchronize()
    loss.item()  # as fusenet reads its loss every step, once at the end here
    ms = start.elapsed_time(end) / a.steps
    slowest = torch.tensor([ms], device="cuda")
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    if dist.get_rank() == 0:
        print(f"ddp {a.precision} {world} {a.batch * world * 1000.0 / slowest.item():.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
