/* test_input_norm.c — [data] standardize on the CPU (input_norm.h): the
 * transform against a float64 reference bit for bit, bad statistics
 * refused, statistics from a set (a constant column gets std 1 and is
 * counted), the `/input_norm` group of weights files and checkpoints
 * written and read back (a file without it loads with no norm, a damaged
 * one is refused naming the file), the one save call's options (none,
 * the input norm, both norms: the version and groups each writes), and the loader applying the norm to
 * every batch it hands out, in both modes. */
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
#include "fusenet/checkpoint.h"
#include "fusenet/input_norm.h"
#include "fusenet/linear.h"
#include "fusenet/loader.h"
#include "fusenet/sgd.h"
#include "fusenet/target_norm.h"
#include "fusenet/weights.h"
#include "norm_loader.h"
#include "sets.h"
#include "test_main.h"
#include "run/train_state.h"

enum { N = 40, IN = 5, OUT = 3 };

typedef set_file fixture;

/* The weights and checkpoint files a test writes beside the set. */
static const char *weights_of(const fixture *f)
{
    static char path[192];
    snprintf(path, sizeof path, "%s/w.h5", f->dir);
    return path;
}

static const char *ckpt_of(const fixture *f)
{
    static char path[192];
    snprintf(path, sizeof path, "%s/c.h5", f->dir);
    return path;
}

/* The IEEE float32 result of (x - m) / s: float64 holds every float32
 * difference and quotient to more than 2 * 24 + 2 bits, so rounding the
 * float64 result to float32 is the correctly rounded float32 operation. */
static float reference(float x, float m, float s)
{
    float centred = (float)((double)x - (double)m);
    return (float)((double)centred / (double)s);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static float uniform(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)lcg(s) / 9007199254740992.0);
}

static void test_apply_matches_reference(void **state)
{
    fixture *f = *state;
    float mean[IN] = {0, 1e6f, -3.5f, 0.125f, 42};
    float std[IN] = {1, 2.5e5f, 0.01f, 3, 1e-3f};
    fn_input_norm *norm = NULL;
    assert_int_equal(fn_input_norm_create(&norm, f->ctx, IN, mean, std), FN_OK);
    assert_int_equal(fn_input_norm_features(norm), IN);
    float x[N * IN], want[N * IN];
    uint64_t s = 3;
    for (int i = 0; i < N * IN; i++) {
        int j = i % IN;
        x[i] = mean[j] + std[j] * uniform(&s, -4, 4);
        want[i] = reference(x[i], mean[j], std[j]);
    }
    fn_tensor t = fn_tensor_view(x, N, IN, FN_CPU);
    assert_int_equal(fn_input_norm_apply(norm, &t), FN_OK);
    for (int i = 0; i < N * IN; i++)
        if (x[i] != want[i])
            fail_msg("element %d: %.9g, reference %.9g", i, (double)x[i], (double)want[i]);
    /* A tensor of other columns is refused. */
    fn_tensor wrong = fn_tensor_view(x, IN, N, FN_CPU);
    assert_int_equal(fn_input_norm_apply(norm, &wrong), FN_ERR_INVALID);
    fn_input_norm_destroy(norm);
}

static void test_bad_statistics(void **state)
{
    fixture *f = *state;
    float mean[2] = {0, 0}, std[2] = {1, 0};
    fn_input_norm *norm = NULL;
    assert_int_equal(fn_input_norm_create(&norm, f->ctx, 2, mean, std), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "std of column 1 is 0, expected > 0"));
    std[1] = 1;
    mean[0] = NAN;
    assert_int_equal(fn_input_norm_create(&norm, f->ctx, 2, mean, std), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "mean of column 0 is nan"));
    assert_null(norm);
}

/* X [N, IN] float64: column 2 constant, the others spread; y labels. */
static void write_spread_set(const fixture *f, double *x)
{
    int32_t y[N];
    uint64_t s = 9;
    for (int i = 0; i < N; i++) {
        y[i] = i % OUT;
        for (int j = 0; j < IN; j++)
            x[i * IN + j] = j == 2 ? 7.5 : (double)uniform(&s, -1, 1) * (j + 1) * 1000.0 + j;
    }
    h5_write_xy(f->path, x, N, IN, H5T_STD_I32LE, H5T_NATIVE_INT32, y);
}

static fn_data *open_set(const fixture *f, int batch)
{
    fn_data_options opt = {.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                           .out_features = OUT, .batch_size = batch,
                           .memory_budget = (size_t)1 << 30, .shuffle = 1, .seed = 5};
    fn_data *d = NULL;
    assert_int_equal(fn_data_open(&d, f->path, &opt), FN_OK);
    return d;
}

