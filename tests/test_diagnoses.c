/* test_diagnoses.c — a non-finite value, or a value that cannot be, is
 * blamed on its real cause, through the library's trainer on the CPU:
 *   - input standardisation that overflows float32 (a finite column of
 *     +-3.4e38: only the row of -3.4e38 overflows) is named as such: at
 *     set-up when that row is in the first batch, else at the step that
 *     meets it, naming the file's row and column, not the learning rate;
 *   - a non-finite loss at step 1, before any update, says the learning
 *     rate is not the cause (regression targets of 3e38);
 *   - adam_eps = 0 (0 / 0 for a parameter whose gradient is 0) is refused,
 *     by the config and by Adam itself;
 *   - a checkpoint holding a negative exp_avg_sq, or a step count beyond
 *     2^53 (2^63 - 1 overflowed Adam's t + 1), is refused when read,
 *     naming the file and the dataset or attribute; an optimiser at the
 *     largest count refuses the next step instead of overflowing. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/adam.h"
#include "fusenet/config.h"
#include "fusenet/data.h"
#include "fusenet/optimizer.h"
#include "fusenet/trainer.h"
#include "optim/optimizer_paths.h"
#include "h5_write.h"
#include "program.h"
#include "test_main.h"

enum { ROWS = 64, IN = 4, HIDDEN = 8, CLASSES = 3, BATCH = 8, CAP = 1024 };

typedef struct fixture {
    char dir[64];
    char data[CAP], ini[CAP], out[CAP];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    program_temp_dir(f->dir, sizeof f->dir, "fn_diag_");
    snprintf(f->data, CAP, "%s/set.h5", f->dir);
    snprintf(f->ini, CAP, "%s/run.ini", f->dir);
    snprintf(f->out, CAP, "%s/out", f->dir);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *state = f;
    return 0;
}

/* ROWS rows of small inputs, column 0 = `fill` in every row but `odd`,
 * which holds `odd_value` (odd < 0: none). */
static void write_set(const fixture *f, float fill, int odd, float odd_value)
{
    static float x[ROWS * IN];
    int32_t y[ROWS];
    for (int r = 0; r < ROWS; r++) {
        for (int j = 0; j < IN; j++)
            x[r * IN + j] = (float)((r * 7 + j * 3) % 11) / 11.0f;
        x[r * IN] = r == odd ? odd_value : fill;
        y[r] = r % CLASSES;
    }
    hid_t file = H5Fcreate(f->data, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ROWS, IN, x);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, ROWS, 0, y);
    H5Fclose(file);
}

/* The config with `extra` lines in [train] and [data] standardize. */
static fn_config *config(const fixture *f, int standardize, const char *extra)
{
    FILE *out = fopen(f->ini, "w");
    assert_non_null(out);
    fprintf(out,
            "[data]\ntrain = %s\nstandardize = %s\n[model]\nlayers = block %d, linear %d\n"
            "groups = 2\n[train]\nbatch_size = %d\nepochs = 2\nlr = 0.01\nseed = 3\n%s\n"
            "[run]\ndevice = cpu\nlog_every = 0\n[output]\ndir = %s\n",
            f->data, standardize ? "true" : "false", HIDDEN, CLASSES, BATCH, extra, f->out);
    fclose(out);
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_load(&cfg, f->ini));
    EXPECT_OK(fn_config_finish(cfg));
    return cfg;
}

/* The file rows of the first batch of epoch 0 (the config's seed and batch). */
static void first_batch_rows(const fixture *f, int *in_first)
{
    const fn_data_options opt = {.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                                 .out_features = CLASSES, .batch_size = BATCH,
                                 .memory_budget = 1 << 20, .shuffle = 1, .seed = 3};
    fn_data *d = NULL;
    EXPECT_OK(fn_data_open(&d, f->data, &opt));
    fn_batch_rows b;
    EXPECT_OK(fn_data_next_rows(d, &b));
    memset(in_first, 0, sizeof *in_first * ROWS);
    for (int i = 0; i < b.rows; i++)
        in_first[b.first + b.order[i]] = 1;
    fn_data_close(d);
}

/* A row of the first batch (want 1) or of a later one (want 0). */
static int row_where(const fixture *f, int want)
{
    int in_first[ROWS];
    write_set(f, 3.4e38f, -1, 0);
    first_batch_rows(f, in_first);
    for (int r = 0; r < ROWS; r++)
        if (in_first[r] == want)
            return r;
    fail_msg("no row found");
    return -1;
}

