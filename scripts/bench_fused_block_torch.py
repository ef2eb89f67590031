#!/usr/bin/env python3
"""bench_fused_block_torch.py — fusenet.torch.FusedBlock against the same
block as PyTorch modules (Linear -> GroupNorm -> LeakyReLU -> x2), eager and
under torch.compile, on the GPU: the forward alone (no autograd) and the
forward with the backward of every parameter and the input, each timed with
CUDA events over INNER calls queued back to back (the time a call takes in a
loop of them: host overheads overlap the GPU's work as in training; at small
shapes the host's per-call time is what is measured), after warm-up, the
median of REPS. fp32 ('ieee' products, and FusedBlock's math fp32) and tf32
('tf32' products, FusedBlock's math tf32).

Columns: "FusedBlock" is the module as it runs in eager code (outside
torch.compile its calls skip the custom operator's dispatch: the
autograd.Function door, or no autograd at all under no_grad); "operator"
the same calls through the custom operator fusenet::block_forward
(PyTorch 2.4 and later; the dispatch's cost is the difference);
"compiled" FusedBlock under torch.compile(fullgraph=True), where the
operator is what runs; "eager" and "compile" the unfused PyTorch block.

Prints a markdown table. Run on a GPU machine from the checkout, with the
library built (FUSENET_LIBRARY names it):

  FUSENET_LIBRARY=build/gpu/libfusenet.so PYTHONPATH=python \\
      python3 scripts/bench_fused_block_torch.py [--reps 50] [--shapes small,tiny]
"""
import argparse
import statistics

import torch
import torch.nn as nn

import fusenet.torch as ft

SHAPES = [("benchmark", 1024, 8192, 8192, 512), ("small", 256, 512, 512, 8),
          ("tiny", 32, 64, 128, 8)]


class Block(nn.Module):
    def __init__(self, n_in, n_out, groups):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.norm = nn.GroupNorm(groups, n_out)
        self.act = nn.LeakyReLU(0.01)

    def forward(self, x):
        a = self.act(self.norm(self.linear(x)))
        return a + a


INNER = 10


def time_ms(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(INNER):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / INNER)
    return statistics.median(times)


def figures(module, x, dy, warmup, reps):
    def forward():
        with torch.no_grad():
            module(x)

    def forward_backward():
        module(x).backward(dy)

    return time_ms(forward, warmup, reps), time_ms(forward_backward, warmup, reps)


class OperatorDoor(nn.Module):
    """A FusedBlock whose eager calls go through the custom operator (as
    compiled code's do) instead of the lean door FusedBlock takes."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        ft._lean_eager = False
        try:
            return self.block(x)
        finally:
            ft._lean_eager = True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--shapes", default=",".join(s[0] for s in SHAPES),
                   help="comma-separated names of: " + ", ".join(s[0] for s in SHAPES))
    p.add_argument("--maths", default="fp32,tf32")
    a = p.parse_args()
    names = a.shapes.split(",")
    cols = ["FusedBlock", "operator", "compiled", "eager", "compile"]
    rows = ["| shape | math | what | " + " | ".join(c + " ms" for c in cols)
            + " | eager / FusedBlock | compile / FusedBlock |",
            "| --- | --- | --- | " + " | ".join("---:" for _ in cols) + " | ---: | ---: |"]
    for name, batch, n_in, n_out, groups in SHAPES:
        if name not in names:
            continue
        for math in a.maths.split(","):
            torch.backends.cuda.matmul.fp32_precision = "ieee" if math == "fp32" else "tf32"
            torch.manual_seed(0)
            ref = Block(n_in, n_out, groups).cuda()
            fused = ft.FusedBlock(n_in, n_out, groups, math=math).cuda()
            fused.load_state_dict(ref.state_dict(), strict=False)
            x = torch.randn(batch, n_in, device="cuda", requires_grad=True)
            dy = torch.randn(batch, n_out, device="cuda")
            torch._dynamo.reset()
            t = [figures(fused, x, dy, a.warmup, a.reps),
                 figures(OperatorDoor(fused), x, dy, a.warmup, a.reps)
                 if ft.HAS_CUSTOM_OP else (float("nan"),) * 2,
                 figures(torch.compile(fused, fullgraph=True), x, dy, a.warmup, a.reps),
                 figures(ref, x, dy, a.warmup, a.reps),
                 figures(torch.compile(ref), x, dy, a.warmup, a.reps)]
            for i, what in enumerate(("forward", "forward + backward")):
                op = t[0][i]
                rows.append(f"| {name} ({batch}, {n_in} → {n_out}, {groups} groups) | {math} | "
                            f"{what} | " + " | ".join(f"{c[i]:.3f}" for c in t)
                            + f" | {t[3][i] / op:.2f}× | {t[4][i] / op:.2f}× |")
            print(rows[-2] + "\n" + rows[-1], flush=True)
    print("\n".join(rows))
    print(f"\ntorch {torch.__version__} on {torch.cuda.get_device_name()}; medians of {a.reps} "
          f"samples of {INNER} calls each, after {a.warmup} warm-up calls")


if __name__ == "__main__":
    main()
