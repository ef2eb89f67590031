/* test_standardize.c — [data] standardize through the trainer, in process
 * on the CPU, on a float64 set whose feature 3 has scale 1e6 (offset 5e6):
 *  - without standardize the run stalls (the 1e6 column swamps the first
 *    layer's products, which GroupNorm then rescales, so the other
 *    features are lost) and stays near the majority class; with it the
 *    same run separates the classes;
 *  - a constant column is a notice (on_notice) naming it; without
 *    standardize, the 1e6 column is a notice naming it and the key;
 *  - weights.h5 and checkpoint.h5 hold /input_norm, the training set's
 *    statistics;
 *  - resuming needs the same setting; a checkpoint with statistics
 *    resumes to the uninterrupted run's weights bit for bit;
 *  - [model] init from a file with statistics keeps them (the network was
 *    trained on them) and needs standardize = true. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "h5_write.h"
#include "check.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/input_norm.h"
#include "fusenet/trainer.h"
#include "fusenet/weights.h"
#include "program.h"
#include "test_main.h"

enum { ROWS = 800, VALID = 200, IN = 6, CLASSES = 3, PATH_CAP = 1024, NOTE_CAP = 512 };

typedef program_files fixture;

/* Three classes from two linear scores of the features; feature 3 is
 * noise of scale 1e6 about 5e6 (a price in cents, say), feature 5 the
 * constant 7. */
static void write_scaled_set(const char *path, int rows, uint64_t seed, double scale)
{
    double *x = malloc(sizeof(double) * (size_t)rows * IN);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)rows);
    assert_true(x && y);
    chk_rng rng = chk_rng_seed(seed);
    for (int i = 0; i < rows; i++) {
        double *r = x + (size_t)i * IN;
        for (int j = 0; j < IN; j++)
            r[j] = chk_uniform(&rng, -1, 1);
        y[i] = (r[0] + r[1] > 0) + (r[2] - r[4] > 0.5);
        r[3] = 5 * scale + scale * r[3];
        r[5] = 7;
    }
    h5_write_xy(path, x, (hsize_t)rows, IN, H5T_STD_I64LE, H5T_NATIVE_INT32, y);
    free(x);
    free(y);
}

