/* test_data.c — HDF5 data sets: every bad file fails with a message naming
 * the file and the dataset; batches (their rows gathered on the host, as
 * fn_loader gathers them) cover each row once per epoch with the right
 * targets; shuffles are reproducible from (seed, epoch, step); and reading
 * in slabs gives rows identical to loading the set whole. */
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
#include "sets.h"
#include "fusenet/data.h"
#include "host_batch.h"
#include "test_main.h"

typedef set_file fixture;

/* --- writing test files ---------------------------------------------------- */


/* X[i, j] = i + j / 100, y[i] = i % classes: each row says which it is. */
static void write_good(const fixture *f, int n, int in, int classes)
{
    float *x = malloc(sizeof(float) * (size_t)(n * in));
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) {
        y[i] = i % classes;
        for (int j = 0; j < in; j++)
            x[i * in + j] = (float)i + (float)j / 100.0f;
    }
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, (hsize_t)n, (hsize_t)in, x);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, (hsize_t)n, 0, y);
    H5Fclose(file);
    free(x);
    free(y);
}

static fn_data_options options(int classes, int batch)
{
    return (fn_data_options){.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                             .out_features = classes, .batch_size = batch,
                             .memory_budget = (size_t)1 << 30, .shuffle = 1, .seed = 7};
}

static void expect_open_error(const fixture *f, const fn_data_options *opt, fn_status want,
                              const char *needle, int line)
{
    fn_data *d = NULL;
    fn_status got = fn_data_open(&d, f->path, opt);
    fn_data_close(d);
    if (got != want)
        fail_msg("line %d: status '%s', expected '%s' (message: '%s')", line,
                 fn_status_name(got), fn_status_name(want), fn_last_error());
    if (!strstr(fn_last_error(), needle))
        fail_msg("line %d: message '%s' lacks '%s'", line, fn_last_error(), needle);
    if (!strstr(fn_last_error(), "set.h5"))
        fail_msg("line %d: message '%s' does not name the file", line, fn_last_error());
}
#define EXPECT_OPEN_ERROR(opt, status, needle) \
    expect_open_error(*state, (opt), (status), (needle), __LINE__)

static const float xs[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const int32_t ys[6] = {0, 1, 2, 0, 1, 2};

/* --- bad files ------------------------------------------------------------- */

static void test_missing_file(void **state)
{
    fixture *f = *state;
    fn_data_options opt = options(3, 2);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_IO, "set.h5: cannot open: No such file");
    FILE *t = fopen(f->path, "w");
    fputs("not hdf5\n", t);
    fclose(t);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "set.h5 is a text file (a CSV?), not HDF5");
    /* Bytes that are not text: HDF5's own word. */
    t = fopen(f->path, "wb");
    fputs("\x01\x02not hdf5\n", t);
    fclose(t);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "set.h5: not a readable HDF5 file");
}

static void test_missing_dataset(void **state)
{
    fixture *f = *state;
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    H5Fclose(file);
    fn_data_options opt = options(3, 2);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "set.h5: no dataset 'y'");
    opt.inputs = "pixels";
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "set.h5: no dataset 'pixels' (the file holds 'X')");
    /* The caller's name for the key: how to fix it. */
    opt.inputs_key = "[data] inputs";
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "no dataset 'pixels' (the file holds 'X'); set [data] "
                                           "inputs to the name of the inputs");
}

static void test_wrong_type(void **state)
{
    fixture *f = *state;
    int64_t x64[12] = {0};
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, 6, 2, x64);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 6, 0, ys);
    h5_put(file, "Xd", H5T_IEEE_F64LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "yf", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, 6, 0, xs);
    const float halves[6] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
    h5_put(file, "yh", H5T_IEEE_F64LE, H5T_NATIVE_FLOAT, 1, 6, 0, halves);
    h5_put(file, "X2", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    H5Fclose(file);
    fn_data_options opt = options(3, 2);
    /* int64 and float64 inputs are numbers (test_data_types.c reads them). */
    opt.inputs = "X2";
    opt.targets = "yf";
    /* Float labels that are whole numbers are read as labels (and then
     * checked against the classes); a fraction is refused. */
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'yf' row 3 holds label 3, expected 0 to 2");
    opt.targets = "yh";
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'yh' row 1 holds 0.5: float labels for "
                                           "cross_entropy must be whole numbers");
}

static void test_wrong_rank(void **state)
{
    fixture *f = *state;
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, 12, 0, xs);
    h5_put(file, "X2", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, 3, 2, ys);
    h5_put(file, "t", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, 6, 0, xs);
    H5Fclose(file);
    fn_data_options opt = options(3, 2);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'X' has rank 1, expected 2");
    opt.inputs = "X2";
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'y' has rank 2 with several columns, "
                                           "expected class labels");
    opt.target_kind = FN_DATA_FLOATS;
    opt.targets = "t";
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 't' has rank 1 ([N]), but the model has 3 "
                                           "outputs: mse takes values [N, 3]");
}

