#!/usr/bin/python3
"""weights_to_torch.py — a fusenet weights.h5 (docs/formats.md) as a
PyTorch module, computing what `predict` computes.

As a library (put scripts/ on sys.path, or copy this one file):

    import weights_to_torch
    model = weights_to_torch.load("runs/x/weights.h5")   # a torch.nn.Module, eval mode
    y = model(torch.from_numpy(x32))                    # x32: float32 [N, in]

`load(path)` returns a torch.nn.Sequential of named children, in order:

    input_norm   Standardize: (x - mean) / std, only when the file has
                 /input_norm ([data] standardize = true)
    layer0 ...   one per layer group: a Block (Linear -> GroupNorm ->
                 LeakyReLU -> x + x), a Residual (the same with the input
                 added: x + Block(x)), a Dense (Linear -> ReLU, or Linear ->
                 GELU, exact), a torch.nn.Dropout(p) (the identity in eval
                 mode, as in predict) or a torch.nn.Linear
    target_norm  Unstandardize: y * std + mean, only when the file has
                 /target_norm ([data] standardize_targets = true)

so its state_dict() keys are, with I the layer's index:

    input_norm.mean, input_norm.std      float32 [in]        (buffers)
    layerI.linear.weight                  float32 [out, in]   block, residual, relu, gelu: /layerI/weight
    layerI.linear.bias                    float32 [out]       block, residual, relu, gelu: /layerI/bias
    layerI.norm.weight, layerI.norm.bias  float32 [out]       block, residual: /layerI/gamma, beta
    layerI.weight, layerI.bias            float32 [out, in], [out]   linear layer
    (a dropout layer has no keys)
    target_norm.mean, target_norm.std    float32 [out]       (buffers)

`model.state_dict()` saved with torch.save loads back into the module
`load` builds (load_state_dict). Pickling the module itself (torch.save of
the module) refers to this file's classes, so unpickling needs
weights_to_torch importable; for a file that needs nothing but PyTorch,
`save_torchscript(model, path)` (or `--torchscript out.pt`) writes a
TorchScript module that `torch.jit.load(path)` runs anywhere.

As a program:

    /usr/bin/python3 scripts/weights_to_torch.py weights.h5
    /usr/bin/python3 scripts/weights_to_torch.py weights.h5 \\
        --inputs inputs.h5 [--dataset X] [--outputs torch_outputs.h5] [--torchscript m.pt]

prints the module; with --inputs runs it on a dataset of any numeric type
(read as float32, as fusenet reads it) and with --outputs writes the
results as dataset 'outputs'. Each file is written to a temporary of its
own beside it and renamed into place. Uses Debian's python3-torch and python3-h5py
(hence /usr/bin/python3).
"""
import argparse
import collections
import os
import sys
import tempfile

import h5py
import numpy as np
import torch

FORMAT = "fusenet-weights"
VERSIONS = (1, 2, 3)  # 2: the file holds /input_norm; 3: /target_norm (and maybe /input_norm)


class Standardize(torch.nn.Module):
    """(x - mean) / std per input column: the training set's statistics
    under [data] standardize, applied as fusenet applies them (a float32
    subtraction, then a division)."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, x):
        return (x - self.mean) / self.std


class Unstandardize(torch.nn.Module):
    """y * std + mean per output column: the network's outputs back in the
    targets' units under [data] standardize_targets, as predict computes
    them (a float32 multiplication, then an addition)."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, y):
        return y * self.std + self.mean


class Block(torch.nn.Module):
    """fusenet's block: y = 2 * leaky_relu(group_norm(x W^T + b)), the x2
    written x + x as the design writes it."""

    def __init__(self, n_in, n_out, groups, eps, negative_slope):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)
        self.norm = torch.nn.GroupNorm(groups, n_out, eps=eps)
        self.act = torch.nn.LeakyReLU(negative_slope)

    def forward(self, x):
        y = self.act(self.norm(self.linear(x)))
        return y + y


class Residual(Block):
    """fusenet's residual layer: y = x + 2 * leaky_relu(group_norm(x W^T +
    b)), a Block whose input (of its own width) is added to its output."""

    def forward(self, x):
        y = self.act(self.norm(self.linear(x)))
        return x + (y + y)


class Dense(torch.nn.Module):
    """fusenet's relu and gelu layers: Linear, then torch.nn.ReLU or
    torch.nn.GELU() (exact, erf)."""

    def __init__(self, n_in, n_out, kind):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)
        self.act = torch.nn.ReLU() if kind == "relu" else torch.nn.GELU()

    def forward(self, x):
        return self.act(self.linear(x))


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _tensor(group, name, shape):
    data = np.asarray(group[name], dtype=np.float32)
    if data.shape != shape:
        raise ValueError(f"{group.file.filename}: group '{group.name.lstrip('/')}': "
                         f"dataset '{name}' has shape {data.shape}, expected {shape}")
    return torch.from_numpy(data.copy())


def _fill_linear(linear, group, n_in, n_out):
    with torch.no_grad():
        linear.weight.copy_(_tensor(group, "weight", (n_out, n_in)))
        linear.bias.copy_(_tensor(group, "bias", (n_out,)))
    return linear


