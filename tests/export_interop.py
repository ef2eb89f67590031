#!/usr/bin/env python3
"""export_interop.py — the exports against the runtimes that read them
(ctest label "python"; run with the environment of scripts/python_env.sh,
FN_PYENV_PYTHON). Trains the example (data/example.ini) briefly, plainly
and with [data] standardize, and a network of every layer kind with an
export row (gelu, dropout, residual, relu, block, linear) on the same data,
exports each as ONNX and as safetensors, and checks:

- onnx.checker.check_model(full_check=True) passes; opset 17, a free batch
  dimension, the metadata's architecture;
- ONNX Runtime's outputs over the whole validation set equal predict's
  within the bound of scripts/verify_export.py (docs/formats.md), and
  verify_export.py on the check file exits 0 for both formats;
- a model changed after export fails verify_export.py (exit 1): the bound
  catches a wrong network (the example with a LeakyReLU slope of 0.1;
  "gelu 64, relu 32, linear 10" with GELU's 1/sqrt(2) as 0.7;
  "residual 64, linear 10" with the skip added before the x2);
- the safetensors file loads with the safetensors package into the module
  of scripts/weights_to_torch.py (load_state_dict, strict) and gives its
  outputs bit for bit; its metadata holds the architecture and copies
  every attribute of the weights file's /provenance as provenance.<name>
  (ONNX's metadata_props too);
- `[model] init = model.safetensors` trains to the same weights, bit for
  bit, as `[model] init = weights.h5`.

Needs FN_BUILD_DIR and FN_SOURCE_DIR (set by ctest)."""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
import torch
from safetensors import safe_open
from safetensors.torch import load_file

