"""interop_common.py — what the interop tests (interop_torch.py,
interop_optim.py, interop_loss.py) share: the tolerance, the build and
source trees (FN_BUILD_DIR, FN_SOURCE_DIR, set by ctest), the script that
loads a weights file into PyTorch, and running the programs."""
import os
import subprocess
import sys

import h5py
import numpy as np

RTOL = 1e-5  # |ours - torch| <= RTOL * max(|torch|, 1) elementwise

SOURCE = os.environ["FN_SOURCE_DIR"]
BUILD = os.environ["FN_BUILD_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import weights_to_torch  # noqa: E402,F401


def sh_out(*args):
    """Runs a command; its stdout, or the test's exit with its output."""
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


def sh(*args):
    sh_out(*args)


def train(config, out, sets=()):
    """./train config on the CPU into out, with --set for each of sets;
    the weights' path."""
    args = [os.path.join(BUILD, "train"), config, "--set", f"output.dir={out}",
            "--set", "run.device=cpu"]
    for s in sets:
        args += ["--set", s]
    sh(*args)
    return os.path.join(out, "weights.h5")


def write_case(tmp, name, x, y, settings):
    """<tmp>/<name>.h5 with datasets X and y, and <tmp>/<name>.ini training
    on it: "[data]\ntrain = <name>.h5\n" followed by settings (the rest of
    [data] first). The config's and the set's paths."""
    path = os.path.join(tmp, f"{name}.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=x)
        f.create_dataset("y", data=y)
    config = os.path.join(tmp, f"{name}.ini")
    with open(config, "w") as f:
        f.write(f"[data]\ntrain = {name}.h5\n{settings}")
    return config, path


def largest_difference(ours, theirs):
    """The largest |ours - torch| / max(|torch|, 1) over the parameters of
    two modules of one architecture (ours: loaded from our weights;
    theirs: torch's), and where: "name(index) (ours x, torch y)"."""
    worst, where = 0.0, ""
    for (name, p), q in zip(theirs.named_parameters(), ours.parameters()):
        a, b = q.detach().double().numpy(), p.detach().numpy()
        err = np.abs(a - b) / np.maximum(np.abs(b), 1.0)
        i = np.unravel_index(np.argmax(err), err.shape)
        if err[i] > worst:
            worst = float(err[i])
            where = f"{name}{tuple(int(j) for j in i)} (ours {a[i]:.9g}, torch {b[i]:.9g})"
    return worst, where