static fn_status create_and_run(const fn_config *cfg, int resume)
{
    const fn_trainer_options opt = {.comm = FN_COMM_SELF, .resume = resume};
    fn_trainer *t = NULL;
    fn_status st = fn_trainer_create(&t, cfg, &opt);
    if (st == FN_OK)
        st = fn_trainer_run(t);
    fn_trainer_destroy(t);
    return st;
}

static void expect_message(const char *needle)
{
    if (!strstr(fn_last_error(), needle))
        fail_msg("message '%s' lacks '%s'", fn_last_error(), needle);
}

static void expect_no_lr_blame(void)
{
    if (strstr(fn_last_error(), "smaller [train] lr"))
        fail_msg("message blames the learning rate: %s", fn_last_error());
}

/* Column 0 of +3.4e38 but one row of -3.4e38: mean about 3.3e38, and
 * -3.4e38 - mean overflows. In the first batch: refused at set-up. */
static void test_standardize_overflow_at_setup(void **state)
{
    fixture *f = *state;
    const int bad = row_where(f, 1);
    write_set(f, 3.4e38f, bad, -3.4e38f);
    fn_config *cfg = config(f, 1, "");
    assert_int_equal(create_and_run(cfg, 0), FN_ERR_NUMERIC);
    expect_message("[data] standardize's statistics turn");
    char where[64];
    snprintf(where, sizeof where, "row %d column 0 (-3.4e+38) into -inf", bad);
    expect_message(where);
    expect_no_lr_blame();
    fn_config_destroy(cfg);
}

/* The same row in a later batch: the step that meets it names the input. */
static void test_standardize_overflow_at_step(void **state)
{
    fixture *f = *state;
    const int bad = row_where(f, 0);
    write_set(f, 3.4e38f, bad, -3.4e38f);
    fn_config *cfg = config(f, 1, "");
    assert_int_equal(create_and_run(cfg, 0), FN_ERR_NUMERIC);
    char where[CAP + 128];
    snprintf(where, sizeof where, "first non-finite: the input %s row %d column 0, -inf", f->data,
             bad);
    expect_message(where);
    expect_message("[data] standardize's (x - mean");
    expect_no_lr_blame();
    fn_config_destroy(cfg);
}

/* Regression targets of 3e38: the squared error of step 1 overflows,
 * before any update. */
static void test_first_step_not_the_lr(void **state)
{
    fixture *f = *state;
    write_set(f, 0.5f, -1, 0);
    static float t[ROWS * CLASSES];
    for (int i = 0; i < ROWS * CLASSES; i++)
        t[i] = 3e38f;
    hid_t file = H5Fopen(f->data, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "t", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ROWS, CLASSES, t);
    H5Fclose(file);
    fn_config *cfg = config(f, 0, "loss = mse");
    EXPECT_OK(fn_config_set(cfg, "data.targets=t"));
    assert_int_equal(create_and_run(cfg, 0), FN_ERR_NUMERIC);
    expect_message("step 1 (epoch 1, batch 1): loss is inf");
    expect_message("no update has run yet, so the learning rate is not the cause");
    expect_no_lr_blame();
    fn_config_destroy(cfg);
}

static void test_adam_eps_zero_refused(void **state)
{
    fixture *f = *state;
    write_set(f, 0, -1, 0);
    fn_config *cfg = NULL;
    FILE *out = fopen(f->ini, "w");
    assert_non_null(out);
    fprintf(out, "[data]\ntrain = %s\n[model]\nlayers = linear %d\n[train]\noptimizer = adam\n",
            f->data, CLASSES);
    fclose(out);
    EXPECT_OK(fn_config_load(&cfg, f->ini));
    EXPECT_FAIL(fn_config_set(cfg, "train.adam_eps=0"), FN_ERR_INVALID,
                "--set train.adam_eps=0: 0 is out of range: expected > 0");
    fn_config_destroy(cfg);
    fn_adam_config c = fn_adam_config_default(1e-3f, 0);
    c.eps = 0;
    EXPECT_FAIL(fn_adam_config_check(&c), FN_ERR_INVALID, "gets the update 0 / 0");
}

