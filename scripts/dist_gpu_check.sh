#!/usr/bin/env bash
# dist_gpu_check.sh — data parallelism on a GPU machine with Open MPI and
# NCCL and two GPUs, in one run after scripts/gpu_check.sh
# built build/gpu (with -DFN_TEST_HOOKS=ON):
#   1. the dist tests of ctest (label dist): one step on 1 rank (NCCL at
#      -np 1, bit for bit the plain run) and on 2 ranks (the summation-order
#      bound, tests/dist/dist_check.c), each again with the sums in
#      bfloat16 (dist_nccl_bf16_*: their bounds), the CPU runs of
#      tests/dist/;
#   2. the 2-rank one-step checks (float32 and bfloat16 sums, and sharded
#      with bfloat16 sums) again with NCCL on its network transport
#      (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1);
#   3. a 2-rank training run of the digits on the GPUs under
#      compute-sanitizer memcheck (each rank under its own sanitizer), one
#      with [run] grad_sum = bf16, one with the optimiser sharded
#      ([run] shard = optimizer, AdamW, bf16 math: the reduce-scatters and
#      all-gathers, the parts' updates), one sharded with bfloat16 sums
#      (the reduce-scatter's rounding and its part's widening), and one
#      sharded with clipping (clip_grad_norm: the rank's sum of squares to
#      the host, the scaling);
#   4. the same run without the sanitizer, its weights against the 1-GPU
#      run's (close: summation order only) and a second 2-rank run's (the
#      same bits), and a sharded 2-rank run's (the same bits: a sum of two
#      ranks has one order, reduce-scatter or all-reduce); likewise a
#      sharded 2-rank run with bfloat16 sums against the all-reduce run
#      with bfloat16 sums (the same bits: one bfloat16 addition of the two
#      rounded values either way), and off the float32 sharded run's; a
#      sharded 2-rank run with clipping against the all-reduce run with the
#      same clipping (weights and the checkpoint's grad_norm within 1e-3:
#      the norm's sum in another order).
# NCCL_NVLS_ENABLE=0 is set (NCCL's NVLink SHARP off, which some machines
# need). Logs go to
# ${OUT:-/tmp/out}; exits non-zero when a step failed, after running all.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 PATH=/usr/local/cuda/bin:$PATH
out=${OUT:-/tmp/out}
build=${BUILD:-build/gpu}
python=${PYTHON:-python3}
mkdir -p "$out"
failed=()
note_failure() { echo "dist_gpu_check.sh: FAILED: $1"; failed+=("$1"); }
mpirun=(mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE)
gpus=$(nvidia-smi -L | wc -l)
command -v mpirun >/dev/null || { echo "dist_gpu_check.sh: no mpirun here" >&2; exit 1; }
grep -q "^NCCL_LIBRARY:FILEPATH=/" "$build/CMakeCache.txt" ||
    note_failure "$build was configured without NCCL"

ctest --test-dir "$build" -L dist --output-on-failure 2>&1 | tee "$out/dist_ctest.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || note_failure "ctest -L dist"

if [ "$gpus" -lt 2 ]; then
    echo "dist_gpu_check.sh: $gpus GPU: the 2-rank steps need two"
else
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "${mpirun[@]}" -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE \
        -np 2 "$build/tests/dist_check" cuda 32 2>&1 | tee "$out/dist_net_transport.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || note_failure "dist_check over NCCL's network transport"
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "${mpirun[@]}" -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE \
        -np 2 "$build/tests/dist_check" cuda 32 bf16 2>&1 | tee "$out/dist_net_transport_bf16.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || note_failure "dist_check bf16 over NCCL's network transport"
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "${mpirun[@]}" -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE \
        -np 2 "$build/tests/dist_check" cuda 32 shard bf16 2>&1 |
        tee "$out/dist_net_transport_shard_bf16.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] ||
        note_failure "dist_check sharded with bf16 sums over NCCL's network transport"

    work=$(mktemp -d)
    cat >"$work/c.ini" <<INI
