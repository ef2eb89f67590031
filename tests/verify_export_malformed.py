#!/usr/bin/env python3
"""verify_export_malformed.py — scripts/verify_export.py on a corpus of
malformed inputs (ctest "verify_export_malformed", label "python": run with
the environment of scripts/python_env.sh). Trains the example one epoch,
exports it as ONNX and as safetensors with check files (both pass: exit
0), then damages one thing at a time: check files missing, a folder,
truncated, not HDF5, without 'outputs', of text, 1-D, of unequal rows,
empty, holding NaN, of the wrong width; models missing, of another
extension, truncated, empty, of garbage bytes, without the fusenet
metadata, without 'n_layers', with a non-integer 'groups', without a
tensor, with a tensor of the wrong shape or an integer dtype, with a
layer chain that does not join. Each must exit 2 with one line naming
the file and the problem and no traceback; exit 1 stays for a difference
above its bound (a model whose head's bias moved by 1 exits 1). Needs
FN_SOURCE_DIR and FN_BUILD_DIR (set by ctest)."""
import contextlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback

import h5py
import numpy as np
import onnx

SOURCE = os.environ["FN_SOURCE_DIR"]
BUILD = os.environ["FN_BUILD_DIR"]
sys.dont_write_bytecode = True  # no __pycache__ left in scripts/
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import verify_export  # noqa: E402
failures = []


def verify(*args):
    """verify_export.py's main in this process (ONNX Runtime and PyTorch
    imported once: a process a case took 30 s); an exception it lets
    out is a traceback, as it would be from the command."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = verify_export.main(list(args))
        except SystemExit as e:
            code = e.code
        except Exception:  # what the command would print as a traceback
            traceback.print_exc()
            code = "traceback"
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def exits(code, needle, *args):
    r = verify(*args)
    lines = r.stderr.strip().splitlines()
    ok = r.returncode == code and "Traceback" not in r.stderr and (
        code == 0 or (len(lines) == 1 and lines[0].startswith("verify_export: ")
                      and needle in lines[0]))
    shown = " ".join(os.path.basename(a) for a in args)
    print(f"{'ok  ' if ok else 'FAIL'} {shown}: exit {r.returncode}: "
          f"{lines[-1] if lines else r.stdout.strip()}")
    if not ok:
        failures.append(f"{shown}: expected exit {code} and one line with '{needle}', got "
                        f"{r.returncode}:\n{r.stdout}{r.stderr}")


def st_read(path):
    """(header dict, data bytes) of a safetensors file."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def st_write(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def st_variant(tmp, good, name, change):
    """A copy of the safetensors export and its check file, its header
    changed by change(header) (which may return new data bytes)."""
    header, data = st_read(good)
    new = change(header)
    data = new if isinstance(new, bytes) else data
    path = os.path.join(tmp, name + ".safetensors")
    st_write(path, header, data)
    shutil.copy(good + ".check.h5", path + ".check.h5")
    return path


def check_variant(tmp, name, datasets):
    path = os.path.join(tmp, name + ".check.h5")
    with h5py.File(path, "w") as f:
        for k, v in datasets.items():
            f[k] = v
    return path


