#!/usr/bin/python3
"""to_hdf5_malformed.py — scripts/to_hdf5.py on a corpus of malformed
inputs (ctest "to_hdf5_malformed"): each run fails with exactly one line,
`to_hdf5.py: <the file>...: <the problem>`, no traceback and no output
file. Labels must be whole numbers int64 holds exactly: a CSV's 1e20, a
uint64 2^64 - 1, -1, 2.5 or nan are refused naming the file, the line or
row and the value (they were stored as -2^63, -1 ...), while a CSV's
9007199254740993 (beyond float64's exact integers) is stored exactly. A
quote left open in a CSV is named with the line where it opened (it
swallowed the rest of the file as one cell). Then truncated, empty and
foreign .npy and .npz files, object, text and complex arrays, wrong
shapes, an empty CSV, a header without rows, ragged rows, non-numeric
cells, bytes that are not UTF-8, a NUL byte, a missing --y-file, values
beyond float32. Needs FN_SOURCE_DIR; NumPy and h5py (/usr/bin/python3)."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import traceback

import h5py
import numpy as np

SCRIPT = os.path.join(os.environ["FN_SOURCE_DIR"], "scripts", "to_hdf5.py")
sys.dont_write_bytecode = True  # no __pycache__ left in scripts/
sys.path.insert(0, os.path.dirname(SCRIPT))
import to_hdf5 as to_hdf5_script  # noqa: E402
failures = []


def to_hdf5(*args):
    """to_hdf5.py's main in this process (NumPy and h5py imported once; a
    process a case took 15 s): what the command would exit with and print.
    An exception it lets out is a traceback, as from the command."""
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["to_hdf5.py", *args]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            to_hdf5_script.main()
            code = 0
        except SystemExit as e:
            code = e.code
            if isinstance(code, str):  # sys.exit(message): printed, exit 1
                print(code, file=sys.stderr)
                code = 1
        except Exception:
            traceback.print_exc()
            code = "traceback"
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def fails(tmp, needle, source, *args):
    """to_hdf5.py source out.h5 args: one line holding the source's name
    and needle, non-zero exit, no out.h5."""
    out = os.path.join(tmp, "out.h5")
    r = to_hdf5(os.path.join(tmp, source), out, *args)
    lines = r.stderr.strip().splitlines()
    ok = (r.returncode != 0 and len(lines) == 1 and lines[0].startswith("to_hdf5.py: ")
          and needle in lines[0] and "Traceback" not in r.stderr and not os.path.exists(out))
    print(f"{'ok  ' if ok else 'FAIL'} {source} {' '.join(args)}: {lines[-1] if lines else ''}")
    if not ok:
        failures.append(f"{source} {' '.join(args)}: expected one line with '{needle}', got "
                        f"{r.returncode}:\n{r.stdout}{r.stderr}")
    if os.path.exists(out):
        os.remove(out)


def text(tmp, name, content, mode="w"):
    with open(os.path.join(tmp, name), mode) as f:
        f.write(content)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731
        x3 = np.arange(6, dtype=np.float64).reshape(3, 2)

        # Labels that int64 does not hold exactly.
        text(tmp, "big.csv", "a,b,t\n1,2,0\n3,4,1e20\n5,6,1\n")
        fails(tmp, "big.csv:3: label '1e20' is not a whole number from 0 to "
              "9223372036854775807", "big.csv", "--labels")
        text(tmp, "neg.csv", "a,t\n1,0\n2,-1\n")
        fails(tmp, "neg.csv:3: label '-1'", "neg.csv", "--labels")
        text(tmp, "half.csv", "a,t\n1,0\n2,2.5\n")
        fails(tmp, "half.csv:3: label '2.5'", "half.csv", "--labels")
        text(tmp, "nan.csv", "a,t\n1,0\n2,nan\n")
        fails(tmp, "nan.csv:3: label 'nan'", "nan.csv", "--labels")
        np.savez(p("u64.npz"), X=x3, y=np.array([0, 1, 2 ** 64 - 1], dtype=np.uint64))
        fails(tmp, "u64.npz: row 2: label 18446744073709551615 is not", "u64.npz")
        np.savez(p("f64.npz"), X=x3, y=np.array([0.0, 1e20, 1.0]))
        fails(tmp, "f64.npz: row 1: label 1e+20 is not", "f64.npz", "--labels")
        np.savez(p("i64.npz"), X=x3, y=np.array([0, -3, 1]))
        fails(tmp, "i64.npz: row 1: label -3 is not", "i64.npz")
        text(tmp, "exact.csv", "a,t\n1,0\n2,9007199254740993\n")
        r = subprocess.run([sys.executable, SCRIPT, p("exact.csv"), p("exact.h5"), "--labels"],
                           capture_output=True, text=True)  # the command itself, once
        if r.returncode != 0:
            failures.append(f"exact.csv: {r.returncode}: {r.stderr}")
        with h5py.File(p("exact.h5"), "r") as f:
            got = f["y"][()].tolist()
        if got != [0, 9007199254740993]:
            failures.append(f"exact.csv: labels {got}, expected [0, 9007199254740993]")

        # A quote left open, and CSV that is not CSV.
        text(tmp, "quote.csv", 'a,b,t\n1,2,0\n3,"4,1\n5,6,1\n7,8,0\n')
        fails(tmp, "quote.csv:3: a quote (\") opened here is never closed", "quote.csv",
              "--labels")
        text(tmp, "quote2.csv", 'a,b,t\n1,"x\ny",0\n3,4,"1\n5,6,1\n')
        fails(tmp, "quote2.csv:4: a quote", "quote2.csv", "--labels", "--target", "t")
        text(tmp, "after.csv", 'a,b,t\n1,"2"x,0\n')
        fails(tmp, "after.csv:2: not CSV", "after.csv")
        text(tmp, "latin1.csv", b"a,t\n1,0\n2,caf\xe9\n", "wb")
        fails(tmp, "latin1.csv:3: not UTF-8 text", "latin1.csv")
        text(tmp, "far.csv", b"a,t\n" + b"1,0\n" * 5000 + b"2,caf\xe9\n", "wb")
        fails(tmp, "far.csv:5002: not UTF-8 text", "far.csv")  # past the decoder's chunks
        text(tmp, "nul.csv", "a,t\n1,0\n2,\x001\n")
        fails(tmp, "nul.csv:3: a NUL byte", "nul.csv")
        text(tmp, "empty.csv", "")
        fails(tmp, "empty.csv: no rows", "empty.csv")
        text(tmp, "header.csv", "a,b,t\n")
        fails(tmp, "header.csv: a header and no rows", "header.csv")
        text(tmp, "ragged.csv", "a,b,t\n1,2,0\n3,1\n")
        fails(tmp, "ragged.csv:3: 2 cells, the first row has 3", "ragged.csv")
        text(tmp, "word.csv", "a,b,t\n1,two,0\n")
        fails(tmp, "word.csv:2: column 'b' is 'two', not a number", "word.csv", "--labels")
        text(tmp, "huge.csv", "a,t\n1,0.5\n2,1e300\n")
        fails(tmp, "huge.csv: target row 1 column 0 is 1e+300, expected a finite number within "
              "float32's range", "huge.csv", "--values")
        text(tmp, "hugex.csv", "a,b,t\n1,2,0\n3,-1e300,1\n")
        fails(tmp, "hugex.csv: input row 1 column 1 is -1e+300, expected a finite number within "
              "float32's range", "hugex.csv", "--labels")
        text(tmp, "one.csv", "t\n1\n")
        fails(tmp, "one.csv: no input column left", "one.csv")

        # .npy and .npz files: damaged, foreign, of the wrong kind or shape.
        np.save(p("x.npy"), x3)
        full = open(p("x.npy"), "rb").read()
        text(tmp, "short.npy", full[:100], "wb")
        fails(tmp, "short.npy: not readable as a .npy array", "short.npy")
        text(tmp, "cut.npy", full[:-8], "wb")
        fails(tmp, "cut.npy: not readable as a .npy array", "cut.npy")
        text(tmp, "zero.npy", b"", "wb")
        fails(tmp, "zero.npy: not a .npy array", "zero.npy")
        text(tmp, "csv.npy", "1,2\n3,4\n")
        fails(tmp, "csv.npy: not a .npy array", "csv.npy")
        np.save(p("objects.npy"), np.array([{"a": 1}, None], dtype=object))
        fails(tmp, "objects.npy: not readable as a .npy array", "objects.npy")
        np.save(p("words.npy"), np.array([["a", "b"], ["c", "d"]]))
        fails(tmp, "words.npy: the inputs are <U1, expected numbers", "words.npy")
        np.save(p("complex.npy"), x3.astype(np.complex64))
        fails(tmp, "complex.npy: the inputs are complex64", "complex.npy")
        np.save(p("cube.npy"), np.zeros((2, 2, 2)))
        fails(tmp, "cube.npy: the inputs have shape [2, 2, 2]", "cube.npy")
        np.save(p("none.npy"), np.zeros((0, 3)))
        fails(tmp, "none.npy: the inputs have shape [0, 3]", "none.npy")
        np.savez(p("xy.npz"), X=x3, y=np.array([0, 1, 1]))
        whole = open(p("xy.npz"), "rb").read()
        text(tmp, "cut.npz", whole[:len(whole) // 2], "wb")
        fails(tmp, "cut.npz: not readable as a .npz archive", "cut.npz")
        text(tmp, "notzip.npz", full, "wb")
        fails(tmp, "notzip.npz: not a .npz archive", "notzip.npz")
        np.savez(p("ytext.npz"), X=x3, y=np.array(["a", "b", "c"]))
        fails(tmp, "ytext.npz: the targets are <U1", "ytext.npz")
        np.savez(p("rows.npz"), X=x3, y=np.array([0, 1]))
        fails(tmp, "rows.npz: 3 input rows but targets of shape [2]", "rows.npz")
        fails(tmp, "nowhere.npy: no such file", "x.npy", "--y-file", p("nowhere.npy"))
        fails(tmp, "xy.npz: not a .npy array", "x.npy", "--y-file", p("xy.npz"))
        np.save(p("y2.npy"), np.array([[0, 1], [1, 0], [0, 0]]))
        fails(tmp, "y2.npy: labels must be one column", "x.npy", "--y-file", p("y2.npy"))
        os.mkdir(p("folder.csv"))
        fails(tmp, "folder.csv: not a file", "folder.csv")
        fails(tmp, "missing.csv: no such file", "missing.csv")
        text(tmp, "x.parquet", "")
        fails(tmp, "x.parquet: expected a .csv, .npy or .npz file", "x.parquet")
    if failures:
        sys.exit("\n".join(failures))
    print("to_hdf5.py: every malformed input ends with one line naming the file")


if __name__ == "__main__":
    main()
