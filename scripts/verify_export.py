#!/usr/bin/env python3
"""verify_export.py — runs a model fusenet exported on the rows its check
file holds and compares with fusenet's own outputs for them.

    build/pyenv/bin/python scripts/verify_export.py model.onnx [--check FILE]
    build/pyenv/bin/python scripts/verify_export.py model.safetensors

The check file (`export --check data.h5`, default "<model>.check.h5")
holds `inputs` (rows of a data file, before standardisation) and
`outputs` (fusenet's, CPU, fp32). An .onnx model runs in ONNX Runtime (CPU),
a .safetensors model in PyTorch (the module of scripts/weights_to_torch.py,
filled by load_state_dict). Every output element's difference is held
against its bound (docs/formats.md, "How an export is checked"): the
float32 rounding error two implementations of the network can each make,
propagated to first order through each layer from the model's own
parameters in float64. Prints the largest difference, its bound and the
largest ratio; exit 0 when every difference is within its bound, 1 when
one is not, 2 on a usage error or a file that is missing, damaged or not
what it should be (one line naming the file and the problem: the check
file's datasets, their shapes and dtypes, the model's metadata, tensors
and their shapes are all checked before anything runs).

Needs onnx and onnxruntime, or safetensors, from the Python environment
scripts/python_env.sh makes (build/pyenv), and numpy, h5py and torch
(Debian's, which that environment sees).
"""
import argparse
import math
import os
import sys

import h5py
import numpy as np

U = 2.0 ** -24  # float32's unit roundoff
# The error of a float32 erf, in units of U relative to |erf(x)|: glibc
# documents erff within 1 ulp (at most 2 U); glibc's erff and ONNX
# Runtime's Erf both measure below 1.4 U over millions of arguments in
# [-6, 6]. 4 U (2 ulp) holds for each with room.
ERF_ULPS = 4
KINDS = ("block", "residual", "relu", "gelu", "dropout", "linear")


def gamma(n):
    """The worst-case relative error of a float32 sum of n rounded terms
    (Higham, Accuracy and Stability of Numerical Algorithms, 3.1)."""
    return n * U / (1 - n * U)


class Bad(Exception):
    """A missing, damaged or foreign input: one line for the user, exit 2."""


def one_line(e):
    return " ".join(str(e).split()) or type(e).__name__


def read_check(path):
    """The check file's inputs and outputs, float32 [rows, columns] each,
    the same rows, every value finite."""
    if not os.path.isfile(path):
        raise Bad(f"{path}: {'not a file' if os.path.exists(path) else 'no such file'} "
                  "(the check file: export --check data.h5 writes <model>.check.h5)")
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # h5py raises OSError, sometimes others, for damaged files
        raise Bad(f"{path}: not a readable HDF5 file ({one_line(e)})") from None
    with f:
        got = [check_dataset(path, f, name) for name in ("inputs", "outputs")]
    x, y = got
    if x.shape[0] != y.shape[0]:
        raise Bad(f"{path}: 'inputs' has {x.shape[0]} rows but 'outputs' {y.shape[0]}")
    return x, y


def check_dataset(path, f, name):
    if name not in f or not isinstance(f[name], h5py.Dataset):
        raise Bad(f"{path}: no dataset '{name}' (a check file holds 'inputs' and 'outputs', "
                  "as export --check writes them)")
    d = f[name]
    if d.dtype.kind not in "iuf":
        raise Bad(f"{path}: dataset '{name}' is {d.dtype}, expected numbers")
    if d.ndim != 2 or d.shape[0] < 1 or d.shape[1] < 1:
        raise Bad(f"{path}: dataset '{name}' has shape {list(d.shape)}, expected "
                  "[rows, columns] with at least one of each")
    try:
        a = np.asarray(d[()], dtype=np.float64)
    except Exception as e:
        raise Bad(f"{path}: dataset '{name}' is not readable ({one_line(e)})") from None
    bad = ~np.isfinite(a) | (np.abs(a) > np.finfo(np.float32).max)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise Bad(f"{path}: dataset '{name}' row {r} column {c} is {a[r, c]}, expected a "
                  "finite float32")
    return a.astype(np.float32)


def need(package):
    """Imports a package this check needs; its absence is one line (exit 2)."""
    import importlib
    try:
        return importlib.import_module(package)
    except ImportError as e:
        raise Bad(f"needs {package} ({one_line(e)}): run with the Python environment "
                  "scripts/python_env.sh makes (build/pyenv/bin/python)") from None


