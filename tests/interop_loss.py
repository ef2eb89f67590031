#!/usr/bin/python3
"""interop_loss.py — train's losses against PyTorch's (ctest label
"interop"). For each loss and its keys (huber with delta as
torch.nn.HuberLoss; cross_entropy with class_weights and label_smoothing
as torch.nn.CrossEntropyLoss's weight and label_smoothing;
bce_with_logits, with pos_weight, as torch.nn.BCEWithLogitsLoss), runs three full-batch plain-SGD steps of ./train and
of the same network in PyTorch, in float64, from the same initial weights
(a one-step run of train, loaded by both through [model] init and
scripts/weights_to_torch.py), and checks the first step's loss (train's
metrics.csv) and every parameter after the steps:
|ours - torch| <= 1e-5 * max(|torch|, 1) elementwise. For
bce_with_logits the first step's train_acc must also be the fraction of
labels torch's logits predict right (logit > 0 against target >= 0.5). The parameters
after a step carry the loss's gradient, so they check it too.

The validation loss under class_weights is the weighted mean over the
whole set, sum(w[y] l) / sum(w[y]) (torch.nn.CrossEntropyLoss(weight=)
over the set in one batch, in float64), at batch sizes 1, 7 (an uneven
last batch) and the whole set, and the same at each within 1e-6.

Needs FN_BUILD_DIR and FN_SOURCE_DIR (set by ctest); exits non-zero on any
mismatch or failure."""
import csv
import os
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import (RTOL, largest_difference, train,  # noqa: E402
                            weights_to_torch, write_case)

STEPS = 3
LR = 0.1


def values_case(tmp, name, seed):
    """Float targets [N, 5] about the size of the outputs."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 10)).astype(np.float32)
    y = (2 * np.tanh(x @ rng.standard_normal((10, 5)))).astype(np.float32)
    return x, y


def classes_case(tmp, name, seed):
    """Integer labels [N] of 5 classes."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 10)).astype(np.float32)
    return x, np.argmax(x @ rng.standard_normal((10, 5)), axis=1).astype(np.int32)


