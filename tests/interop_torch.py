#!/usr/bin/python3
"""interop_torch.py — predict's outputs against PyTorch's (ctest label
"interop"). Trains three small networks with ./train (digits with
cross-entropy; random regression data with mse, other groups, eps and
slope; float64 data with a feature of scale 1e6 under [data]
standardize), runs ./predict, rebuilds each network with
scripts/weights_to_torch.py and checks that the outputs agree within 1e-5
relative: |ours - torch| <= 1e-5 * max(|torch|, 1) elementwise, with torch
computing in float64 from the same float32 weights (and statistics).
predict --targets is checked against figures computed here from torch's
outputs (loss and accuracy; loss, MAE and R² per output). A network of
every layer kind (residual, relu, gelu, dropout, block, linear) is checked
the same way, and its training too: from one set of weights, a few
full-batch SGD steps in ./train and in PyTorch float64 (autograd through
the same modules, dropout as x * mask / (1 - p) with fusenet's masks,
drawn here by a NumPy Philox4x32-10 from their definition) give the same
parameters within 1e-5 relative. Then the module's
state_dict keys, a state_dict saved and loaded back, and its TorchScript
file run in a Python that cannot import the script.

Needs FN_BUILD_DIR and FN_SOURCE_DIR (set by ctest); exits non-zero on any
mismatch or failure."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import (BUILD, RTOL, SOURCE, largest_difference, sh,  # noqa: E402
                            sh_out, train, weights_to_torch, write_case)


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
    return write_case(tmp, "regression", x, y,
                      "[model]\nlayers = block 24, block 12, linear 6\ngroups = 4\neps = 1e-3\n"
                      "negative_slope = 0.2\n[train]\nloss = mse\nbatch_size = 32\nepochs = 3\n"
                      "lr = 0.05\nmomentum = 0.9\n")


def figure(text, label):
    """The number after `label` in predict's output."""
    at = text.index(label) + len(label)
    return float(text[at:].split()[0].rstrip(",%"))


def near(got, want, what, rel=1e-4):
    # predict prints 6 decimals from float32 outputs; torch's float64
    # outputs differ by < 1e-5 relative (compare), so figures agree to
    # ~1e-5 relative plus the printed rounding (5e-7).
    if not abs(got - want) <= rel * max(abs(want), 1e-2) + 1e-6:
        sys.exit(f"{what}: predict printed {got}, torch's outputs give {want}")


def evaluate_classes(weights, inputs, tmp):
    """predict --targets y --probabilities against figures from torch."""
    out = os.path.join(tmp, "classes.h5")
    text = sh_out(os.path.join(BUILD, "predict"), weights, inputs, out, "--device", "cpu",
                  "--targets", "y", "--probabilities")
    with h5py.File(inputs, "r") as f:
        x, y = np.asarray(f["X"], dtype=np.float32), np.asarray(f["y"])
    logits = weights_to_torch.run(weights_to_torch.load(weights).double(), x.astype(np.float64))
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    near(figure(text, "loss"), -logp[np.arange(len(y)), y].mean(), "cross-entropy")
    # Printed with 2 decimals: within 0.005 points.
    acc = 100 * (logits.argmax(1) == y).mean()
    if not abs(figure(text, "accuracy") - acc) <= 0.005 + 1e-9:
        sys.exit(f"accuracy: predict printed {figure(text, 'accuracy')}, torch's gives {acc}")
    with h5py.File(out, "r") as f:
        probs, classes = np.asarray(f["outputs"]), np.asarray(f["classes"])
    if classes.dtype != np.int32 or not (classes == logits.argmax(1)).all():
        sys.exit("classes: not the argmax of torch's logits")
    if not np.allclose(probs, np.exp(logp), rtol=1e-5, atol=1e-6):
        sys.exit("probabilities: not torch's softmax")
    print(f"predict --targets (classification): {text.splitlines()[0]}")


def evaluate_values(weights, inputs, tmp):
    """predict --targets t on regression data against figures from torch."""
    out = os.path.join(tmp, "values.h5")
    text = sh_out(os.path.join(BUILD, "predict"), weights, inputs, out, "--device", "cpu",
                  "--targets", "y")
    with h5py.File(inputs, "r") as f:
        x, t = np.asarray(f["X"], dtype=np.float32), np.asarray(f["y"], dtype=np.float64)
    ours = weights_to_torch.run(weights_to_torch.load(weights).double(), x.astype(np.float64))
    near(figure(text, "loss (mse)"), ((ours - t) ** 2).mean(), "mse")
    for k in range(t.shape[1]):
        line = text.split(f"output {k}:")[1]
        sst = ((t[:, k] - t[:, k].mean()) ** 2).sum()
        near(figure(line, "MAE"), np.abs(ours[:, k] - t[:, k]).mean(), f"MAE {k}")
        near(figure(line, "R2"), 1 - ((ours[:, k] - t[:, k]) ** 2).sum() / sst, f"R2 {k}")
    with h5py.File(out, "r") as f:
        if "classes" in f:
            sys.exit("regression: predict wrote 'classes'")
    print(f"predict --targets (regression): {text.splitlines()[0]}")


