#!/usr/bin/python3
"""interop_optim.py — train's optimisers, schedules and clipping against
PyTorch's (ctest label "interop"). From the same weights, runs N steps in
./train and in PyTorch in float64 (torch.optim.Adam, AdamW, SGD, RMSprop, the
schedule as torch.optim.lr_scheduler.LambdaLR with docs/configuration.md's formula,
or ReduceLROnPlateau stepped with each epoch's training loss,
torch.nn.utils.clip_grad_norm_ before each step) and checks every
parameter: |ours - torch| <= 1e-5 * max(|torch|, 1) elementwise (as
interop_torch.py: relative, absolute below 1).

Each step is one batch of the whole set (batch_size = rows), so the data
order, which train shuffles, changes only the order of a sum. The initial
weights are those of a one-step SGD run of train (any weights would do),
loaded by both through [model] init and scripts/weights_to_torch.py. The
blocks have 8 and 4 channels a group: with 2 a group, GroupNorm's
gradient is so ill-conditioned (r = 1/sqrt(var + eps) of two values) that
float32 and float64 runs part after a few steps whatever the optimiser.
Adam divides each component by its own running magnitude, so a component
whose gradient passes near zero takes a step set by rounding: with
clip_grad_norm = 1.0 in the first scenario, one weight's clipped gradient
(-1.004e-4) all but cancels its L2 term (+1.005e-4) at step 1, and float32
and float64 then differ there by 7.5e-5. The scenarios below are clear of
such points; the largest difference is printed.

Needs FN_BUILD_DIR and FN_SOURCE_DIR (set by ctest); exits non-zero on any
mismatch or failure."""
import math
import os
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import RTOL, largest_difference, train, weights_to_torch  # noqa: E402


def f32(x):
    """The float32 value train's config holds, as a double."""
    return float(np.float32(x))


