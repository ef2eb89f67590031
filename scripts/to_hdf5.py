#!/usr/bin/python3
"""to_hdf5.py — converts a CSV file, a .npy array or a .npz archive into the
HDF5 layout `train` and `predict` read (docs/data.md): inputs float32
[N, in] as dataset X, and targets as dataset y: integer labels [N] for a
classifier (loss = cross_entropy) or float32 values [N, out] for a
regression (loss = mse).

    /usr/bin/python3 scripts/to_hdf5.py iris.csv iris.h5
    /usr/bin/python3 scripts/to_hdf5.py diabetes.csv diabetes.h5 --values
    /usr/bin/python3 scripts/to_hdf5.py digits.npz digits.h5           # arrays X and y
    /usr/bin/python3 scripts/to_hdf5.py inputs.npy inputs.h5           # inputs only, for predict

A CSV's first row is its header when any of its cells is not a number. The
targets are its last column unless --target names others (by header name
or 0-based index, repeatable), and with --no-targets there are none. A
.npz archive gives its arrays X and y (--x-key, --y-key name others); a
.npy file holds the inputs alone (--y-file adds targets from another .npy).
1-D inputs become one column.

How the targets are read, said in the line the script prints:
  - names (a CSV column that is not numbers: "setosa") become labels
    0, 1, ... in sorted order, the mapping printed;
  - an integer array (.npy, .npz) is labels; fractional numbers are values;
  - whole numbers in a CSV or a float array are ambiguous (class 3, or the
    value 3.0?): an error asking for --labels or --values;
  - --labels or --values says it outright.
Labels must be whole numbers >= 0 and one column; values any finite
numbers. Inputs must be finite numbers within float32's range; a cell that
is not is an error naming its line (or row) and column. An existing output
file is refused unless --overwrite; the file is written under a temporary
name and renamed, so a failed conversion leaves none. Needs NumPy and h5py
(Debian's python3-numpy and python3-h5py: /usr/bin/python3).
"""
import argparse
import csv
import os
import sys

import h5py
import numpy as np

FLOAT32_MAX = float(np.finfo(np.float32).max)


class Bad(Exception):
    """A conversion error: one line for the user."""


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


# --- reading --------------------------------------------------------------------


def read_csv(path, target_names, no_targets):
    """(inputs as text rows, targets as text rows or None, input names,
    target names, the file line of each row)."""
    with open(path, newline="") as f:
        rows = [(n, r) for n, r in enumerate(csv.reader(f), start=1) if r and any(c.strip() for c in r)]
    if not rows:
        raise Bad(f"{path}: no rows")
    header = None
    if not all(is_number(c) for c in rows[0][1]):
        header = [c.strip() for c in rows[0][1]]
        rows = rows[1:]
    if not rows:
        raise Bad(f"{path}: a header and no rows")
    width = len(rows[0][1])
    for line, row in rows:
        if len(row) != width:
            raise Bad(f"{path}:{line}: {len(row)} cells, the first row has {width}")
    names = header if header and len(header) == width else [str(i) for i in range(width)]
    if no_targets:
        picked = []
    else:
        picked = [column_index(path, t, names, header) for t in (target_names or ["-1"])]
    if width - len(picked) < 1:
        raise Bad(f"{path}: no input column left beside the targets")
    kept = [i for i in range(width) if i not in picked]
    lines = [line for line, _ in rows]
    inputs = [[row[i].strip() for i in kept] for _, row in rows]
    targets = [[row[i].strip() for i in picked] for _, row in rows] if picked else None
    return inputs, targets, [names[i] for i in kept], [names[i] for i in picked], lines


def column_index(path, name, names, header):
    if header and name in header:
        return header.index(name)
    try:
        i = int(name)
    except ValueError:
        shown = ", ".join(header) if header else f"0 to {len(names) - 1}"
        raise Bad(f"{path}: --target {name}: no such column (the columns: {shown})") from None
    if not -len(names) <= i < len(names):
        raise Bad(f"{path}: --target {name}: the file has {len(names)} columns")
    return i % len(names)