SOURCE = os.environ["FN_SOURCE_DIR"]
BUILD = os.environ["FN_BUILD_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import verify_export  # noqa: E402
import weights_to_torch  # noqa: E402

CONFIG = os.path.join(SOURCE, "data", "example.ini")
VALID = os.path.join(SOURCE, "data", "digits_valid.h5")
PROVENANCE = {"fusenet_commit": "abc123", "device": "cpu (test)", "ranks": 1}
EXAMPLE_LAYERS = "block 128, block 128, linear 10"
EVERY_KIND_LAYERS = "gelu 64, dropout 0.1, residual 64, relu 32, block 32, linear 10"
# Shallow networks, where the bound is tight enough to catch a small change
# of a new kind's nodes (it grows with depth: each GroupNorm divides by its
# groups' deviation).
GELU_LAYERS = "gelu 64, relu 32, linear 10"
RESIDUAL_LAYERS = "residual 64, linear 10"
CONFIG_TEMPLATE = f"""[data]
train = {os.path.join(SOURCE, "data", "digits_train.h5")}
valid = {VALID}
inputs = X
targets = y

[model]
layers = LAYERS
groups = 8

[train]
loss = cross_entropy
batch_size = 32
optimizer = adamw
lr = 0.002
seed = 1
"""


def config_of(tmp, layers):
    """A config training `layers` on the example's data."""
    path = os.path.join(tmp, f"{layers.split()[0]}_{len(layers)}.ini")
    with open(path, "w") as f:
        f.write(CONFIG_TEMPLATE.replace("LAYERS", layers))
    return path


def summary(layers):
    """The metadata's summary of a config's items: each layer's kind and
    width (a dropout layer's is its input's)."""
    out, width = [], 64
    for item in layers.split(", "):
        kind, arg = item.split()
        width = width if kind == "dropout" else int(arg)
        out.append(f"{kind} {width}")
    return ", ".join(out)


def sh(*args, expect=0):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != expect:
        sys.exit(f"{' '.join(args)}: exit {result.returncode}, expected {expect}:\n"
                 f"{result.stdout}{result.stderr}")
    return result.stdout


def train(out, *sets, config=CONFIG):
    args = [os.path.join(BUILD, "train"), config, "--set", f"output.dir={out}",
            "--set", "run.device=cpu", "--set", "train.epochs=2"]
    for s in sets:
        args += ["--set", s]
    sh(*args)
    return os.path.join(out, "weights.h5")


def add_provenance(weights):
    """The weights' /provenance group (train writes one) with a few test
    values put in, which the exports must copy."""
    with h5py.File(weights, "a") as f:
        g = f.require_group("provenance")
        for k, v in PROVENANCE.items():
            g.attrs[k] = v


def check(cond, what):
    if not cond:
        sys.exit(f"export_interop: {what}")


def check_metadata(meta, standardize, where, layers=EXAMPLE_LAYERS):
    """layers: the config's items."""
    check(meta.get("format") == "fusenet-export" and meta.get("format_version") == "1",
          f"{where}: format entries {meta.get('format')!r} {meta.get('format_version')!r}")
    check(meta.get("layers") == summary(layers), f"{where}: layers {meta.get('layers')!r}")
    for i, item in enumerate(layers.split(", ")):
        kind = item.split()[0]
        check(meta.get(f"layer{i}.kind") == kind, f"{where}: layer{i}.kind")
        if kind in ("block", "residual"):
            check(meta.get(f"layer{i}.groups") == "8"
                  and float(meta[f"layer{i}.eps"]) == np.float32(1e-5)
                  and float(meta[f"layer{i}.negative_slope"]) == np.float32(0.01),
                  f"{where}: layer{i}'s block attrs")
        if kind == "dropout":
            check(float(meta[f"layer{i}.p"]) == float(item.split()[1]),
                  f"{where}: layer{i}.p is {meta.get(f'layer{i}.p')!r}")
    check(meta.get("standardize") == ("true" if standardize else "false"), f"{where}: standardize")
    check("[model]" in meta.get("config", ""), f"{where}: config text")
    for k, v in PROVENANCE.items():
        check(meta.get(f"provenance.{k}") == str(v), f"{where}: provenance.{k} is "
              f"{meta.get(f'provenance.{k}')!r}, expected {v!r}")


def slope_changed(model):
    """Layer 0's LeakyReLU slope set to 0.1."""
    for node in model.graph.node:
        if node.op_type == "LeakyRelu" and node.name.startswith("layer0/"):
            node.attribute[0].f = 0.1


def gelu_changed(model):
    """Layer 0's GELU constant 1/sqrt(2) set to 0.7 (1 % below it)."""
    for t in model.graph.initializer:
        if t.name == "layer0/inv_sqrt2":
            t.CopyFrom(onnx.numpy_helper.from_array(np.array(0.7, np.float32), t.name))
            return
    sys.exit("export_interop: no initializer layer0/inv_sqrt2")


def skip_undoubled(model):
    """Layer 0's skip added to the block's value before its x2."""
    for node in model.graph.node:
        if node.op_type == "Add" and node.input[0] == "layer0/block":
            node.input[0] = "layer0/a"
            return
    sys.exit("export_interop: no node adding layer0/block")


def check_onnx(weights, tmp, standardize, layers=EXAMPLE_LAYERS, change=slope_changed):
    model_path = os.path.join(tmp, "model.onnx")
    sh(os.path.join(BUILD, "export"), weights, model_path, "--check", VALID, "--rows", "40")
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    check([(o.domain, o.version) for o in model.opset_import] == [("", 17)], "opset 17")
    dims = model.graph.input[0].type.tensor_type.shape.dim
    check(dims[0].dim_param == "batch" and dims[1].dim_value == 64, "input [batch, 64]")
    meta = {p.key: p.value for p in model.metadata_props}
    check_metadata(meta, standardize, model_path, layers)
    # The whole validation set, against predict.
    outputs = os.path.join(tmp, "predict.h5")
    sh(os.path.join(BUILD, "predict"), weights, VALID, outputs, "--device", "cpu")
    with h5py.File(VALID, "r") as f:
        x = np.asarray(f["X"], dtype=np.float32)
    with h5py.File(outputs, "r") as f:
        ours = np.asarray(f["outputs"])
    got = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(
        None, {"input": x})[0]
    _, bound = verify_export.reference(x, verify_export.load_onnx(model_path)[1],
                                       verify_export.architecture(meta, model_path))
    diff = np.abs(got.astype(np.float64) - ours)
    check(np.all(diff <= bound), f"ONNX Runtime vs predict: {diff.max()} above the bound")
    print(f"onnx {layers}{' (standardised)' if standardize else ''}: {x.shape[0]} rows, largest "
          f"difference {diff.max():.3g}, largest bound {bound.max():.3g}")
    sh(sys.executable, os.path.join(SOURCE, "scripts", "verify_export.py"), model_path)
    if change is None:
        return
    # A wrong network fails: layer 0 changed after export.
    change(model)
    wrong = os.path.join(tmp, "wrong.onnx")
    onnx.save(model, wrong)
    shutil.copy(model_path + ".check.h5", wrong + ".check.h5")
    sh(sys.executable, os.path.join(SOURCE, "scripts", "verify_export.py"), wrong, expect=1)


def check_safetensors(weights, tmp, standardize, layers=EXAMPLE_LAYERS):
    path = os.path.join(tmp, "model.safetensors")
    sh(os.path.join(BUILD, "export"), weights, path, "--check", VALID)
    with safe_open(path, "pt") as f:
        check_metadata(f.metadata(), standardize, path, layers)
    module = weights_to_torch.load(weights)
    reference = {k: v.clone() for k, v in module.state_dict().items()}
    for p in module.parameters():
        torch.nn.init.zeros_(p)
    module.load_state_dict(load_file(path))  # strict: every key, no renaming
    for k, v in module.state_dict().items():
        check(torch.equal(v, reference[k]), f"safetensors: {k} differs from the weights file's")
    sh(sys.executable, os.path.join(SOURCE, "scripts", "verify_export.py"), path)
    return path


def weights_equal(a, b):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        names = []
        fa.visit(lambda n: names.append(n) if isinstance(fa[n], h5py.Dataset) else None)
        check(names, f"{a}: no datasets")
        for n in names:
            check(np.array_equal(fa[n][()], fb[n][()]) and fa[n].dtype == fb[n].dtype,
                  f"{a} and {b}: dataset {n} differs")


def check_init(weights, st, tmp, standardize, config=CONFIG):
    """[model] init from the safetensors file and from the HDF5 file: one
    epoch each gives the same weights bit for bit."""
    extra = ["data.standardize=true"] if standardize else []
    from_h5 = train(os.path.join(tmp, "init_h5"), f"model.init={weights}", "train.epochs=1",
                    *extra, config=config)
    from_st = train(os.path.join(tmp, "init_st"), f"model.init={st}", "train.epochs=1", *extra,
                    config=config)
    weights_equal(from_h5, from_st)


def main():
    with tempfile.TemporaryDirectory(prefix="fn_export_") as tmp:
        for standardize in (False, True):
            run = os.path.join(tmp, "std" if standardize else "plain")
            weights = train(run, *(["data.standardize=true"] if standardize else []))
            add_provenance(weights)
            check_onnx(weights, run, standardize)
            st = check_safetensors(weights, run, standardize)
            check_init(weights, st, run, standardize)
        for layers, change in ((EVERY_KIND_LAYERS, None), (GELU_LAYERS, gelu_changed),
                               (RESIDUAL_LAYERS, skip_undoubled)):
            run = os.path.join(tmp, layers.split()[0] + str(len(layers)))
            config = config_of(tmp, layers)
            weights = train(run, config=config)
            add_provenance(weights)
            check_onnx(weights, run, False, layers, change)
            if change is None:
                st = check_safetensors(weights, run, False, layers)
                check_init(weights, st, run, False, config)
    print("export_interop: ok")


if __name__ == "__main__":
    main()
