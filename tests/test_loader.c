/* test_loader.c — fn_loader hands out the batches of the set's
 * fn_data_next_rows, gathered on the host, in the same order and with the
 * same rows, labels and targets: in both modes (synchronous, and with its
 * background thread) on the CPU and on the GPU (skipped without one), over
 * whole epochs, from a step inside an epoch, after a halt in the middle,
 * with the set read in slabs (the thread then reads HDF5), and with 1 and 3
 * gathering threads; on the GPU also with the set's rows kept on the
 * device, each slab uploaded and each batch gathered there by a kernel; the epoch's end is answered again when asked again;
 * next before start or after halt is an error; and a slab that turns bad
 * after the set was opened fails fn_loader_next with the set's message. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
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
#include "expect.h"
#include "fusenet/loader.h"
#include "host_batch.h"
#include "test_main.h"

enum { N = 203, IN = 5, CLASSES = 7, OUT = 3, BATCH = 8, SLAB_ROWS = 32 };

typedef set_file fixture;

static void put(hid_t file, const char *name, hid_t mem_type, int rank, hsize_t cols,
                const void *data)
{
    h5_put(file, name, mem_type, mem_type, rank, N, cols, data);
}

/* X[i, j] = i + j / 100, labels y[i] = i % CLASSES, targets t[i, k] = -i - k. */
static void write_indexed_set(const fixture *f)
{
    static float x[N * IN], t[N * OUT];
    static int32_t y[N];
    for (int i = 0; i < N; i++) {
        y[i] = i % CLASSES;
        for (int j = 0; j < IN; j++)
            x[i * IN + j] = (float)i + (float)j / 100.0f;
        for (int k = 0; k < OUT; k++)
            t[i * OUT + k] = (float)(-i - k);
    }
    hid_t file = H5Fcreate(f->path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    put(file, "X", H5T_NATIVE_FLOAT, 2, IN, x);
    put(file, "y", H5T_NATIVE_INT32, 1, 1, y);
    put(file, "t", H5T_NATIVE_FLOAT, 2, OUT, t);
    H5Fclose(file);
}

static fn_data *open_set(const fixture *f, int mse, int slabs)
{
    fn_data_options opt = {.inputs = "X", .targets = mse ? "t" : "y",
                           .target_kind = mse ? FN_DATA_FLOATS : FN_DATA_LABELS,
                           .out_features = mse ? OUT : CLASSES, .batch_size = BATCH,
                           .memory_budget = (size_t)1 << 30, .shuffle = 1, .seed = 11};
    size_t row_bytes = IN * sizeof(float) + (mse ? OUT * sizeof(float) : sizeof(int32_t));
    if (slabs)
        opt.memory_budget = (SLAB_ROWS + 3) * row_bytes;
    fn_data *d = NULL;
    if (fn_data_open(&d, f->path, &opt) != FN_OK)
        fail_msg("fn_data_open: %s", fn_last_error());
    assert_int_equal(fn_data_slab_rows(d), slabs ? SLAB_ROWS : N);
    return d;
}

static void to_host(const fn_batch *b, int mse, host_batch *h)
{
    memset(h, 0, sizeof *h);
    h->rows = b->rows;
    if (!b->rows)
        return;
    assert_int_equal(b->x.rows, b->rows);
    assert_int_equal(b->x.cols, IN);
    assert_int_equal(fn_tensor_download(&b->x, h->x, (size_t)b->rows * IN), FN_OK);
    memcpy(h->index, b->index, sizeof(int64_t) * (size_t)b->rows);
    if (mse) {
        assert_null(b->labels);
        assert_int_equal(fn_tensor_download(&b->target, h->target, (size_t)b->rows * OUT), FN_OK);
        return;
    }
    memcpy(h->labels, b->host_labels, sizeof(int32_t) * (size_t)b->rows);
    if (b->x.device == FN_CUDA) { /* the device labels equal the host ones */
        fn_tensor l = fn_tensor_view((float *)b->labels, 1, b->rows, FN_CUDA);
        int32_t got[BATCH];
        assert_int_equal(fn_tensor_download(&l, (float *)got, (size_t)b->rows), FN_OK);
        assert_memory_equal(got, h->labels, sizeof(int32_t) * (size_t)b->rows);
    }
}

static void expect_same(const host_batch *want, const host_batch *got, long long step)
{
    if (want->rows != got->rows)
        fail_msg("step %lld: %d rows, expected %d", step, got->rows, want->rows);
    assert_memory_equal(got->index, want->index, sizeof(int64_t) * (size_t)want->rows);
    assert_memory_equal(got->x, want->x, sizeof(float) * (size_t)want->rows * IN);
    assert_memory_equal(got->labels, want->labels, sizeof(int32_t) * (size_t)want->rows);
    assert_memory_equal(got->target, want->target, sizeof(float) * (size_t)want->rows * OUT);
}

/* Batches from `step` of `epoch` to `stop` (-1: the end) against the
 * reference set's; then, at the end, rows 0 twice. */
static void compare_run(fn_loader *l, fn_data *ref, int mse, long long epoch, long long step,
                        long long stop)
{
    EXPECT_OK(fn_loader_start(l, epoch, step));
    EXPECT_OK(fn_data_seek(ref, epoch, step));
    host_batch want, got;
    for (long long s = step; stop < 0 || s < stop; s++) {
        fn_batch b;
        next_batch(ref, &want);
        assert_true(want.rows <= BATCH);
        EXPECT_OK(fn_loader_next(l, &b));
        to_host(&b, mse, &got);
        expect_same(&want, &got, s);
        if (!want.rows) {
            EXPECT_OK(fn_loader_next(l, &b));
            assert_int_equal(b.rows, 0);
            break;
        }
    }
    EXPECT_OK(fn_loader_halt(l));
}

static void check_loader(const fixture *f, fn_context *ctx, fn_loader_mode mode, int mse,
                         int slabs, int threads, fn_loader_gather gather)
{
    fn_data *ref = open_set(f, mse, slabs);
    fn_data *d = open_set(f, mse, slabs);
    fn_loader_options opt = {.mode = mode, .threads = threads, .gather = gather};
    fn_loader *l = NULL;
    EXPECT_OK(fn_loader_create(&l, ctx, d, &opt));
    long long last = fn_data_batches(d) - 1;
    compare_run(l, ref, mse, 0, 0, -1);
    compare_run(l, ref, mse, 1, 0, 5);     /* halted with batches prepared ahead */
    compare_run(l, ref, mse, 1, 5, -1);    /* resumed where it stopped */
    compare_run(l, ref, mse, 2, last, -1); /* the epoch's last batch alone */
    compare_run(l, ref, mse, 3, 0, -1);
    fn_loader_stats s = fn_loader_get_stats(l);
    assert_int_equal(s.threads, mode == FN_LOADER_SYNC ? 0 : threads);
    assert_true(s.batches == 3 * (last + 1) + 1);
    /* Kept on the device (not by auto: the batches are small): one slab's
     * inputs and float targets. */
    const int on_device = gather == FN_GATHER_DEVICE && mode == FN_LOADER_BACKGROUND &&
                          fn_context_device(ctx) == FN_CUDA;
    const size_t row_bytes = (IN + (mse ? OUT : 0)) * sizeof(float);
    assert_int_equal(s.device_set_bytes,
                     on_device ? (size_t)fn_data_slab_capacity(d) * row_bytes : 0);
    fn_loader_destroy(l);
    fn_data_close(d);
    fn_data_close(ref);
}

/* Both modes on ctx, with 1 and 3 gathering threads in the background,
 * the batches gathered where `gather` says. */
static void check_modes(const fixture *f, fn_context *ctx, fn_loader_gather gather)
{
    for (int mse = 0; mse <= 1; mse++)
        for (int slabs = 0; slabs <= 1; slabs++) {
            check_loader(f, ctx, FN_LOADER_SYNC, mse, slabs, 0, gather);
            check_loader(f, ctx, FN_LOADER_BACKGROUND, mse, slabs, 1, gather);
            check_loader(f, ctx, FN_LOADER_BACKGROUND, mse, slabs, 3, gather);
        }
}

static void test_cpu(void **state)
{
    fixture *f = *state;
    write_indexed_set(f);
    check_modes(f, f->ctx, FN_GATHER_AUTO);
    check_modes(f, f->ctx, FN_GATHER_DEVICE); /* no device set on the CPU */
}

/* The automatic mode on the CPU is the synchronous one. */
static void test_cpu_auto(void **state)
{
    fixture *f = *state;
    write_indexed_set(f);
    fn_data *ref = open_set(f, 0, 1);
    fn_data *d = open_set(f, 0, 1);
    fn_loader *l = NULL;
    EXPECT_OK(fn_loader_create(&l, f->ctx, d, NULL));
    compare_run(l, ref, 0, 4, 3, -1);
    assert_int_equal(fn_loader_get_stats(l).threads, 0);
    fn_loader_destroy(l);
    fn_data_close(d);
    fn_data_close(ref);
}

static void check_next_before_start(const fixture *f, fn_loader_mode mode)
{
    fn_data *d = open_set(f, 0, 0);
    fn_loader_options opt = {.mode = mode, .threads = 2};
    fn_loader *l = NULL;
    EXPECT_OK(fn_loader_create(&l, f->ctx, d, &opt));
    fn_batch b;
    assert_int_equal(fn_loader_next(l, &b), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "not started"));
    EXPECT_OK(fn_loader_start(l, 0, 0));
    EXPECT_OK(fn_loader_next(l, &b));
    assert_int_equal(b.rows, BATCH);
    EXPECT_OK(fn_loader_halt(l));
    assert_int_equal(fn_loader_next(l, &b), FN_ERR_INVALID);
    fn_loader_destroy(l); /* also right after a start, with batches in flight */
    EXPECT_OK(fn_loader_create(&l, f->ctx, d, &opt));
    EXPECT_OK(fn_loader_start(l, 0, 0));
    fn_loader_destroy(l);
    fn_data_close(d);
}

