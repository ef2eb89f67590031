#!/usr/bin/env bash
# bench_python_fit.sh — FusenetClassifier.fit on the digits set against
# ./build/train on the same data and network (data/example.ini: two blocks
# of 128, SGD with momentum, 20 epochs, batch 32), timed in one run, each
# the median of REPEATS runs taken in turn, on the CPU.
#
#   scripts/bench_python_fit.sh [build dir] [repeats]
#
# train's time is its wall time as a process (start, reading the HDF5
# sets, the epochs, validation each epoch, writing weights.h5); fit's is
# the call's (the arrays to memory sets, the epochs, reading the weights
# back and building the network to predict), given arrays read from the
# same files. Python: $PYTHON, else build/pyenv/bin/python (numpy, h5py,
# scikit-learn).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
REPEATS=${2:-5}
PYTHON=${PYTHON:-$ROOT/build/pyenv/bin/python}
export FUSENET_LIBRARY=$BUILD/libfusenet.so
exec "$PYTHON" - "$ROOT" "$BUILD" "$REPEATS" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
import h5py
root, build, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, os.path.join(root, "python"))
import fusenet

config = os.path.join(root, "data", "example.ini")
with h5py.File(os.path.join(root, "data", "digits_train.h5"), "r") as f:
    X, y = f["X"][...], f["y"][...]
with h5py.File(os.path.join(root, "data", "digits_valid.h5"), "r") as f:
    Xv, yv = f["X"][...], f["y"][...]

def train_once(extra):
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        subprocess.run([os.path.join(build, "train"), config, "--set", "run.device=cpu",
                        "--set", "output.dir=" + out] + extra, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t

clf = fusenet.FusenetClassifier(layers=(128, 128), groups=8, optimizer="sgd", lr=0.05,
                                momentum=0.9, epochs=20, batch_size=32, random_state=1,
                                standardize=False, device="cpu")
def fit_once():
    t = time.perf_counter()
    clf.fit(X, y)
    return time.perf_counter() - t

runs = [("train data/example.ini", lambda: train_once([])),
        ("train, no checkpoints", lambda: train_once(["--set", "train.checkpoint_every=0"])),
        ("FusenetClassifier.fit", fit_once)]
times = {name: [] for name, _ in runs}
for _ in range(repeats):  # interleaved, so a busy moment weighs on each alike
    for name, once in runs:
        times[name].append(once())
rows = [(name, statistics.median(times[name]), min(times[name])) for name, _ in runs]
base = rows[0][1]
print("| run | median s | min s | / train |")
print("| --- | --- | --- | --- |")
for name, med, low in rows:
    print("| %s | %.3f | %.3f | %.2f |" % (name, med, low, med / base))
print("fit's validation accuracy: %.4f" % clf.score(Xv, yv))
PY
