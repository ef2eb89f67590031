#!/usr/bin/env bash
# dist_agree.sh MPIRUN PYTHON — the ranks of a 2-rank `train` must agree on
# their config and data before the first step (src/trainer/trainer_agree.c).
# Each case starts the two ranks with different arguments (mpirun's
# `-np 1 A : -np 1 B`) and expects exit status 1, one message (printed
# once, by rank 0) naming the key or file and rank 1, no step taken, and
# nothing from inside MPI:
#   1. rank 1 reads another training file of the same shape (one value
#      changed);
#   2. [data] standardize on rank 1 only;
#   3. another [train] batch_size;
#   4. a training file of another row count;
#   5. another [train] epochs;
# and 6. the same data at two paths (a node's own copy) trains, exit 0.
# ctest's dist_agree (tests/CMakeLists.txt) sets FN_BUILD_DIR and
# FN_SOURCE_DIR; `timeout` turns a hang into a failure.
# shellcheck source=dist_common.sh
. "$(dirname "$0")/dist_common.sh" dist_agree "$@"

cat > "$work/c.ini" <<EOF
[data]
train = $DATA/digits_train.h5
valid = $DATA/digits_valid.h5
[model]
layers = block 32, linear 10
groups = 4
[train]
batch_size = 50
epochs = 2
lr = 0.05
seed = 7
[run]
device = cpu
log_every = 0
EOF

# Copies of the training set: one value changed, 100 rows fewer, and an
# identical copy at another path.
"$PYTHON" - "$DATA/digits_train.h5" "$work" <<'EOF' || fail "could not write the test sets"
import sys, h5py, shutil
src, work = sys.argv[1], sys.argv[2]
with h5py.File(src, "r") as f:
    x, y = f["X"][()], f["y"][()]
def write(name, x, y):
    with h5py.File(f"{work}/{name}", "w") as g:
        g["X"], g["y"] = x, y
changed = x.copy()
changed[5, 7] += 1.0
write("changed.h5", changed, y)
write("fewer.h5", x[:-100], y[:-100])
shutil.copy(src, f"{work}/copy.h5")
EOF

# two <case> <rank 0's --set ...> -- <rank 1's --set ...>: the 2-rank job,
# its output in $work/<case>.log and its status in $status.
two() {
    local name=$1; shift
    local a=() b=()
    while [ "$1" != "--" ]; do a+=("$1"); shift; done
    shift
    b=("$@")
    timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe \
        -np 1 "$TRAIN" "$work/c.ini" --set output.dir="$work/$name" "${a[@]}" : \
        -np 1 "$TRAIN" "$work/c.ini" --set output.dir="$work/$name" "${b[@]}" \
        > "$work/$name.log" 2>&1
    status=$?
}

# expect_refused <case> <what the message names>
expect_refused() {
    local log="$work/$1.log"
    [ $status -eq 1 ] || fail "$1: exit status $status, expected 1: $(cat "$log")"
    [ "$(grep -c "the ranks differ before the first step" "$log")" = 1 ] ||
        fail "$1: not one message about the ranks: $(cat "$log")"
    grep "the ranks differ before the first step" "$log" | grep -qF -- "$2" ||
        fail "$1: the message does not name $2: $(cat "$log")"
    grep "the ranks differ before the first step" "$log" | grep -q "rank 1" ||
        fail "$1: the message does not name rank 1: $(cat "$log")"
    ! grep -qE "MPI_ABORT|MPI Error|NBC|mpirun has exited|MPI_ERR" "$log" ||
        fail "$1: MPI's own error: $(cat "$log")"
    ! grep -q "^epoch\|^training:" "$log" || fail "$1: a step was taken: $(cat "$log")"
    [ ! -e "$work/$1/metrics.csv" ] || fail "$1: metrics.csv written"
}

two file -- --set data.train="$work/changed.h5"
expect_refused file "[data] train"
grep -q "changed.h5" "$work/file.log" || fail "file: the message does not name the file"

two standardize -- --set data.standardize=true
expect_refused standardize "[data] standardize"

two batch -- --set train.batch_size=49
expect_refused batch "[train] batch_size"

two rows -- --set data.train="$work/fewer.h5"
expect_refused rows "[data] train"
grep -q "1337" "$work/rows.log" || fail "rows: the message does not give rank 1's rows"

two epochs -- --set train.epochs=3
expect_refused epochs "[train] epochs"

two copy --set train.epochs=1 -- --set train.epochs=1 --set data.train="$work/copy.h5"
[ $status -eq 0 ] || fail "copy: the same data at another path was refused: $(cat "$work/copy.log")"
[ -s "$work/copy/weights.h5" ] || fail "copy: no weights written"

if [ $failures -ne 0 ]; then
    echo "dist_agree: $failures failure(s)"
    exit 1
fi
echo "dist_agree: all cases passed"