static void test_from_data(void **state)
{
    fixture *f = *state;
    double x[N * IN];
    write_spread_set(f, x);
    fn_data *d = open_set(f, 8);
    fn_input_norm *norm = NULL;
    int count = -1, list[4] = {-1, -1, -1, -1};
    assert_int_equal(fn_input_norm_from_data(&norm, f->ctx, d, &count, list, 4), FN_OK);
    assert_int_equal(count, 1);
    assert_int_equal(list[0], 2);
    const float *m = fn_input_norm_mean(norm), *s = fn_input_norm_std(norm);
    assert_true(m[2] == 7.5f && s[2] == 1.0f);
    for (int j = 0; j < IN; j++) {
        if (j == 2)
            continue;
        double sum = 0, dev = 0;
        for (int i = 0; i < N; i++)
            sum += (float)x[i * IN + j];
        double mean = sum / N;
        for (int i = 0; i < N; i++)
            dev += ((float)x[i * IN + j] - mean) * ((float)x[i * IN + j] - mean);
        /* The library's float64 statistics, rounded once to float32. */
        assert_true(m[j] == (float)mean);
        assert_true(fabsf(s[j] - (float)sqrt(dev / N)) <= 1e-6f * s[j]);
    }
    fn_input_norm_destroy(norm);
    fn_data_close(d);
}

/* The norm `load` (fn_input_norm_load or fn_target_norm_load) reads from
 * path, width columns: present, with this mean and std. */
static void expect_norm(fn_status (*load)(fn_input_norm **, fn_context *, const char *, int),
                        fn_context *ctx, const char *path, int width, const float *mean,
                        const float *std)
{
    fn_input_norm *back = NULL;
    assert_int_equal(load(&back, ctx, path, width), FN_OK);
    assert_non_null(back);
    assert_memory_equal(fn_input_norm_mean(back), mean, (size_t)width * sizeof *mean);
    assert_memory_equal(fn_input_norm_std(back), std, (size_t)width * sizeof *std);
    fn_input_norm_destroy(back);
}

/* A one-layer net to save. */
static fn_net *small_net(fn_context *ctx)
{
    fn_net *net = NULL;
    fn_layer *layer = NULL;
    fn_rng rng = {1, 0};
    assert_int_equal(fn_net_create(&net, ctx, 8), FN_OK);
    assert_int_equal(fn_linear_create(&layer, ctx, IN, OUT, 8, &rng), FN_OK);
    assert_int_equal(fn_net_add(net, layer), FN_OK);
    return net;
}

static void test_weights_and_checkpoint_group(void **state)
{
    fixture *f = *state;
    float mean[IN] = {1, 2, 3, 4, 5}, std[IN] = {0.5f, 1, 2, 4, 1e6f};
    fn_input_norm *norm = NULL, *back = NULL;
    assert_int_equal(fn_input_norm_create(&norm, f->ctx, IN, mean, std), FN_OK);
    fn_net *net = small_net(f->ctx);
    /* Without: loads as before, no norm. */
    assert_int_equal(fn_weights_save(weights_of(f), net, NULL), FN_OK);
    assert_int_equal(fn_input_norm_load(&back, f->ctx, weights_of(f), IN), FN_OK);
    assert_null(back);
    /* With: the same values, and the weights load as before. */
    assert_int_equal(fn_weights_save(weights_of(f), net, &(fn_weights_save_options){.norm = norm}),
                     FN_OK);
    assert_int_equal(fn_weights_load(net, weights_of(f)), FN_OK);
    expect_norm(fn_input_norm_load, f->ctx, weights_of(f), IN, mean, std);
    /* Another input width is refused, naming the file and group. */
    assert_int_equal(fn_input_norm_load(&back, f->ctx, weights_of(f), IN + 1), FN_ERR_FORMAT);
    assert_non_null(strstr(fn_last_error(), "w.h5: group 'input_norm'"));
    /* A checkpoint holds it too. */
    fn_sgd_config cfg = {.lr = 0.1f};
    fn_sgd *sgd = NULL;
    assert_int_equal(fn_sgd_create(&sgd, f->ctx, fn_net_params(net), fn_net_n_params(net), &cfg),
                     FN_OK);
    fn_train_state st = fn_train_state_start(1, 8, N, N);
    assert_int_equal(
        fn_checkpoint_save(ckpt_of(f), net, fn_sgd_optimizer(sgd), &st,
                           &(fn_checkpoint_save_options){.norm = norm, .config_text = ""}),
        FN_OK);
    expect_norm(fn_input_norm_load, f->ctx, ckpt_of(f), IN, mean, std);
    fn_sgd_destroy(sgd);
    fn_net_destroy(net);
    fn_input_norm_destroy(norm);
}

/* The root attribute format_version of a weights file. */
static long long format_version(const char *path)
{
    long long v = -1;
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t attr = H5Aopen(file, "format_version", H5P_DEFAULT);
    H5Aread(attr, H5T_NATIVE_LLONG, &v);
    H5Aclose(attr);
    H5Fclose(file);
    return v;
}

/* One save call, its options naming what the file holds besides the
 * layers: none (NULL options: version 1, no group), the input norm
 * (version 2), the input and target norms (version 3, both read back). */
