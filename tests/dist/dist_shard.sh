#!/usr/bin/env bash
# dist_shard.sh MPIRUN PYTHON — ./train under mpirun on the CPU with the
# optimiser sharded ([run] shard = optimizer, docs/many-processes.md);
# ctest's dist_shard (tests/CMakeLists.txt) sets FN_BUILD_DIR and
# FN_SOURCE_DIR. Each case is bounded by `timeout` (dist_common.sh's mpi):
#   1. run to run: two sharded runs on 3 ranks (uneven parts) write the same
#      weights and checkpoint, bit for bit;
#   2. against the all-reduce path on 2 ranks, for SGD with momentum and
#      for AdamW: the same weights and optimiser state bit for bit (a sum
#      of two floats is the same in either order, so the reduce-scatter and
#      the all-reduce agree exactly there), and rank 0 says the optimiser is
#      sharded;
#   3. checkpoints are whole: a sharded 2-rank checkpoint continues sharded
#      on 3 ranks and plainly on one process (no launcher), the two agreeing
#      to the summation-order level; an all-reduce 2-rank checkpoint
#      continues sharded on 2 ranks exactly as it continues unsharded;
#   4. sharding with bfloat16 sums trains on 2 ranks, the same bits run to
#      run and the all-reduce bfloat16 run's (below), off the float32
#      sharded run; one process says it keeps the state whole;
#   5. clipping: sharded runs with clip_grad_norm clipping every step, on 2
#      and 3 ranks, are bit-identical run to run and agree with the
#      all-reduce run with the same clipping, weights and recorded
#      grad_norm (checkpoint and metrics.csv) alike; a norm over the rank's
#      own parts alone would depart from it.
# shellcheck source=dist_common.sh
. "$(dirname "$0")/dist_common.sh" dist_shard "$@"
digits_config 2 0.05
shard=(--set run.shard=optimizer)

# 1. run to run
for k in a b; do
    mpi 3 -- "$work/c.ini" "${shard[@]}" --set output.dir="$work/run_$k" > "$work/run_$k.log" 2>&1 ||
        fail "1: the sharded 3-rank run $k failed: $(cat "$work/run_$k.log")"
done
for f in weights.h5 checkpoint.h5; do
    compare same_bits "$work/run_a/$f" "$work/run_b/$f" || fail "1: two sharded runs differ in $f"
done

# 2. against the all-reduce path
for opt in sgd adamw; do
    mpi 2 -- "$work/c.ini" --set train.optimizer=$opt --set output.dir="$work/all_$opt" \
        > "$work/all_$opt.log" 2>&1 || fail "2: the all-reduce $opt run failed"
    mpi 2 -- "$work/c.ini" --set train.optimizer=$opt "${shard[@]}" \
        --set output.dir="$work/shard_$opt" > "$work/shard_$opt.log" 2>&1 ||
        fail "2: the sharded $opt run failed: $(cat "$work/shard_$opt.log")"
    compare same_bits "$work/all_$opt/checkpoint.h5" "$work/shard_$opt/checkpoint.h5" ||
        fail "2: $opt sharded on 2 ranks departs from the all-reduce run"
    grep -q "^notice: optimiser sharded over 2 ranks" "$work/shard_$opt.log" ||
        fail "2: no notice of the sharding: $(cat "$work/shard_$opt.log")"
done

# 3. checkpoints are whole
mpi 2 -- "$work/c.ini" "${shard[@]}" --set train.epochs=1 --set output.dir="$work/res" \
    > "$work/res.log" 2>&1 || fail "3: the sharded first epoch failed"
cp -r "$work/res" "$work/res1"
mpi 3 -- "$work/c.ini" "${shard[@]}" --set output.dir="$work/res" --resume > "$work/res3.log" 2>&1 ||
    fail "3: resuming sharded on 3 ranks failed: $(cat "$work/res3.log")"
timeout 120 "$TRAIN" "$work/c.ini" --set output.dir="$work/res1" --resume > "$work/res1.log" 2>&1 ||
    fail "3: resuming on one process failed: $(cat "$work/res1.log")"
grep -q "epoch 2/2" "$work/res3.log" || fail "3: the resumed sharded run did not train epoch 2"
# As dist_train.sh's resume: one epoch of 29 steps apart in summation order
# only stays far below 1e-3 of the weights' size; a lost or misplaced part
# of the state (momentum restarting on some elements) moves them by ~1e-2.
compare close "$work/res/checkpoint.h5" "$work/res1/checkpoint.h5" 1e-3 ||
    fail "3: the sharded run resumed on 3 ranks departs from the one resumed alone"
mpi 2 -- "$work/c.ini" --set train.epochs=1 --set output.dir="$work/plain" > /dev/null 2>&1 ||
    fail "3: the all-reduce first epoch failed"
cp -r "$work/plain" "$work/plain_sharded"
mpi 2 -- "$work/c.ini" --set output.dir="$work/plain" --resume > /dev/null 2>&1 ||
    fail "3: resuming the all-reduce run failed"
mpi 2 -- "$work/c.ini" "${shard[@]}" --set output.dir="$work/plain_sharded" --resume \
    > "$work/plain_sharded.log" 2>&1 || fail "3: resuming it sharded failed"
compare same_bits "$work/plain/checkpoint.h5" "$work/plain_sharded/checkpoint.h5" ||
    fail "3: an all-reduce checkpoint continued sharded departs from its unsharded continuation"