def _block(group, n_in, n_out, cls=Block):
    attrs = group.attrs
    if cls is Residual and n_in != n_out:
        raise ValueError(f"{group.file.filename}: group '{group.name.lstrip('/')}': a residual "
                         f"layer of {n_in} inputs and {n_out} outputs (they must be equal)")
    block = cls(n_in, n_out, int(attrs["groups"]), float(attrs["eps"]),
                float(attrs["negative_slope"]))
    _fill_linear(block.linear, group, n_in, n_out)
    with torch.no_grad():
        block.norm.weight.copy_(_tensor(group, "gamma", (n_out,)))
        block.norm.bias.copy_(_tensor(group, "beta", (n_out,)))
    return block


def _norm(f, name, n, kind):
    group = f[name]
    mean, std = _tensor(group, "mean", (n,)), _tensor(group, "std", (n,))
    if not bool(torch.all(std > 0)):
        raise ValueError(f"{f.filename}: group '{name}': dataset 'std' holds a value <= 0")
    return kind(mean, std)


def _check_version(path, f, version):
    """Version 1: neither group; 2: /input_norm; 3: /target_norm, with or
    without /input_norm (docs/formats.md)."""
    if (version == 3) != ("target_norm" in f):
        raise ValueError(f"{path}: format_version {version} "
                         f"{'needs' if version == 3 else 'has no'} group 'target_norm'")
    if version < 3 and (version == 2) != ("input_norm" in f):
        raise ValueError(f"{path}: format_version {version} "
                         f"{'needs' if version == 2 else 'has no'} group 'input_norm'")


def load(path):
    """The torch.nn.Module of a weights file (see the module's docstring for
    its children and state_dict keys), in float32 and eval mode."""
    with h5py.File(path, "r") as f:
        fmt, version = _text(f.attrs.get("format", "")), int(f.attrs.get("format_version", -1))
        if fmt != FORMAT or version not in VERSIONS:
            raise ValueError(f"{path}: format '{fmt}' version {version}, "
                             f"expected '{FORMAT}' version 1, 2 or 3")
        _check_version(path, f, version)
        children = collections.OrderedDict()
        for name in _text(f.attrs["layers"]).split(","):
            group = f[name]
            kind = _text(group.attrs["kind"])
            n_in, n_out = int(group.attrs["in_features"]), int(group.attrs["out_features"])
            if not children and "input_norm" in f:
                children["input_norm"] = _norm(f, "input_norm", n_in, Standardize)
            if kind == "block":
                children[name] = _block(group, n_in, n_out)
            elif kind == "residual":
                children[name] = _block(group, n_in, n_out, Residual)
            elif kind in ("relu", "gelu"):
                dense = Dense(n_in, n_out, kind)
                _fill_linear(dense.linear, group, n_in, n_out)
                children[name] = dense
            elif kind == "dropout":
                p = float(group.attrs["p"])
                if n_in != n_out or not 0.0 <= p < 1.0:
                    raise ValueError(f"{path}: group '{name}': dropout of {n_in} inputs, "
                                     f"{n_out} outputs and p {p}")
                children[name] = torch.nn.Dropout(p)
            elif kind == "linear":
                children[name] = _fill_linear(torch.nn.Linear(n_in, n_out), group, n_in, n_out)
            else:
                raise ValueError(f"{path}: group '{name}': unknown kind '{kind}'")
        if "target_norm" in f:
            children["target_norm"] = _norm(f, "target_norm", n_out, Unstandardize)
    return torch.nn.Sequential(children).eval()


def write_atomically(path, write):
    """Calls write(f) on a new temporary file beside path, unique to this
    process and created exclusively (so no file or link already there is
    written through), then fsyncs it and renames it over path; on failure
    the temporary is removed and path is as it was."""
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(path) or ".")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 is for the temporary alone
        with os.fdopen(fd, "w+b") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)


def save_torchscript(model, path):
    """Writes model as TorchScript: torch.jit.load(path) needs only PyTorch."""
    scripted = torch.jit.script(model)
    write_atomically(path, lambda f: torch.jit.save(scripted, f))


def run(model, inputs):
    """Forward pass of a float array [N, in]; returns a numpy array."""
    with torch.no_grad():
        return model(torch.from_numpy(np.ascontiguousarray(inputs))).numpy()


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("weights")
    parser.add_argument("--inputs", help="HDF5 file of inputs to run the module on")
    parser.add_argument("--dataset", default="X", help="inputs dataset (default X)")
    parser.add_argument("--outputs", help="HDF5 file to write dataset 'outputs' to")
    parser.add_argument("--torchscript", help="write the module as TorchScript to this file")
    args = parser.parse_args(argv)
    try:
        model = load(args.weights)
    except (OSError, KeyError, ValueError) as e:
        print(f"weights_to_torch: {e}", file=sys.stderr)
        return 1
    print(model)
    if args.torchscript:
        save_torchscript(model, args.torchscript)
        print(f"torchscript: {args.torchscript}")
    if args.inputs:
        with h5py.File(args.inputs, "r") as f:
            x = np.asarray(f[args.dataset], dtype=np.float32)
        y = run(model, x)
        if args.outputs:
            def write_outputs(handle):
                with h5py.File(handle, "w") as f:
                    f.create_dataset("outputs", data=y.astype(np.float32))
            write_atomically(args.outputs, write_outputs)
        print(f"outputs: {y.shape[0]} rows of {y.shape[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