static void test_next_before_start(void **state)
{
    fixture *f = *state;
    write_indexed_set(f);
    check_next_before_start(f, FN_LOADER_SYNC);
    check_next_before_start(f, FN_LOADER_BACKGROUND);
}

static void test_bad_mode(void **state)
{
    fixture *f = *state;
    write_indexed_set(f);
    fn_data *d = open_set(f, 0, 0);
    fn_loader_options opt = {.mode = (fn_loader_mode)7};
    fn_loader *l = NULL;
    assert_int_equal(fn_loader_create(&l, f->ctx, d, &opt), FN_ERR_INVALID);
    assert_null(l);
    assert_non_null(strstr(fn_last_error(), "unknown mode 7"));
    opt = (fn_loader_options){.gather = (fn_loader_gather)9};
    assert_int_equal(fn_loader_create(&l, f->ctx, d, &opt), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "unknown gather 9"));
    fn_data_close(d);
}

/* A set whose inputs are overwritten with NaN after it was opened (and
 * checked): the read of the next slab (the thread's, in the background)
 * finds them, and fn_loader_next fails with the set's message naming the
 * file. 1 MiB of inputs, more than HDF5's 64 KiB sieve buffer holds. */
static void check_bad_slab(const fixture *f, fn_loader_mode mode)
{
    enum { ROWS = 4096, COLS = 64 };
    float *x = calloc((size_t)ROWS * COLS, sizeof *x);
    int32_t *y = calloc(ROWS, sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    hid_t file = H5Fcreate(f->path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {ROWS, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t set = H5Dcreate2(file, "X", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT);
    assert_true(H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
    haddr_t offset = H5Dget_offset(set);
    assert_true(offset != HADDR_UNDEF);
    H5Dclose(set);
    H5Sclose(space);
    space = H5Screate_simple(1, dims, NULL);
    set = H5Dcreate2(file, "y", H5T_NATIVE_INT32, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(H5Dwrite(set, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y) >= 0);
    H5Dclose(set);
    H5Sclose(space);
    H5Fclose(file);

    fn_data_options dopt = {.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                            .out_features = 2, .batch_size = 16,
                            .memory_budget = 256 * (COLS * sizeof(float) + sizeof(int32_t)),
                            .shuffle = 1, .seed = 3};
    fn_data *d = NULL;
    EXPECT_OK(fn_data_open(&d, f->path, &dopt));
    assert_int_equal(fn_data_slab_rows(d), 256);
    fn_loader_options opt = {.mode = mode, .threads = 2};
    fn_loader *l = NULL;
    EXPECT_OK(fn_loader_create(&l, f->ctx, d, &opt));
    memset(x, 0xff, (size_t)ROWS * COLS * sizeof *x); /* NaN */
    FILE *raw = fopen(f->path, "r+b");
    assert_non_null(raw);
    assert_int_equal(fseek(raw, (long)offset, SEEK_SET), 0);
    assert_int_equal(fwrite(x, sizeof *x, (size_t)ROWS * COLS, raw), (size_t)ROWS * COLS);
    fclose(raw);
    EXPECT_OK(fn_loader_start(l, 0, 0));
    fn_status st = FN_OK;
    for (int i = 0; i < 1000 && st == FN_OK; i++) {
        fn_batch b;
        st = fn_loader_next(l, &b);
        if (st == FN_OK && !b.rows)
            break;
    }
    assert_int_equal(st, FN_ERR_FORMAT);
    if (!strstr(fn_last_error(), "set.h5: dataset 'X' row") || !strstr(fn_last_error(), "NaN"))
        fail_msg("message: %s", fn_last_error());
    fn_batch b;
    assert_int_equal(fn_loader_next(l, &b), FN_ERR_FORMAT); /* the same answer again */
    fn_loader_destroy(l);
    fn_data_close(d);
    free(x);
    free(y);
}

static void test_bad_slab(void **state)
{
    check_bad_slab(*state, FN_LOADER_SYNC);
    check_bad_slab(*state, FN_LOADER_BACKGROUND);
}

static void test_cuda(void **state)
{
    fixture *f = *state;
    skip_without_gpu();
    write_indexed_set(f);
    fn_context *gpu = NULL;
    EXPECT_OK(fn_context_create(&gpu, FN_CUDA, 0, FN_MATH_FP32));
    check_modes(f, gpu, FN_GATHER_HOST);
    check_modes(f, gpu, FN_GATHER_DEVICE);
    check_modes(f, gpu, FN_GATHER_AUTO); /* batches of 40 bytes: on the host */
    fn_context_destroy(gpu);
}

/* Each test in a folder of its own (sets.h). */
#define T(name) cmocka_unit_test_setup_teardown(name, set_file_setup, set_file_teardown)
TEST_MAIN(NULL, NULL, T(test_cpu), T(test_cpu_auto), T(test_next_before_start), T(test_bad_mode),
          T(test_bad_slab), T(test_cuda))
