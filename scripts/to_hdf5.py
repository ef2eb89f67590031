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
is not is an error naming its line (or row) and column; so is a label that
int64 cannot hold exactly, and a quote left open in a CSV (naming the line
where it opened). An existing output file is refused unless --overwrite,
and an input (the source or --y-file, through any link) always; the file is
written under a temporary name unique to the run, created afresh beside
it, and renamed, so a failed conversion leaves none. Every error is one
line naming the file and the problem (exit 1). Needs NumPy and h5py
(Debian's python3-numpy and python3-h5py: /usr/bin/python3).
"""
import argparse
import csv
import io
import os
import sys
import tempfile
from decimal import Decimal, InvalidOperation

import h5py
import numpy as np

FLOAT32_MAX = float(np.finfo(np.float32).max)
INT64_MAX = 2 ** 63 - 1  # labels are stored as int64


class Bad(Exception):
    """A conversion error: one line for the user."""


def escape(text):
    """text made safe to print on a terminal (a CSV's names and cells go
    to one, where a raw control character moves the cursor or rewrites
    the screen), by the rules of fusenet's own messages (src/core/escape.c):
    a backslash as \\\\, tab, newline and carriage return as \\t, \\n,
    \\r, and every other control or unprintable character (DEL, the C1
    controls, a direction override) as \\xHH for each byte of its UTF-8
    form; printable characters, accented letters included, as they are."""
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.extend("\\x%02x" % b for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


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
    rows = [(n, r) for n, r in csv_rows(path) if r and any(c.strip() for c in r)]
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


def csv_rows(path):
    """(file line where the row starts, cells) of each row. A quote left
    open would otherwise swallow the rest of the file as one cell: it is
    an error naming the line where it opened."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # a byte-order mark is not part of the header
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise Bad(f"{path}:{line}: not UTF-8 text (byte {raw[e.start]:#04x}); "
                  "save the file as UTF-8 CSV") from None
    if "\0" in text:
        raise Bad(f"{path}:{text[:text.index(chr(0))].count(chr(10)) + 1}: a NUL byte; "
                  "not a CSV text file")
    lines = list(io.StringIO(text, newline=""))  # csv's own notion of a line
    rows, start = [], 1
    reader = csv.reader(lines, strict=True)
    try:
        for row in reader:
            rows.append((start, row))
            start = reader.line_num + 1
    except csv.Error as e:
        opened = open_quote_line(lines, start)
        if opened is not None:
            raise Bad(f"{path}:{opened}: a quote (\") opened here is never closed; "
                      "close it, or remove the stray quote") from None
        raise Bad(f"{path}:{reader.line_num}: not CSV ({e})") from None
    return rows


def open_quote_line(lines, start):
    """The line of the quote still open at the end of `lines` read as CSV
    from line `start`, or None when every quote closes."""
    inside, at, prev = False, None, ""
    for line in range(start, len(lines) + 1):
        for ch in lines[line - 1]:
            if ch == '"':
                if not inside and prev != '"':
                    at = line  # a quote opens (not the second of an escaped pair)
                inside = not inside
            prev = ch
    return at if inside else None


def column_index(path, name, names, header):
    if header and name in header:
        return header.index(name)
    try:
        i = int(name)
    except ValueError:
        shown = ", ".join(map(escape, header)) if header else f"0 to {len(names) - 1}"
        raise Bad(f"{path}: --target {escape(name)}: no such column (the columns: {shown})") from None
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
                raise Bad(f"{path}:{lines[r]}: column '{escape(names[c])}' is '{escape(text)}', not a number "
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
        z = load_numpy(path, np.lib.npyio.NpzFile, "a .npz archive")
        with z:
            keys = list(z.keys())
            if x_key not in keys:
                raise Bad(f"{path}: no array '{x_key}' (the archive holds {', '.join(keys) or 'none'}); "
                          "name the inputs with --x-key")
            x = archive_array(path, z, x_key)
            if y_key in keys:
                y = archive_array(path, z, y_key)
            elif y_file is None and len(keys) > 1:
                raise Bad(f"{path}: no array '{y_key}' (the archive holds {', '.join(keys)}); "
                          "name the targets with --y-key, or give --no-targets")
            else:
                y = None
    else:
        x = load_numpy(path, np.ndarray, "a .npy array")
        y = None
    if y_file is not None:
        y = load_numpy(y_file, np.ndarray, "a .npy array")
    return x, y


def load_numpy(path, kind, what):
    """np.load of a file that must hold `what`; a damaged or foreign file
    is one line naming it (NumPy raises many kinds of error for those)."""
    magic = b"\x93NUMPY" if kind is np.ndarray else b"PK\x03\x04"  # .npy's; a zip's
    with open(path, "rb") as f:
        if f.read(len(magic)) != magic:
            raise Bad(f"{path}: not {what} (it does not begin as one does)")
    try:
        got = np.load(path, allow_pickle=False)
    except Exception as e:  # ValueError, EOFError, OSError, zipfile's and zlib's errors
        raise Bad(f"{path}: not readable as {what} ({one_line(e)})") from None
    if not isinstance(got, kind):
        if isinstance(got, np.lib.npyio.NpzFile):
            got.close()
        raise Bad(f"{path}: not {what}")
    return got


def archive_array(path, z, key):
    try:
        return z[key]
    except Exception as e:  # a damaged member: zipfile's, zlib's or NumPy's errors
        raise Bad(f"{path}: array '{key}' is not readable ({one_line(e)})") from None


def one_line(e):
    """An exception's text on one line, with its kind when the text is empty."""
    return " ".join(str(e).split()) or type(e).__name__


# --- checking and shaping ---------------------------------------------------------


def check_float32(where, what, a):
    """Refuses the first cell of a (2-D) that is not finite or out of float32's range."""
    af = a.astype(np.float64)
    bad = ~np.isfinite(af) | (np.abs(af) > FLOAT32_MAX)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise Bad(f"{where}: {what} row {r} column {c} is {a[r, c]}, expected a finite number "
                  "within float32's range")


def checked_inputs(where, x):
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise Bad(f"{where}: the inputs are {x.dtype}, expected numbers")
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise Bad(f"{where}: the inputs have shape {list(x.shape)}, expected [N, in] with N >= 1")
    check_float32(where, "input", x)
    return x.astype(np.float32)


def whole(y):
    if y.dtype.kind in "biu":
        return True
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.mod(y, 1) == 0))