def csv_inputs(path, inputs, names, lines):
    out = np.empty((len(inputs), len(names)), dtype=np.float64)
    for r, row in enumerate(inputs):
        for c, text in enumerate(row):
            try:
                out[r, c] = float(text)
            except ValueError:
                raise Bad(f"{path}:{lines[r]}: column '{names[c]}' is '{text}', not a number "
                          "(inputs must be numbers; name a text column with --target, or "
                          "encode it first)") from None
    return out


def csv_targets(path, targets, names, lines):
    """Numbers as a float64 array [N, k], or names as an object array."""
    flat = [t for row in targets for t in row]
    if all(is_number(t) for t in flat):
        return np.array([[float(t) for t in row] for row in targets], dtype=np.float64)
    if len(names) != 1:
        bad = next(r for r, row in enumerate(targets) if not all(is_number(t) for t in row))
        raise Bad(f"{path}:{lines[bad]}: a target is not a number; names of classes are read "
                  "from a single --target column only")
    return np.array([row[0] for row in targets], dtype=object)


def read_numpy(path, x_key, y_key, y_file):
    """(inputs, targets or None) of a .npy or .npz file."""
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.keys())
            if x_key not in keys:
                raise Bad(f"{path}: no array '{x_key}' (the archive holds {', '.join(keys) or 'none'}); "
                          "name the inputs with --x-key")
            x = z[x_key]
            if y_key in keys:
                y = z[y_key]
            elif y_file is None and len(keys) > 1:
                raise Bad(f"{path}: no array '{y_key}' (the archive holds {', '.join(keys)}); "
                          "name the targets with --y-key, or give --no-targets")
            else:
                y = None
    else:
        x = np.load(path, allow_pickle=False)
        y = None
    if y_file is not None:
        y = np.load(y_file, allow_pickle=False)
    return x, y


# --- checking and shaping ---------------------------------------------------------


def checked_inputs(where, x):
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise Bad(f"{where}: the inputs are {x.dtype}, expected numbers")
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise Bad(f"{where}: the inputs have shape {list(x.shape)}, expected [N, in] with N >= 1")
    xf = x.astype(np.float64)
    bad = ~np.isfinite(xf) | (np.abs(xf) > FLOAT32_MAX)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise Bad(f"{where}: input row {r} column {c} is {x[r, c]}, expected a finite number "
                  "within float32's range")
    return x.astype(np.float32)


def whole(y):
    return y.dtype.kind in "biu" or bool(np.all(np.mod(y, 1) == 0))


def as_labels(where, y, names=None):
    """int64 [N] labels, and a phrase saying how they were read."""
    if names is not None:
        classes = sorted(set(names))
        index = {c: i for i, c in enumerate(classes)}
        mapping = ", ".join(f"{i} = {c}" for i, c in enumerate(classes))
        return np.array([index[n] for n in names], dtype=np.int64), f"classes named: {mapping}"
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise Bad(f"{where}: labels must be one column; these have shape {list(y.shape)}")
    if not whole(y) or (y.size and y.min() < 0):
        raise Bad(f"{where}: --labels: the targets must be whole numbers >= 0, as class indices")
    labels = y.astype(np.int64)
    top = int(labels.max())
    return labels, f"labels 0 to {top}: a classifier's last layer of {top + 1} outputs"


def as_values(where, y):
    y = np.asarray(y)
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    if y.ndim != 2:
        raise Bad(f"{where}: values must be [N] or [N, out]; these have shape {list(y.shape)}")
    if not np.all(np.isfinite(y.astype(np.float64))):
        raise Bad(f"{where}: a target value is not finite")
    return y.astype(np.float32), f"values: a regression's last layer of {y.shape[1]} output" + \
        ("s" if y.shape[1] != 1 else "")


