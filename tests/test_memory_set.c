/* test_memory_set.c — training from a program's arrays (memory_set.h,
 * fn_config_use_memory_set) on the CPU:
 *  - a run from memory sets ends with weights bit-identical to the run
 *    from HDF5 files holding the same values, with one seed: labels and
 *    float targets, one slab and several (a small memory budget), with and
 *    without [data] standardize, with a validation set;
 *  - the set is a copy: the caller's arrays changed after it was made
 *    change nothing;
 *  - fn_infer gives, row for row, the outputs of the standardised rows'
 *    forward pass, over several batches;
 *  - bad arrays and bad combinations are errors whose message names the
 *    set, the row and the column, or the problem and its fix: NULL arrays,
 *    no rows, no columns, NaN and infinities, labels out of range, labels
 *    where values are needed and back, columns that do not match, a file
 *    and a memory set for one key, a memory set of inputs alone. */
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

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/inference.h"
#include "fusenet/memory_set.h"
#include "fusenet/trainer.h"
#include "h5_write.h"
#include "program.h"
#include "trainer_run.h"
#include "test_main.h"

enum { ROWS = 300, VALID_ROWS = 70, IN = 5, CLASSES = 3, OUT = 2, PATH_CAP = 1024 };

/* One task's arrays: inputs, and labels or values. */
typedef struct arrays {
    int rows;
    float *x;      /* [rows, IN] */
    int32_t *y;    /* [rows] */
    float *t;      /* [rows, OUT] */
} arrays;

typedef struct fixture {
    char dir[64];
    arrays train, valid;
} fixture;

static void make_arrays(arrays *a, int rows, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    a->rows = rows;
    a->x = chk_alloc_float((size_t)rows * IN);
    a->t = chk_alloc_float((size_t)rows * OUT);
    a->y = calloc((size_t)rows, sizeof *a->y);
    assert_non_null(a->y);
    for (int i = 0; i < rows; i++) {
        double s = 0;
        for (int j = 0; j < IN; j++) {
            /* A column far from zero, so standardisation has work to do. */
            double v = chk_uniform(&rng, -1, 1) + (j == 2 ? 40 : 0);
            a->x[i * IN + j] = (float)v;
            s += v;
        }
        a->y[i] = (int32_t)(i % CLASSES);
        a->t[i * OUT] = (float)sin(s);
        a->t[i * OUT + 1] = (float)(s * 0.1);
    }
}

static void free_arrays(arrays *a)
{
    free(a->x);
    free(a->y);
    free(a->t);
}

static void write_file(const char *path, const arrays *a)
{
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "X", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, 2, (hsize_t)a->rows, IN, a->x);
    h5_put(file, "y", H5T_NATIVE_INT32, H5T_NATIVE_INT32, 1, (hsize_t)a->rows, 1, a->y);
    h5_put(file, "t", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, 2, (hsize_t)a->rows, OUT, a->t);
    H5Fclose(file);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    program_temp_dir(f->dir, sizeof f->dir, "fn_memory_set_");
    make_arrays(&f->train, ROWS, 11);
    make_arrays(&f->valid, VALID_ROWS, 12);
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/train.h5", f->dir);
    write_file(path, &f->train);
    snprintf(path, sizeof path, "%s/valid.h5", f->dir);
    write_file(path, &f->valid);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    program_remove_dir(f->dir);
    free_arrays(&f->train);
    free_arrays(&f->valid);
    free(f);
    return 0;
}

/* --- runs ---------------------------------------------------------------------- */

/* The settings both runs share (mse: 0 cross_entropy, 1 mse, 2
 * bce_with_logits); `extra` adds lines (its own sections). */
static void config_text(char *text, size_t cap, int mse, const char *extra)
{
    snprintf(text, cap,
             "[model]\nlayers = block 8, block 8, linear %d\ngroups = 2\n"
             "[train]\nloss = %s\nbatch_size = 16\nepochs = 3\nlr = 0.05\nmomentum = 0.9\n"
             "seed = 9\n[run]\ndevice = cpu\nlog_every = 0\n%s",
             mse ? OUT : CLASSES, mse == 2 ? "bce_with_logits" : mse ? "mse" : "cross_entropy",
             extra ? extra : "");
}