[data]
train = $PWD/data/digits_train.h5
valid = $PWD/data/digits_valid.h5
[model]
layers = block 256, block 128, linear 10
groups = 8
[train]
batch_size = 64
epochs = 3
lr = 0.05
momentum = 0.9
seed = 7
[run]
device = auto
math = fp32
log_every = 0
INI
    # memcheck over both ranks, NCCL as it runs (P2P over NVLink); should
    # the tool refuse memory another process mapped (CUDA IPC), the run is
    # repeated with NCCL's P2P transport off and both results are printed.
    # NCCL probes for kernel images of other GPUs (cudaFuncGetAttributes:
    # no kernel image), which memcheck reports as API errors; the library
    # checks every API call's status itself, so only memory faults count.
    for variant in default no_p2p; do
        envs=()
        [ $variant = no_p2p ] && envs=(-x NCCL_P2P_DISABLE=1)
        "${mpirun[@]}" "${envs[@]}" -np 2 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 \
            "$build/train" "$work/c.ini" --set train.epochs=1 --set output.dir="$work/san" \
            --overwrite >"$out/dist_memcheck_$variant.log" 2>&1
        rc=$?
        echo "2-rank train under memcheck ($variant): rc $rc;" \
             "$(grep -E "ERROR SUMMARY" "$out/dist_memcheck_$variant.log" | tr '\n' ' ')"
        [ $rc -eq 0 ] && break
        tail -30 "$out/dist_memcheck_$variant.log"
        [ $variant = no_p2p ] && note_failure "2-rank train under memcheck"
    done
    # The sums in bfloat16 (their rounding and widening kernels), with the
    # transports of the variant that ran above.
    "${mpirun[@]}" "${envs[@]}" -np 2 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$build/train" "$work/c.ini" --set train.epochs=1 --set run.grad_sum=bf16 \
        --set output.dir="$work/san_bf16" --overwrite >"$out/dist_memcheck_bf16.log" 2>&1 ||
        note_failure "2-rank train summing in bfloat16 under memcheck"
    "${mpirun[@]}" "${envs[@]}" -np 2 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$build/train" "$work/c.ini" --set train.epochs=1 --set run.shard=optimizer \
        --set train.optimizer=adamw --set run.math=bf16 --set output.dir="$work/san_shard" \
        --overwrite >"$out/dist_memcheck_shard.log" 2>&1 ||
        note_failure "2-rank train with the optimiser sharded under memcheck"
    "${mpirun[@]}" "${envs[@]}" -np 2 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$build/train" "$work/c.ini" --set train.epochs=1 --set run.shard=optimizer \
        --set run.grad_sum=bf16 --set output.dir="$work/san_shard_bf16" \
        --overwrite >"$out/dist_memcheck_shard_bf16.log" 2>&1 ||
        note_failure "2-rank train sharded with bfloat16 sums under memcheck"
    "${mpirun[@]}" "${envs[@]}" -np 2 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$build/train" "$work/c.ini" --set train.epochs=1 --set run.shard=optimizer \
        --set train.clip_grad_norm=0.01 --set output.dir="$work/san_shard_clip" \
        --overwrite >"$out/dist_memcheck_shard_clip.log" 2>&1 ||
        note_failure "2-rank train, optimiser sharded, clipping, under memcheck"

    "$build/train" "$work/c.ini" --set output.dir="$work/one" >"$out/dist_one.log" 2>&1 ||
        note_failure "1-GPU train"
    for k in a b; do
        "${mpirun[@]}" -np 2 "$build/train" "$work/c.ini" --set output.dir="$work/two_$k" \
            >"$out/dist_two_$k.log" 2>&1 || note_failure "2-rank train ($k)"
    done
    "${mpirun[@]}" -np 2 "$build/train" "$work/c.ini" --set run.shard=optimizer \
        --set output.dir="$work/two_shard" >"$out/dist_two_shard.log" 2>&1 ||
        note_failure "2-rank train, optimiser sharded"
    for shard in none optimizer; do
        "${mpirun[@]}" -np 2 "$build/train" "$work/c.ini" --set run.shard=$shard \
            --set run.grad_sum=bf16 --set output.dir="$work/two_bf16_$shard" \
            >"$out/dist_two_bf16_$shard.log" 2>&1 ||
            note_failure "2-rank train summing in bfloat16, shard = $shard"
    done
    # max_norm 0.01 is far below these gradients' norms: every step scales.
    "${mpirun[@]}" -np 2 "$build/train" "$work/c.ini" --set train.clip_grad_norm=0.01 \
        --set output.dir="$work/two_clip" >"$out/dist_two_clip.log" 2>&1 ||
        note_failure "2-rank train, clipping"
    "${mpirun[@]}" -np 2 "$build/train" "$work/c.ini" --set train.clip_grad_norm=0.01 \
        --set run.shard=optimizer --set output.dir="$work/two_shard_clip" \
        >"$out/dist_two_shard_clip.log" 2>&1 || note_failure "2-rank train, sharded, clipping"
    "$python" - "$work" <<'PY' 2>&1 | tee "$out/dist_compare.log"
