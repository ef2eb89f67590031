#!/usr/bin/python3
"""interop_torch.py — predict's outputs against PyTorch's (ctest label
"interop"). Trains two small networks with ./train (digits with
cross-entropy; random regression data with mse, other groups, eps and
slope), runs ./predict, rebuilds each network with
scripts/weights_to_torch.py and checks that the outputs agree within 1e-5
relative: |ours - torch| <= 1e-5 * max(|torch|, 1) elementwise, with torch
computing in float64 from the same float32 weights.

Needs FN_BUILD_DIR and FN_SOURCE_DIR (set by ctest); exits non-zero on any
mismatch or failure."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

RTOL = 1e-5

SOURCE = os.environ["FN_SOURCE_DIR"]
BUILD = os.environ["FN_BUILD_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import weights_to_torch  # noqa: E402


def sh(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")


def train(config, out, *sets):
    args = [os.path.join(BUILD, "train"), config, "--set", f"output.dir={out}",
            "--set", "run.device=cpu"]
    for s in sets:
        args += ["--set", s]
    sh(*args)
    return os.path.join(out, "weights.h5")


def compare(name, weights, inputs, tmp):
    outputs = os.path.join(tmp, f"{name}_outputs.h5")
    sh(os.path.join(BUILD, "predict"), weights, inputs, outputs, "--device", "cpu",
       "--batch", "50")
    with h5py.File(outputs, "r") as f:
        ours = np.asarray(f["outputs"])
    with h5py.File(inputs, "r") as f:
        x = np.asarray(f["X"], dtype=np.float32)
    model = weights_to_torch.load(weights).double()
    theirs = weights_to_torch.run(model, x.astype(np.float64))
    if ours.shape != theirs.shape or ours.dtype != np.float32:
        sys.exit(f"{name}: outputs {ours.shape} {ours.dtype}, torch {theirs.shape}")
    err = np.abs(ours.astype(np.float64) - theirs) / np.maximum(np.abs(theirs), 1.0)
    worst = np.unravel_index(np.argmax(err), err.shape)
    print(f"{name}: {ours.shape[0]} rows, largest relative difference {err[worst]:.3g} "
          f"at {tuple(int(i) for i in worst)} (ours {ours[worst]:.9g}, torch {theirs[worst]:.9g})")
    if not err[worst] <= RTOL:
        sys.exit(f"{name}: outputs differ from PyTorch by more than {RTOL} relative")


def regression_data(tmp):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 20)).astype(np.float32)
    w = rng.standard_normal((20, 6)).astype(np.float32)
    y = np.tanh(x @ w).astype(np.float32)
    path = os.path.join(tmp, "regression.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=x)
        f.create_dataset("y", data=y)
    config = os.path.join(tmp, "regression.ini")
    with open(config, "w") as f:
        f.write("[data]\ntrain = regression.h5\n[model]\n"
                "layers = block 24, block 12, linear 6\ngroups = 4\neps = 1e-3\n"
                "negative_slope = 0.2\n[train]\nloss = mse\nbatch_size = 32\nepochs = 3\n"
                "lr = 0.05\nmomentum = 0.9\n")
    return config, path


def main():
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="fn_interop_") as tmp:
        digits = train(os.path.join(SOURCE, "data", "example.ini"), os.path.join(tmp, "digits"),
                       "train.epochs=2")
        compare("digits", digits, os.path.join(SOURCE, "data", "digits_valid.h5"), tmp)
        config, data = regression_data(tmp)
        regression = train(config, os.path.join(tmp, "regression"))
        compare("regression", regression, data, tmp)
    print("interop: predict matches PyTorch")


if __name__ == "__main__":
    main()
