#!/usr/bin/python3
"""to_hdf5_test.py — scripts/to_hdf5.py writes the layout fusenet reads
(ctest "to_hdf5"): a CSV with a header and class names becomes X float32
[N, in] and y int64 labels in sorted name order; a CSV without a header,
its whole-number last column said to be --labels, labels; whole numbers
without --labels or --values are an error asking for one; --values with
two --target columns gives y float32 [N, 2]; fractional targets are
values without being told; a .npz's X and integer y, and a .npy of
inputs alone (no y); a .npz without y names the arrays it holds; a cell
that is not a number names its line and column; an existing output is
refused unless --overwrite, and a failed conversion leaves no file. With
FN_BUILD_DIR set (ctest sets it), `train` reads a converted CSV for one
epoch. Needs FN_SOURCE_DIR; NumPy and h5py (/usr/bin/python3)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SCRIPT = os.path.join(os.environ["FN_SOURCE_DIR"], "scripts", "to_hdf5.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def convert(*args):
    r = run(*args)
    if r.returncode != 0:
        sys.exit(f"to_hdf5.py {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def fails(needle, *args):
    r = run(*args)
    lines = r.stderr.strip().splitlines()
    if r.returncode == 0 or len(lines) != 1 or not lines[0].startswith("to_hdf5.py: ") \
            or needle not in lines[0]:
        sys.exit(f"to_hdf5.py {' '.join(args)}: expected one line with '{needle}', got "
                 f"{r.returncode}:\n{r.stdout}{r.stderr}")


def read(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f.keys()}


def expect(got, key, dtype, value):
    a = got[key]
    if a.dtype != dtype or a.shape != np.shape(value) or not np.array_equal(a, value):
        sys.exit(f"dataset {key}: {a.dtype} {a.shape} {a.tolist()}, expected {dtype} "
                 f"{np.shape(value)} {np.asarray(value).tolist()}")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731

        write(p("iris.csv"), "sepal,petal,species\n1.5,2,setosa\n3,4.25,virginica\n"
                             "5,6,setosa\n7,8,versicolor\n")
        out = convert(p("iris.csv"), p("iris.h5"))
        if "classes named: 0 = setosa, 1 = versicolor, 2 = virginica" not in out:
            sys.exit(f"the mapping of names is not printed: {out}")
        got = read(p("iris.h5"))
        expect(got, "X", np.float32, [[1.5, 2], [3, 4.25], [5, 6], [7, 8]])
        expect(got, "y", np.int64, [0, 2, 0, 1])

        # Class names reach the terminal escaped as fusenet's messages
        # escape bytes of a file: a control character (ESC, a newline in
        # a quoted cell, DEL) as \\xHH or \\n, a backslash doubled;
        # printable letters, accented ones too, as they are.
        write(p("names.csv"), 'a,name\n1,"x\x1b[2Jy"\n2,"two\nlines"\n3,caf\u00e9\n'
                              '4,back\\slash\n5,del\x7f\n')
        out = convert(p("names.csv"), p("names.h5"))
        want = ("classes named: 0 = back\\\\slash, 1 = caf\u00e9, 2 = del\\x7f, "
                "3 = two\\nlines, 4 = x\\x1b[2Jy")
        if want not in out or "\x1b" in out or "\x7f" in out:
            sys.exit(f"class names are not printed escaped: {out!r}, expected {want!r}")

        write(p("plain.csv"), "0.5,1,2\n1.5,2,0\n2.5,3,1\n")
        fails("the targets are whole numbers: class labels or values? Give --labels",
              p("plain.csv"), p("plain.h5"))
        if os.path.exists(p("plain.h5")):
            sys.exit("a failed conversion left its output")
        convert(p("plain.csv"), p("plain.h5"), "--labels")
        expect(read(p("plain.h5")), "y", np.int64, [2, 0, 1])
        fails("exists; give --overwrite", p("plain.csv"), p("plain.h5"), "--labels")
        convert(p("plain.csv"), p("plain.h5"), "--values", "--target", "0", "--target", "2",
                "--overwrite")
        got = read(p("plain.h5"))
        expect(got, "X", np.float32, [[1], [2], [3]])
        expect(got, "y", np.float32, [[0.5, 2], [1.5, 0], [2.5, 1]])

        write(p("frac.csv"), "a,b,t\n1,2,0.25\n3,4,1.5\n")
        out = convert(p("frac.csv"), p("frac.h5"))
        expect(read(p("frac.h5")), "y", np.float32, [[0.25], [1.5]])
        if "values: a regression's last layer of 1 output" not in out:
            sys.exit(f"no line saying the targets are values: {out}")

        write(p("text.csv"), "a,b,t\n1,2,0\n3,x,1\n")
        fails("text.csv:3: column 'b' is 'x', not a number", p("text.csv"), p("text.h5"),
              "--labels")
        fails("--target c: no such column (the columns: a, b, t)", p("text.csv"), p("t.h5"),
              "--target", "c")

        x = np.arange(12, dtype=np.float64).reshape(4, 3)
        np.savez(p("arrays.npz"), X=x, y=np.array([1, 0, 1, 2]))
        convert(p("arrays.npz"), p("arrays.h5"))
        got = read(p("arrays.h5"))
        expect(got, "X", np.float32, x)
        expect(got, "y", np.int64, [1, 0, 1, 2])
        np.savez(p("other.npz"), data=x, target=np.zeros(4))
        fails("no array 'X' (the archive holds data, target); name the inputs with --x-key",
              p("other.npz"), p("other.h5"))
        np.save(p("inputs.npy"), x)
        convert(p("inputs.npy"), p("inputs.h5"))
        got = read(p("inputs.h5"))
        if sorted(got) != ["X"]:
            sys.exit(f"a .npy of inputs wrote {sorted(got)}, expected X alone")

        build = os.environ.get("FN_BUILD_DIR")
        if build:
            digits = os.path.join(os.environ["FN_SOURCE_DIR"], "data", "digits_train.h5")
            with h5py.File(digits, "r") as f:
                table = np.column_stack([f["X"][()], f["y"][()]])
            np.savetxt(p("digits.csv"), table, delimiter=",", fmt="%g")
            convert(p("digits.csv"), p("digits.h5"), "--labels")
            ini = os.path.join(os.environ["FN_SOURCE_DIR"], "data", "example.ini")
            r = subprocess.run([os.path.join(build, "train"), ini, "--set",
                                f"data.train={p('digits.h5')}", "--set", "train.epochs=1",
                                "--set", f"output.dir={p('run')}", "--set", "run.device=cpu"],
                               capture_output=True, text=True)
            if r.returncode != 0 or "done: 1 epoch" not in r.stdout:
                sys.exit(f"train on the converted CSV failed ({r.returncode}):\n{r.stdout}"
                         f"{r.stderr}")
    print("to_hdf5.py: layouts, messages and refusals as expected")


if __name__ == "__main__":
    main()