/* An Adam run's checkpoint of epoch 1, with `edit` applied to the file. */
static fn_config *adam_checkpoint(const fixture *f, char *ckpt)
{
    write_set(f, 0.5f, -1, 0);
    fn_config *cfg = config(f, 0, "optimizer = adam\ncheckpoint_every = 1");
    EXPECT_OK(fn_config_set(cfg, "train.epochs=1"));
    EXPECT_OK(create_and_run(cfg, 0));
    snprintf(ckpt, CAP, "%.900s/checkpoint.h5", f->out);
    EXPECT_OK(fn_config_set(cfg, "train.epochs=2"));
    return cfg;
}

static void test_negative_second_moment_refused(void **state)
{
    fixture *f = *state;
    char ckpt[CAP];
    fn_config *cfg = adam_checkpoint(f, ckpt);
    hid_t file = H5Fopen(ckpt, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    hid_t set = H5Dopen2(file, "exp_avg_sq/layer0.weight", H5P_DEFAULT);
    assert_true(set >= 0);
    static float v[HIDDEN * IN]; /* layer 0: block HIDDEN, [HIDDEN, IN] */
    assert_true(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    v[IN + 1] = -1.0f;
    assert_true(H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(set);
    H5Fclose(file);
    assert_int_equal(create_and_run(cfg, 1), FN_ERR_FORMAT);
    expect_message("checkpoint.h5: group 'exp_avg_sq': dataset 'layer0.weight' holds -1 at [1, 1]");
    fn_config_destroy(cfg);
}

static void test_step_count_out_of_range(void **state)
{
    fixture *f = *state;
    char ckpt[CAP];
    fn_config *cfg = adam_checkpoint(f, ckpt);
    hid_t file = H5Fopen(ckpt, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    /* The count was small enough for an int32 attribute: made again as int64. */
    const long long huge = LLONG_MAX;
    assert_true(H5Adelete(file, "optimizer_steps") >= 0);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, "optimizer_steps", H5T_STD_I64LE, space, H5P_DEFAULT,
                            H5P_DEFAULT);
    assert_true(attr >= 0 && H5Awrite(attr, H5T_NATIVE_LLONG, &huge) >= 0);
    H5Aclose(attr);
    H5Sclose(space);
    H5Fclose(file);
    assert_int_equal(create_and_run(cfg, 1), FN_ERR_FORMAT);
    expect_message("checkpoint.h5: attribute 'optimizer_steps' is 9223372036854775807, "
                   "expected 0 to 2^53");
    fn_config_destroy(cfg);

    /* The optimiser itself never computes a count past the largest. */
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32));
    fn_param p = {.name = "w"};
    EXPECT_OK(fn_tensor_alloc(&p.value, 1, 2, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&p.grad, 1, 2, FN_CPU));
    EXPECT_OK(fn_tensor_zero(&p.value));
    EXPECT_OK(fn_tensor_zero(&p.grad));
    fn_param *params[] = {&p};
    const fn_adam_config c = fn_adam_config_default(1e-3f, 0);
    fn_optimizer *opt = NULL;
    EXPECT_OK(fn_adam_create(&opt, ctx, params, 1, &c));
    fn_optimizer_set_steps(opt, LLONG_MAX);
    EXPECT_FAIL(fn_optimizer_step(opt), FN_ERR_INVALID, "a step count is 0 to 2^53");
    EXPECT_FAIL(fn_optimizer_step_params(opt, 0, 1), FN_ERR_INVALID, "a step count is 0 to 2^53");
    fn_optimizer_set_steps(opt, FN_OPTIMIZER_MAX_STEPS - 1);
    EXPECT_OK(fn_optimizer_step(opt));
    EXPECT_FAIL(fn_optimizer_step(opt), FN_ERR_INVALID, "a step count is 0 to 2^53");
    fn_optimizer_destroy(opt);
    fn_tensor_free(&p.value);
    fn_tensor_free(&p.grad);
    fn_context_destroy(ctx);
}

TEST_MAIN_EACH(setup, program_dir_teardown,
               cmocka_unit_test(test_standardize_overflow_at_setup),
               cmocka_unit_test(test_standardize_overflow_at_step),
               cmocka_unit_test(test_first_step_not_the_lr),
               cmocka_unit_test(test_adam_eps_zero_refused),
               cmocka_unit_test(test_negative_second_moment_refused),
               cmocka_unit_test(test_step_count_out_of_range))