static void test_row_mismatch(void **state)
{
    fixture *f = *state;
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 5, 0, ys);
    h5_put(file, "t", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    H5Fclose(file);
    fn_data_options opt = options(3, 2);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'y' has 5 rows but 'X' has 6");
    opt.target_kind = FN_DATA_FLOATS;
    opt.targets = "t";
    opt.out_features = 3;
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 't' has 2 columns, expected 3");
    opt.out_features = 2;
    opt.in_features = 4;
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'X' has 2 columns, expected 4");
}

static void test_label_range(void **state)
{
    fixture *f = *state;
    int32_t bad[6] = {0, 1, 2, 12, 1, 0};
    int32_t negative[6] = {0, 1, -1, 0, 1, 0};
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 6, 0, bad);
    h5_put(file, "neg", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 6, 0, negative);
    H5Fclose(file);
    fn_data_options opt = options(10, 2);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'y' row 3 holds label 12, expected 0 to 9");
    opt.targets = "neg";
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'neg' row 2 holds label -1");
}

static void test_non_finite(void **state)
{
    fixture *f = *state;
    float with_nan[12] = {0, 1, 2, 3, 4, NAN, 6, 7, 8, 9, 10, 11};
    float with_inf[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -INFINITY};
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, with_nan);
    h5_put(file, "X2", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 6, 0, ys);
    h5_put(file, "t", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, with_inf);
    H5Fclose(file);
    fn_data_options opt = options(3, 2);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'X' row 2 column 1 is NaN");
    opt.inputs = "X2";
    opt.target_kind = FN_DATA_FLOATS;
    opt.targets = "t";
    opt.out_features = 2;
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 't' row 5 column 1 is infinite");
    /* Also when the bad row is in a later slab. */
    opt.memory_budget = 2 * 4 * sizeof(float);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 't' row 5 column 1 is infinite");
}

static void test_empty(void **state)
{
    fixture *f = *state;
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 0, 4, NULL);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 0, 0, NULL);
    H5Fclose(file);
    fn_data_options opt = options(3, 2);
    EXPECT_OPEN_ERROR(&opt, FN_ERR_FORMAT, "dataset 'X' is empty");
}

static void test_other_label_types(void **state)
{
    fixture *f = *state;
    uint8_t y8[6] = {2, 1, 0, 2, 1, 0};
    int64_t y64[6] = {0, 1, 2, 2, 1, 0};
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "y8", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 6, 0, y8);
    h5_put(file, "y64", H5T_STD_I64BE, H5T_NATIVE_INT64, 1, 6, 0, y64);
    H5Fclose(file);
    fn_data_options opt = options(3, 6);
    opt.shuffle = 0;
    opt.targets = "y8";
    fn_data *d = NULL;
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    host_batch b;
    next_batch(d, &b);
    assert_int_equal(b.rows, 6);
    assert_int_equal(b.labels[0], 2);
    fn_data_close(d);
    opt.targets = "y64";
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    next_batch(d, &b);
    assert_int_equal(b.labels[3], 2);
    fn_data_close(d);
}

/* --- batches ---------------------------------------------------------------- */

/* Runs one epoch: each batch's rows must be the file rows it names, every
 * row must come exactly once, and only the slab ends may be short. Returns
 * the order the rows came in (malloc'ed). */
static int64_t *check_epoch(fn_data *d, long long epoch, int n, int in, int classes, int batch)
{
    int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
    int *seen = calloc((size_t)n, sizeof(int));
    assert_non_null(order);
    assert_non_null(seen);
    assert_int_equal(fn_data_seek(d, epoch, 0), FN_OK);
    int count = 0, batches = 0, short_batches = 0;
    for (;;) {
        host_batch b;
        next_batch(d, &b);
        if (!b.rows)
            break;
        batches++;
        short_batches += b.rows < batch;
        assert_true(b.rows <= batch);
        for (int i = 0; i < b.rows; i++) {
            int64_t row = b.index[i];
            assert_true(row >= 0 && row < n);
            seen[row]++;
            order[count++] = row;
            assert_int_equal(b.labels[i], row % classes);
            for (int j = 0; j < in; j++)
                assert_float_equal(b.x[i * in + j], (float)row + (float)j / 100.0f, 0);
        }
    }
    assert_int_equal(count, n);
    assert_int_equal(batches, fn_data_batches(d));
    assert_true(short_batches <= 1);
    for (int i = 0; i < n; i++)
        assert_int_equal(seen[i], 1);
    free(seen);
    return order;
}

