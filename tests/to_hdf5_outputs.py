#!/usr/bin/python3
"""to_hdf5_outputs.py — scripts/to_hdf5.py never loses a file it did not
make (ctest "to_hdf5_outputs"): a stale `<output>.tmp` symbolic link to
another file leaves that file as it was (the temporary is created afresh,
unique to the run) and the output is written; with --overwrite, an output
that is the --y-file just read, the source through a hard link, or a
symbolic link to the source is refused, the input unchanged byte for byte;
no temporary is left beside the output after a success or a failure; the
output's mode follows the umask (not the temporary's 0600). Needs
FN_SOURCE_DIR; NumPy and h5py (/usr/bin/python3)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SCRIPT = os.path.join(os.environ["FN_SOURCE_DIR"], "scripts", "to_hdf5.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def expect(ok, what, r=None):
    if not ok:
        sys.exit(f"{what}" + (f"\n{r.returncode}: {r.stdout}{r.stderr}" if r else ""))


def refused(needle, unchanged, *args):
    """The run fails with one line holding needle, and `unchanged` (path,
    bytes) still holds its bytes."""
    r = run(*args)
    lines = r.stderr.strip().splitlines()
    expect(r.returncode != 0 and len(lines) == 1 and needle in lines[0],
           f"to_hdf5.py {' '.join(args)}: expected one line with '{needle}'", r)
    path, before = unchanged
    with open(path, "rb") as f:
        expect(f.read() == before, f"{path} changed under {' '.join(args)}")


def main():
    os.umask(0o022)
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731
        with open(p("table.csv"), "w") as f:
            f.write("a,b,t\n1,2,0\n3,4,1\n5,6,1\n")

        # A stale link where the old code put its temporary.
        with open(p("victim.txt"), "w") as f:
            f.write("not to be touched\n")
        os.symlink(p("victim.txt"), p("out.h5.tmp"))
        r = run(p("table.csv"), p("out.h5"), "--labels")
        expect(r.returncode == 0, "the conversion beside a stale .tmp link failed", r)
        with open(p("victim.txt"), "rb") as f:
            expect(f.read() == b"not to be touched\n",
                   "the file a stale out.h5.tmp link points to was overwritten")
        with h5py.File(p("out.h5"), "r") as f:
            expect(f["y"][()].tolist() == [0, 1, 1], "out.h5 does not hold the labels")
        mode = os.stat(p("out.h5")).st_mode & 0o777
        expect(mode == 0o644, f"out.h5 has mode {mode:o}, expected 644 under umask 022")

        # --overwrite never replaces an input.
        np.save(p("x.npy"), np.arange(6, dtype=np.float64).reshape(3, 2))
        np.save(p("y.npy"), np.array([0, 1, 0]))
        y_bytes = open(p("y.npy"), "rb").read()
        refused("an input of this conversion", (p("y.npy"), y_bytes),
                p("x.npy"), p("y.npy"), "--y-file", p("y.npy"), "--overwrite")
        os.link(p("y.npy"), p("y_link.h5"))
        refused("an input of this conversion", (p("y.npy"), y_bytes),
                p("x.npy"), p("y_link.h5"), "--y-file", p("y.npy"), "--overwrite")
        csv_bytes = open(p("table.csv"), "rb").read()
        os.link(p("table.csv"), p("hard.h5"))
        refused("an input of this conversion", (p("table.csv"), csv_bytes),
                p("table.csv"), p("hard.h5"), "--labels", "--overwrite")
        os.symlink(p("table.csv"), p("soft.h5"))
        refused("an input of this conversion", (p("table.csv"), csv_bytes),
                p("table.csv"), p("soft.h5"), "--labels", "--overwrite")

        # Nothing left behind: only the files above and the link planted.
        with open(p("bad.csv"), "w") as f:
            f.write("a,t\n1,x\n2,0\n")
        run(p("bad.csv"), p("bad.h5"), "--values")
        left = sorted(n for n in os.listdir(tmp) if n.endswith(".tmp"))
        expect(left == ["out.h5.tmp"], f"temporaries left: {left}")
        expect(not os.path.exists(p("bad.h5")), "a failed conversion left its output")
    print("to_hdf5.py: stale links, inputs as outputs and temporaries as expected")


if __name__ == "__main__":
    main()
