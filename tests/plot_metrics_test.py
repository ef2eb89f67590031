#!/usr/bin/python3
"""plot_metrics_test.py — scripts/plot_metrics.py renders a PNG of the size
it draws (ctest "plot_metrics"): two panels for a classifying run (12 x
4.5 inches at 100 dpi: 1200 x 450 pixels), one for an mse run, whose
accuracy columns are nan (600 x 450); a panel more each for the learning
rate and the gradient norm when the CSV has them with values (a grad_norm
of nan, without clipping, draws none); --log-loss puts the loss on a log
axis and nothing else; the best epoch it marks is keep_best's
(highest validation accuracy, first of equals; lowest loss for mse); a CSV
without epochs or columns is an error naming the file; an -o that names a
missing folder, the CSV itself or a directory is a one-line error naming
it, the CSV unchanged; the picture is renamed into place (a link at -o
replaced, never written through). Needs FN_SOURCE_DIR (set by ctest) and Debian's
python3-matplotlib."""
import os
import struct
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.environ["FN_SOURCE_DIR"], "scripts", "plot_metrics.py")
HEADER = "epoch,train_loss,train_acc,valid_loss,valid_acc,seconds,samples_per_s\n"
HEADER_LR = "epoch,train_loss,train_acc,valid_loss,valid_acc,seconds,samples_per_s,lr,grad_norm\n"


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def png_size(path):
    """(width, height) from the IHDR chunk, after checking the signature."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        sys.exit(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def check_render(tmp, name, lines, want, header=HEADER, *options):
    csv_path = os.path.join(tmp, name + ".csv")
    with open(csv_path, "w") as f:
        f.write(header + "".join(lines))
    out = os.path.join(tmp, name + ".png")
    r = run(csv_path, "-o", out, *options)
    if r.returncode != 0:
        sys.exit(f"{name}: plot_metrics.py failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    size = png_size(out)
    if size != want:
        sys.exit(f"{name}: the PNG is {size[0]} x {size[1]}, expected {want[0]} x {want[1]}")
    # A drawn figure of that size is tens of KB; a blank one a few.
    if os.path.getsize(out) < 10000:
        sys.exit(f"{name}: the PNG has only {os.path.getsize(out)} bytes")


def check_error(tmp, name, text, needle):
    csv_path = os.path.join(tmp, name + ".csv")
    with open(csv_path, "w") as f:
        f.write(text)
    r = run(csv_path, "-o", os.path.join(tmp, name + ".png"))
    if r.returncode == 0 or needle not in r.stderr or csv_path not in r.stderr:
        sys.exit(f"{name}: expected a failure naming {csv_path} and '{needle}', got "
                 f"{r.returncode}:\n{r.stderr}")


def check_bad_output(tmp, csv_path):
    with open(csv_path, "rb") as f:
        before = f.read()
    for out, needle in ((os.path.join(tmp, "no", "such", "curves.png"), "no folder"),
                        (csv_path, "is the CSV"), (tmp, "is a directory")):
        r = run(csv_path, "-o", out)
        lines = r.stderr.strip().splitlines()
        if (r.returncode == 0 or len(lines) != 1 or not lines[0].startswith("plot_metrics.py: ")
                or out not in lines[0] or needle not in lines[0]):
            sys.exit(f"-o {out}: expected one line naming it and '{needle}', got "
                     f"{r.returncode}:\n{r.stderr}")
        with open(csv_path, "rb") as f:
            if f.read() != before:
                sys.exit(f"-o {out}: the CSV was changed")


def check_renamed_into_place(tmp, csv_path):
    """-o naming a link: the link is replaced by the picture, the file it
    points to untouched; a file at "<out>.tmp" is not the script's."""
    victim, out = os.path.join(tmp, "victim.txt"), os.path.join(tmp, "linked.png")
    with open(victim, "w") as f:
        f.write("the user's own")
    with open(out + ".tmp", "w") as f:
        f.write("the user's too")
    os.symlink(victim, out)
    r = run(csv_path, "-o", out)
    with open(victim) as f, open(out + ".tmp") as g:
        kept = f.read() == "the user's own" and g.read() == "the user's too"
    if r.returncode != 0 or os.path.islink(out) or png_size(out) != (600, 450) or not kept:
        sys.exit(f"-o a link: expected the link replaced by the PNG and the user's files "
                 f"kept, got {r.returncode}:\n{r.stderr}")
    left = [n for n in os.listdir(tmp) if n.startswith("linked.png.") and n != "linked.png.tmp"]
    if left:
        sys.exit(f"temporaries left: {left}")