def as_labels(where, y, names=None, texts=None, lines=None):
    """int64 [N] labels, and a phrase saying how they were read. `texts`
    (a CSV's cells, with their file `lines`) are read exactly, not through
    a float64 that rounds past 2^53."""
    if names is not None:
        classes = sorted(set(names))
        index = {c: i for i, c in enumerate(classes)}
        mapping = ", ".join(f"{i} = {escape(c)}" for i, c in enumerate(classes))
        return np.array([index[n] for n in names], dtype=np.int64), f"classes named: {mapping}"
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise Bad(f"{where}: labels must be one column; these have shape {list(y.shape)}")
    if texts is not None:
        labels = np.array([exact_label(where, t, line) for t, line in zip(texts, lines)],
                          dtype=np.int64)
    else:
        labels = array_labels(where, y)
    top = int(labels.max())
    return labels, f"labels 0 to {top}: a classifier's last layer of {top + 1} outputs"


LABEL_RANGE = f"a whole number from 0 to {INT64_MAX} (a class index)"


def exact_label(where, text, line):
    """A CSV cell as a label, exactly: '3' and '3.0' are 3; '1e20', '2.5'
    and '-1' are errors naming the line."""
    try:
        d = Decimal(text)
    except InvalidOperation:
        d = Decimal("NaN")
    if not d.is_finite() or d != d.to_integral_value() or not 0 <= d <= INT64_MAX:
        raise Bad(f"{where}:{line}: label '{escape(text)}' is not {LABEL_RANGE}")
    return int(d)


def array_labels(where, y):
    """An integer or float array as int64 labels; a value that int64 cannot
    hold exactly (negative, fractional, not finite, 2^63 or more) is an
    error naming its row."""
    if y.dtype.kind == "b":
        return y.astype(np.int64)
    if y.dtype.kind in "iu":
        bad = (y < 0) | (y > INT64_MAX) if y.dtype.kind == "i" else y > np.uint64(INT64_MAX)
    else:
        yf = y.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(yf) | (np.mod(yf, 1) != 0) | (yf < 0) | (yf >= 2.0 ** 63)
    if bad.any():
        r = int(np.argmax(bad))
        raise Bad(f"{where}: row {r}: label {y[r]} is not {LABEL_RANGE}")
    return y.astype(np.int64)