def main():
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731
        subprocess.run([os.path.join(BUILD, "train"), os.path.join(SOURCE, "data", "example.ini"),
                        "--set", "train.epochs=1", "--set", "run.device=cpu",
                        "--set", f"output.dir={p('run')}"], check=True, stdout=subprocess.DEVNULL)
        valid = os.path.join(SOURCE, "data", "digits_valid.h5")
        for fmt in ("onnx", "safetensors"):
            subprocess.run([os.path.join(BUILD, "export"), p("run/weights.h5"), p(f"m.{fmt}"),
                            "--check", valid], check=True, stdout=subprocess.DEVNULL)
            exits(0, "", p(f"m.{fmt}"))
        r = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "verify_export.py"),
                            p("m.onnx"), "--check", p("nowhere.h5")],
                           capture_output=True, text=True)
        if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1:
            failures.append(f"the command on a missing check file: {r.returncode}:\n{r.stderr}")
        with h5py.File(p("m.onnx.check.h5"), "r") as f:
            x, y = f["inputs"][()], f["outputs"][()]

        # Check files.
        exits(2, "nowhere.h5: no such file", p("m.onnx"), "--check", p("nowhere.h5"))
        os.mkdir(p("dir.h5"))
        exits(2, "dir.h5: not a file", p("m.onnx"), "--check", p("dir.h5"))
        raw = open(p("m.onnx.check.h5"), "rb").read()
        with open(p("cut.h5"), "wb") as f:
            f.write(raw[:len(raw) // 2])
        exits(2, "cut.h5: ", p("m.onnx"), "--check", p("cut.h5"))
        with open(p("text.h5"), "w") as f:
            f.write("inputs,outputs\n1,2\n")
        exits(2, "text.h5: not a readable HDF5 file", p("m.onnx"), "--check", p("text.h5"))
        exits(2, "no_out.check.h5: no dataset 'outputs'", p("m.onnx"), "--check",
              check_variant(tmp, "no_out", {"inputs": x}))
        exits(2, "words.check.h5: dataset 'inputs' is", p("m.onnx"), "--check",
              check_variant(tmp, "words", {"inputs": np.array([b"a", b"b"]), "outputs": y}))
        exits(2, "flat.check.h5: dataset 'inputs' has shape [4096]", p("m.onnx"), "--check",
              check_variant(tmp, "flat", {"inputs": x.ravel(), "outputs": y}))
        exits(2, "rows.check.h5: 'inputs' has 64 rows but 'outputs' 63", p("m.onnx"), "--check",
              check_variant(tmp, "rows", {"inputs": x, "outputs": y[:-1]}))
        exits(2, "empty.check.h5: dataset 'inputs' has shape [0, 64]", p("m.onnx"), "--check",
              check_variant(tmp, "empty", {"inputs": x[:0], "outputs": y[:0]}))
        y_nan = y.copy()
        y_nan[3, 2] = np.nan
        exits(2, "nan.check.h5: dataset 'outputs' row 3 column 2 is nan", p("m.onnx"), "--check",
              check_variant(tmp, "nan", {"inputs": x, "outputs": y_nan}))
        exits(2, "wide.check.h5: inputs [64, 64] and outputs [64, 9], but", p("m.onnx"),
              "--check", check_variant(tmp, "wide", {"inputs": x, "outputs": y[:, :9]}))
        exits(2, "narrow.check.h5: inputs [64, 63]", p("m.safetensors"), "--check",
              check_variant(tmp, "narrow", {"inputs": x[:, :63], "outputs": y}))

        # Models.
        exits(2, "gone.onnx: no such file", p("gone.onnx"), "--check", p("m.onnx.check.h5"))
        exits(2, "m.pt: expected a .onnx or .safetensors model", p("m.pt"))
        for fmt in ("onnx", "safetensors"):
            raw = open(p(f"m.{fmt}"), "rb").read()
            for name, content in (("cut", raw[:len(raw) // 2]), ("zero", b""),
                                  ("junk", bytes(range(256)) * 8)):
                with open(p(f"{name}.{fmt}"), "wb") as f:
                    f.write(content)
                kind = "ONNX model" if fmt == "onnx" else "safetensors file"
                needle = "an empty file" if name == "zero" else f"not a readable {kind}"
                exits(2, f"{name}.{fmt}: {needle}", p(f"{name}.{fmt}"),
                      "--check", p(f"m.{fmt}.check.h5"))
        model = onnx.load(p("m.onnx"))
        del model.metadata_props[:]
        onnx.save(model, p("nometa.onnx"))
        exits(2, "nometa.onnx: not a fusenet export of format version 1", p("nometa.onnx"),
              "--check", p("m.onnx.check.h5"))
        model = onnx.load(p("m.onnx"))
        kept = [t for t in model.graph.initializer if t.name != "layer1.norm.bias"]
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)
        onnx.save(model, p("notensor.onnx"))
        exits(2, "notensor.onnx: no tensor 'layer1.norm.bias'", p("notensor.onnx"),
              "--check", p("m.onnx.check.h5"))

        good = p("m.safetensors")
        meta = lambda h: h["__metadata__"]  # noqa: E731
        exits(2, "no_n.safetensors: no metadata 'n_layers'",
              st_variant(tmp, good, "no_n", lambda h: meta(h).pop("n_layers")))
        exits(2, "groups.safetensors: metadata 'layer0.groups' is 'eight', expected an integer",
              st_variant(tmp, good, "groups", lambda h: meta(h).update({"layer0.groups": "eight"})))
        exits(2, "chain.safetensors: layer1 takes 64 inputs and gives 128; the layer before "
              "gives 128", st_variant(tmp, good, "chain",
                                      lambda h: meta(h).update({"layer1.in_features": "64"})))

        def transpose(h):
            t = h["layer0.linear.weight"]
            t["shape"] = t["shape"][::-1]
        exits(2, "shape.safetensors: tensor 'layer0.linear.weight' is float32 [64, 128], "
              "expected float [128, 64]", st_variant(tmp, good, "shape", transpose))

        def as_int(h):
            h["layer2.bias"]["dtype"] = "I32"
        exits(2, "int.safetensors: tensor 'layer2.bias' is int32", st_variant(tmp, good, "int",
                                                                             as_int))

        def drop(h):
            h.pop("layer0.norm.weight")
        exits(2, "drop.safetensors: not a readable safetensors file",
              st_variant(tmp, good, "drop", drop))

        # A model that differs: exit 1, as before.
        header, data = st_read(good)
        start, end = header["layer2.bias"]["data_offsets"]
        bias = np.frombuffer(data[start:end], dtype="<f4") + 1
        moved = data[:start] + bias.astype("<f4").tobytes() + data[end:]
        path = st_variant(tmp, good, "moved", lambda h: moved)
        exits(1, "above its bound", path)
    if failures:
        sys.exit("\n".join(failures))
    print("verify_export.py: every malformed input exits 2 with one line naming the file")


if __name__ == "__main__":
    main()