def load_onnx(path):
    onnx = need("onnx")
    numpy_helper = need("onnx.numpy_helper")
    try:
        model = onnx.load(path)
        meta = {p.key: p.value for p in model.metadata_props}
        tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    except Exception as e:  # protobuf's DecodeError and others: a damaged file
        raise Bad(f"{path}: not a readable ONNX model ({one_line(e)})") from None
    return meta, tensors


def load_safetensors(path):
    safe_open = need("safetensors").safe_open
    load_file = need("safetensors.numpy").load_file
    try:
        with safe_open(path, "np") as f:
            meta = f.metadata() or {}
        return meta, load_file(path)
    except Exception as e:  # SafetensorError and others: a damaged file
        raise Bad(f"{path}: not a readable safetensors file ({one_line(e)})") from None


def meta_value(meta, path, key, kind):
    """meta[key] as `kind` (int or float), or one line naming the key."""
    if key not in meta:
        raise Bad(f"{path}: no metadata '{key}'")
    try:
        v = kind(meta[key])
    except (TypeError, ValueError):
        raise Bad(f"{path}: metadata '{key}' is {meta[key]!r}, expected "
                  f"{'an integer' if kind is int else 'a number'}") from None
    if kind is float and not math.isfinite(v):
        raise Bad(f"{path}: metadata '{key}' is {meta[key]!r}, expected a finite number")
    return v


def architecture(meta, path):
    """[(kind, prefix, attrs)] of the model's layers, from its metadata;
    attrs holds the layer's in and out features too."""
    if meta.get("format") != "fusenet-export" or meta.get("format_version") != "1":
        raise Bad(f"{path}: not a fusenet export of format version 1 (metadata "
                  f"format {meta.get('format')!r}, version {meta.get('format_version')!r})")
    n = meta_value(meta, path, "n_layers", int)
    if not 1 <= n <= 10000:  # a bound on the loop below, far above any real network
        raise Bad(f"{path}: metadata 'n_layers' is {n}, expected 1 to 10000")
    layers = []
    for i in range(n):
        p = f"layer{i}"
        if f"{p}.kind" not in meta:
            raise Bad(f"{path}: no metadata '{p}.kind'")
        kind = meta[f"{p}.kind"]
        if kind not in KINDS:
            raise Bad(f"{path}: layer {i}: kind {kind!r} has no error bound in "
                      f"{os.path.basename(__file__)}")
        attrs = {}
        if kind in ("block", "residual"):
            attrs = {"groups": meta_value(meta, path, f"{p}.groups", int),
                     "eps": meta_value(meta, path, f"{p}.eps", float),
                     "slope": meta_value(meta, path, f"{p}.negative_slope", float)}
        layers.append((kind, p, attrs))
    return layers


def expected_tensors(meta, tensors, path, layers):
    """{name: shape} the metadata's architecture implies, and the network's
    input and output widths, its layers chained."""
    n_in = meta_value(meta, path, "in_features", int)
    width, shapes = n_in, {}
    if "input_norm.mean" in tensors or meta.get("standardize") == "true":
        shapes.update({"input_norm.mean": (n_in,), "input_norm.std": (n_in,)})
    for kind, p, attrs in layers:
        i = meta_value(meta, path, f"{p}.in_features", int)
        o = meta_value(meta, path, f"{p}.out_features", int)
        if i != width or o < 1:
            raise Bad(f"{path}: {p} takes {i} inputs and gives {o}; the layer before gives {width}")
        if kind in ("block", "residual"):
            g = attrs["groups"]
            if g < 1 or o % g:
                raise Bad(f"{path}: {p}: {g} groups do not divide {o} features")
            if kind == "residual" and i != o:
                raise Bad(f"{path}: {p}: a residual block of {i} inputs and {o} outputs")
            shapes.update({f"{p}.linear.weight": (o, i), f"{p}.linear.bias": (o,),
                           f"{p}.norm.weight": (o,), f"{p}.norm.bias": (o,)})
        elif kind in ("relu", "gelu"):
            shapes.update({f"{p}.linear.weight": (o, i), f"{p}.linear.bias": (o,)})
        elif kind == "linear":
            shapes.update({f"{p}.weight": (o, i), f"{p}.bias": (o,)})
        elif kind == "dropout":
            q = meta_value(meta, path, f"{p}.p", float)
            if not 0 <= q < 1 or i != o:
                raise Bad(f"{path}: {p}: dropout of p {q}, {i} inputs and {o} outputs")
        width = o
    return shapes, n_in, width


