/* test_data_types.c — inputs and mse targets of any numeric HDF5 type:
 * float16, float64 and integers of every size and byte order
 * are read as float32 through HDF5's conversion, slab by slab; a value
 * beyond float32's range, NaN or infinite is an error naming the file,
 * dataset, row and column, also in a later slab; float layouts that are
 * not IEEE and integers wider than 8 bytes are refused; predict's targets
 * by rank; and the column statistics of [data] standardize (float64, slab
 * by slab) against a long double two-pass reference. */
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
#include "test_main.h"

typedef set_file fixture;


/* IEEE half precision as h5py writes numpy's float16. */
static hid_t half_type(void)
{
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    assert_true(H5Tset_fields(t, 15, 10, 5, 0, 10) >= 0);
    assert_true(H5Tset_size(t, 2) >= 0);
    assert_true(H5Tset_ebias(t, 15) >= 0);
    return t;
}

static fn_data_options options(const char *inputs, const char *targets, int out)
{
    return (fn_data_options){.inputs = inputs, .targets = targets, .target_kind = FN_DATA_FLOATS,
                             .out_features = out, .batch_size = 6,
                             .memory_budget = (size_t)1 << 30, .shuffle = 0, .seed = 1};
}

/* Every row of a set opened with opt: x [6, 2] and (mse) t [6, 2]. */
static void read_all(const fixture *f, const fn_data_options *opt, float *x, float *t)
{
    fn_data *d = NULL;
    fn_status st = fn_data_open(&d, f->path, opt);
    if (st != FN_OK)
        fail_msg("open %s: %s", opt->inputs, fn_last_error());
    fn_batch_rows r;
    assert_int_equal(fn_data_next_rows(d, &r), FN_OK);
    assert_int_equal(r.rows, 6);
    int32_t labels[6];
    int64_t index[6];
    float scratch[12];
    fn_batch_rows_gather(&r, 0, 6, x, labels, t ? t : scratch, index);
    fn_data_close(d);
}

static void expect_error(const fixture *f, const fn_data_options *opt, const char *needle,
                         int line)
{
    fn_data *d = NULL;
    fn_status st = fn_data_open(&d, f->path, opt);
    fn_data_close(d);
    if (st != FN_ERR_FORMAT)
        fail_msg("line %d: status %s, expected format error", line, fn_status_name(st));
    if (!strstr(fn_last_error(), needle) || !strstr(fn_last_error(), "set.h5"))
        fail_msg("line %d: message '%s' lacks '%s' or the file", line, fn_last_error(), needle);
}
#define EXPECT_ERROR(opt, needle) expect_error(*state, (opt), (needle), __LINE__)

/* Values every type here holds exactly, so each read must give them bit
 * for bit. */
static const double want[12] = {0, 1, 2, 3, -4, 5, 6, 7, 8, 9, 100, 11};

/* Data set `name` [6, 2], float64 from v[12]: the shape of want. */
static void put_f64(hid_t file, const char *name, const double *v)
{
    h5_put(file, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, 6, 2, v);
}

static void test_every_numeric_type(void **state)
{
    fixture *f = *state;
    int16_t i16[12];
    uint8_t u8[12];
    int64_t i64[12];
    for (int i = 0; i < 12; i++) {
        i16[i] = (int16_t)want[i];
        u8[i] = (uint8_t)fabs(want[i]);
        i64[i] = (int64_t)want[i];
    }
    hid_t half = half_type();
    const struct {
        const char *name;
        hid_t file_type, mem_type;
        const void *values;
    } sets[] = {
        {"f64", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, want},
        {"f64be", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, want},
        {"f16", half, H5T_NATIVE_DOUBLE, want},
        {"i16", H5T_STD_I16LE, H5T_NATIVE_INT16, i16},
        {"u8", H5T_STD_U8LE, H5T_NATIVE_UINT8, u8},
        {"i64be", H5T_STD_I64BE, H5T_NATIVE_INT64, i64},
    };
    enum { SETS = sizeof sets / sizeof sets[0] };
    hid_t file = set_file_create(f);
    for (size_t n = 0; n < SETS; n++)
        h5_put(file, sets[n].name, sets[n].file_type, sets[n].mem_type, 2, 6, 2, sets[n].values);
    H5Fclose(file);
    H5Tclose(half);
    for (size_t n = 0; n < SETS; n++) {
        /* Each dataset as inputs and as mse targets at once. */
        const char *name = sets[n].name;
        fn_data_options opt = options(name, name, 2);
        float x[12], t[12];
        read_all(f, &opt, x, t);
        for (int i = 0; i < 12; i++) {
            float w = strcmp(name, "u8") == 0 ? (float)fabs(want[i]) : (float)want[i];
            if (x[i] != w || t[i] != w)
                fail_msg("%s[%d]: read %g and %g, expected %g", name, i, (double)x[i],
                         (double)t[i], (double)w);
        }
    }
}

