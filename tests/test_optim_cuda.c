/* test_optim_cuda.c — Adam, the schedule and clipping in a training run on
 * the GPU (the trainer in process, as test_trainer.c on the CPU): two runs
 * from one seed give bit-identical weights (the clipping's norm is summed
 * without atomics), and a run stopped mid-epoch and resumed ends with the
 * same weights bit for bit (exp_avg, exp_avg_sq and the step count in the
 * checkpoint); the same for RMSprop. It also puts Adam's, RMSprop's and
 * the clipper's kernels under
 * scripts/gpu_check.sh's compute-sanitizer run. Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "sets.h"
#include "trainer_run.h"
#include "test_main.h"

enum { ROWS = 256, BATCH = 32, EPOCHS = 3, STOP_AFTER = 13, PATH_CAP = 512 };

typedef program_files fixture;

/* Eight inputs, three classes by the sign pattern of two of them. */
static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > 0); }

static const set_shape shape = {.cols = 8, .label = label_of};

static int setup(void **state)
{
    fixture *f = program_files_new("fn_optim_cuda_");
    char path[PATH_CAP];
    write_set(program_files_path(f, "train.h5", path, sizeof path), ROWS, 9, &shape);
    program_files_ini(f, "[data]\ntrain = train.h5\n[model]\nlayers = block 32, block 32, linear 3\n"
                         "groups = 4\n[train]\nbatch_size = %d\nepochs = %d\nseed = 5\n"
                         "optimizer = adamw\nlr = 0.01\nschedule = cosine\nwarmup_steps = 5\n"
                         "clip_grad_norm = 0.5\n[run]\ndevice = cuda\nlog_every = 0\n",
                      BATCH, EPOCHS);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

/* Runs run.ini into <dir>/<out> (trainer_run.h), which must succeed; the
 * caller destroys the trainer, then cfg. */
static fn_trainer *run_with(const fixture *f, const char *out, const char *sets, int resume,
                            long long stop_after, fn_config **cfg)
{
    fn_status st;
    char msg[512];
    fn_trainer *t = trainer_run(f->dir, f->ini, out, NULL, sets, resume, stop_after, cfg, &st,
                                msg, sizeof msg);
    if (st != FN_OK)
        fail_msg("train %s: %s", out, msg);
    return t;
}

static fn_trainer *run(const fixture *f, const char *out, int resume, long long stop_after,
                       fn_config **cfg)
{
    return run_with(f, out, NULL, resume, stop_after, cfg);
}

/* run.ini with sets into <dir>/parts, stopped after STOP_AFTER steps, then
 * resumed to the end: the resumed trainer, its config in *cfg. */
static fn_trainer *run_in_two_parts(const fixture *f, const char *sets, fn_config **cfg)
{
    fn_config *stopped_cfg = NULL;
    fn_trainer *t = run_with(f, "parts", sets, 0, STOP_AFTER, &stopped_cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_STOPPED);
    trainer_release(t, stopped_cfg);
    t = run_with(f, "parts", sets, 1, -1, cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    return t;
}

static void test_two_runs_bit_identical(void **state)
{
    skip_without_gpu();
    fixture *f = *state;
    fn_config *ca = NULL, *cb = NULL;
    fn_trainer *a = run(f, "a", 0, -1, &ca), *b = run(f, "b", 0, -1, &cb);
    assert_int_equal(fn_trainer_outcome(a), FN_TRAIN_DONE);
    assert_string_equal(fn_optimizer_name(fn_trainer_optimizer(a)), "adamw");
    expect_same_weights(fn_trainer_net(a), fn_trainer_net(b));
    trainer_release(a, ca);
    trainer_release(b, cb);
}

static void test_stop_and_resume(void **state)
{
    skip_without_gpu();
    fixture *f = *state;
    fn_config *cw = NULL, *cr = NULL;
    fn_trainer *whole = run(f, "whole", 0, -1, &cw);
    fn_trainer *t = run_in_two_parts(f, NULL, &cr);
    assert_int_equal(fn_optimizer_steps(fn_trainer_optimizer(t)),
                     fn_optimizer_steps(fn_trainer_optimizer(whole)));
    expect_same_weights(fn_trainer_net(t), fn_trainer_net(whole));
    trainer_release(t, cr);
    trainer_release(whole, cw);
}

/* RMSprop with all three kinds of state, in the multi-tensor launch of a
 * graphed step, under a plateau schedule on the training loss (the
 * deferred step's sums) that asks for the loss to halve every epoch, so
 * the rate falls at epoch ends: two runs bit-identical, and a run stopped
 * mid-epoch and resumed ends with the uninterrupted run's weights bit for
 * bit. */
static void test_rmsprop_runs(void **state)
{
    skip_without_gpu();
    fixture *f = *state;
    const char *sets = "train.optimizer=rmsprop;train.lr=0.003;train.alpha=0.9;"
                       "train.momentum=0.5;train.centered=true;train.weight_decay=1e-3;"
                       "train.schedule=plateau;train.factor=0.5;train.plateau_patience=0;"
                       "train.threshold=0.5";
    fn_config *cw = NULL, *c2 = NULL, *cr = NULL;
    fn_trainer *whole = run_with(f, "whole", sets, 0, -1, &cw);
    assert_string_equal(fn_optimizer_name(fn_trainer_optimizer(whole)), "rmsprop");
    fn_trainer *again = run_with(f, "again", sets, 0, -1, &c2);
    expect_same_weights(fn_trainer_net(again), fn_trainer_net(whole));
    trainer_release(again, c2);
    fn_trainer *t = run_in_two_parts(f, sets, &cr);
    expect_same_weights(fn_trainer_net(t), fn_trainer_net(whole));
    trainer_release(t, cr);
    trainer_release(whole, cw);
}

TEST_MAIN(NULL, NULL,
          cmocka_unit_test_setup_teardown(test_rmsprop_runs, setup, teardown),
          cmocka_unit_test_setup_teardown(test_two_runs_bit_identical, setup, teardown),
          cmocka_unit_test_setup_teardown(test_stop_and_resume, setup, teardown))
