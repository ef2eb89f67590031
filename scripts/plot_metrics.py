#!/usr/bin/python3
"""plot_metrics.py — draws a run's metrics.csv: training and validation
loss, and accuracy where the run classifies, against the epoch.

    /usr/bin/python3 scripts/plot_metrics.py runs/example/metrics.csv [-o curves.png]

Without -o the picture is written beside the CSV as curves.png; an -o
without an extension gets ".png". An -o that is a directory, in a folder
that does not exist, or the CSV itself is refused with a one-line error.
Reads the
columns by their header names (epoch, train_loss, train_acc, valid_loss,
valid_acc), so columns added after them change nothing. A dotted line
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

import matplotlib

matplotlib.use("Agg")  # files only: no display is needed or used
import matplotlib.pyplot as plt  # noqa: E402

REQUIRED = ("epoch", "train_loss", "train_acc", "valid_loss", "valid_acc")


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
    columns = {c: [] for c in REQUIRED}
    for line, row in enumerate(rows, start=2):
        for c in REQUIRED:
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


def plot(columns, title, out):
    panels = [("loss", "train_loss", "valid_loss", 1.0)]
    if any(not math.isnan(v) for v in columns["train_acc"] + columns["valid_acc"]):
        panels.append(("accuracy (%)", "train_acc", "valid_acc", 100.0))
    best = best_epoch(columns)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for ax, (label, train, valid, scale) in zip(axes[0], panels):
        for key, name in ((train, "training"), (valid, "validation")):
            xs, ys = finite(columns["epoch"], columns[key])
            if xs:
                ax.plot(xs, [scale * y for y in ys], marker="." if len(xs) < 50 else None,
                        label=name)
        if best is not None:
            ax.axvline(best, color="gray", linestyle=":", label=f"best (epoch {best:g})")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
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
    args = parser.parse_args()
    out = args.output or os.path.join(os.path.dirname(args.csv) or ".", "curves.png")
    try:
        columns = read_metrics(args.csv)
        out = output_path(out, args.csv)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_metrics.py: {e}")
    try:
        plot(columns, os.path.normpath(args.csv), out)
    except (OSError, ValueError) as e:  # no permission, a format matplotlib lacks
        sys.exit(f"plot_metrics.py: -o {out}: {e}")
    print(f"plot_metrics.py: wrote {out}")


if __name__ == "__main__":
    main()
