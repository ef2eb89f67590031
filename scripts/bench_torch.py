#!/usr/bin/env python3
"""bench_torch.py — the fused block and its training step in PyTorch, timed
the way ./bench times fusenet: CUDA events, warm-up first, medians.

For each precision (torch.backends.cuda.matmul.fp32_precision 'ieee' and
'tf32', set explicitly; and 'bf16': torch.autocast(dtype=torch.bfloat16)
around the forward, fp32 parameters and optimiser state, matmul precision
'ieee' for whatever autocast leaves in fp32, as PyTorch users train in bf16)
and each mode (eager, torch.compile) it times:
  forward        y = 2 * leaky_relu(group_norm(x W^T + b))
  step_dx        forward, backward from a fixed dy with x.requires_grad
                 (three products: a block inside a network), SGD update
  step_nodx      the same without dx (a first layer: two products)
with SGD momentum 0 and 0.9 and with AdamW (torch.optim.AdamW(fused=True),
its defaults but the rate: the fastest AdamW PyTorch has), plus
GroupNorm+LeakyReLU+x2 alone (eager).
Prints one line per figure: `torch <mode> <precision> <what> <ms>`, which
scripts/bench_side_by_side.sh merges with ./bench's output.

Run on a GPU machine with the python3 that has PyTorch:
  python3 scripts/bench_torch.py [--batch 1024 --in 8192 --hidden 8192 --groups 512]
"""
import argparse
import contextlib
import statistics

import torch
import torch.nn as nn


def time_ms(fn, warmup, reps):
    """Median milliseconds of fn() over reps, after warmup calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


class Block(nn.Module):
    def __init__(self, n_in, n_out, groups):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.norm = nn.GroupNorm(groups, n_out)
        self.act = nn.LeakyReLU(0.01)

    def forward(self, x):
        a = self.act(self.norm(self.linear(x)))
        return a + a


def make_step(block, opt, x, dy, amp):
    def step():
        opt.zero_grad(set_to_none=False)
        with amp():
            y = block(x)
        y.backward(dy)
        opt.step()
    return step


def autocast_for(precision):
    """The context the forward runs in: autocast to bf16, or nothing."""
    if precision == "bf16":
        return lambda: torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext


def bench_mode(args, precision, compiled, report):
    torch.backends.cuda.matmul.fp32_precision = "ieee" if precision == "bf16" else precision
    amp = autocast_for(precision)
    torch.manual_seed(0)
    dev = "cuda"
    block = Block(args.in_features, args.hidden, args.groups).to(dev)
    run = torch.compile(block) if compiled else block
    mode = "compile" if compiled else "eager"
    x = torch.randn(args.batch, args.in_features, device=dev)
    x_grad = x.clone().requires_grad_(True)
    dy = torch.randn(args.batch, args.hidden, device=dev)

    def forward():
        with amp():
            return run(x)

    with torch.no_grad():
        report(mode, precision, "forward", time_ms(forward, args.warmup, args.reps))
    optimizers = [(f"m{m:g}", torch.optim.SGD(block.parameters(), lr=1e-4, momentum=m))
                  for m in (0.0, 0.9)]
    optimizers.append(("adamw", torch.optim.AdamW(block.parameters(), lr=1e-4, fused=True)))
    for suffix, opt in optimizers:
        for name, inp in (("step_dx", x_grad), ("step_nodx", x)):
            ms = time_ms(make_step(run, opt, inp, dy, amp), args.warmup, args.reps)
            report(mode, precision, f"{name}_{suffix}", ms)


def bench_norm_alone(args, report):
    dev = "cuda"
    norm = nn.GroupNorm(args.groups, args.hidden).to(dev)
    act = nn.LeakyReLU(0.01)
    z = torch.randn(args.batch, args.hidden, device=dev)
    zg = z.clone().requires_grad_(True)
    dy = torch.randn_like(z)

    def fwd():
        a = act(norm(z))
        return a + a

    def fwd_bwd():
        a = act(norm(zg))
        (a + a).backward(dy)

    with torch.no_grad():
        report("eager", "-", "norm_forward", time_ms(fwd, args.warmup, args.reps))
    report("eager", "-", "norm_forward_backward", time_ms(fwd_bwd, args.warmup, args.reps))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--in", dest="in_features", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=8192)
    p.add_argument("--groups", type=int, default=512)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--precisions", default="ieee,tf32,bf16",
                   help="a comma-separated subset of ieee, tf32, bf16")
    args = p.parse_args()

    def report(mode, precision, what, ms):
        print(f"torch {mode} {precision} {what} {ms:.4f}", flush=True)

    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}; batch {args.batch}, "
          f"in {args.in_features}, hidden {args.hidden}, groups {args.groups}", flush=True)
    bench_norm_alone(args, report)
    for precision in args.precisions.split(","):
        bench_mode(args, precision, False, report)
        if not args.no_compile:
            bench_mode(args, precision, True, report)


if __name__ == "__main__":
    main()