/* float64 rounds to the nearest float32 (HDF5's conversion): 0.1 is not a
 * float32, and must come back as (float)0.1, not truncated. */
static void test_float64_rounds(void **state)
{
    fixture *f = *state;
    double v[12];
    for (int i = 0; i < 12; i++)
        v[i] = 0.1 * (i + 1) + 1e6 * (i % 2);
    hid_t file = set_file_create(f);
    put_f64(file, "X", v);
    H5Fclose(file);
    fn_data_options opt = options("X", NULL, 0);
    float x[12];
    read_all(f, &opt, x, NULL);
    for (int i = 0; i < 12; i++)
        assert_true(x[i] == (float)v[i]);
}

static void test_out_of_range(void **state)
{
    fixture *f = *state;
    double big[12], small[12], nan_at[12], inf_at[12];
    memcpy(big, want, sizeof big);
    memcpy(small, want, sizeof small);
    memcpy(nan_at, want, sizeof nan_at);
    memcpy(inf_at, want, sizeof inf_at);
    big[5] = 1e39;     /* row 2, column 1 */
    small[10] = -1e300; /* row 5, column 0 */
    nan_at[3] = NAN;
    inf_at[8] = INFINITY;
    hid_t file = set_file_create(f);
    put_f64(file, "big", big);
    put_f64(file, "small", small);
    put_f64(file, "nan", nan_at);
    put_f64(file, "inf", inf_at);
    put_f64(file, "good", want);
    H5Fclose(file);
    fn_data_options opt = options("big", NULL, 0);
    EXPECT_ERROR(&opt, "dataset 'big' row 2 column 1 is 1e+39, beyond float32's range");
    opt.inputs = "small";
    EXPECT_ERROR(&opt, "dataset 'small' row 5 column 0 is -1e+300, beyond float32's range");
    /* In a later slab (two rows a slab). */
    opt.batch_size = 2;
    opt.memory_budget = 2 * 2 * sizeof(float);
    EXPECT_ERROR(&opt, "dataset 'small' row 5 column 0 is -1e+300");
    opt.inputs = "nan";
    EXPECT_ERROR(&opt, "dataset 'nan' row 1 column 1 is NaN");
    opt.inputs = "inf";
    EXPECT_ERROR(&opt, "dataset 'inf' row 4 column 0 is infinite");
    /* mse targets the same. */
    opt = options("good", "big", 2);
    EXPECT_ERROR(&opt, "dataset 'big' row 2 column 1 is 1e+39, beyond float32's range");
}

static void test_refused_types(void **state)
{
    fixture *f = *state;
    hid_t odd = H5Tcopy(H5T_IEEE_F32LE); /* a float32 with a bias no IEEE type has */
    assert_true(H5Tset_ebias(odd, 100) >= 0);
    hid_t wide = H5Tcopy(H5T_STD_I64LE);
    assert_true(H5Tset_size(wide, 16) >= 0);
    int64_t wide_values[24] = {0};
    hid_t file = set_file_create(f);
    h5_put(file, "odd", odd, H5T_NATIVE_DOUBLE, 2, 6, 2, want);
    h5_put(file, "wide", wide, wide, 2, 6, 2, wide_values);
    H5Fclose(file);
    H5Tclose(odd);
    H5Tclose(wide);
    fn_data_options opt = options("odd", NULL, 0);
    EXPECT_ERROR(&opt, "dataset 'odd' is a float of 4 bytes that is not IEEE half, single or "
                       "double precision");
    opt.inputs = "wide";
    EXPECT_ERROR(&opt, "dataset 'wide' is an integer of 16 bytes, expected at most 8 bytes");
}