KINDS_LAYERS = ("residual 20 x 3, dropout 0.25, relu 16, gelu 12, residual 12, dropout 0.5, "
                "block 8, linear 6")
KINDS_SEED = 3


def philox_keeps(seed, layer, step, width, rows, p):
    """fusenet's dropout mask (include/fusenet/dropout.h) [rows, width]:
    element e = row * width + column is kept when word e % 4 of
    Philox4x32-10 at counter {e / 4 (64 bits), step (64 bits)}, key seed +
    layer * 0x9E3779B97F4A7C15 (mod 2^64), is at least floor(p 2^32)."""
    m32 = np.uint64(0xFFFFFFFF)
    key = (seed + layer * 0x9E3779B97F4A7C15) % 2**64
    e = np.arange(rows * width, dtype=np.uint64)
    block = e // np.uint64(4)
    c = [block & m32, block >> np.uint64(32), np.full_like(e, step & 0xFFFFFFFF),
         np.full_like(e, step >> 32)]
    k0, k1 = np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & m32, (p0 >> np.uint64(32)) ^ c[3] ^ k1,
             p0 & m32]
        k0 = (k0 + np.uint64(0x9E3779B9)) & m32
        k1 = (k1 + np.uint64(0xBB67AE85)) & m32
    words = np.choose((e % np.uint64(4)).astype(np.int64), c)
    return (words >= np.uint64(int(np.floor(p * 2.0**32)))).reshape(rows, width)


M64 = 2**64 - 1


def _splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def epoch_order(seed, epoch, rows):
    """The rows of a one-slab set in the order ./train takes them in an
    epoch (src/data/shuffle.c: Fisher-Yates from splitmix64, stream 1)."""
    _, a = _splitmix64(seed)
    _, b = _splitmix64(a ^ epoch)
    _, state = _splitmix64(b ^ 1)
    p = list(range(rows))
    for i in range(rows - 1, 0, -1):
        n = i + 1
        threshold = (2**64 - n) % n
        while True:
            state, r = _splitmix64(state)
            if r >= threshold:
                break
        j = r % n
        p[i], p[j] = p[j], p[i]
    return np.array(p)


class MaskedDropout(torch.nn.Module):
    """torch.nn.Dropout's training formula, x * mask / (1 - p), with the
    mask fusenet draws at the step set before each forward."""

    def __init__(self, p, layer):
        super().__init__()
        self.p, self.layer, self.step = p, layer, 0

    def forward(self, x):
        keep = philox_keeps(KINDS_SEED, self.layer, self.step, x.shape[1], x.shape[0], self.p)
        return x * torch.from_numpy(keep.astype(np.float64)) / (1.0 - self.p)


def kinds_data(tmp):
    """Regression data (20 inputs, 6 outputs) for a network of every kind."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((120, 20)).astype(np.float32)
    w = rng.standard_normal((20, 6)).astype(np.float32)
    path = os.path.join(tmp, "kinds.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=x)
        f.create_dataset("y", data=np.tanh(x @ w / 4).astype(np.float32))
    config = os.path.join(tmp, "kinds.ini")
    with open(config, "w") as f:
        f.write(f"[data]\ntrain = kinds.h5\n[model]\nlayers = {KINDS_LAYERS}\ngroups = 4\n"
                "[train]\nloss = mse\nbatch_size = 120\nepochs = 3\nlr = 0.02\n"
                f"momentum = 0.9\nseed = {KINDS_SEED}\n")
    return config, path


def kinds_train_steps(config, data, init, tmp, steps=3, lr=0.005, momentum=0.9):
    """./train's full-batch SGD steps from init against torch.optim.SGD's on
    the same modules in float64: every parameter within RTOL relative. The
    batch's rows in ./train's order (epoch_order), dropout's masks of each
    step. Few, small steps: ReLU's and LeakyReLU's kinks part float32 from
    float64 as soon as an input near 0 takes the other sign in one of them
    (here from the fourth step at lr 0.005: a jump of 7e-5 in one bias),
    which no tolerance from rounding covers."""
    ours = weights_to_torch.load(train(config, os.path.join(tmp, "kinds_steps"),
                                       (f"model.init={init}", f"train.epochs={steps}",
                                        f"train.lr={lr}", f"train.momentum={momentum}")))
    theirs = weights_to_torch.load(init).double()
    with h5py.File(data, "r") as f:
        x = torch.from_numpy(np.asarray(f["X"], dtype=np.float64))
        y = torch.from_numpy(np.asarray(f["y"], dtype=np.float64))
    # Each dropout layer's key is the initialisation stream's offset when it
    # was made: the values drawn before it (weight and bias of each layer
    # with parameters) and one for each dropout before it.
    offset, dropouts = 0, []
    for name, module in list(theirs.named_children()):
        if isinstance(module, torch.nn.Dropout):
            masked = MaskedDropout(module.p, offset)
            setattr(theirs, name, masked)
            dropouts.append(masked)
            offset += 1
        else:  # the Linear's weight and bias are drawn; GroupNorm's are constants
            linear = getattr(module, "linear", module)
            offset += linear.weight.numel() + linear.bias.numel()
    if len(dropouts) != 2:
        sys.exit(f"kinds network: {len(dropouts)} dropout layers, expected 2")
    opt = torch.optim.SGD(theirs.parameters(), lr=float(np.float32(lr)),
                          momentum=float(np.float32(momentum)))
    for step in range(steps):  # one batch an epoch, its rows in the epoch's order
        for d in dropouts:
            d.step = step
        order = torch.from_numpy(epoch_order(KINDS_SEED, step, x.shape[0]))
        opt.zero_grad()
        torch.nn.functional.mse_loss(theirs(x[order]), y[order]).backward()
        opt.step()
    kinds = {type(m).__name__ for m in theirs.children()}
    if not {"Residual", "Dense", "Block", "Linear", "MaskedDropout"} <= kinds:
        sys.exit(f"kinds network: modules {sorted(kinds)}")
    worst, where = largest_difference(ours, theirs)
    print(f"kinds: {steps} SGD steps, largest relative parameter difference {worst:.3g} at {where}")
    if not worst <= RTOL:
        sys.exit(f"kinds: parameters after {steps} steps differ from PyTorch by more than {RTOL}")


def standardized_data(tmp):
    """float64 inputs, feature 2 of scale 1e6 about 3e6, 3 classes."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((400, 6))
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 3] > 0.5)
    x[:, 2] = x[:, 2] * 1e6 + 3e6
    return write_case(tmp, "scaled", x, y,
                      "standardize = true\n[model]\nlayers = block 16, linear 3\ngroups = 4\n"
                      "[train]\nbatch_size = 32\nepochs = 4\nlr = 0.05\nmomentum = 0.9\n")