def check_model(meta, tensors, path, layers, x, y, check):
    """Every tensor the architecture needs, of its shape and finite; the
    check file's columns the network's input and output widths."""
    shapes, n_in, n_out = expected_tensors(meta, tensors, path, layers)
    for name, shape in shapes.items():
        if name not in tensors:
            raise Bad(f"{path}: no tensor '{name}'")
        t = np.asarray(tensors[name])
        if t.dtype.kind != "f" or tuple(t.shape) != shape:
            raise Bad(f"{path}: tensor '{name}' is {t.dtype} {list(t.shape)}, expected "
                      f"float {list(shape)}")
        if not np.all(np.isfinite(t)):
            raise Bad(f"{path}: tensor '{name}' holds a value that is not finite")
    if "input_norm.std" in shapes and not np.all(np.asarray(tensors["input_norm.std"]) > 0):
        raise Bad(f"{path}: tensor 'input_norm.std' holds a value that is not positive")
    if x.shape[1] != n_in or y.shape[1] != n_out:
        raise Bad(f"{check}: inputs [{x.shape[0]}, {x.shape[1]}] and outputs "
                  f"[{y.shape[0]}, {y.shape[1]}], but {path} takes {n_in} inputs and gives "
                  f"{n_out} outputs")


def linear_bound(x, ex, w, b):
    """z = x w^T + b in float64 and its error bound: the sum of in + 1
    rounded terms, plus the input's error carried through |w|."""
    z = x @ w.T + b
    ez = gamma(w.shape[1] + 1) * (np.abs(x) @ np.abs(w).T + np.abs(b)) + ex @ np.abs(w).T
    return z, ez


def block_bound(x, ex, t, p, groups, eps, slope):
    """The block's value and error bound, operation by operation."""
    z, ez = linear_bound(x, ex, t[f"{p}.linear.weight"], t[f"{p}.linear.bias"])
    n, h = z.shape
    k = h // groups
    zg, ezg = z.reshape(n, groups, k), ez.reshape(n, groups, k)
    mu = zg.mean(axis=2, keepdims=True)
    emu = ezg.mean(axis=2, keepdims=True) + gamma(k + 1) * np.abs(zg).mean(axis=2, keepdims=True)
    d = zg - mu
    ed = ezg + emu + U * np.abs(d)
    v = (d * d).mean(axis=2, keepdims=True)
    ev = (2 * np.abs(d) * ed).mean(axis=2, keepdims=True) + gamma(k + 1) * v
    s = np.sqrt(v + eps)
    rel_s = ev / (2 * (v + eps)) + 2 * U
    zhat = d / s
    ezhat = ed / s + np.abs(zhat) * (rel_s + U)
    zhat, ezhat = zhat.reshape(n, h), ezhat.reshape(n, h)
    g, beta = t[f"{p}.norm.weight"], t[f"{p}.norm.bias"]
    u = g * zhat + beta
    eu = np.abs(g) * ezhat + U * (np.abs(g * zhat) + np.abs(u))
    a = np.where(u > 0, u, slope * u)
    ea = max(1.0, slope) * eu + U * np.abs(a)
    return 2 * a, 2 * ea


def gelu_bound(z, ez):
    """GELU z (1 + erf(z c)) / 2, c the float32 1/sqrt(2), and its error
    bound, operation by operation: the product z c (c's rounding and the
    product's), erf through its derivative 2/sqrt(pi) exp(-s^2) plus its
    own ERF_ULPS, the sum 1 + erf, the product by z; the halving is exact."""
    c = 1 / np.sqrt(2)
    s = z * c
    es = c * ez + 2 * U * np.abs(s)
    r = np.vectorize(math.erf)(s)
    er = 2 / np.sqrt(np.pi) * np.exp(-s * s) * es + ERF_ULPS * U * np.abs(r)
    q = 1 + r
    eq = er + U * np.abs(q)
    m = z * q
    em = np.abs(q) * ez + np.abs(z) * eq + U * np.abs(m)
    return m / 2, em / 2


def reference(x, tensors, layers):
    """The network in float64 and, per output element, the bound on the
    difference of two float32 implementations (each within e of it)."""
    t = {k: np.asarray(v, dtype=np.float64) for k, v in tensors.items()}
    y, e = np.asarray(x, dtype=np.float64), np.zeros(x.shape)
    if "input_norm.mean" in t:
        c = y - t["input_norm.mean"]
        y = c / t["input_norm.std"]
        e = U * np.abs(c) / t["input_norm.std"] + U * np.abs(y)
    for kind, p, attrs in layers:
        if kind == "block":
            y, e = block_bound(y, e, t, p, **attrs)
        elif kind == "residual":
            a, ea = block_bound(y, e, t, p, **attrs)
            x, ex = y, e
            y = a + x
            e = ea + ex + U * np.abs(y)
        elif kind == "relu":
            z, ez = linear_bound(y, e, t[f"{p}.linear.weight"], t[f"{p}.linear.bias"])
            y, e = np.maximum(z, 0.0), ez  # exact, and 1-Lipschitz
        elif kind == "gelu":
            y, e = gelu_bound(*linear_bound(y, e, t[f"{p}.linear.weight"],
                                            t[f"{p}.linear.bias"]))
        elif kind == "linear":
            y, e = linear_bound(y, e, t[f"{p}.weight"], t[f"{p}.bias"])
            e = e + U * np.abs(y)
        # dropout: the identity, exact
    return y, 2 * e