/* A run of `cfg` to its end; the caller destroys the trainer. */
static fn_trainer *run(fn_config *cfg, const fixture *f, const char *out)
{
    char set[PATH_CAP + 16];
    snprintf(set, sizeof set, "output.dir=%s/%s", f->dir, out);
    EXPECT_OK(fn_config_set(cfg, set));
    EXPECT_OK(fn_config_finish(cfg));
    const fn_trainer_options options = {.overwrite = 1};
    fn_trainer *t = NULL;
    EXPECT_OK(fn_trainer_create(&t, cfg, &options));
    EXPECT_OK(fn_trainer_run(t));
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    return t;
}

static fn_memory_set *memory_set(const arrays *a, const char *name, int mse)
{
    fn_memory_set *m = NULL;
    if (mse)
        EXPECT_OK(fn_memory_set_values(&m, name, a->x, a->rows, IN, a->t, OUT));
    else
        EXPECT_OK(fn_memory_set_labels(&m, name, a->x, a->rows, IN, a->y));
    return m;
}

/* The same run from the files and from memory sets: the same weights. */
static void expect_same_run(const fixture *f, int mse, const char *extra)
{
    char text[2048], files[PATH_CAP * 2 + 256];
    config_text(text, sizeof text, mse, extra);
    snprintf(files, sizeof files, "%s[data]\ntrain = %s/train.h5\nvalid = %s/valid.h5\n%s", text,
             f->dir, f->dir, mse ? "targets = t\n" : "");
    fn_config *from_file = NULL, *from_memory = NULL;
    EXPECT_OK(fn_config_parse(&from_file, "files.ini", files));
    fn_trainer *a = run(from_file, f, "files");

    fn_memory_set *train = memory_set(&f->train, "train", mse);
    fn_memory_set *valid = memory_set(&f->valid, "valid", mse);
    EXPECT_OK(fn_config_parse(&from_memory, "memory.ini", text));
    EXPECT_OK(fn_config_use_memory_set(from_memory, "train", train));
    EXPECT_OK(fn_config_use_memory_set(from_memory, "valid", valid));
    fn_trainer *b = run(from_memory, f, "memory");

    expect_same_weights(fn_trainer_net(a), fn_trainer_net(b));
    char *ma = metrics_without_times(f->dir, "files");
    char *mb = metrics_without_times(f->dir, "memory");
    assert_string_equal(ma, mb);
    free(ma);
    free(mb);
    trainer_release(a, from_file);
    trainer_release(b, from_memory);
    fn_memory_set_destroy(train);
    fn_memory_set_destroy(valid);
}

static void labels_match_files(void **state)
{
    expect_same_run(*state, 0, NULL);
}

static void values_match_files(void **state)
{
    expect_same_run(*state, 1, NULL);
}

/* 0.004 MB holds about 170 rows of 24 bytes: the training set in two slabs. */
static void slabs_and_standardize_match_files(void **state)
{
    expect_same_run(*state, 0, "[data]\nmemory_budget_mb = 0.004\nstandardize = true\n");
}

/* Changing the caller's arrays after the set was made changes nothing. */
static void set_is_a_copy(void **state)
{
    const fixture *f = *state;
    arrays copy;
    make_arrays(&copy, ROWS, 11);
    fn_memory_set *m = memory_set(&copy, "train", 0);
    char text[2048];
    config_text(text, sizeof text, 0, NULL);
    fn_config *cfg = NULL, *ref = NULL;
    EXPECT_OK(fn_config_parse(&cfg, "memory.ini", text));
    EXPECT_OK(fn_config_use_memory_set(cfg, "train", m));
    for (size_t i = 0; i < (size_t)ROWS * IN; i++)
        copy.x[i] = NAN;
    for (int i = 0; i < ROWS; i++)
        copy.y[i] = 99;
    fn_trainer *a = run(cfg, f, "copied");

    fn_memory_set *same = memory_set(&f->train, "train", 0);
    EXPECT_OK(fn_config_parse(&ref, "memory.ini", text));
    EXPECT_OK(fn_config_use_memory_set(ref, "train", same));
    fn_trainer *b = run(ref, f, "reference");
    expect_same_weights(fn_trainer_net(a), fn_trainer_net(b));
    trainer_release(a, cfg);
    trainer_release(b, ref);
    fn_memory_set_destroy(m);
    fn_memory_set_destroy(same);
    free_arrays(&copy);
}