import sys, h5py, numpy as np
w = sys.argv[1]
def sets(path):
    out = {}
    h5py.File(path, "r").visititems(
        lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
one, a, b, sh, b16, sh16, c, sc = (sets(f"{w}/{d}/weights.h5") for d in
                                  ("one", "two_a", "two_b", "two_shard", "two_bf16_none",
                                   "two_bf16_optimizer", "two_clip", "two_shard_clip"))
same = all(a[k].tobytes() == b[k].tobytes() for k in a)
sharded = all(a[k].tobytes() == sh[k].tobytes() for k in a)
sharded16 = all(b16[k].tobytes() == sh16[k].tobytes() for k in b16)
off16 = any(sh[k].tobytes() != sh16[k].tobytes() for k in sh)
rel = max(float(np.abs(a[k] - one[k]).max() / max(np.abs(one[k]).max(), 1e-30)) for k in a)
print(f"2-rank runs bit for bit: {same}; sharded bit for bit: {sharded}; sharded with bfloat16 "
      f"sums bit for bit the all-reduce bfloat16 run: {sharded16}, off the float32 sharded run: "
      f"{off16}; largest difference from the 1-GPU run, relative to the dataset's largest "
      f"value: {rel:.3g}")
# Clipped, sharded against all-reduce: the norm's double sum in another
# order (the parts' blocks) moves the float factor by an ulp at most, so
# the weights and the norm stay far below 1e-3 apart; a norm of the rank's
# parts alone (~1/sqrt(2) of the whole) moves them by ~1e-1 and more.
clip_rel = max(float(np.abs(sc[k] - c[k]).max() / max(np.abs(c[k]).max(), 1e-30)) for k in c)
norms = [float(h5py.File(f"{w}/{d}/checkpoint.h5", "r").attrs["grad_norm"])
         for d in ("two_clip", "two_shard_clip")]
norm_ok = abs(norms[1] - norms[0]) <= 1e-3 * norms[0] and norms[0] > 0.01
print(f"clipped, sharded against all-reduce: largest difference {clip_rel:.3g}; grad_norm "
      f"{norms[1]!r} against {norms[0]!r}")
# 3 epochs of 23 steps apart in summation order: rounding-level differences
# grow with the steps but stay far below 1e-2 (a wrong share or scale
# changes the weights at the 1e-1 level).
sys.exit(0 if same and sharded and sharded16 and off16 and rel < 1e-2 and clip_rel < 1e-3
         and norm_ok else 1)
PY
    [ "${PIPESTATUS[0]}" -eq 0 ] || note_failure "2-rank weights (run to run, against 1 GPU, sharded with clipping)"
    rm -rf "$work"
fi

if [ ${#failed[@]} -ne 0 ]; then
    echo "dist_gpu_check.sh: ${#failed[@]} failure(s): ${failed[*]}"
    exit 1
fi
echo "dist_gpu_check.sh: all passed"
