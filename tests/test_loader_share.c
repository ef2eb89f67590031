/* test_loader_share.c — data parallelism's shares (loader.h: part/parts):
 * the shares of every batch, taken by `parts` loaders of their own, are
 * contiguous, put side by side in part order they are the whole batch (its
 * rows, indices, inputs and labels, bit for bit), each knows the whole
 * batch's rows (batch_rows), shares differ by at most one row, a share may
 * be empty (a short last batch over more parts than rows) without ending
 * the epoch, and every share ends the epoch together; in both loader modes,
 * for 2, 3 and 5 parts, on the CPU and (when there is one) the GPU; a part
 * outside [0, parts) is refused. */
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

#include "expect.h"
#include "fusenet/loader.h"
#include "h5_write.h"
#include "program.h"
#include "sets.h"
#include "test_main.h"

enum { N = 203, IN = 5, CLASSES = 7, BATCH = 8, MAX_PARTS = 5 };

typedef set_file fixture;

/* X[i, j] = i + j / 100, y[i] = i % CLASSES. */
static int setup(void **state)
{
    fixture *f = set_file_new("fn_share_");
    static float x[N * IN];
    static int32_t y[N];
    for (int i = 0; i < N; i++) {
        y[i] = i % CLASSES;
        for (int j = 0; j < IN; j++)
            x[i * IN + j] = (float)i + (float)j / 100.0f;
    }
    hid_t file = H5Fcreate(f->path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "X", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, 2, N, IN, x);
    h5_put(file, "y", H5T_NATIVE_INT32, H5T_NATIVE_INT32, 1, N, 1, y);
    H5Fclose(file);
    *state = f;
    return 0;
}

static fn_data *open_set(const fixture *f)
{
    const fn_data_options opt = {.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                                 .out_features = CLASSES, .batch_size = BATCH,
                                 .memory_budget = (size_t)1 << 30, .shuffle = 1, .seed = 5};
    fn_data *d = NULL;
    if (fn_data_open(&d, f->path, &opt) != FN_OK)
        fail_msg("fn_data_open: %s", fn_last_error());
    return d;
}

/* A batch on the host: rows, indices, inputs, labels. */
typedef struct host_batch {
    int rows;
    int64_t index[BATCH];
    float x[BATCH * IN];
    int32_t labels[BATCH];
} host_batch;

/* Appends b's rows to h. */
static void append(host_batch *h, const fn_batch *b)
{
    if (!b->rows)
        return;
    assert_true(h->rows + b->rows <= BATCH);
    memcpy(h->index + h->rows, b->index, sizeof(int64_t) * (size_t)b->rows);
    memcpy(h->labels + h->rows, b->host_labels, sizeof(int32_t) * (size_t)b->rows);
    EXPECT_OK(fn_tensor_download(&b->x, h->x + (size_t)h->rows * IN, (size_t)b->rows * IN));
    h->rows += b->rows;
}

static void check_parts(const fixture *f, fn_context *ctx, fn_loader_mode mode, int parts)
{
    fn_data *whole_set = open_set(f), *sets[MAX_PARTS];
    fn_loader *whole = NULL, *share[MAX_PARTS];
    const fn_loader_options all = {.mode = mode, .threads = 2};
    EXPECT_OK(fn_loader_create(&whole, ctx, whole_set, &all));
    for (int p = 0; p < parts; p++) {
        sets[p] = open_set(f);
        const fn_loader_options opt = {.mode = mode, .threads = 2, .part = p, .parts = parts};
        EXPECT_OK(fn_loader_create(&share[p], ctx, sets[p], &opt));
    }
    int empty_seen = 0;
    for (long long epoch = 0; epoch < 2; epoch++) {
        EXPECT_OK(fn_loader_start(whole, epoch, 0));
        for (int p = 0; p < parts; p++)
            EXPECT_OK(fn_loader_start(share[p], epoch, 0));
        for (long long step = 0;; step++) {
            fn_batch b;
            EXPECT_OK(fn_loader_next(whole, &b));
            host_batch want = {0}, got = {0};
            append(&want, &b);
            for (int p = 0; p < parts; p++) {
                fn_batch s;
                EXPECT_OK(fn_loader_next(share[p], &s));
                if (s.batch_rows != b.rows)
                    fail_msg("%d parts, epoch %lld step %lld, part %d: batch_rows %d, the batch "
                             "has %d", parts, epoch, step, p, s.batch_rows, b.rows);
                const int begin = b.rows * p / parts, end = b.rows * (p + 1) / parts;
                assert_int_equal(s.rows, end - begin);
                assert_true(s.rows <= (b.rows + parts - 1) / parts);
                empty_seen += b.rows > 0 && s.rows == 0;
                append(&got, &s);
            }
            if (!b.rows)
                break;
            assert_int_equal(got.rows, want.rows);
            assert_memory_equal(got.index, want.index, sizeof(int64_t) * (size_t)want.rows);
            assert_memory_equal(got.labels, want.labels, sizeof(int32_t) * (size_t)want.rows);
            assert_memory_equal(got.x, want.x, sizeof(float) * (size_t)want.rows * IN);
        }
        EXPECT_OK(fn_loader_halt(whole));
        for (int p = 0; p < parts; p++)
            EXPECT_OK(fn_loader_halt(share[p]));
    }
    /* The last batch has N % BATCH = 3 rows: over 5 parts two shares are empty. */
    assert_int_equal(empty_seen, parts == 5 ? 2 * 2 : 0);
    for (int p = 0; p < parts; p++) {
        fn_loader_destroy(share[p]);
        fn_data_close(sets[p]);
    }
    fn_loader_destroy(whole);
    fn_data_close(whole_set);
}

static void check_device(const fixture *f, fn_context *ctx)
{
    static const int counts[] = {2, 3, 5};
    for (int i = 0; i < 3; i++) {
        check_parts(f, ctx, FN_LOADER_SYNC, counts[i]);
        check_parts(f, ctx, FN_LOADER_BACKGROUND, counts[i]);
    }
}

static void shares_cpu(void **state)
{
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    check_device(*state, cpu);
    fn_context_destroy(cpu);
}

static void shares_cuda(void **state)
{
    fn_context *gpu = context_or_skip(FN_CUDA);
    check_device(*state, gpu);
    fn_context_destroy(gpu);
}

static void bad_part_refused(void **state)
{
    const fixture *f = *state;
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    fn_data *d = open_set(f);
    fn_loader *l = NULL;
    const fn_loader_options opt = {.part = 3, .parts = 3};
    assert_int_equal(fn_loader_create(&l, cpu, d, &opt), FN_ERR_INVALID);
    assert_null(l);
    fn_data_close(d);
    fn_context_destroy(cpu);
}

TEST_MAIN(setup, set_file_teardown, cmocka_unit_test(shares_cpu), cmocka_unit_test(shares_cuda),
          cmocka_unit_test(bad_part_refused))