/* fn_infer over 70 rows in batches of 16 against one forward of the rows
 * standardised here, (x - mean) / std in float32 as input_norm.h says. */
static void infer_is_the_forward_pass(void **state)
{
    const fixture *f = *state;
    fn_memory_set *train = memory_set(&f->train, "train", 0), *test = NULL;
    char text[2048];
    config_text(text, sizeof text, 0, "[data]\nstandardize = true\n");
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_parse(&cfg, "memory.ini", text));
    EXPECT_OK(fn_config_use_memory_set(cfg, "train", train));
    fn_trainer *t = run(cfg, f, "infer");
    fn_net *net = fn_trainer_net(t);
    const fn_input_norm *norm = fn_trainer_input_norm(t);
    assert_non_null(norm);
    const arrays *a = &f->valid;
    EXPECT_OK(fn_memory_set_labels(&test, "test", a->x, a->rows, IN, a->y));
    float *got = chk_alloc_float((size_t)a->rows * CLASSES);
    EXPECT_OK(fn_infer(net, norm, test, got));

    fn_tensor x = {0};
    EXPECT_OK(fn_tensor_alloc(&x, a->rows, IN, FN_CPU));
    const float *mean = fn_input_norm_mean(norm), *std = fn_input_norm_std(norm);
    for (int i = 0; i < a->rows; i++)
        for (int j = 0; j < IN; j++) {
            volatile float centred = a->x[i * IN + j] - mean[j];
            x.data[i * IN + j] = centred / std[j];
        }
    /* The trained net takes batches of up to 16 rows. */
    float *want = chk_alloc_float((size_t)a->rows * CLASSES);
    for (int r = 0; r < a->rows; r += 16) {
        const int n = a->rows - r < 16 ? a->rows - r : 16;
        fn_tensor slice = fn_tensor_rows(&x, r, n), y;
        EXPECT_OK(fn_net_forward(net, &slice, &y));
        EXPECT_OK(fn_tensor_download(&y, want + (size_t)r * CLASSES, (size_t)n * CLASSES));
    }
    assert_memory_equal(got, want, sizeof(float) * (size_t)a->rows * CLASSES);

    fn_memory_set *narrow = NULL;
    EXPECT_OK(fn_memory_set_inputs(&narrow, "narrow", a->x, a->rows, IN - 1));
    EXPECT_FAIL(fn_infer(net, norm, narrow, got), FN_ERR_INVALID,
                "memory set 'narrow' has 4 input columns, expected 5");
    EXPECT_FAIL(fn_infer(net, norm, NULL, got), FN_ERR_INVALID, "fn_infer: the memory set is NULL");
    fn_memory_set_destroy(narrow);
    fn_tensor_free(&x);
    free(got);
    free(want);
    fn_memory_set_destroy(test);
    trainer_release(t, cfg);
    fn_memory_set_destroy(train);
}

/* --- bad arrays -------------------------------------------------------------- */

