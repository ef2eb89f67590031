#!/usr/bin/env python3
"""export_interop.py — the exports against the runtimes that read them
(ctest label "python"; run with the environment of scripts/python_env.sh,
FN_PYENV_PYTHON). Trains the example (data/example.ini) briefly, plainly
and with [data] standardize, exports each as ONNX and as safetensors, and
checks:

- onnx.checker.check_model(full_check=True) passes; opset 17, a free batch
  dimension, the metadata's architecture;
- ONNX Runtime's outputs over the whole validation set equal predict's
  within the bound of scripts/verify_export.py (docs/formats.md), and
  verify_export.py on the check file exits 0 for both formats;
- a model changed after export (a LeakyReLU slope of 0.1) fails
  verify_export.py (exit 1): the bound catches a wrong network;
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


def sh(*args, expect=0):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != expect:
        sys.exit(f"{' '.join(args)}: exit {result.returncode}, expected {expect}:\n"
                 f"{result.stdout}{result.stderr}")
    return result.stdout


def train(out, *sets):
    args = [os.path.join(BUILD, "train"), CONFIG, "--set", f"output.dir={out}",
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


def check_metadata(meta, standardize, where):
    check(meta.get("format") == "fusenet-export" and meta.get("format_version") == "1",
          f"{where}: format entries {meta.get('format')!r} {meta.get('format_version')!r}")
    check(meta.get("layers") == "block 128, block 128, linear 10", f"{where}: layers")
    check(meta.get("layer0.groups") == "8" and float(meta["layer1.eps"]) == np.float32(1e-5)
          and float(meta["layer0.negative_slope"]) == np.float32(0.01), f"{where}: block attrs")
    check(meta.get("standardize") == ("true" if standardize else "false"), f"{where}: standardize")
    check("[model]" in meta.get("config", ""), f"{where}: config text")
    for k, v in PROVENANCE.items():
        check(meta.get(f"provenance.{k}") == str(v), f"{where}: provenance.{k} is "
              f"{meta.get(f'provenance.{k}')!r}, expected {v!r}")


def check_onnx(weights, tmp, standardize):
    model_path = os.path.join(tmp, "model.onnx")
    sh(os.path.join(BUILD, "export"), weights, model_path, "--check", VALID, "--rows", "40")
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    check([(o.domain, o.version) for o in model.opset_import] == [("", 17)], "opset 17")
    dims = model.graph.input[0].type.tensor_type.shape.dim
    check(dims[0].dim_param == "batch" and dims[1].dim_value == 64, "input [batch, 64]")
    meta = {p.key: p.value for p in model.metadata_props}
    check_metadata(meta, standardize, model_path)
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
    print(f"onnx{' (standardised)' if standardize else ''}: {x.shape[0]} rows, largest "
          f"difference {diff.max():.3g}, largest bound {bound.max():.3g}")
    sh(sys.executable, os.path.join(SOURCE, "scripts", "verify_export.py"), model_path)
    # A wrong network fails: layer 0's slope changed after export.
    for node in model.graph.node:
        if node.op_type == "LeakyRelu" and node.name.startswith("layer0/"):
            node.attribute[0].f = 0.1
    wrong = os.path.join(tmp, "wrong.onnx")
    onnx.save(model, wrong)
    shutil.copy(model_path + ".check.h5", wrong + ".check.h5")
    sh(sys.executable, os.path.join(SOURCE, "scripts", "verify_export.py"), wrong, expect=1)


def check_safetensors(weights, tmp, standardize):
    path = os.path.join(tmp, "model.safetensors")
    sh(os.path.join(BUILD, "export"), weights, path, "--check", VALID)
    with safe_open(path, "pt") as f:
        check_metadata(f.metadata(), standardize, path)
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


def check_init(weights, st, tmp, standardize):
    """[model] init from the safetensors file and from the HDF5 file: one
    epoch each gives the same weights bit for bit."""
    extra = ["data.standardize=true"] if standardize else []
    from_h5 = train(os.path.join(tmp, "init_h5"), f"model.init={weights}", "train.epochs=1",
                    *extra)
    from_st = train(os.path.join(tmp, "init_st"), f"model.init={st}", "train.epochs=1", *extra)
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
    print("export_interop: ok")


if __name__ == "__main__":
    main()
