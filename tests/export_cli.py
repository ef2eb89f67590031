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

What an export may replace: an earlier export of its format (and an
earlier check file) without a word; any other file (a checkpoint, a data
set, an export of the other format) only with --overwrite; an input of
the run that made the weights (its train and valid sets, by device and
inode) never. A re-export without --check removes the earlier check file,
and one whose check rows are not finite publishes neither file. A file
at "<path>.tmp" (another process's temporary) is left alone by export and
predict. --info and predict given a data set or an export say what it is, and print text from
files escaped.

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
    if os.path.lexists(path) and not os.path.isdir(path):
        fail(f"{path} was left behind")
    expect_no_tmp(path)


def expect_no_tmp(path):
    """No temporary of path ("<path>.tmp", "<path>.<pid>-<n>.tmp") is left."""
    folder, base = os.path.split(path)
    for name in os.listdir(folder or "."):
        if name.startswith(base) and name.endswith(".tmp"):
            fail(f"{os.path.join(folder, name)} was left behind")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def replacements(tmp, weights):
    """What an export may replace, and what it never does."""
    run_dir = os.path.join(tmp, "run")
    checkpoint = os.path.join(run_dir, "checkpoint.h5")
    before = read(checkpoint)
    expect(run(weights, checkpoint, "--format", "onnx"), 1, f"{checkpoint}: exists and is a "
           "fusenet checkpoint, not an earlier ONNX export", "--overwrite")
    if read(checkpoint) != before:
        fail("the checkpoint was changed")
    expect_no_tmp(checkpoint)
    # The run's training set, by another name (a hard link, or a symbolic one
    # across file systems): never, even with --overwrite.
    train_set = os.path.join(tmp, "train_link.h5")
    try:
        os.link(os.path.join(SOURCE, "data", "digits_train.h5"), train_set)
    except OSError:
        os.symlink(os.path.join(SOURCE, "data", "digits_train.h5"), train_set)
    before = read(train_set)
    for extra in ((), ("--overwrite",)):
        expect(run(weights, train_set, "--format", "safetensors", *extra), 1,
               "which the run that made", "its provenance's train_path",
               "an export never replaces an input")
    if read(train_set) != before:
        fail("the training set was changed")
    os.remove(train_set)
    # An earlier export of the format: replaced; of the other format or a data
    # set: only with --overwrite.
    model = os.path.join(tmp, "again.onnx")
    expect(run(weights, model), 0, "again.onnx written")
    expect(run(weights, model), 0, "again.onnx written")
    expect(run(weights, model, "--format", "safetensors"), 1,
           "exists and is an ONNX export, not an earlier safetensors export")
    data = os.path.join(tmp, "data_copy.h5")
    shutil.copy(VALID, data)
    expect(run(weights, data, "--format", "onnx"), 1,
           "exists and is an HDF5 data file (datasets 'X', 'y'), not an earlier ONNX export")
    expect(run(weights, data, "--format", "onnx", "--overwrite"), 0, "data_copy.h5 written")
    # A check file's path holding another file.
    notes = model + ".check.h5"
    with open(notes, "w") as f:
        f.write("notes")
    expect(run(weights, model, "--check", VALID), 1,
           "exists and is a text file, not an earlier export's check file")
    expect(run(weights, model, "--check", VALID, "--overwrite"), 0, "rows of")


def publication(tmp, weights):
    """A model and its check file stand together, and temporaries are the process's own."""
    model = os.path.join(tmp, "pair.onnx")
    check = model + ".check.h5"
    expect(run(weights, model, "--check", VALID, "--rows", "3"), 0, "3 rows of")
    pair = (read(model), read(check))
    # A weight of 3e38: fusenet's outputs overflow, and neither file is replaced.
    big = os.path.join(tmp, "big.h5")
    shutil.copy(weights, big)
    with h5py.File(big, "a") as f:
        last = sorted(k for k in f.keys() if k.startswith("layer"))[-1]
        w = f[last]["weight"][...]
        w[:] = 3e38
        f[last]["weight"][...] = w
    expect(run(big, model, "--check", VALID, "--rows", "3"), 1,
           "the network overflows float32", "the largest value of", "3e+38", "nothing written")
    if (read(model), read(check)) != pair:
        fail("a failed check file replaced the model or its check file")
    expect_no_tmp(model)
    expect_no_tmp(check)
    # Without --check, the earlier check file goes with the model replaced.
    expect(run(weights, model), 0, "pair.onnx written")
    if os.path.exists(check):
        fail("an export without --check left the earlier check file")
    # Another writer's "<path>.tmp" stays as it is, for export and predict.
    for path in (model, os.path.join(tmp, "preds.h5")):
        with open(path + ".tmp", "w") as f:
            f.write("in flight")
    expect(run(weights, model), 0, "pair.onnx written")
    predict = subprocess.run([os.path.join(BUILD, "predict"), weights, VALID,
                              os.path.join(tmp, "preds.h5"), "--device", "cpu"],
                             capture_output=True, text=True)
    expect(predict, 0, "rows written")
    for path in (model, os.path.join(tmp, "preds.h5")):
        if read(path + ".tmp") != b"in flight":
            fail(f"{path}.tmp, another writer's, was changed")
        os.remove(path + ".tmp")
        expect_no_tmp(path)


def foreign_files(tmp, weights):
    """--info and predict given a data set or an export say what the file is."""
    st = os.path.join(tmp, "m.safetensors")
    onnx = os.path.join(tmp, "pair.onnx")
    predict = os.path.join(BUILD, "predict")
    expect(run("--info", VALID), 1, f"{VALID}: is an HDF5 data file (datasets 'X', 'y'), "
           "not a weights file")
    expect(run("--info", st), 1, f"{st}: is a safetensors export, not a weights file",
           "provenance.*")
    for path, what in ((st, "a safetensors export"), (onnx, "an ONNX export")):
        result = subprocess.run([predict, "--info", path], capture_output=True, text=True)
        expect(result, 1, f"{path}: is {what}, not a weights file")
        result = subprocess.run([predict, path, VALID, os.path.join(tmp, "p.h5")],
                                capture_output=True, text=True)
        expect(result, 1, f"{path} is {what}, not a weights file")
    # Text from a file reaches the terminal escaped, never raw.
    escaped = os.path.join(tmp, "escaped.h5")
    shutil.copy(weights, escaped)
    with h5py.File(escaped, "a") as f:
        f["provenance"].attrs["train_path"] = "/x\x1b[2J.h5"
    for program in (EXPORT, predict):
        result = subprocess.run([program, "--info", escaped], capture_output=True, text=True)
        expect(result, 0, "train /x\\x1b[2J.h5")
        if "\x1b" in result.stdout:
            fail("--info printed a raw escape byte", result)


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

        replacements(tmp, weights)
        publication(tmp, weights)
        foreign_files(tmp, weights)
    print("export_cli: ok")


if __name__ == "__main__":
    main()