def make_set(tmp, name, loss, rows, n_in, n_out, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    w = rng.standard_normal((n_in, n_out)).astype(np.float32)
    path = os.path.join(tmp, f"{name}.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=x)
        if loss == "mse":
            f.create_dataset("y", data=np.tanh(x @ w).astype(np.float32))
        else:
            f.create_dataset("y", data=np.argmax(x @ w, axis=1).astype(np.int32))
    config = os.path.join(tmp, f"{name}.ini")
    with open(config, "w") as f:
        f.write(f"[data]\ntrain = {name}.h5\n[model]\nlayers = block 32, block 16, linear {n_out}\n"
                f"groups = 4\n[train]\nloss = {loss}\nbatch_size = {rows}\nseed = 7\n")
    init = train(config, os.path.join(tmp, f"{name}_init"),
                 ["train.epochs=1", "train.lr=0.01"])
    return config, path, init


def schedule_lr(s, t, total):
    """docs/configuration.md's formula: the schedule, then the warm-up factor."""
    lr, w = s["lr"], s.get("warmup_steps", 0)
    kind = s.get("schedule", "constant")
    if kind == "step":
        f = lr * s["gamma"] ** (t // s["step_size"])
    elif kind == "cosine" and t >= w and total > w:
        f = s["min_lr"] + (lr - s["min_lr"]) * (1 + math.cos(math.pi * (t - w) / (total - w))) / 2
    else:
        f = lr
    return f * (t + 1) / w if t < w else f


def torch_run(init, data, loss, steps, s):
    model = weights_to_torch.load(init).double()
    with h5py.File(data, "r") as f:
        x = torch.from_numpy(np.asarray(f["X"], dtype=np.float64))
        y = np.asarray(f["y"])
    if loss == "mse":
        target, criterion = torch.from_numpy(y.astype(np.float64)), torch.nn.MSELoss()
    else:
        target, criterion = torch.from_numpy(y.astype(np.int64)), torch.nn.CrossEntropyLoss()
    params = list(model.parameters())
    lr, wd = f32(s["lr"]), f32(s.get("weight_decay", 0))
    kind = s["optimizer"]
    if kind == "sgd":
        opt = torch.optim.SGD(params, lr=lr, momentum=f32(s.get("momentum", 0)),
                              nesterov=s.get("nesterov", False), weight_decay=wd)
    elif kind == "rmsprop":
        opt = torch.optim.RMSprop(params, lr=lr, alpha=f32(s.get("alpha", 0.99)),
                                  eps=f32(s.get("rmsprop_eps", 1e-8)), weight_decay=wd,
                                  momentum=f32(s.get("momentum", 0)),
                                  centered=s.get("centered", False))
    else:
        cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
        opt = cls(params, lr=lr, betas=(f32(s["betas"][0]), f32(s["betas"][1])),
                  eps=f32(s["adam_eps"]), weight_decay=wd)
    shape = {k: (f32(v) if isinstance(v, float) else v) for k, v in s.items()}
    plateau = s.get("schedule") == "plateau"
    if plateau:
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, factor=f32(s["factor"]), patience=s["plateau_patience"],
            threshold=f32(s["threshold"]), cooldown=s["cooldown"], min_lr=f32(s["min_lr"]))
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda t: schedule_lr(shape, t, steps) / lr)
    clipped, margin = 0, math.inf
    for _ in range(steps):
        opt.zero_grad()
        loss = criterion(model(x), target)
        loss.backward()
        if "clip_grad_norm" in s:
            norm = torch.nn.utils.clip_grad_norm_(params, f32(s["clip_grad_norm"]))
            clipped += float(norm) > f32(s["clip_grad_norm"])
        opt.step()
        if plateau:
            # An epoch is one step here: its training loss is this batch's.
            # A metric within rounding of the bar would make float32 and
            # float64 decide apart: the margin says how clear each was.
            bar = sched.best * (1 - sched.threshold)
            if math.isfinite(bar):
                margin = min(margin, abs(loss.item() - bar) / bar)
            sched.step(loss.item())
        else:
            sched.step()
    if plateau:
        reduced = opt.param_groups[0]["lr"] < lr
        print(f"plateau: rate {lr:.6g} -> {opt.param_groups[0]['lr']:.6g}, closest call "
              f"{margin:.3g} relative")
        if not reduced or margin < 1e-4:
            sys.exit("plateau scenario: no reduction, or a decision too close to call")
    return model, clipped


def sets_of(s, steps):
    out = [f"train.epochs={steps}"]
    for key, value in s.items():
        if key == "betas":
            value = f"{value[0]}, {value[1]}"
        elif isinstance(value, bool):
            value = "true" if value else "false"
        out.append(f"train.{key}={value}")
    return out


def compare(name, ours_path, theirs):
    worst, where = largest_difference(weights_to_torch.load(ours_path), theirs)
    print(f"{name}: largest relative difference {worst:.3g} at {where}")
    if not worst <= RTOL:
        sys.exit(f"{name}: parameters differ from PyTorch by more than {RTOL} relative")


SCENARIOS = [
    ("adam+L2, warm-up+cosine, clipping", "classes", 12,
     {"optimizer": "adam", "lr": 0.01, "betas": (0.9, 0.999), "adam_eps": 1e-8,
      "weight_decay": 1e-3, "schedule": "cosine", "warmup_steps": 3, "min_lr": 1e-4,
      "clip_grad_norm": 0.9}),
    ("adamw, warm-up+step, clipping", "regression", 10,
     {"optimizer": "adamw", "lr": 0.02, "betas": (0.8, 0.99), "adam_eps": 1e-6,
      "weight_decay": 0.05, "schedule": "step", "step_size": 4, "gamma": 0.5,
      "warmup_steps": 2, "clip_grad_norm": 0.45}),
    ("sgd nesterov, cosine, clipping", "classes", 10,
     {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "schedule": "cosine",
      "min_lr": 0.01, "clip_grad_norm": 0.3}),
    ("rmsprop centered+momentum+L2, warm-up+cosine", "classes", 12,
     {"optimizer": "rmsprop", "lr": 0.002, "alpha": 0.9, "rmsprop_eps": 1e-6, "momentum": 0.5,
      "centered": True, "weight_decay": 1e-3, "schedule": "cosine", "warmup_steps": 3,
      "min_lr": 1e-4}),
    ("rmsprop defaults, step", "regression", 10,
     {"optimizer": "rmsprop", "lr": 0.001, "schedule": "step", "step_size": 4, "gamma": 0.5}),
    ("sgd momentum, plateau on the training loss", "regression", 14,
     {"optimizer": "sgd", "lr": 0.2, "momentum": 0.9, "schedule": "plateau", "factor": 0.5,
      "plateau_patience": 0, "threshold": 0.05, "cooldown": 1, "min_lr": 0.02}),
]


def main():
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="fn_interop_optim_") as tmp:
        sets = {"classes": ("cross_entropy",) + make_set(tmp, "classes", "cross_entropy",
                                                          96, 12, 3, 1),
                "regression": ("mse",) + make_set(tmp, "regression", "mse", 80, 10, 5, 2)}
        for i, (name, data, steps, s) in enumerate(SCENARIOS):
            loss, config, path, init = sets[data]
            ours = train(config, os.path.join(tmp, f"run{i}"),
                         sets_of(s, steps) + [f"model.init={init}"])
            theirs, clipped = torch_run(init, path, loss, steps, s)
            print(f"{name}: {steps} steps, {clipped} clipped")
            if "clip_grad_norm" in s and (clipped == 0 or (i < 2 and clipped == steps)):
                sys.exit(f"{name}: {clipped} of {steps} steps clipped; the first two scenarios "
                         "must have clipped and unclipped steps, the third clipped ones")
            compare(name, ours, theirs)
    print("interop: optimisers, schedules and clipping match PyTorch")


if __name__ == "__main__":
    main()