def check_best():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import plot_metrics
    nan = float("nan")
    acc = {"epoch": [1, 2, 3, 4], "valid_acc": [0.5, 0.9, 0.9, 0.8],
           "valid_loss": [1.0, 0.5, 0.2, 0.1]}
    mse = {"epoch": [1, 2, 3], "valid_acc": [nan] * 3, "valid_loss": [1.0, 0.3, 0.4]}
    none = {"epoch": [1, 2], "valid_acc": [nan] * 2, "valid_loss": [nan] * 2}
    got = [plot_metrics.best_epoch(c) for c in (acc, mse, none)]
    if got != [2, 2, None]:
        sys.exit(f"best epochs {got}, expected [2, 2, None]")


def check_log_loss():
    """--log-loss: the loss panel's axis is logarithmic, the others linear."""
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import plot_metrics
    columns = {"epoch": [1, 2, 3], "train_loss": [1.0, 0.1, 0.01], "valid_loss": [1.1, 0.2, 0.05],
               "train_acc": [0.5, 0.8, 0.9], "valid_acc": [0.4, 0.7, 0.8],
               "lr": [0.1, 0.05, 0.01], "grad_norm": [float("nan")] * 3}
    for log_loss, want in ((False, ["linear"] * 3), (True, ["log", "linear", "linear"])):
        fig = plot_metrics.figure(columns, "t", log_loss)
        got = [ax.get_yscale() for ax in fig.axes]
        if got != want:
            sys.exit(f"log_loss={log_loss}: axes {got}, expected {want}")
        if fig.axes[2].get_ylabel() != "learning rate":
            sys.exit(f"the third panel is '{fig.axes[2].get_ylabel()}', not the learning rate")


def main():
    check_best()
    check_log_loss()
    with tempfile.TemporaryDirectory() as tmp:
        classify = [f"{e},{1.0 / e:.4f},{0.5 + e / 50:.4f},{1.2 / e:.4f},{0.45 + e / 50:.4f},"
                    f"{0.1 * e:.3f},50000.0\n" for e in range(1, 21)]
        check_render(tmp, "classify", classify, (1200, 450))
        mse = [f"{e},{1.0 / e:.4f},nan,{1.2 / e:.4f},nan,{0.1 * e:.3f},50000.0\n"
               for e in range(1, 11)]
        check_render(tmp, "mse", mse, (600, 450))
        # lr and grad_norm with values: two panels more; grad_norm nan: one.
        both = [f"{e},{1.0 / e:.4f},{0.5 + e / 50:.4f},{1.2 / e:.4f},{0.45 + e / 50:.4f},"
                f"{0.1 * e:.3f},50000.0,{0.1 / e:.4g},{3.0 / e:.4g}\n" for e in range(1, 21)]
        check_render(tmp, "lr_norm", both, (2400, 450), HEADER_LR)
        check_render(tmp, "lr_log", both, (2400, 450), HEADER_LR, "--log-loss")
        lr_only = [f"{e},{1.0 / e:.4f},nan,{1.2 / e:.4f},nan,{0.1 * e:.3f},50000.0,0.05,nan\n"
                   for e in range(1, 11)]
        check_render(tmp, "lr_only", lr_only, (1200, 450), HEADER_LR)
        # Without -o: curves.png beside the CSV.
        r = run(os.path.join(tmp, "mse.csv"))
        if r.returncode != 0 or png_size(os.path.join(tmp, "curves.png")) != (600, 450):
            sys.exit(f"without -o: no curves.png beside the CSV:\n{r.stderr}")
        check_bad_output(tmp, os.path.join(tmp, "mse.csv"))
        check_renamed_into_place(tmp, os.path.join(tmp, "mse.csv"))
        check_error(tmp, "empty", HEADER, "no epochs")
        check_error(tmp, "columns", "epoch,loss\n1,0.5\n", "no column train_loss")
        check_error(tmp, "bad", HEADER + "1,x,0,0,0,0,0\n", ":2: train_loss is 'x'")
    print("plot_metrics.py: PNG sizes and errors as expected")


if __name__ == "__main__":
    main()