static int setup(void **state)
{
    fixture *f = program_files_new("fn_standardize_");
    char path[PATH_CAP];
    write_scaled_set(program_files_path(f, "train.h5", path, sizeof path), ROWS, 11, 1e6);
    write_scaled_set(program_files_path(f, "valid.h5", path, sizeof path), VALID, 12, 1e6);
    write_scaled_set(program_files_path(f, "small.h5", path, sizeof path), ROWS, 13, 1.0);
    program_files_ini(f, "[data]\ntrain = train.h5\nvalid = valid.h5\n"
                         "[model]\nlayers = block 32, linear 3\ngroups = 4\n"
                         "[train]\nbatch_size = 32\nepochs = 12\nlr = 0.05\nmomentum = 0.9\n"
                         "checkpoint_every = 1\n[run]\ndevice = cpu\nlog_every = 0\n");
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

typedef struct record {
    int stop_after; /* steps; 0: never */
    int steps, notices;
    char notice[NOTE_CAP];
    fn_train_metrics valid;
} record;

static void on_step(void *user, const fn_train_progress *p)
{
    (void)p;
    ((record *)user)->steps++;
}

static void on_epoch(void *user, const fn_train_epoch *e) { ((record *)user)->valid = e->valid; }

static void on_notice(void *user, const char *text)
{
    record *r = user;
    r->notices++;
    snprintf(r->notice, sizeof r->notice, "%s", text);
}

static int should_stop(void *user)
{
    const record *r = user;
    return r->stop_after && r->steps >= r->stop_after;
}

static const fn_trainer_callbacks callbacks = {
    .on_step = on_step, .on_epoch = on_epoch, .on_notice = on_notice, .should_stop = should_stop};

/* Runs run.ini with output <dir>/<out> and the overrides (NULL-ended);
 * returns the status of create (when it fails) or run. */
static fn_status train(const fixture *f, const char *out, int resume, record *r,
                       const char *const *sets)
{
    fn_config *cfg = NULL;
    char set[PATH_CAP + 16];
    snprintf(set, sizeof set, "output.dir=%s/%s", f->dir, out);
    EXPECT_OK(fn_config_load(&cfg, f->ini));
    EXPECT_OK(fn_config_set(cfg, set));
    for (int i = 0; sets && sets[i]; i++)
        EXPECT_OK(fn_config_set(cfg, sets[i]));
    EXPECT_OK(fn_config_finish(cfg));
    fn_trainer_options opt = {.resume = resume, .callbacks = &callbacks, .user = r};
    fn_trainer *t = NULL;
    fn_status st = fn_trainer_create(&t, cfg, &opt);
    if (st == FN_OK)
        st = fn_trainer_run(t);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    return st;
}

static char *path_of(const fixture *f, const char *out, const char *name)
{
    static char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s/%s", f->dir, out, name);
    return path;
}

/* The /input_norm of a file, NULL when it has none. */
static fn_input_norm *norm_of(const char *path)
{
    static fn_context *cpu;
    if (!cpu)
        EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    fn_input_norm *n = NULL;
    EXPECT_OK(fn_input_norm_load(&n, cpu, path, IN));
    return n;
}

static const char *const standardize[] = {"data.standardize=true", NULL};

static void test_stalls_without_trains_with(void **state)
{
    fixture *f = *state;
    record plain = {0}, std = {0};
    EXPECT_OK(train(f, "plain", 0, &plain, NULL));
    EXPECT_OK(train(f, "std", 0, &std, standardize));
    printf("valid accuracy after 12 epochs: without standardize %.3f, with %.3f\n",
           plain.valid.acc, std.valid.acc);
    /* The classes are 25 %, 50 % and 25 % of the rows or near; a net that
     * sees only the 1e6 column stays near the majority's 0.5, one that
     * sees the features separates them (≈ 0.95 on this set). */
    assert_true(plain.valid.acc < 0.65);
    assert_true(std.valid.acc > 0.85);
    /* Without standardize, the notice of scales far apart names the
     * widest column and the key; with it, only the constant column's. */
    assert_int_equal(plain.notices, 1);
    assert_non_null(strstr(plain.notice, "train.h5: input column scales (root mean square) "
                                         "differ "));
    assert_non_null(strstr(plain.notice, "column 3 about 5e+06; set [data] standardize = true"));
    assert_int_equal(std.notices, 1);
    assert_non_null(strstr(std.notice, "1 of 6 input columns are constant in the training set "
                                       "and get std 1 (column 5)"));
    fn_input_norm *w = norm_of(path_of(f, "std", "weights.h5"));
    fn_input_norm *c = norm_of(path_of(f, "std", "checkpoint.h5"));
    assert_non_null(w);
    assert_non_null(c);
    assert_true(fabsf(fn_input_norm_mean(w)[3] - 5e6f) < 1e5f);
    assert_true(fabsf(fn_input_norm_std(w)[3] - 1e6f / sqrtf(3)) < 5e4f);
    assert_true(fn_input_norm_std(w)[5] == 1.0f && fn_input_norm_mean(w)[5] == 7.0f);
    assert_memory_equal(fn_input_norm_mean(w), fn_input_norm_mean(c), IN * sizeof(float));
    assert_memory_equal(fn_input_norm_std(w), fn_input_norm_std(c), IN * sizeof(float));
    fn_input_norm_destroy(w);
    fn_input_norm_destroy(c);
    assert_null(norm_of(path_of(f, "plain", "weights.h5")));
}

/* The two files' statistics are the same bits. */
static int same_norm(const char *a, const char *b)
{
    fn_input_norm *na = norm_of(a), *nb = norm_of(b);
    int same = na && nb &&
               memcmp(fn_input_norm_mean(na), fn_input_norm_mean(nb), IN * sizeof(float)) == 0 &&
               memcmp(fn_input_norm_std(na), fn_input_norm_std(nb), IN * sizeof(float)) == 0;
    fn_input_norm_destroy(na);
    fn_input_norm_destroy(nb);
    return same;
}

/* The two weights files' parameters are the same bits. */
static int same_weights(const char *a, const char *b)
{
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    fn_net *na = NULL, *nb = NULL;
    EXPECT_OK(fn_weights_build(&na, cpu, a, 1));
    EXPECT_OK(fn_weights_build(&nb, cpu, b, 1));
    int same = fn_net_n_params(na) == fn_net_n_params(nb);
    for (int i = 0; same && i < fn_net_n_params(na); i++) {
        const fn_tensor *x = &fn_net_param(na, i)->value, *y = &fn_net_param(nb, i)->value;
        same = fn_tensor_count(x) == fn_tensor_count(y) &&
               memcmp(x->data, y->data, fn_tensor_count(x) * sizeof(float)) == 0;
    }
    fn_net_destroy(na);
    fn_net_destroy(nb);
    fn_context_destroy(cpu);
    return same;
}

static void test_resume(void **state)
{
    fixture *f = *state;
    record stop = {.stop_after = 30}, rest = {0}, whole = {0};
    EXPECT_OK(train(f, "r", 0, &stop, standardize));
    /* Without the setting the checkpoint's statistics would be dropped. */
    record r = {0};
    assert_int_equal(train(f, "r", 1, &r, NULL), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "checkpoint.h5 holds input standardisation "
                                            "(/input_norm): set [data] standardize = true to "
                                            "resume it"));
    EXPECT_OK(train(f, "r", 1, &rest, standardize));
    EXPECT_OK(train(f, "whole", 0, &whole, standardize));
    assert_true(rest.valid.loss == whole.valid.loss);
    char resumed[PATH_CAP];
    snprintf(resumed, sizeof resumed, "%s", path_of(f, "r", "weights.h5"));
    assert_true(same_norm(resumed, path_of(f, "whole", "weights.h5")));
    assert_true(same_weights(resumed, path_of(f, "whole", "weights.h5")));
    /* A checkpoint without statistics cannot resume with them. */
    record p = {.stop_after = 5}, q = {0};
    EXPECT_OK(train(f, "p", 0, &p, NULL));
    assert_int_equal(train(f, "p", 1, &q, standardize), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "was written without input standardisation; the "
                                            "config has [data] standardize = true"));
}

