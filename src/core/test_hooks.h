/* test_hooks.h (private) — hooks that only test builds compile in
 * (cmake -DFN_TEST_HOOKS=ON; scripts/test.sh and scripts/gpu_check.sh turn
 * it on): elsewhere each hook is a no-op, so no environment variable of the
 * tests can change what a user's run does. */
#ifndef FUSENET_SRC_TEST_HOOKS_H
#define FUSENET_SRC_TEST_HOOKS_H

/* 1 when the library was built with the hooks: a test that needs one skips
 * without them. FN_TEST_HOOKS_OFF=1 makes a build with them answer 0, as
 * one without, so a test (hooks_off_skips) checks those skips where every
 * build has the hooks. */
int fn_test_hooks_enabled(void);

/* FN_TEST_WRITE_DELAY_MS=N makes every atomic commit wait N ms (at most
 * 10 s) between the temporary's fsync and its rename, so
 * tests/test_faults.c can SIGKILL a run inside a write window of known
 * length instead of hoping to hit a ~10 ms one. */
void fn_test_write_delay(void);

/* FN_TEST_LOCK_GATE=G holds fn_dir_lock_take (store/dir_lock.h) between its
 * open of the output directory and its flock: it creates the file
 * G/opened, then waits until G/go exists (at most 10 s), so
 * tests/test_dir_lock_race.c can let other runs take, release or remove
 * the directory inside that window, by design rather than by luck. */
void fn_test_lock_gate(void);

/* Data parallelism's failure tests (tests/dist_*.sh): with
 * FN_TEST_FAIL_RANK=r and FN_TEST_FAIL_STEP=s, rank r's step s (the global
 * step, from 1) fails with a message naming them: 1 there, else 0. */
int fn_test_rank_fails(int rank, long long step);
/* FN_TEST_STALL_RANK=r and FN_TEST_STALL_STEP=s: rank r's step s sleeps
 * (at most 10 minutes) instead of answering the other ranks, which must
 * fail their bounded waits ($FN_COMM_TIMEOUT_S). */
void fn_test_rank_stall(int rank, long long step);
/* FN_TEST_PERTURB_RANK=r: 1 on rank r, whose trainer then changes one bit
 * of its first parameter at the start, so the ranks' weights differ. */
int fn_test_rank_perturbed(int rank);

/* FN_TEST_DEFER_LAG=N (1..8) makes the trainer defer its steps on the CPU
 * too (src/trainer/step_deferred.c), each copy of the loss's sums arriving N
 * - 1 steps late, so a CPU test exercises the late non-finite stop and its
 * roll-back; FN_TEST_DEFER_LAG=0 keeps the GPU's steps eager (the loss
 * read every step), for a GPU test to compare the two. -1: not set (and
 * without the hooks). */
int fn_test_defer_lag(void);

/* FN_TEST_BF16_COPY_OFF=1: no owner keeps a weight's bfloat16 copy
 * (fn_param_keep_bf16 keeps nothing), so every bf16 forward rounds W
 * itself, as where nobody keeps them: a test compares the two runs bit
 * for bit. Read at each keep (an optimiser's creation). */
int fn_test_bf16_copy_off(void);

/* FN_TEST_BF16_ACTS_OFF=1: a net joins no two layers through bfloat16
 * (net.c): every activation between layers is float and the layer after
 * rounds it itself, as before the joins existed; a test compares the two
 * runs bit for bit. Read as each layer is added to a net. */
int fn_test_bf16_acts_off(void);
/* FN_TEST_LAYER_UPDATES=1 or 0: each layer's update beside the backward
 * of the layers before it where allowed, or every parameter's in one pass
 * after the whole backward, whatever [run] layer_updates says
 * (trainer/step_choice.c), so a test compares the two runs bit for bit;
 * -1 where unset (the config decides). */
int fn_test_layer_updates(void);

#endif
