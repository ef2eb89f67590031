#!/usr/bin/python3
"""plot_metrics.py — draws a run's metrics.csv: training and validation
loss, and accuracy where the run classifies, against the epoch; beside
them the learning rate and the gradient norm where the CSV has them.

    /usr/bin/python3 scripts/plot_metrics.py runs/example/metrics.csv [-o curves.png] [--log-loss]

Without -o the picture is written beside the CSV as curves.png; an -o
without an extension gets ".png". An -o that is a directory, in a folder
that does not exist, or the CSV itself is refused with a one-line error.
The picture is written to a temporary of its own beside it and renamed
into place (a link at -o is replaced, never written through). Reads the
columns by their header names (epoch, train_loss, train_acc, valid_loss,
valid_acc; lr and grad_norm where present), so columns added after them
change nothing. The learning rate (the last step's of each epoch) gets a
panel of its own, and so does the gradient norm before clipping (a value
only with [train] clip_grad_norm: nan otherwise, and then no panel).
--log-loss draws the loss on a logarithmic axis, where a loss that keeps
falling by a factor stays readable. A dotted line
marks the best epoch as [train] keep_best chooses it (the highest
validation accuracy, or the lowest validation loss for mse). A value of nan
(no validation set, or no accuracy for mse) is left out of its curve; a
panel with no value at all is not drawn. Uses Debian's python3-matplotlib
(hence /usr/bin/python3), without a display.
"""
import argparse
import csv
import math
import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")  # files only: no display is needed or used
import matplotlib.pyplot as plt  # noqa: E402

REQUIRED = ("epoch", "train_loss", "train_acc", "valid_loss", "valid_acc")
OPTIONAL = ("lr", "grad_norm")


def read_metrics(path):
    """The columns of REQUIRED as lists of floats (nan where empty)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        header = rows[0].keys() if rows else []
    if not rows:
        raise ValueError(f"{path}: no epochs (only a header, or empty)")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} in the header")
    present = REQUIRED + tuple(c for c in OPTIONAL if c in header)
    columns = {c: [] for c in present}
    for line, row in enumerate(rows, start=2):
        for c in present:
            text = (row.get(c) or "nan").strip()
            try:
                columns[c].append(float(text))
            except ValueError:
                raise ValueError(f"{path}:{line}: {c} is '{text}', not a number") from None
    return columns


def finite(xs, ys):
    pairs = [(x, y) for x, y in zip(xs, ys) if not math.isnan(y)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def best_epoch(columns):
    """The epoch keep_best would keep: the highest validation accuracy, or
    without one the lowest validation loss (the first of equals); None
    without validation."""
    classify = any(not math.isnan(v) for v in columns["valid_acc"])
    key, sign = ("valid_acc", -1.0) if classify else ("valid_loss", 1.0)
    xs, ys = finite(columns["epoch"], columns[key])
    if not xs:
        return None
    return xs[min(range(len(ys)), key=lambda i: (sign * ys[i], i))]


def has_values(columns, *keys):
    """Whether any of the columns holds a number other than nan."""
    return any(not math.isnan(v) for k in keys for v in columns.get(k, []))


def panels_of(columns):
    """(y label, columns, scale) of each panel to draw, left to right."""
    panels = [("loss", ("train_loss", "valid_loss"), 1.0)]
    if has_values(columns, "train_acc", "valid_acc"):
        panels.append(("accuracy (%)", ("train_acc", "valid_acc"), 100.0))
    if has_values(columns, "lr"):
        panels.append(("learning rate", ("lr",), 1.0))
    if has_values(columns, "grad_norm"):
        panels.append(("gradient norm (before clipping)", ("grad_norm",), 1.0))
    return panels


NAMES = {"train_loss": "training", "valid_loss": "validation", "train_acc": "training",
         "valid_acc": "validation", "lr": "lr", "grad_norm": "grad_norm"}


def figure(columns, title, log_loss=False):
    """The figure: one panel per entry of panels_of, the loss's on a log
    axis with log_loss."""
    panels = panels_of(columns)
    best = best_epoch(columns)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for ax, (label, keys, scale) in zip(axes[0], panels):
        for key in keys:
            xs, ys = finite(columns["epoch"], columns[key])
            if xs:
                ax.plot(xs, [scale * y for y in ys], marker="." if len(xs) < 50 else None,
                        label=NAMES[key])
        if best is not None:
            ax.axvline(best, color="gray", linestyle=":", label=f"best (epoch {best:g})")
        if label == "loss" and log_loss:
            ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label + (" (log scale)" if label == "loss" and log_loss else ""))
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def write_atomically(path, write):
    """Calls write(f) on a new temporary file beside path, unique to this
    process and created exclusively (so no file or link already there is
    written through), then fsyncs it and renames it over path; on failure
    the temporary is removed and path is as it was."""
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(path) or ".")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 is for the temporary alone
        with os.fdopen(fd, "w+b") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)


def plot(columns, title, out, log_loss=False):
    """The figure as the file out, its format named by its extension."""
    fig = figure(columns, title, log_loss)
    try:
        fmt = os.path.splitext(out)[1][1:].lower() or "png"
        write_atomically(out, lambda f: fig.savefig(f, dpi=100, format=fmt))
    finally:
        plt.close(fig)


def output_path(out, csv_path):
    """The file savefig writes for -o out (".png" appended where out has no
    extension, as matplotlib does); ValueError when it cannot or must not be
    written: a directory, a missing folder, the CSV itself."""
    if os.path.isdir(out):
        raise ValueError(f"-o {out}: is a directory; name the PNG to write, as "
                         f"{os.path.join(out, 'curves.png')}")
    if not os.path.splitext(out)[1]:
        out += ".png"
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise ValueError(f"-o {out}: no folder {folder}; make it first, or name another")
    if os.path.exists(out) and os.path.samefile(out, csv_path):
        raise ValueError(f"-o {out}: is the CSV being read ({csv_path}); name another file")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", help="a run's metrics.csv")
    parser.add_argument("-o", "--output", help="the PNG to write (default: curves.png beside it)")
    parser.add_argument("--log-loss", action="store_true",
                        help="draw the loss on a logarithmic axis")
    args = parser.parse_args()
    out = args.output or os.path.join(os.path.dirname(args.csv) or ".", "curves.png")
    try:
        columns = read_metrics(args.csv)
        out = output_path(out, args.csv)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_metrics.py: {e}")
    try:
        plot(columns, os.path.normpath(args.csv), out, args.log_loss)
    except (OSError, ValueError) as e:  # no permission, a format matplotlib lacks
        sys.exit(f"plot_metrics.py: -o {out}: {e}")
    print(f"plot_metrics.py: wrote {out}")


if __name__ == "__main__":
    main()