static void test_init(void **state)
{
    fixture *f = *state;
    record a = {0}, b = {0}, c = {0};
    const char *const once[] = {"data.standardize=true", "train.epochs=1", NULL};
    EXPECT_OK(train(f, "first", 0, &a, once));
    char init[PATH_CAP + 16];
    snprintf(init, sizeof init, "model.init=%s", path_of(f, "first", "weights.h5"));
    /* Fine-tuning on another set keeps the file's statistics (a --set path
     * is relative to the current directory, so the set's is given whole). */
    char small[PATH_CAP + 16];
    snprintf(small, sizeof small, "data.train=%s/small.h5", f->dir);
    const char *const tune[] = {"data.standardize=true", "train.epochs=1", small, init, NULL};
    EXPECT_OK(train(f, "tuned", 0, &b, tune));
    char first[PATH_CAP];
    snprintf(first, sizeof first, "%s", path_of(f, "first", "weights.h5"));
    assert_true(same_norm(first, path_of(f, "tuned", "weights.h5")));
    const char *const plain[] = {"train.epochs=1", init, NULL};
    assert_int_equal(train(f, "bad", 0, &c, plain), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "holds input standardisation (/input_norm): set "
                                            "[data] standardize = true to start from it"));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
TEST_MAIN(NULL, NULL, T(test_stalls_without_trains_with), T(test_resume), T(test_init))
