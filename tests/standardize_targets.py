"""standardize_targets.py — [data] standardize_targets on scikit-learn's
diabetes set (ctest label "python": needs scikit-learn). Its targets run
from 25 to 346; written the way scikit-learn hands them over (X float64
[N, 10], y float64 [N]), they are read as [N, 1] (with a notice). Checks:

  - without standardize_targets the run fails with a non-finite loss (the
    squared errors of raw targets overflow the first steps' gradients);
  - with it the run finishes, weights.h5 holds /target_norm (the training
    targets' mean and population std, format_version 3), and predict's
    outputs are in the targets' units: R^2 on held-out rows above 0.3 (a
    linear model gets about 0.45);
  - scripts/weights_to_torch.py's module (which ends by undoing the
    standardisation) gives predict's outputs within 1e-5 relative.

Needs FN_BUILD_DIR and FN_SOURCE_DIR (set by ctest); exits non-zero on any
failure."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
from sklearn.datasets import load_diabetes

SOURCE = os.environ["FN_SOURCE_DIR"]
BUILD = os.environ["FN_BUILD_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import weights_to_torch  # noqa: E402

CONFIG = """[data]
train = train.h5
valid = valid.h5
standardize = true
[model]
layers = block 32, linear 1
groups = 4
[train]
loss = mse
batch_size = 32
epochs = 30
lr = 0.01
momentum = 0.9
[run]
device = cpu
log_every = 0
"""


def run(*args):
    return subprocess.run(args, capture_output=True, text=True)


def main():
    x, y = load_diabetes(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(y))
    train_rows, valid_rows = order[:350], order[350:]
    with tempfile.TemporaryDirectory() as tmp:
        for name, rows in (("train.h5", train_rows), ("valid.h5", valid_rows)):
            with h5py.File(os.path.join(tmp, name), "w") as f:
                f["X"], f["y"] = x[rows], y[rows]
        config = os.path.join(tmp, "diabetes.ini")
        with open(config, "w") as f:
            f.write(CONFIG)
        raw = run(os.path.join(BUILD, "train"), config, "--set", f"output.dir={tmp}/raw")
        if raw.returncode == 0 or "non-finite" not in raw.stderr:
            sys.exit(f"raw targets: expected a non-finite loss, got exit {raw.returncode}:\n"
                     f"{raw.stdout}{raw.stderr}")
        print("raw targets:", raw.stderr.strip())
        std = run(os.path.join(BUILD, "train"), config, "--set", f"output.dir={tmp}/std",
                  "--set", "data.standardize_targets=true")
        if std.returncode != 0:
            sys.exit(f"standardize_targets: exit {std.returncode}:\n{std.stdout}{std.stderr}")
        if "dataset 'y' [350] float64 read as [350, 1]" not in std.stdout:
            sys.exit(f"no notice of the targets' reading:\n{std.stdout}")
        weights = os.path.join(tmp, "std", "weights.h5")
        with h5py.File(weights, "r") as f:
            version = int(f.attrs["format_version"])
            mean, sd = f["target_norm/mean"][0], f["target_norm/std"][0]
        want_mean, want_sd = y[train_rows].mean(), y[train_rows].std()
        print(f"target_norm: mean {mean:.4f} (targets {want_mean:.4f}), std {sd:.4f} "
              f"({want_sd:.4f}); format_version {version}")
        if version != 3 or abs(mean - want_mean) > 1e-4 * want_mean or \
                abs(sd - want_sd) > 1e-4 * want_sd:
            sys.exit("target_norm does not hold the training targets' statistics")
        outputs = os.path.join(tmp, "outputs.h5")
        pred = run(os.path.join(BUILD, "predict"), weights, os.path.join(tmp, "valid.h5"),
                   outputs, "--targets", "y", "--device", "cpu")
        if pred.returncode != 0:
            sys.exit(f"predict: exit {pred.returncode}:\n{pred.stdout}{pred.stderr}")
        with h5py.File(outputs, "r") as f:
            ours = np.asarray(f["outputs"])[:, 0]
        truth = y[valid_rows]
        r2 = 1 - ((ours - truth) ** 2).sum() / ((truth - truth.mean()) ** 2).sum()
        print(f"predict on {len(truth)} held-out rows: outputs {ours.min():.1f} to "
              f"{ours.max():.1f}, R^2 {r2:.3f}")
        if not r2 > 0.3:
            sys.exit("the network did not learn the raw targets")
        model = weights_to_torch.load(weights).double()
        theirs = weights_to_torch.run(model, x[valid_rows].astype(np.float32).astype(np.float64))
        err = np.max(np.abs(ours - theirs[:, 0]) / np.maximum(np.abs(theirs[:, 0]), 1.0))
        print(f"weights_to_torch: largest relative difference {err:.3g}")
        if not err <= 1e-5:
            sys.exit("weights_to_torch's outputs differ from predict's")


if __name__ == "__main__":
    main()