static void test_weights_save_options(void **state)
{
    fixture *f = *state;
    float mean[IN] = {1, 2, 3, 4, 5}, std[IN] = {0.5f, 1, 2, 4, 8};
    float tmean[OUT] = {10, 20, 30}, tstd[OUT] = {2, 3, 4};
    fn_input_norm *norm = NULL, *target = NULL, *back = NULL;
    assert_int_equal(fn_input_norm_create(&norm, f->ctx, IN, mean, std), FN_OK);
    assert_int_equal(fn_input_norm_create(&target, f->ctx, OUT, tmean, tstd), FN_OK);
    fn_net *net = small_net(f->ctx);
    assert_int_equal(fn_weights_save(weights_of(f), net, NULL), FN_OK);
    assert_int_equal(format_version(weights_of(f)), 1);
    assert_int_equal(fn_target_norm_load(&back, f->ctx, weights_of(f), OUT), FN_OK);
    assert_null(back);
    const fn_weights_save_options inputs = {.norm = norm};
    assert_int_equal(fn_weights_save(weights_of(f), net, &inputs), FN_OK);
    assert_int_equal(format_version(weights_of(f)), 2);
    const fn_weights_save_options both = {.norm = norm, .target = target,
                                          .config_text = "[model]\n"};
    assert_int_equal(fn_weights_save(weights_of(f), net, &both), FN_OK);
    assert_int_equal(format_version(weights_of(f)), 3);
    expect_norm(fn_target_norm_load, f->ctx, weights_of(f), OUT, tmean, tstd);
    expect_norm(fn_input_norm_load, f->ctx, weights_of(f), IN, mean, std);
    fn_net_destroy(net);
    fn_input_norm_destroy(target);
    fn_input_norm_destroy(norm);
}

/* A std of 0 written by hand (fusenet never writes one) is refused. */
static void test_damaged_group(void **state)
{
    fixture *f = *state;
    fn_net *net = small_net(f->ctx);
    assert_int_equal(fn_weights_save(weights_of(f), net, NULL), FN_OK);
    fn_net_destroy(net);
    hid_t file = H5Fopen(weights_of(f), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t group = H5Gcreate2(file, "input_norm", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    float mean[IN] = {0}, std[IN] = {1, 1, 0, 1, 1};
    hsize_t dims[1] = {IN};
    hid_t space = H5Screate_simple(1, dims, NULL);
    const char *names[2] = {"mean", "std"};
    const float *values[2] = {mean, std};
    for (int k = 0; k < 2; k++) {
        hid_t set = H5Dcreate2(group, names[k], H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
        H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values[k]);
        H5Dclose(set);
    }
    H5Sclose(space);
    H5Gclose(group);
    H5Fclose(file);
    fn_input_norm *back = NULL;
    assert_int_equal(fn_input_norm_load(&back, f->ctx, weights_of(f), IN), FN_ERR_FORMAT);
    assert_non_null(strstr(fn_last_error(), "w.h5: group 'input_norm': dataset 'std' holds 0 at "
                                            "[2], expected > 0"));
    assert_null(back);
}

/* Every batch of an epoch, standardised by the loader (mode), against the
 * same rows standardised here from the file's values. */
static void check_loader(const fixture *f, const double *x, fn_loader_mode mode)
{
    fn_data *d = open_set(f, 7);
    norm_loader nl;
    norm_loader_start(&nl, f->ctx, d, mode, 1);
    const float *m = fn_input_norm_mean(nl.norm), *s = fn_input_norm_std(nl.norm);
    int seen = 0;
    fn_batch b;
    while (norm_loader_next(&nl, &b)) {
        for (int i = 0; i < b.rows; i++)
            for (int j = 0; j < IN; j++) {
                float want = reference((float)x[b.index[i] * IN + j], m[j], s[j]);
                assert_true(b.x.data[i * IN + j] == want);
            }
        seen += b.rows;
    }
    assert_int_equal(seen, N);
    norm_loader_free(&nl);
    fn_data_close(d);
}

static void test_loader_applies(void **state)
{
    fixture *f = *state;
    double x[N * IN];
    write_spread_set(f, x);
    check_loader(f, x, FN_LOADER_SYNC);
    check_loader(f, x, FN_LOADER_BACKGROUND);
    /* A norm of other columns is refused. */
    fn_data *d = open_set(f, 7);
    fn_loader *l = NULL;
    assert_int_equal(fn_loader_create(&l, f->ctx, d, NULL), FN_OK);
    float mean[2] = {0, 0}, std[2] = {1, 1};
    fn_input_norm *two = NULL;
    assert_int_equal(fn_input_norm_create(&two, f->ctx, 2, mean, std), FN_OK);
    assert_int_equal(fn_loader_set_norm(l, two), FN_ERR_INVALID);
    fn_input_norm_destroy(two);
    fn_loader_destroy(l);
    fn_data_close(d);
}

#define T(name) cmocka_unit_test_setup_teardown(name, set_file_setup, set_file_teardown)
TEST_MAIN(NULL, NULL, T(test_apply_matches_reference), T(test_bad_statistics), T(test_from_data),
          T(test_weights_and_checkpoint_group), T(test_weights_save_options), T(test_damaged_group),
          T(test_loader_applies))