def as_values(where, y):
    y = np.asarray(y)
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    if y.ndim != 2 or y.shape[1] < 1:
        raise Bad(f"{where}: values must be [N] or [N, out]; these have shape {list(y.shape)}")
    check_float32(where, "target", y)
    return y.astype(np.float32), f"values: a regression's last layer of {y.shape[1]} output" + \
        ("s" if y.shape[1] != 1 else "")


def shaped_targets(where, y, kind, texts=None, lines=None):
    """(array, phrase); kind: 'labels', 'values' or None (decide); texts:
    a CSV's target cells, lines: their file lines."""
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
    if kind == "values":
        return as_values(where, y)
    return as_labels(where, y, names, texts if names is None else None, lines)


# --- writing ------------------------------------------------------------------------


def write(out, x, y, x_name, y_name, inputs, overwrite):
    """Writes the file under a temporary name unique to this process,
    created exclusively in the output's folder (never a file a stale link
    there points to), and renames it into place: the rename is the only
    publication (without overwrite, a link that fails when the name has
    appeared meanwhile). An output that is one of the inputs is refused, by
    device and inode, just before the rename too."""
    folder = os.path.dirname(out) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(out) + ".", suffix=".tmp", dir=folder)
    except OSError as e:
        raise Bad(f"{out}: cannot write in {folder} ({one_line(e)})") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 is for the temporary alone
        with os.fdopen(fd, "w+b") as handle:
            with h5py.File(handle, "w") as f:
                f.create_dataset(x_name, data=x)
                if y is not None:
                    f.create_dataset(y_name, data=y)
            handle.flush()
            os.fsync(handle.fileno())
        refuse_inputs(out, inputs)
        if overwrite:
            os.replace(tmp, out)
        else:
            os.link(tmp, out)
    except FileExistsError:
        raise Bad(f"{out}: exists; give --overwrite to replace it, or name another") from None
    except OSError as e:
        raise Bad(f"{out}: could not be written ({one_line(e)})") from None
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)


def refuse_inputs(out, inputs):
    """Raises when `out` is (by device and inode, so through any link) one
    of the files the conversion reads: --overwrite never replaces an input."""
    try:
        o = os.stat(out)
    except FileNotFoundError:
        return
    for path in inputs:
        i = os.stat(path)
        if (o.st_dev, o.st_ino) == (i.st_dev, i.st_ino):
            raise Bad(f"{out}: is {path}, an input of this conversion; name another output "
                      "(--overwrite never replaces an input)")


def convert(args):
    source, out = args.source, args.output
    inputs = [source] + ([args.y_file] if args.y_file is not None else [])
    for path in inputs:
        if not os.path.isfile(path):
            raise Bad(f"{path}: {'not a file' if os.path.exists(path) else 'no such file'}")
    refuse_inputs(out, inputs)
    if os.path.lexists(out) and not args.overwrite:
        raise Bad(f"{out}: exists; give --overwrite to replace it, or name another")
    if os.path.isdir(out):
        raise Bad(f"{out}: is a folder; name a file")
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise Bad(f"{out}: no folder {folder}; make it first")
    texts = lines = None
    if source.endswith((".npy", ".npz")):
        x, y = read_numpy(source, args.x_key, args.y_key, args.y_file)
        if args.no_targets:
            y = None
        x = checked_inputs(source, x)
    elif source.endswith(".csv") or source.endswith(".txt"):
        inputs_text, targets, in_names, t_names, lines = read_csv(source, args.target,
                                                                  args.no_targets)
        x = checked_inputs(source, csv_inputs(source, inputs_text, in_names, lines))
        y = csv_targets(source, targets, t_names, lines) if targets is not None else None
        if targets is not None and len(t_names) == 1:
            texts = [row[0] for row in targets]
    else:
        raise Bad(f"{source}: expected a .csv, .npy or .npz file")
    phrase = "no targets (inputs for predict)"
    where = args.y_file if args.y_file is not None else source
    if y is not None:
        y = np.asarray(y)
        if y.ndim == 0 or y.shape[0] != x.shape[0]:
            raise Bad(f"{where}: {x.shape[0]} input rows but targets of shape {list(y.shape)}")
        y, phrase = shaped_targets(where, y, args.kind, texts, lines)
    write(out, x, y, args.inputs, args.targets, inputs, args.overwrite)
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
        sys.exit(f"to_hdf5.py: {' '.join(str(e).split())}")
    except Exception as e:  # anything unforeseen: still one line naming the input
        sys.exit(f"to_hdf5.py: {args.source}: {type(e).__name__}: {one_line(e)}")


if __name__ == "__main__":
    main()