static void test_whole_epochs(void **state)
{
    fixture *f = *state;
    write_good(f, 103, 3, 10);
    fn_data_options opt = options(10, 8);
    fn_data *d = NULL;
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    assert_int_equal(fn_data_rows(d), 103);
    assert_int_equal(fn_data_in_features(d), 3);
    assert_int_equal(fn_data_slab_rows(d), 103);
    assert_int_equal(fn_data_batches(d), 13); /* the last one of 7 rows */
    int64_t *e0 = check_epoch(d, 0, 103, 3, 10, 8);
    int64_t *e1 = check_epoch(d, 1, 103, 3, 10, 8);
    int64_t *again = check_epoch(d, 0, 103, 3, 10, 8);
    assert_memory_equal(e0, again, sizeof(int64_t) * 103);
    assert_memory_not_equal(e0, e1, sizeof(int64_t) * 103);
    int in_place = 0;
    for (int i = 0; i < 103; i++)
        in_place += e0[i] == i;
    assert_true(in_place < 20); /* shuffled, not the file order */
    free(e0);
    free(e1);
    free(again);
    fn_data_close(d);
}

/* Seeking to (epoch, step) gives the batch an uninterrupted epoch gives. */
static void check_seek(fn_data *d, long long epoch, long long step)
{
    int64_t want[64];
    int rows = 0;
    assert_int_equal(fn_data_seek(d, epoch, 0), FN_OK);
    for (long long s = 0; s <= step; s++) {
        host_batch b;
        next_batch(d, &b);
        assert_true(b.rows > 0 && b.rows <= 64);
        rows = b.rows;
        memcpy(want, b.index, sizeof(int64_t) * (size_t)rows);
    }
    assert_int_equal(fn_data_seek(d, epoch, step), FN_OK);
    host_batch b;
    next_batch(d, &b);
    assert_int_equal(b.rows, rows);
    assert_memory_equal(b.index, want, sizeof(int64_t) * (size_t)rows);
}

static void test_slabs_match_whole(void **state)
{
    fixture *f = *state;
    const int n = 203, in = 3, classes = 10, batch = 8;
    write_good(f, n, in, classes);
    fn_data_options opt = options(classes, batch);
    size_t row_bytes = in * sizeof(float) + sizeof(int32_t);
    opt.memory_budget = 37 * row_bytes; /* 32 rows a slab: a multiple of the batch */
    fn_data *slabs = NULL, *whole = NULL;
    assert_int_equal(fn_data_open(&slabs, f->path, &opt), FN_OK);
    assert_int_equal(fn_data_slab_rows(slabs), 32);
    int64_t *e0 = check_epoch(slabs, 0, n, in, classes, batch);
    int64_t *e1 = check_epoch(slabs, 1, n, in, classes, batch);
    assert_memory_not_equal(e0, e1, sizeof(int64_t) * (size_t)n);
    check_seek(slabs, 1, 0);
    check_seek(slabs, 1, 5);
    check_seek(slabs, 1, fn_data_batches(slabs) - 1);
    /* In file order the two modes must hand out the same batches. */
    opt.shuffle = 0;
    fn_data_close(slabs);
    assert_int_equal(fn_data_open(&slabs, f->path, &opt), FN_OK);
    opt.memory_budget = (size_t)1 << 30;
    assert_int_equal(fn_data_open(&whole, f->path, &opt), FN_OK);
    assert_int_equal(fn_data_batches(slabs), fn_data_batches(whole));
    for (;;) {
        host_batch a, b;
        next_batch(slabs, &a);
        next_batch(whole, &b);
        assert_int_equal(a.rows, b.rows);
        if (!a.rows)
            break;
        assert_memory_equal(a.x, b.x, sizeof(float) * (size_t)(a.rows * in));
        assert_memory_equal(a.labels, b.labels, sizeof(int32_t) * (size_t)a.rows);
    }
    free(e0), free(e1);
    fn_data_close(slabs), fn_data_close(whole);
}

static void test_seek_whole(void **state)
{
    fixture *f = *state;
    write_good(f, 50, 2, 5);
    fn_data_options opt = options(5, 4);
    fn_data *d = NULL;
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    int64_t *e3 = check_epoch(d, 3, 50, 2, 5, 4);
    check_seek(d, 3, 7);
    check_seek(d, 3, 12);
    /* Past the end: the epoch is over. */
    assert_int_equal(fn_data_seek(d, 3, 13), FN_OK);
    host_batch b;
    next_batch(d, &b);
    assert_int_equal(b.rows, 0);
    free(e3);
    fn_data_close(d);
}