KEYS = ["input_norm.mean", "input_norm.std", "layer0.linear.weight", "layer0.linear.bias",
        "layer0.norm.weight", "layer0.norm.bias", "layer1.weight", "layer1.bias"]


def module_round_trips(weights, inputs, tmp):
    """The documented state_dict keys; a saved state_dict loads back into a
    fresh module; the TorchScript file runs where the script is unknown."""
    model = weights_to_torch.load(weights)
    state = model.state_dict()
    if list(state) != KEYS:
        sys.exit(f"state_dict keys {list(state)}, documented {KEYS}")
    with h5py.File(weights, "r") as f:
        if not np.array_equal(state["input_norm.std"].numpy(), f["input_norm/std"][...]):
            sys.exit("input_norm.std is not the file's /input_norm/std")
    with h5py.File(inputs, "r") as f:
        x = np.asarray(f["X"], dtype=np.float32)
    want = weights_to_torch.run(model, x)
    saved = os.path.join(tmp, "state.pt")
    torch.save(state, saved)
    fresh = weights_to_torch.load(weights)
    with torch.no_grad():
        for p in fresh.parameters():
            p.zero_()
    fresh.load_state_dict(torch.load(saved))
    if not np.array_equal(weights_to_torch.run(fresh, x), want):
        sys.exit("a state_dict saved and loaded back gives other outputs")
    script = os.path.join(tmp, "model.pt")
    weights_to_torch.save_torchscript(model, script)
    npy = os.path.join(tmp, "x.npy")
    np.save(npy, x)
    code = ("import sys, numpy as np, torch\n"
            "assert 'weights_to_torch' not in sys.modules\n"
            f"m = torch.jit.load({script!r})\n"
            f"y = m(torch.from_numpy(np.load({npy!r}))).detach().numpy()\n"
            f"np.save({os.path.join(tmp, 'y.npy')!r}, y)\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp)
    if not np.array_equal(np.load(os.path.join(tmp, "y.npy")), want):
        sys.exit("the TorchScript module gives other outputs")
    print("torch module: state_dict keys as documented; state_dict and TorchScript round trips")


def main():
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="fn_interop_") as tmp:
        digits = train(os.path.join(SOURCE, "data", "example.ini"), os.path.join(tmp, "digits"),
                       ["train.epochs=2"])
        compare("digits", digits, os.path.join(SOURCE, "data", "digits_valid.h5"), tmp)
        config, data = regression_data(tmp)
        regression = train(config, os.path.join(tmp, "regression"))
        compare("regression", regression, data, tmp)
        evaluate_values(regression, data, tmp)
        evaluate_classes(digits, os.path.join(SOURCE, "data", "digits_valid.h5"), tmp)
        config, data = kinds_data(tmp)
        kinds = train(config, os.path.join(tmp, "kinds"))
        compare("kinds", kinds, data, tmp)
        kinds_train_steps(config, data, kinds, tmp)
        config, data = standardized_data(tmp)
        scaled = train(config, os.path.join(tmp, "scaled"))
        compare("standardized", scaled, data, tmp)
        module_round_trips(scaled, data, tmp)
    print("interop: predict matches PyTorch")


if __name__ == "__main__":
    main()