static void bad_arrays_fail_when_made(void **state)
{
    const fixture *f = *state;
    const arrays *a = &f->train;
    fn_memory_set *m = (fn_memory_set *)1;
    EXPECT_FAIL(fn_memory_set_labels(&m, "train", NULL, ROWS, IN, a->y), FN_ERR_INVALID,
                "memory set 'train': the inputs are NULL");
    assert_null(m);
    EXPECT_FAIL(fn_memory_set_labels(&m, "train", a->x, ROWS, IN, NULL), FN_ERR_INVALID,
                "memory set 'train': the labels are NULL");
    EXPECT_FAIL(fn_memory_set_values(&m, "train", a->x, ROWS, IN, NULL, OUT), FN_ERR_INVALID,
                "memory set 'train': the targets are NULL");
    EXPECT_FAIL(fn_memory_set_labels(&m, "train", a->x, 0, IN, a->y), FN_ERR_INVALID,
                "memory set 'train' has 0 rows, expected at least 1");
    EXPECT_FAIL(fn_memory_set_labels(&m, "train", a->x, -4, IN, a->y), FN_ERR_INVALID,
                "has -4 rows");
    EXPECT_FAIL(fn_memory_set_inputs(&m, NULL, a->x, ROWS, 0), FN_ERR_INVALID,
                "memory set 'memory': 0 input columns, expected 1 to");
    EXPECT_FAIL(fn_memory_set_values(&m, "train", a->x, ROWS, IN, a->t, 0), FN_ERR_INVALID,
                "0 target columns");
    EXPECT_FAIL(fn_memory_set_labels(NULL, "train", a->x, ROWS, IN, a->y), FN_ERR_INVALID,
                "the set's pointer is NULL");

    float *x = chk_alloc_float((size_t)ROWS * IN), *t = chk_alloc_float((size_t)ROWS * OUT);
    memcpy(x, a->x, sizeof(float) * ROWS * IN);
    memcpy(t, a->t, sizeof(float) * ROWS * OUT);
    x[7 * IN + 3] = NAN;
    EXPECT_FAIL(fn_memory_set_labels(&m, "train", x, ROWS, IN, a->y), FN_ERR_INVALID,
                "fn_memory_set_labels: memory set 'train': inputs row 7 column 3 is NaN");
    x[7 * IN + 3] = 0;
    x[ROWS * IN - 1] = -INFINITY;
    EXPECT_FAIL(fn_memory_set_inputs(&m, "p", x, ROWS, IN), FN_ERR_INVALID,
                "inputs row 299 column 4 is infinite");
    x[ROWS * IN - 1] = 0;
    t[5 * OUT + 1] = NAN;
    EXPECT_FAIL(fn_memory_set_values(&m, "train", x, ROWS, IN, t, OUT), FN_ERR_INVALID,
                "memory set 'train': targets row 5 column 1 is NaN");
    assert_null(m);
    free(x);
    free(t);
}

/* A config of the memory sets given (mse: 0 cross_entropy, 1 mse, 2
 * bce_with_logits); the trainer's creation must fail. */
static void expect_run_fails(const fixture *f, int mse, fn_memory_set *train,
                             fn_memory_set *valid, const char *needle)
{
    char text[2048], set[PATH_CAP + 16];
    config_text(text, sizeof text, mse, NULL);
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_parse(&cfg, "memory.ini", text));
    EXPECT_OK(fn_config_use_memory_set(cfg, "train", train));
    if (valid)
        EXPECT_OK(fn_config_use_memory_set(cfg, "valid", valid));
    snprintf(set, sizeof set, "output.dir=%s/failed", f->dir);
    EXPECT_OK(fn_config_set(cfg, set));
    EXPECT_OK(fn_config_finish(cfg));
    fn_trainer *t = (fn_trainer *)1;
    EXPECT_FAIL(fn_trainer_create(&t, cfg, NULL), FN_ERR_INVALID, needle);
    assert_null(t);
    fn_config_destroy(cfg);
}

static void bad_sets_fail_when_opened(void **state)
{
    const fixture *f = *state;
    const arrays *a = &f->train;
    int32_t *y = calloc(ROWS, sizeof *y);
    assert_non_null(y);
    memcpy(y, a->y, sizeof(int32_t) * ROWS);
    y[41] = CLASSES;
    fn_memory_set *bad = NULL, *good = memory_set(a, "train", 0), *values = memory_set(a, "v", 1);
    EXPECT_OK(fn_memory_set_labels(&bad, "train", a->x, ROWS, IN, y));
    expect_run_fails(f, 0, bad, NULL,
                     "memory set 'train': row 41 holds label 3, expected 0 to 2 (the model has 3 "
                     "outputs)");
    fn_memory_set_destroy(bad);
    y[41] = -1;
    EXPECT_OK(fn_memory_set_labels(&bad, "train", a->x, ROWS, IN, y));
    expect_run_fails(f, 0, bad, NULL, "row 41 holds label -1, expected 0 to 2");
    fn_memory_set_destroy(bad);

    expect_run_fails(f, 1, good, NULL, "memory set 'train' holds class labels; mse needs float "
                     "targets");
    expect_run_fails(f, 0, values, NULL, "memory set 'v' holds float targets of 2 columns; "
                     "cross_entropy needs integer class labels");
    fn_memory_set *inputs = NULL, *narrow = NULL;
    EXPECT_OK(fn_memory_set_inputs(&inputs, "x", a->x, ROWS, IN));
    expect_run_fails(f, 0, inputs, NULL, "memory set 'x' holds inputs alone");
    EXPECT_OK(fn_memory_set_labels(&narrow, "narrow", a->x, ROWS / IN, IN * IN - 1, a->y));
    expect_run_fails(f, 0, good, narrow, "memory set 'narrow' has 24 input columns, expected 5");
    fn_memory_set *wide = NULL;
    EXPECT_OK(fn_memory_set_values(&wide, "wide", a->t, ROWS, OUT, a->x, IN));
    expect_run_fails(f, 1, wide, NULL, "memory set 'wide' has 5 target columns, expected 2");
    fn_memory_set_destroy(good);
    fn_memory_set_destroy(values);
    fn_memory_set_destroy(inputs);
    fn_memory_set_destroy(narrow);
    fn_memory_set_destroy(wide);
    free(y);
}

