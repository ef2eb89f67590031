# dist_common.sh — what the dist_*.sh checks share, sourced as
#   . "$(dirname "$0")/dist_common.sh" NAME "$@"
# from a script NAME.sh called with MPIRUN PYTHON: sets MPIRUN, PYTHON,
# TRAIN (FN_BUILD_DIR's train), DATA (FN_SOURCE_DIR's data), work (a
# temporary folder removed on exit), failures (0) and fail MESSAGE, which
# prints it and counts it; mpi N [ENV=VALUE ...] -- ARGS runs train on N
# ranks within a timeout; compare MODE A B [RTOL] compares two HDF5 files'
# datasets; digits_config EPOCHS LR writes $work/c.ini, the digits on the
# CPU through a small net with SGD's momentum and weight decay.
set -u
MPIRUN=${2:?usage: $1.sh MPIRUN PYTHON}
PYTHON=${3:?usage: $1.sh MPIRUN PYTHON}
TRAIN=${FN_BUILD_DIR:?}/train
DATA=${FN_SOURCE_DIR:?}/data
work=$(mktemp -d "/tmp/fn_$1_XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
mpi() { # mpi N [ENV=VALUE ...] -- train arguments...
    local n=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=(-x "$1"); shift; done
    shift
    timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe -np "$n" "${envs[@]}" "$TRAIN" "$@"
}

# Exit 0 when every dataset of two weights files is equal bit for bit
# (same_bits) or within rtol of the larger magnitude (close).
compare() {
    "$PYTHON" - "$@" <<'EOF'
import sys, h5py, numpy as np
mode, a, b = sys.argv[1], h5py.File(sys.argv[2], "r"), h5py.File(sys.argv[3], "r")
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
worst = 0.0
for n in names:
    x, y = a[n][()], b[n][()]
    if mode == "same_bits":
        if x.shape != y.shape or x.tobytes() != y.tobytes():
            sys.exit(f"{n} differs")
    else:
        scale = max(np.abs(x).max(), 1e-30)
        worst = max(worst, float(np.abs(x - y).max() / scale))
if mode != "same_bits" and worst > float(sys.argv[4]):
    sys.exit(f"largest relative difference {worst:.3g} above {sys.argv[4]}")
print(f"{len(names)} datasets compared ({mode})")
EOF
}

digits_config() { # digits_config EPOCHS LR
    cat > "$work/c.ini" <<EOF
[data]
train = $DATA/digits_train.h5
valid = $DATA/digits_valid.h5
[model]
layers = block 32, block 16, linear 10
groups = 4
[train]
batch_size = 50
epochs = $1
lr = $2
momentum = 0.9
weight_decay = 1e-4
seed = 7
[run]
device = cpu
log_every = 0
EOF
}
