#!/usr/bin/env bash
# dist_bf16.sh MPIRUN PYTHON — ./train under mpirun on the CPU with
# [run] grad_sum = bf16 (docs/many-processes.md, "Sums in bfloat16"); ctest's
# dist_bf16_train (tests/CMakeLists.txt) sets FN_BUILD_DIR and FN_SOURCE_DIR.
# Each run is bounded by `timeout`, so a hang fails instead of stalling:
#   1. one rank, one step: `mpirun -np 1` summing in bfloat16 against the
#      float32 run (which is the plain run bit for bit: dist_sum_np1), one
#      step of plain SGD over the whole training set, within the bound of
#      the one rounding of the gradient (below), and off the float32 run in
#      most weights (the rounding happened); the start line says so;
#   2. run to run: two 2-rank runs write the same weights, bit for bit;
#   3. convergence: a 2-rank run summing in bfloat16 reaches the float32
#      run's best validation loss within a margin (below).
# shellcheck source=dist_common.sh
. "$(dirname "$0")/dist_common.sh" dist_bf16 "$@"

digits_config 15 0.02

# 1. One step of SGD without momentum or weight decay over all 1437 rows:
# w1 = w0 - lr g, against w1' = w0 - lr g' with g' = g rounded to the
# nearest bfloat16 (one rank: the sum adds nothing), |g' - g| <= u |g|, u
# = 2^-8. Each run rounds lr g and the subtraction (float32, u32 = 2^-24,
# or once with an FMA), so, with L a bound on lr |g|,
#   |w1' - w1| <= (u + 3 u32) L + 2 u32 (|w1'| + |w1|)   (x 1.01 for the
#   products of the small terms),
# and L from the float32 run: lr g (1 + d1) = w0 - w1 (1 - d2), so lr |g|
# <= (|w0 - w1| + u32 |w1|) / (1 - u32). w0 is the same seed's weights
# after one step at lr = 1e-30, w0 itself but for 1e-30 g (below any
# weight's half ulp, or about 1e-31 where the weight is 0) and a rounding
# (u32 |w0|): L adds 2 u32 |w0| and 1e-28.
step() { # step NAME LR GRAD_SUM
    mpi 1 -- "$work/c.ini" --set train.batch_size=1437 --set train.epochs=1 --set train.lr="$2" \
        --set train.momentum=0 --set train.weight_decay=0 --set run.grad_sum="$3" \
        --set output.dir="$work/$1" > "$work/$1.log" 2>&1 ||
        fail "1: the one-step run $1 failed: $(cat "$work/$1.log")"
}
step w0 1e-30 float32
step f32 0.02 float32
step b16 0.02 bf16
grep -q "^data parallel: 1 rank; gradients summed in bfloat16$" "$work/b16.log" ||
    fail "1: rank 0 did not say the sums are bfloat16: $(cat "$work/b16.log")"
"$PYTHON" - "$work/w0/weights.h5" "$work/f32/weights.h5" "$work/b16/weights.h5" <<'EOF2' ||
import sys, h5py, numpy as np
w0f, f32f, b16f = (h5py.File(p, "r") for p in sys.argv[1:4])
u, u32 = 2.0 ** -8, 2.0 ** -24
names = []
f32f.visititems(lambda n, o: names.append(n)
                if isinstance(o, h5py.Dataset) and o.dtype == np.float32 else None)
worst, differ, total = 0.0, 0, 0
for n in names:
    w0, w1, w1b = (np.asarray(f[n][()], dtype=np.float64) for f in (w0f, f32f, b16f))
    lead = (np.abs(w0 - w1) + u32 * (np.abs(w1) + 2 * np.abs(w0))) / (1 - u32) + 1e-28
    tol = ((u + 3 * u32) * lead + 2 * u32 * (np.abs(w1b) + np.abs(w1))) * 1.01
    d = np.abs(w1b - w1)
    if (d > tol).any():
        i = int(np.argmax(d - tol))
        sys.exit(f"{n}[{i}]: bf16 sums {w1b.flat[i]:.9g}, float32 {w1.flat[i]:.9g}: "
                 f"difference {d.flat[i]:.3g} above the bound {tol.flat[i]:.3g}")
    worst = max(worst, float((d / tol).max()))
    differ += int((d > 0).sum())
    total += d.size
# The gradient rounded to 8 bits moves most weights; none moved would mean
# the sums stayed float32.
if differ < total // 2:
    sys.exit(f"only {differ} of {total} weights differ from the float32 run's")
print(f"1: {differ} of {total} weights differ, the largest at {worst:.3f} of the bound")
EOF2
    fail "1: one rank summing in bfloat16 departs from the float32 run"

# 2. run to run
for k in a b; do
    mpi 2 -- "$work/c.ini" --set run.grad_sum=bf16 --set output.dir="$work/run_$k" \
        > "$work/run_$k.log" 2>&1 || fail "2: the 2-rank run $k failed: $(cat "$work/run_$k.log")"
done
"$PYTHON" - "$work/run_a/weights.h5" "$work/run_b/weights.h5" <<'EOF2' ||
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
names = []
a.visititems(lambda n, o: names.append(n)
             if isinstance(o, h5py.Dataset) and o.dtype == np.float32 else None)
for n in names:
    if a[n][()].tobytes() != b[n][()].tobytes():
        sys.exit(f"{n} differs")
EOF2
    fail "2: two 2-rank runs summing in bfloat16 wrote different weights"
grep -q "^data parallel: 2 ranks on 1 CPU of 1 node, each taking its share of every batch of 50; gradients summed in bfloat16$" \
    "$work/run_a.log" || fail "2: the start line does not say the sums are bfloat16: $(cat "$work/run_a.log")"

# 3. Convergence: the best validation loss of 15 epochs (from 2.3 at the
# start) with bfloat16 sums against float32's. Over seeds 1 to 6 the
# float32 runs' best validation losses spread from 0.046 to 0.070 and the
# bfloat16 runs' from 0.056 to 0.078, each within 0.017 of its float32
# twin: the margin, 0.03, is the float32 runs' own spread over seeds with
# room to spare; a sum that lost the gradient (a wrong scale, one rank's
# share alone) ends far above it.
mpi 2 -- "$work/c.ini" --set output.dir="$work/f32_run" > "$work/f32_run.log" 2>&1 ||
    fail "3: the float32 run failed: $(cat "$work/f32_run.log")"
"$PYTHON" - "$work/f32_run/metrics.csv" "$work/run_a/metrics.csv" <<'EOF2' ||
import csv, sys
best = [min(float(r["valid_loss"]) for r in csv.DictReader(open(p))) for p in sys.argv[1:3]]
print(f"3: best validation loss: float32 sums {best[0]:.4f}, bfloat16 sums {best[1]:.4f}")
if not best[1] < 0.15:
    sys.exit(f"the bfloat16 run's best validation loss {best[1]:.4f} is not below 0.15")
if abs(best[1] - best[0]) > 0.03:
    sys.exit(f"best validation losses {best[0]:.4f} (float32) and {best[1]:.4f} (bfloat16) "
             "differ by more than 0.03")
EOF2
    fail "3: the run summing in bfloat16 does not converge like the float32 one"

if [ $failures -ne 0 ]; then
    echo "dist_bf16: $failures failure(s)"
    exit 1
fi
echo "dist_bf16: all cases passed"