/* bce_with_logits takes float targets in [0, 1]: one outside is refused
 * when the set is opened, naming the set, row and column. */
static void unit_targets_checked_when_opened(void **state)
{
    const fixture *f = *state;
    const arrays *a = &f->train;
    float *t = chk_alloc_float((size_t)ROWS * OUT);
    for (int i = 0; i < ROWS * OUT; i++)
        t[i] = (float)(i % 2);
    t[9 * OUT + 1] = 2.0f;
    fn_memory_set *bad = NULL;
    EXPECT_OK(fn_memory_set_values(&bad, "u", a->x, ROWS, IN, t, OUT));
    expect_run_fails(f, 2, bad, NULL,
                     "memory set 'u': targets row 9 column 1 is 2; bce_with_logits takes targets "
                     "in [0, 1]");
    fn_memory_set_destroy(bad);
    t[9 * OUT + 1] = -0.5f;
    EXPECT_OK(fn_memory_set_values(&bad, "u", a->x, ROWS, IN, t, OUT));
    expect_run_fails(f, 2, bad, NULL, "targets row 9 column 1 is -0.5");
    fn_memory_set_destroy(bad);
    free(t);
}

/* [data] train is a file or a memory set; without either it is required. */
static void config_takes_one_source(void **state)
{
    const fixture *f = *state;
    fn_memory_set *m = memory_set(&f->train, "train", 0);
    char text[4096];
    snprintf(text, sizeof text, "[data]\ntrain = %s/train.h5\n[model]\nlayers = linear 3\n",
             f->dir);
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_parse(&cfg, "both.ini", text));
    EXPECT_OK(fn_config_use_memory_set(cfg, "train", m));
    EXPECT_FAIL(fn_config_finish(cfg), FN_ERR_INVALID,
                "both.ini:2: data.train: is a file and memory set 'train' too; give one of "
                "the two");
    EXPECT_FAIL(fn_config_use_memory_set(cfg, "test", m), FN_ERR_INVALID,
                "expected \"train\" or \"valid\"");
    fn_config_destroy(cfg);

    EXPECT_OK(fn_config_parse(&cfg, "none.ini", "[model]\nlayers = linear 3\n"));
    EXPECT_FAIL(fn_config_finish(cfg), FN_ERR_INVALID, "none.ini: [data] train is required");
    fn_config_destroy(cfg);
    EXPECT_OK(fn_config_parse(&cfg, NULL,
                              "[model]\nlayers = linear 3\n[train]\nkeep_best = true\n"));
    EXPECT_OK(fn_config_use_memory_set(cfg, "train", m));
    EXPECT_FAIL(fn_config_finish(cfg), FN_ERR_INVALID, "keep_best: needs a validation set");
    EXPECT_OK(fn_config_use_memory_set(cfg, "valid", m));
    EXPECT_OK(fn_config_finish(cfg));
    fn_config_destroy(cfg);
    EXPECT_FAIL(fn_config_parse(&cfg, "text.ini", "[model]\nlayers = linear 3\nlr = 1\n"),
                FN_ERR_INVALID, "text.ini:3: model.lr: unknown key");
    assert_null(cfg);
    fn_memory_set_destroy(m);
}

TEST_MAIN(setup, teardown, cmocka_unit_test(labels_match_files),
          cmocka_unit_test(values_match_files),
          cmocka_unit_test(slabs_and_standardize_match_files), cmocka_unit_test(set_is_a_copy),
          cmocka_unit_test(infer_is_the_forward_pass), cmocka_unit_test(bad_arrays_fail_when_made),
          cmocka_unit_test(bad_sets_fail_when_opened),
          cmocka_unit_test(unit_targets_checked_when_opened),
          cmocka_unit_test(config_takes_one_source))
