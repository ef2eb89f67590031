/* test_optim_cuda.c — Adam, the schedule and clipping in a training run on
 * the GPU (the trainer in process, as test_trainer.c on the CPU): two runs
 * from one seed give bit-identical weights (the clipping's norm is summed
 * without atomics), and a run stopped mid-epoch and resumed ends with the
 * same weights bit for bit (exp_avg, exp_avg_sq and the step count in the
 * checkpoint). It also puts Adam's and the clipper's kernels under
 * scripts/gpu_check.sh's compute-sanitizer run. Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "h5_write.h"
#include "check.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "trainer_run.h"

enum { ROWS = 256, BATCH = 32, EPOCHS = 3, STOP_AFTER = 13, PATH_CAP = 512 };

typedef struct fixture {
    char dir[64];
    char ini[PATH_CAP];
} fixture;

static void put(hid_t file, const char *name, hid_t type, int rank, hsize_t cols, const void *data)
{
    h5_put(file, name, type, type, rank, ROWS, cols, data);
}

/* Eight inputs, three classes by the sign pattern of two of them. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    program_temp_dir(f->dir, sizeof f->dir, "fn_optim_cuda_");
    float *x = chk_alloc_float(ROWS * 8);
    int32_t y[ROWS];
    chk_rng rng = chk_rng_seed(9);
    for (int i = 0; i < ROWS; i++) {
        for (int j = 0; j < 8; j++)
            x[i * 8 + j] = (float)chk_uniform(&rng, -1, 1);
        y[i] = (x[i * 8] > 0) + (x[i * 8 + 1] > 0);
    }
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/train.h5", f->dir);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    put(file, "X", H5T_NATIVE_FLOAT, 2, 8, x);
    put(file, "y", H5T_NATIVE_INT32, 1, 1, y);
    H5Fclose(file);
    free(x);
    snprintf(f->ini, sizeof f->ini, "%s/run.ini", f->dir);
    FILE *out = fopen(f->ini, "w");
    assert_non_null(out);
    fprintf(out, "[data]\ntrain = train.h5\n[model]\nlayers = block 32, block 32, linear 3\n"
                 "groups = 4\n[train]\nbatch_size = %d\nepochs = %d\nseed = 5\n"
                 "optimizer = adamw\nlr = 0.01\nschedule = cosine\nwarmup_steps = 5\n"
                 "clip_grad_norm = 0.5\n[run]\ndevice = cuda\nlog_every = 0\n",
            BATCH, EPOCHS);
    fclose(out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f) {
        program_remove_dir(f->dir);
        free(f);
    }
    return 0;
}

/* Runs run.ini into <dir>/<out> (trainer_run.h), which must succeed; the
 * caller destroys the trainer, then cfg. */
static fn_trainer *run(const fixture *f, const char *out, int resume, long long stop_after,
                       fn_config **cfg)
{
    fn_status st;
    char msg[512];
    fn_trainer *t = trainer_run(f->dir, f->ini, out, NULL, NULL, resume, stop_after, cfg, &st,
                                msg, sizeof msg);
    if (st != FN_OK)
        fail_msg("train %s: %s", out, msg);
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
    fn_trainer_destroy(a);
    fn_trainer_destroy(b);
    fn_config_destroy(ca);
    fn_config_destroy(cb);
}

static void test_stop_and_resume(void **state)
{
    skip_without_gpu();
    fixture *f = *state;
    fn_config *cw = NULL, *cr = NULL;
    fn_trainer *whole = run(f, "whole", 0, -1, &cw);
    fn_trainer *t = run(f, "parts", 0, STOP_AFTER, &cr);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_STOPPED);
    fn_trainer_destroy(t);
    fn_config_destroy(cr);
    t = run(f, "parts", 1, -1, &cr);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    assert_int_equal(fn_optimizer_steps(fn_trainer_optimizer(t)),
                     fn_optimizer_steps(fn_trainer_optimizer(whole)));
    expect_same_weights(fn_trainer_net(t), fn_trainer_net(whole));
    fn_trainer_destroy(t);
    fn_config_destroy(cr);
    fn_trainer_destroy(whole);
    fn_config_destroy(cw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_runs_bit_identical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_and_resume, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