static void test_mse_targets(void **state)
{
    fixture *f = *state;
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "t", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    H5Fclose(file);
    fn_data_options opt = options(2, 4);
    opt.target_kind = FN_DATA_FLOATS;
    opt.targets = "t";
    fn_data *d = NULL;
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    host_batch b;
    next_batch(d, &b);
    assert_int_equal(b.rows, 4);
    assert_false(b.has_labels);
    assert_true(b.has_target);
    assert_int_equal(b.out, 2);
    assert_memory_equal(b.target, b.x, sizeof(float) * 8);
    fn_data_close(d);
}

/* The set's labels, epoch 0 in file order (shuffle off), into labels[6]. */
static void read_labels(const fixture *f, const char *targets, int32_t *labels, char *reading,
                        size_t cap)
{
    fn_data_options opt = options(3, 6);
    opt.targets = targets;
    opt.shuffle = 0;
    fn_data *d = NULL;
    if (fn_data_open(&d, f->path, &opt) != FN_OK)
        fail_msg("%s: %s", targets, fn_last_error());
    host_batch b;
    next_batch(d, &b);
    assert_int_equal(b.rows, 6);
    memcpy(labels, b.labels, sizeof(int32_t) * 6);
    fn_data_reading(d, reading, cap);
    fn_data_close(d);
}

/* Targets as scikit-learn and NumPy leave them: labels [N, 1], float
 * labels of whole numbers, one-hot rows, and values [N] for one mse
 * output, each read as the loss takes it and described by
 * fn_data_reading; labels [N] of an integer type have no description. */
static void test_scikit_learn_shapes(void **state)
{
    fixture *f = *state;
    const double whole[6] = {0, 1, 2, 0, 1, 2};
    double hot[18] = {0};
    for (int i = 0; i < 6; i++)
        hot[i * 3 + ys[i]] = 1;
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 6, 2, xs);
    h5_put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 6, 0, ys);
    h5_put(file, "column", H5T_STD_I64LE, H5T_NATIVE_INT32, 2, 6, 1, ys);
    h5_put(file, "whole", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, 6, 0, whole);
    h5_put(file, "whole_column", H5T_IEEE_F32LE, H5T_NATIVE_DOUBLE, 2, 6, 1, whole);
    h5_put(file, "hot", H5T_IEEE_F32LE, H5T_NATIVE_DOUBLE, 2, 6, 3, hot);
    h5_put(file, "t", H5T_IEEE_F64LE, H5T_NATIVE_FLOAT, 1, 6, 0, xs);
    H5Fclose(file);
    const char *names[] = {"y", "column", "whole", "whole_column", "hot"};
    const char *said[] = {"", "dataset 'column' [6, 1] int64 read as class labels [6]",
                          "dataset 'whole' [6] float64 read as integer class labels [6] (every "
                          "value is a whole number)",
                          "dataset 'whole_column' [6, 1] float32 read as integer class labels",
                          "dataset 'hot' [6, 3] float32 read as class labels [6] (every row is "
                          "one-hot)"};
    for (int k = 0; k < 5; k++) {
        int32_t labels[6];
        char reading[512];
        read_labels(f, names[k], labels, reading, sizeof reading);
        assert_memory_equal(labels, ys, sizeof labels);
        if (!said[k][0])
            assert_string_equal(reading, "");
        else if (!strstr(reading, said[k]))
            fail_msg("%s: reading '%s' lacks '%s'", names[k], reading, said[k]);
    }
    fn_data_options opt = options(1, 6);
    opt.target_kind = FN_DATA_FLOATS;
    opt.targets = "t";
    opt.shuffle = 0;
    fn_data *d = NULL;
    if (fn_data_open(&d, f->path, &opt) != FN_OK)
        fail_msg("%s", fn_last_error());
    host_batch b;
    next_batch(d, &b);
    assert_int_equal(b.out, 1);
    assert_memory_equal(b.target, xs, 6 * sizeof(float));
    char reading[512];
    fn_data_reading(d, reading, sizeof reading);
    assert_non_null(strstr(reading, "dataset 't' [6] float64 read as [6, 1], the mse targets of "
                                    "the model's one output"));
    fn_data_close(d);
}

#define T(name) cmocka_unit_test_setup_teardown(name, set_file_setup, set_file_teardown)
TEST_MAIN(NULL, NULL, T(test_missing_file), T(test_missing_dataset), T(test_wrong_type),
          T(test_wrong_rank), T(test_row_mismatch), T(test_label_range), T(test_non_finite),
          T(test_empty), T(test_other_label_types), T(test_whole_epochs),
          T(test_slabs_match_whole), T(test_seek_whole), T(test_mse_targets),
          T(test_scikit_learn_shapes))