def labels_case(tmp, name, seed):
    """Multi-label targets [N, 5] in [0, 1]: mostly 0 or 1, a quarter soft."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 10)).astype(np.float32)
    y = (x @ rng.standard_normal((10, 5)) > 0).astype(np.float32)
    soft = rng.random(y.shape) < 0.25
    y[soft] = rng.random(int(soft.sum()), dtype=np.float32)
    return x, y


WEIGHTS = [0.5, 2.0, 1.0, 0.25, 3.0]


def f32s(values):
    return torch.tensor([float(np.float32(v)) for v in values], dtype=torch.float64)


# name, data, the [train] keys, torch's criterion
CASES = [
    ("huber, delta 0.5", values_case, {"loss": "huber", "delta": 0.5},
     lambda: torch.nn.HuberLoss(delta=float(np.float32(0.5)))),
    ("huber, default delta", values_case, {"loss": "huber"}, lambda: torch.nn.HuberLoss()),
    ("cross_entropy, class_weights", classes_case,
     {"class_weights": ", ".join(str(w) for w in WEIGHTS)},
     lambda: torch.nn.CrossEntropyLoss(weight=f32s(WEIGHTS))),
    ("cross_entropy, label_smoothing 0.2", classes_case, {"label_smoothing": 0.2},
     lambda: torch.nn.CrossEntropyLoss(label_smoothing=float(np.float32(0.2)))),
    ("cross_entropy, class_weights and label_smoothing 0.1", classes_case,
     {"class_weights": ", ".join(str(w) for w in WEIGHTS), "label_smoothing": 0.1},
     lambda: torch.nn.CrossEntropyLoss(weight=f32s(WEIGHTS),
                                       label_smoothing=float(np.float32(0.1)))),
    ("bce_with_logits", labels_case, {"loss": "bce_with_logits"},
     lambda: torch.nn.BCEWithLogitsLoss()),
    ("bce_with_logits, pos_weight", labels_case,
     {"loss": "bce_with_logits", "pos_weight": ", ".join(str(w) for w in WEIGHTS)},
     lambda: torch.nn.BCEWithLogitsLoss(pos_weight=f32s(WEIGHTS))),
]


def torch_steps(init, x, y, criterion):
    model = weights_to_torch.load(init).double()
    opt = torch.optim.SGD(model.parameters(), lr=float(np.float32(LR)))
    first = first_acc = None
    for _ in range(STEPS):
        opt.zero_grad()
        out = model(x)
        loss = criterion(out, y)
        if first is None:
            first = float(loss)
            if y.dim() == 2:
                first_acc = float(((out > 0) == (y >= 0.5)).double().mean())
        loss.backward()
        opt.step()
    return model, first, first_acc


def run_case(tmp, i, name, make, keys, criterion):
    x, y = make(tmp, name, i)
    settings = "".join(f"{k} = {v}\n" for k, v in keys.items())
    config, path = write_case(
        tmp, f"case{i}", x, y,
        "[model]\nlayers = block 16, linear 5\ngroups = 4\n[train]\n"
        f"batch_size = {len(x)}\nseed = 3\n{settings}")
    init = train(config, os.path.join(tmp, f"init{i}"), ["train.epochs=1", "train.lr=0.01"])
    out = os.path.join(tmp, f"run{i}")
    ours = train(config, out, [f"model.init={init}", f"train.epochs={STEPS}", f"train.lr={LR}"])
    with h5py.File(path, "r") as f:
        xt = torch.from_numpy(np.asarray(f["X"], dtype=np.float64))
        y = np.asarray(f["y"])
        yt = torch.from_numpy(y.astype(np.int64) if y.ndim == 1 else y.astype(np.float64))
    theirs, first, first_acc = torch_steps(init, xt, yt, criterion())
    with open(os.path.join(out, "metrics.csv")) as f:
        row = next(csv.DictReader(f))
    loss = float(row["train_loss"])
    acc_ok = True
    if keys.get("loss") == "bce_with_logits":
        acc = float(row["train_acc"])
        acc_ok = abs(acc - first_acc) <= 1e-6
        print(f"{name}: first label accuracy ours {acc:.9g}, torch {first_acc:.9g}")
    loss_err = abs(loss - first) / max(abs(first), 1.0)
    worst, where = largest_difference(weights_to_torch.load(ours), theirs)
    print(f"{name}: first loss ours {loss:.9g}, torch {first:.9g} (relative {loss_err:.3g}); "
          f"parameters after {STEPS} steps: largest relative difference {worst:.3g} at {where}")
    return loss_err <= RTOL and worst <= RTOL and acc_ok


# The batch sizes of the validation case: one row a batch, batches of 7
# over 50 rows (the last of 1), and the whole set.
VALID_BATCHES = (1, 7, 50)
# Between batch sizes the one weighted mean moves only by rounding: each
# batch's value is rounded to float32 once (2^-24, 6e-8 relative) and a
# row's float32 logits may differ by a few ulps with the batch's shape
# (1e-7 relative in the loss); 1e-6 is ten times that. Weighting the
# batches by rows instead (the set's mean of per-batch means) moves it by
# about 1e-2 here.
SAME_RTOL = 1e-6


def valid_case(tmp):
    """cross_entropy with class_weights and a validation set of 50 rows:
    the validation loss of the init weights (a learning rate too small to
    move them) at each of VALID_BATCHES, against PyTorch's weighted mean over
    the set; True when every one matches and they agree."""
    x, y = classes_case(tmp, "valid", 11)
    xv, yv = classes_case(tmp, "valid", 12)
    xv, yv = xv[:50], yv[:50]
    with h5py.File(os.path.join(tmp, "vset.h5"), "w") as f:
        f.create_dataset("X", data=xv)
        f.create_dataset("y", data=yv)
    weights = ", ".join(str(w) for w in WEIGHTS)
    config, _ = write_case(
        tmp, "vcase", x, y,
        f"valid = vset.h5\n[model]\nlayers = block 16, linear 5\ngroups = 4\n[train]\n"
        f"batch_size = 16\nseed = 3\nclass_weights = {weights}\n")
    init = train(config, os.path.join(tmp, "vinit"), ["train.epochs=1", "train.lr=0.1"])
    model = weights_to_torch.load(init).double()
    with torch.no_grad():
        theirs = float(torch.nn.CrossEntropyLoss(weight=f32s(WEIGHTS))(
            model(torch.from_numpy(xv.astype(np.float64))), torch.from_numpy(yv.astype(np.int64))))
    ok, seen = True, []
    for b in VALID_BATCHES:
        out = os.path.join(tmp, f"vrun{b}")
        # lr 1e-30 moves no weight (a step of 1e-30 is below half an ulp of
        # every nonzero parameter): the validation sees the init weights.
        train(config, out, [f"model.init={init}", f"train.batch_size={b}", "train.lr=1e-30"])
        with open(os.path.join(out, "metrics.csv")) as f:
            ours = float(list(csv.DictReader(f))[-1]["valid_loss"])
        err = abs(ours - theirs) / max(abs(theirs), 1.0)
        print(f"valid loss under class_weights, batch {b}: ours {ours:.9g}, torch {theirs:.9g} "
              f"(relative {err:.3g})")
        ok &= err <= RTOL
        seen.append(ours)
    spread = (max(seen) - min(seen)) / max(abs(theirs), 1.0)
    print(f"valid loss over batch sizes {VALID_BATCHES}: spread {spread:.3g} (at most {SAME_RTOL})")
    return ok and spread <= SAME_RTOL


def main():
    torch.set_num_threads(1)
    ok = True
    with tempfile.TemporaryDirectory(prefix="fn_interop_loss_") as tmp:
        for i, (name, make, keys, criterion) in enumerate(CASES):
            ok &= run_case(tmp, i, name, make, keys, criterion)
        ok &= valid_case(tmp)
    if not ok:
        sys.exit(f"interop_loss: a loss differs from PyTorch by more than {RTOL} relative")
    print("interop_loss: the losses match PyTorch")


if __name__ == "__main__":
    main()