/* predict --targets: rank 1 are labels, rank 2 values, whatever `loss`. */
static void test_targets_by_rank(void **state)
{
    fixture *f = *state;
    int32_t labels[6] = {0, 1, 0, 1, 1, 0};
    hid_t file = set_file_create(f);
    put_f64(file, "X", want);
    h5_put(file, "labels", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, 6, 0, labels);
    put_f64(file, "values", want);
    H5Fclose(file);
    fn_data_options opt = options("X", "labels", 2);
    opt.targets_by_rank = 1;
    fn_data *d = NULL;
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    assert_int_equal(fn_data_target_kind(d), FN_DATA_LABELS);
    fn_data_close(d);
    opt.targets = "values";
    opt.target_kind = FN_DATA_LABELS;
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    assert_int_equal(fn_data_target_kind(d), FN_DATA_FLOATS);
    fn_data_close(d);
}

/* --- column statistics -------------------------------------------------------- */

enum { ROWS = 1000, COLS = 3 };

/* Column 0: 1e6 plus a spread of 1 (large offset), 1: constant, 2: spread
 * over [-50, 50). */
static void stats_data(float *x)
{
    uint64_t s = 12345;
    for (int i = 0; i < ROWS; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0;
        x[i * COLS + 0] = (float)(1e6 + u);
        x[i * COLS + 1] = 3.25f;
        x[i * COLS + 2] = (float)(100.0 * u - 50.0 + (i % 7));
    }
}

/* Two passes in long double over the float32 values. */
static void reference(const float *x, int j, double *mean, double *std)
{
    long double sum = 0, dev = 0;
    for (int i = 0; i < ROWS; i++)
        sum += x[i * COLS + j];
    long double m = sum / ROWS;
    for (int i = 0; i < ROWS; i++)
        dev += (x[i * COLS + j] - m) * (x[i * COLS + j] - m);
    *mean = (double)m;
    *std = (double)sqrtl(dev / ROWS);
}

static void test_column_stats(void **state)
{
    fixture *f = *state;
    float *x = malloc(sizeof(float) * ROWS * COLS);
    assert_non_null(x);
    stats_data(x);
    hid_t file = set_file_create(f);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ROWS, COLS, x);
    H5Fclose(file);
    /* Whole, and in slabs of 64 rows (16 slabs, the last short). */
    size_t budgets[2] = {(size_t)1 << 30, 64 * COLS * sizeof(float)};
    for (int b = 0; b < 2; b++) {
        fn_data_options opt = options("X", NULL, 0);
        opt.batch_size = 32;
        opt.memory_budget = budgets[b];
        fn_data *d = NULL;
        assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
        assert_int_equal(fn_data_slab_rows(d), b ? 64 : ROWS);
        double mean[COLS], std[COLS];
        int constant[COLS];
        assert_int_equal(fn_data_column_stats(d, mean, std, constant), FN_OK);
        for (int j = 0; j < COLS; j++) {
            double m, s;
            reference(x, j, &m, &s);
            /* float64 sums of 1000 values: the mean's relative error is
             * below 1000 * 2^-53 ≈ 1.1e-13, and the deviations are taken
             * about each slab's own mean, so the std of column 0 (offset
             * 1e6, spread 0.29) keeps about 1e-13 * 1e6 / 0.29 ≈ 4e-7
             * relative at worst; 1e-6 bounds both. */
            if (fabs(mean[j] - m) > 1e-12 * fabs(m) + 1e-12 || fabs(std[j] - s) > 1e-6 * s)
                fail_msg("budget %d column %d: mean %.17g std %.17g, reference %.17g %.17g", b,
                         j, mean[j], std[j], m, s);
            assert_int_equal(constant[j], j == 1);
        }
        assert_true(std[1] == 0);
        /* The position in the epoch is kept. */
        fn_batch_rows r;
        assert_int_equal(fn_data_next_rows(d, &r), FN_OK);
        assert_int_equal(r.rows, 32);
        fn_data_close(d);
    }
    free(x);
}

#define T(name) cmocka_unit_test_setup_teardown(name, set_file_setup, set_file_teardown)
TEST_MAIN(NULL, NULL, T(test_every_numeric_type), T(test_float64_rounds), T(test_out_of_range),
          T(test_refused_types), T(test_targets_by_rank), T(test_column_stats))
