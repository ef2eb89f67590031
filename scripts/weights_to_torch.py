#!/usr/bin/python3
"""weights_to_torch.py — builds the torch.nn.Sequential equivalent to a
fusenet weights.h5 (README "Weights format") and optionally runs it.

Each block becomes Linear(in, out) -> GroupNorm(groups, out, eps) ->
LeakyReLU(negative_slope) -> Double() (x + x); each linear layer a Linear.

    /usr/bin/python3 scripts/weights_to_torch.py weights.h5
    /usr/bin/python3 scripts/weights_to_torch.py weights.h5 \\
        --inputs inputs.h5 [--dataset X] --outputs torch_outputs.h5

Uses Debian's python3-torch and python3-h5py (hence /usr/bin/python3).
"""
import argparse
import sys

import h5py
import numpy as np
import torch

FORMAT = "fusenet-weights"
VERSION = 1


class Double(torch.nn.Module):
    """y = x + x: the block's final x2, as the design writes it."""

    def forward(self, x):
        return x + x


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _tensor(group, name, shape):
    data = np.asarray(group[name], dtype=np.float32)
    if data.shape != shape:
        raise ValueError(f"{group.file.filename}: group '{group.name.lstrip('/')}': "
                         f"dataset '{name}' has shape {data.shape}, expected {shape}")
    return torch.from_numpy(data.copy())


def _linear(group, n_in, n_out):
    linear = torch.nn.Linear(n_in, n_out)
    with torch.no_grad():
        linear.weight.copy_(_tensor(group, "weight", (n_out, n_in)))
        linear.bias.copy_(_tensor(group, "bias", (n_out,)))
    return linear


def _block(group, n_in, n_out):
    attrs = group.attrs
    norm = torch.nn.GroupNorm(int(attrs["groups"]), n_out, eps=float(attrs["eps"]))
    with torch.no_grad():
        norm.weight.copy_(_tensor(group, "gamma", (n_out,)))
        norm.bias.copy_(_tensor(group, "beta", (n_out,)))
    return [_linear(group, n_in, n_out), norm,
            torch.nn.LeakyReLU(float(attrs["negative_slope"])), Double()]


def load(path):
    """The torch.nn.Sequential of a weights file, in float32, eval mode."""
    with h5py.File(path, "r") as f:
        fmt, version = _text(f.attrs.get("format", "")), int(f.attrs.get("format_version", -1))
        if fmt != FORMAT or version != VERSION:
            raise ValueError(f"{path}: format '{fmt}' version {version}, "
                             f"expected '{FORMAT}' version {VERSION}")
        modules = []
        for name in _text(f.attrs["layers"]).split(","):
            group = f[name]
            kind = _text(group.attrs["kind"])
            n_in, n_out = int(group.attrs["in_features"]), int(group.attrs["out_features"])
            if kind == "block":
                modules += _block(group, n_in, n_out)
            elif kind == "linear":
                modules.append(_linear(group, n_in, n_out))
            else:
                raise ValueError(f"{path}: group '{name}': unknown kind '{kind}'")
    return torch.nn.Sequential(*modules).eval()


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
    args = parser.parse_args(argv)
    try:
        model = load(args.weights)
    except (OSError, KeyError, ValueError) as e:
        print(f"weights_to_torch: {e}", file=sys.stderr)
        return 1
    print(model)
    if args.inputs:
        with h5py.File(args.inputs, "r") as f:
            x = np.asarray(f[args.dataset], dtype=np.float32)
        y = run(model, x)
        if args.outputs:
            with h5py.File(args.outputs, "w") as f:
                f.create_dataset("outputs", data=y.astype(np.float32))
        print(f"outputs: {y.shape[0]} rows of {y.shape[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
