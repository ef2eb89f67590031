#!/usr/bin/python3
"""export_cli.py — the `export` program as a user meets it (ctest label
"unit"; Debian's python3 with h5py): --help and --version; the refusals,
each with exit 1 (2 for usage), a message naming the file and the
problem, and no model or temporary left: a weights file of an unknown
format_version, a directory at the model's path, the weights file as the
model, a path whose extension names no format, a safetensors file as the
input; a full disk (RLIMIT_FSIZE) while writing; a successful export
writing exactly the model (and, with --check, its check file); and
--info: the weights file's provenance line, as predict --info prints it,
nothing written, and its refusals.

Needs FN_BUILD_DIR and FN_SOURCE_DIR (set by ctest)."""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

import h5py

SOURCE = os.environ["FN_SOURCE_DIR"]
BUILD = os.environ["FN_BUILD_DIR"]
EXPORT = os.path.join(BUILD, "export")
VALID = os.path.join(SOURCE, "data", "digits_valid.h5")


def run(*args, limit=None):
    def full_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    return subprocess.run([EXPORT, *args], capture_output=True, text=True,
                          preexec_fn=full_disk if limit else None)


def fail(what, result=None):
    extra = f"\nstdout: {result.stdout}\nstderr: {result.stderr}" if result else ""
    sys.exit(f"export_cli: {what}{extra}")


def expect(result, code, *parts):
    if result.returncode != code:
        fail(f"exit {result.returncode}, expected {code}", result)
    for p in parts:
        if p not in result.stderr + result.stdout:
            fail(f"output lacks '{p}'", result)


def expect_nothing(path):
    for p in (path, path + ".tmp"):
        if os.path.lexists(p) and not os.path.isdir(p):
            fail(f"{p} was left behind")


def main():
    with tempfile.TemporaryDirectory(prefix="fn_export_cli_") as tmp:
        expect(run("--help"), 0, "usage: export weights.h5", "--check", "export --info weights.h5",
               "./build/export")
        expect(run("--version"), 0, "export (fusenet)")
        expect(run("only_one.h5"), 2, "expected weights.h5 and the model's path")
        expect(run("w.h5", "m.onnx", "--rows", "5"), 2, "--rows and --inputs go with --check")
        result = subprocess.run([os.path.join(BUILD, "train"),
                                 os.path.join(SOURCE, "data", "example.ini"), "--set",
                                 f"output.dir={tmp}/run", "--set", "train.epochs=1", "--set",
                                 "run.device=cpu"], capture_output=True, text=True)
        expect(result, 0)
        weights = os.path.join(tmp, "run", "weights.h5")

        # --info: one line, predict --info's, and nothing written.
        before = sorted(os.listdir(tmp))
        info = run("--info", weights)
        expect(info, 0, f"{weights}: fusenet ", ", cpu, math fp32")
        predict_info = subprocess.run([os.path.join(BUILD, "predict"), "--info", weights],
                                      capture_output=True, text=True)
        if info.stdout != predict_info.stdout or info.stdout.count("\n") != 1:
            fail(f"--info printed {info.stdout!r}, predict --info {predict_info.stdout!r}")
        if sorted(os.listdir(tmp)) != before:
            fail(f"--info wrote {sorted(set(os.listdir(tmp)) - set(before))}")
        expect(run("--info", weights, os.path.join(tmp, "m.onnx")), 2,
               "--info takes one file and no other option")
        expect(run("--info", weights, "--check", VALID), 2, "--info takes one file")
        expect(run("--info", os.path.join(tmp, "absent.h5")), 1, "absent.h5")

        # A weights file of a version this build does not know.
        future = os.path.join(tmp, "future.h5")
        shutil.copy(weights, future)
        with h5py.File(future, "a") as f:
            f.attrs["format_version"] = 99
        model = os.path.join(tmp, "m.onnx")
        expect(run(future, model), 1, f"{future}: format_version is 99")
        expect_nothing(model)

        # A directory at the model's path, and the weights file as the model.
        os.mkdir(os.path.join(tmp, "dir.onnx"))
        expect(run(weights, os.path.join(tmp, "dir.onnx")), 1, "dir.onnx: is a directory")
        link = os.path.join(tmp, "link.safetensors")
        os.symlink(weights, link)
        expect(run(weights, link), 1, "is the weights file")
        with h5py.File(weights, "r") as f:
            if f.attrs["format"] != "fusenet-weights":
                fail("the weights file was changed")

        # No format from the extension, an unknown --format, a safetensors input.
        expect(run(weights, os.path.join(tmp, "m.bin")), 1, "--format onnx or --format safetensors")
        expect_nothing(os.path.join(tmp, "m.bin"))
        expect(run(weights, os.path.join(tmp, "m.bin"), "--format", "tflite"), 1,
               "unknown export format 'tflite'")
        st = os.path.join(tmp, "m.safetensors")
        expect(run(weights, st), 0, "m.safetensors written (safetensors, 3 layers)")
        expect(run(st, os.path.join(tmp, "again.onnx")), 1, "not a safetensors file")

        # A full disk: nothing left, the system's reason given.
        for name in ("full.onnx", "full.safetensors"):
            path = os.path.join(tmp, name)
            expect(run(weights, path, limit=4096), 1, "File too large")
            expect_nothing(path)

        # --check: the model and its check file, nothing else.
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        expect(run(weights, os.path.join(out, "m.onnx"), "--check", VALID, "--rows", "7"), 0,
               "7 rows of")
        if sorted(os.listdir(out)) != ["m.onnx", "m.onnx.check.h5"]:
            fail(f"files written: {sorted(os.listdir(out))}")
        with h5py.File(os.path.join(out, "m.onnx.check.h5"), "r") as f:
            if f["inputs"].shape != (7, 64) or f["outputs"].shape != (7, 10):
                fail("check file shapes")
        # A check dataset of the wrong width is named.
        expect(run(weights, os.path.join(out, "w.onnx"), "--check", VALID, "--inputs", "y"), 1,
               "y")
        expect_nothing(os.path.join(out, "w.onnx"))

        # Outputs standardised by [data] standardize_targets: refused, not exported off.
        regression = os.path.join(tmp, "reg.h5")
        with h5py.File(regression, "w") as f:
            f["X"] = [[float(i % 7), float(i % 3)] for i in range(64)]
            f["y"] = [200.0 + 3 * (i % 7) for i in range(64)]
        config = os.path.join(tmp, "reg.ini")
        with open(config, "w") as f:
            f.write(f"[data]\ntrain = {regression}\nstandardize_targets = true\n[model]\n"
                    "layers = block 8, linear 1\ngroups = 2\n[train]\nloss = mse\nepochs = 1\n"
                    f"[run]\ndevice = cpu\n[output]\ndir = {tmp}/reg\n")
        expect(subprocess.run([os.path.join(BUILD, "train"), config], capture_output=True,
                              text=True), 0)
        model = os.path.join(tmp, "reg.onnx")
        expect(run(os.path.join(tmp, "reg", "weights.h5"), model), 1, "standardize_targets",
               "export a network trained without it")
        expect_nothing(model)
    print("export_cli: ok")


if __name__ == "__main__":
    main()