def run_onnx(path, x):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {"input": x})[0]


def run_torch(path, x, meta, layers):
    import collections
    import torch
    from safetensors.torch import load_file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import weights_to_torch
    children = collections.OrderedDict()
    n_in = int(meta["in_features"])
    if meta.get("standardize") == "true":
        children["input_norm"] = weights_to_torch.Standardize(torch.zeros(n_in),
                                                              torch.ones(n_in))
    for kind, p, attrs in layers:
        i, o = int(meta[f"{p}.in_features"]), int(meta[f"{p}.out_features"])
        if kind in ("block", "residual"):
            cls = weights_to_torch.Block if kind == "block" else weights_to_torch.Residual
            children[p] = cls(i, o, attrs["groups"], attrs["eps"], attrs["slope"])
        elif kind in ("relu", "gelu"):
            children[p] = weights_to_torch.Dense(i, o, kind)
        elif kind == "dropout":
            children[p] = torch.nn.Dropout(float(meta[f"{p}.p"]))
        else:
            children[p] = torch.nn.Linear(i, o)
    model = torch.nn.Sequential(children).eval()
    model.load_state_dict(load_file(path))
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def load(args):
    """(check file, inputs, outputs, metadata, tensors, layers), every part
    checked; Bad on the first problem."""
    check = args.check or args.model + ".check.h5"
    if not args.model.endswith((".onnx", ".safetensors")):
        raise Bad(f"{args.model}: expected a .onnx or .safetensors model")
    if not os.path.isfile(args.model):
        raise Bad(f"{args.model}: {'not a file' if os.path.exists(args.model) else 'no such file'}")
    if os.path.getsize(args.model) == 0:
        raise Bad(f"{args.model}: an empty file")
    x, y = read_check(check)
    meta, tensors = (load_onnx if args.model.endswith(".onnx") else load_safetensors)(args.model)
    layers = architecture(meta, args.model)
    check_model(meta, tensors, args.model, layers, x, y, check)
    return check, x, y, meta, tensors, layers


def run_model(args, x, meta, layers, rows_out):
    """The runtime's outputs; a model the runtime refuses, or whose outputs
    have another shape than the check file's, is Bad."""
    onnx_model = args.model.endswith(".onnx")
    try:
        got = run_onnx(args.model, x) if onnx_model else run_torch(args.model, x, meta, layers)
    except Exception as e:  # the runtimes' own errors for a model they cannot run
        runtime = "ONNX Runtime" if onnx_model else "PyTorch"
        raise Bad(f"{args.model}: {runtime} could not run it ({one_line(e)})") from None
    got = np.asarray(got)
    if got.shape != rows_out:
        raise Bad(f"{args.model}: gives outputs of shape {list(got.shape)}; the check file "
                  f"holds {list(rows_out)}")
    return got


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="model.onnx or model.safetensors")
    parser.add_argument("--check", help="the check file (default <model>.check.h5)")
    args = parser.parse_args(argv)
    onnx_model = args.model.endswith(".onnx")
    try:
        check, x, y, meta, tensors, layers = load(args)
        got = run_model(args, x, meta, layers, y.shape)
    except Bad as e:
        print(f"verify_export: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    _, bound = reference(x, tensors, layers)
    diff = np.abs(got.astype(np.float64) - y)
    worst = np.unravel_index(np.argmax(diff), diff.shape)
    ratio = diff / bound
    runtime = "ONNX Runtime" if onnx_model else "PyTorch"
    print(f"verify_export: {runtime} on {x.shape[0]} rows of {check}: largest difference "
          f"{diff[worst]:.3g} at [{worst[0]}, {worst[1]}] (bound there {bound[worst]:.3g}); "
          f"largest difference / bound {ratio.max():.3g}")
    if np.all(diff <= bound):
        print("verify_export: within the float32 bound")
        return 0
    bad = np.unravel_index(np.argmax(np.where(np.isnan(diff), np.inf, ratio)), ratio.shape)
    print(f"verify_export: output [{bad[0]}, {bad[1]}] differs by {diff[bad]:.3g}, above its "
          f"bound {bound[bad]:.3g}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