def shaped_targets(where, y, kind):
    """(array, phrase); kind: 'labels', 'values' or None (decide)."""
    names = None
    if y.dtype == object:
        if kind == "values":
            raise Bad(f"{where}: --values: the targets are names, not numbers")
        names, kind = list(y), "labels"
    elif y.dtype.kind not in "biuf":
        raise Bad(f"{where}: the targets are {y.dtype}, expected numbers or class names")
    if kind is None:
        if y.dtype.kind in "biu":
            kind = "labels"
        elif not whole(y):
            kind = "values"
        else:
            raise Bad(f"{where}: the targets are whole numbers: class labels or values? Give "
                      "--labels (a classifier, loss = cross_entropy) or --values (a regression, "
                      "loss = mse)")
    return as_labels(where, y, names) if kind == "labels" else as_values(where, y)


# --- writing ------------------------------------------------------------------------


def write(out, x, y, x_name, y_name):
    tmp = out + ".tmp"
    try:
        with h5py.File(tmp, "w") as f:
            f.create_dataset(x_name, data=x)
            if y is not None:
                f.create_dataset(y_name, data=y)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def convert(args):
    source, out = args.source, args.output
    if not os.path.isfile(source):
        raise Bad(f"{source}: no such file")
    if os.path.exists(out) and os.path.samefile(out, source):
        raise Bad(f"{out}: is the file being read; name another output")
    if os.path.exists(out) and not args.overwrite:
        raise Bad(f"{out}: exists; give --overwrite to replace it, or name another")
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise Bad(f"{out}: no folder {folder}; make it first")
    if source.endswith((".npy", ".npz")):
        x, y = read_numpy(source, args.x_key, args.y_key, args.y_file)
        if args.no_targets:
            y = None
        x = checked_inputs(source, x)
    elif source.endswith(".csv") or source.endswith(".txt"):
        inputs, targets, in_names, t_names, lines = read_csv(source, args.target, args.no_targets)
        x = checked_inputs(source, csv_inputs(source, inputs, in_names, lines))
        y = csv_targets(source, targets, t_names, lines) if targets is not None else None
    else:
        raise Bad(f"{source}: expected a .csv, .npy or .npz file")
    phrase = "no targets (inputs for predict)"
    if y is not None:
        y = np.asarray(y)
        if y.shape[0] != x.shape[0]:
            raise Bad(f"{source}: {x.shape[0]} input rows but {y.shape[0]} targets")
        y, phrase = shaped_targets(source, y, args.kind)
    write(out, x, y, args.inputs, args.targets)
    shape = f", {args.targets} {y.dtype} {list(y.shape)}" if y is not None else ""
    print(f"to_hdf5.py: wrote {out}: {args.inputs} float32 {list(x.shape)}{shape} ({phrase})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a .csv, .npy or .npz file")
    parser.add_argument("output", help="the HDF5 file to write")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--labels", dest="kind", action="store_const", const="labels",
                      help="the targets are class labels 0, 1, ... (loss = cross_entropy)")
    kind.add_argument("--values", dest="kind", action="store_const", const="values",
                      help="the targets are values to regress (loss = mse)")
    parser.add_argument("--target", action="append",
                        help="CSV: a target column, by header name or 0-based index "
                             "(repeatable; default: the last column)")
    parser.add_argument("--no-targets", action="store_true", help="inputs only")
    parser.add_argument("--x-key", default="X", help=".npz: the inputs' array (default X)")
    parser.add_argument("--y-key", default="y", help=".npz: the targets' array (default y)")
    parser.add_argument("--y-file", help=".npy or .npz: targets from this .npy file")
    parser.add_argument("--inputs", default="X", help="the inputs' dataset name (default X)")
    parser.add_argument("--targets", default="y", help="the targets' dataset name (default y)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    args = parser.parse_args()
    try:
        convert(args)
    except Bad as e:
        sys.exit(f"to_hdf5.py: {e}")
    except (OSError, ValueError) as e:
        sys.exit(f"to_hdf5.py: {e}")


if __name__ == "__main__":
    main()