# 4. bfloat16 sums; one process
# Sharded with bfloat16 sums (its reduce-scatter in bfloat16): on 2 ranks
# each element's sum, as the all-reduce's, is one addition in float of the
# two ranks' rounded gradients, rounded to bfloat16 (the same bits in
# either order), so the run is the all-reduce bfloat16 run bit for bit; and
# off the sharded float32 run of case 2 (a reduce-scatter in float32 would
# be that run).
b16=(--set train.optimizer=sgd --set run.grad_sum=bf16)
for k in a b; do
    mpi 2 -- "$work/c.ini" "${b16[@]}" "${shard[@]}" --set output.dir="$work/bf16_$k" \
        > "$work/bf16_$k.log" 2>&1 ||
        fail "4: the sharded bfloat16 run $k failed: $(cat "$work/bf16_$k.log")"
done
grep -q "gradients summed in bfloat16" "$work/bf16_a.log" ||
    fail "4: the sharded run does not say it sums in bfloat16: $(cat "$work/bf16_a.log")"
compare same_bits "$work/bf16_a/checkpoint.h5" "$work/bf16_b/checkpoint.h5" ||
    fail "4: two sharded bfloat16 runs differ"
mpi 2 -- "$work/c.ini" "${b16[@]}" --set output.dir="$work/bf16_all" > "$work/bf16_all.log" 2>&1 ||
    fail "4: the all-reduce bfloat16 run failed: $(cat "$work/bf16_all.log")"
compare same_bits "$work/bf16_all/checkpoint.h5" "$work/bf16_a/checkpoint.h5" ||
    fail "4: sharded with bfloat16 sums on 2 ranks departs from the all-reduce bfloat16 run"
if compare same_bits "$work/shard_sgd/checkpoint.h5" "$work/bf16_a/checkpoint.h5" > /dev/null 2>&1
then
    fail "4: sharded with bfloat16 sums is the float32 sharded run: no bfloat16 sum ran"
fi
timeout 120 "$TRAIN" "$work/c.ini" "${shard[@]}" --set train.epochs=1 \
    --set output.dir="$work/alone" > "$work/alone.log" 2>&1 || fail "4: one process failed"
grep -q "this run is one process, which keeps it whole" "$work/alone.log" ||
    fail "4: one process does not say the state stays whole: $(cat "$work/alone.log")"

# 5. clipping. The gradient norms here are 2 to 3 (metrics.csv's grad_norm
# at each epoch's end), so max_norm 0.01 scales every step's gradient. The
# sharded norm adds each rank's sum of squares over its parts, then the
# ranks' sums: another order than the all-reduce run's sum over whole
# tensors (a relative change of at most ~2900 * 2^-53 ~ 3e-13 of the
# norm: ~2900 values), which moves the float factor by at most one ulp
# (2^-24 ~ 6e-8); on 3 ranks the reduce-scatter's float sums may also
# round differently from the all-reduce's by an ulp. Perturbations at that
# level, grown over the 58 steps as case 3's summation-order differences
# are, stay far below 1e-3 of the weights' size, and so does the recorded
# norm's (on this data the weights have been the same bits, the norms a
# double's ulp apart). A norm over the rank's own parts
# alone (about 1/sqrt(N) of the whole) scales each step by a different
# factor on each rank: weights depart by ~1, the recorded grad_norm ~50%.
clip=(--set train.clip_grad_norm=0.01)
grad_norms() { # grad_norms DIR: the checkpoint's grad_norm, then metrics.csv's
    "$PYTHON" - "$1" <<'EOF'
import csv, sys, h5py
with h5py.File(sys.argv[1] + "/checkpoint.h5", "r") as f:
    print(repr(float(f.attrs["grad_norm"])))
with open(sys.argv[1] + "/metrics.csv") as f:
    for row in csv.DictReader(f):
        print(row["grad_norm"])
EOF
}
close_norms() { # close_norms A B RTOL: each grad_norm of A within RTOL of B's and above 1
    "$PYTHON" - "$@" <<'EOF'
import sys
a, b = ([float(x) for x in s.split()] for s in sys.argv[1:3])
rtol = float(sys.argv[3])
if len(a) != len(b) or len(a) < 3:
    sys.exit(f"grad_norm lists differ in length: {a} {b}")
for x, y in zip(a, b):
    if not (x > 1.0 and abs(x - y) <= rtol * abs(y)):
        sys.exit(f"grad_norm {x} against the all-reduce run's {y} (rtol {rtol}; above 1 wanted)")
EOF
}
for n in 2 3; do
    for k in a b; do
        mpi $n -- "$work/c.ini" "${shard[@]}" "${clip[@]}" --set output.dir="$work/clip${n}_$k" \
            > "$work/clip${n}_$k.log" 2>&1 ||
            fail "5: the sharded clipped $n-rank run $k failed: $(cat "$work/clip${n}_$k.log")"
    done
    compare same_bits "$work/clip${n}_a/checkpoint.h5" "$work/clip${n}_b/checkpoint.h5" ||
        fail "5: two sharded clipped runs on $n ranks differ"
    mpi $n -- "$work/c.ini" "${clip[@]}" --set output.dir="$work/clip${n}_all" \
        > "$work/clip${n}_all.log" 2>&1 || fail "5: the all-reduce clipped $n-rank run failed"
    compare close "$work/clip${n}_a/checkpoint.h5" "$work/clip${n}_all/checkpoint.h5" 1e-3 ||
        fail "5: clipped and sharded on $n ranks departs from the all-reduce run"
    close_norms "$(grad_norms "$work/clip${n}_a")" "$(grad_norms "$work/clip${n}_all")" 1e-3 ||
        fail "5: the sharded run's grad_norm on $n ranks is not the all-reduce run's"
done

[ "$failures" = 0 ] && echo "dist_shard: all cases passed"
exit $((failures > 0))
