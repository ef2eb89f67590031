/* test_input_norm_cuda.c — [data] standardize on the GPU: the kernel of
 * kernels/data/input_norm_cuda.cu gives the CPU path's bits (both are IEEE
 * subtract then divide, each rounded) at several shapes, odd and large;
 * and the loader's background mode on the GPU hands out the same
 * standardised batches as the CPU's synchronous mode, and so does its
 * synchronous mode (predict's and validation's); a run of the trainer on
 * the GPU with [data] standardize writes the CPU run's statistics and
 * separates the classes of a set with a feature of scale 1e6. Skips
 * without a GPU. */
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
#include "fusenet/input_norm.h"
#include "fusenet/loader.h"
#include "fusenet/trainer.h"
#include "norm_loader.h"
#include "test_main.h"

static float uniform(uint64_t *s, float lo, float hi)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((double)(*s >> 11) / 9007199254740992.0);
}

static void check_shape(fn_context *cpu, fn_context *gpu, int rows, int cols)
{
    float *mean = malloc(sizeof(float) * (size_t)cols), *std = malloc(sizeof(float) * (size_t)cols);
    float *x = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
    float *back = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
    assert_true(mean && std && x && back);
    uint64_t s = (uint64_t)rows * 131 + (uint64_t)cols;
    for (int j = 0; j < cols; j++) {
        mean[j] = uniform(&s, -1e6f, 1e6f);
        std[j] = uniform(&s, 1e-3f, 1e5f);
    }
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
        x[i] = mean[i % (size_t)cols] + std[i % (size_t)cols] * uniform(&s, -5, 5);
    fn_input_norm *on_cpu = NULL, *on_gpu = NULL;
    assert_int_equal(fn_input_norm_create(&on_cpu, cpu, cols, mean, std), FN_OK);
    assert_int_equal(fn_input_norm_create(&on_gpu, gpu, cols, mean, std), FN_OK);
    fn_tensor d;
    assert_int_equal(fn_tensor_alloc(&d, rows, cols, FN_CUDA), FN_OK);
    assert_int_equal(fn_tensor_upload(&d, x, (size_t)rows * (size_t)cols), FN_OK);
    assert_int_equal(fn_input_norm_apply(on_gpu, &d), FN_OK);
    assert_int_equal(fn_tensor_download(&d, back, (size_t)rows * (size_t)cols), FN_OK);
    fn_tensor h = fn_tensor_view(x, rows, cols, FN_CPU);
    assert_int_equal(fn_input_norm_apply(on_cpu, &h), FN_OK);
    if (memcmp(x, back, sizeof(float) * (size_t)rows * (size_t)cols) != 0)
        fail_msg("[%d, %d]: the GPU's values differ from the CPU's", rows, cols);
    /* A host tensor is not the GPU norm's. */
    assert_int_equal(fn_input_norm_apply(on_gpu, &h), FN_ERR_INVALID);
    fn_tensor_free(&d);
    fn_input_norm_destroy(on_cpu);
    fn_input_norm_destroy(on_gpu);
    free(mean);
    free(std);
    free(x);
    free(back);
}

static void test_kernel_matches_cpu(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *cpu = NULL, *gpu = NULL;
    assert_int_equal(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32), FN_OK);
    assert_int_equal(fn_context_create(&gpu, FN_CUDA, 0, FN_MATH_FP32), FN_OK);
    const int shapes[][2] = {{1, 1}, {1, 7}, {3, 1}, {17, 33}, {1024, 64}, {513, 8193}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        check_shape(cpu, gpu, shapes[k][0], shapes[k][1]);
    fn_context_destroy(gpu);
    fn_context_destroy(cpu);
}

enum { N = 300, IN = 6 };

static void write_spread_set(const char *path)
{
    static double x[N * IN];
    static int32_t y[N];
    uint64_t s = 11;
    for (int i = 0; i < N; i++) {
        double *r = x + i * IN;
        for (int j = 0; j < IN; j++)
            r[j] = (double)uniform(&s, -1, 1) * (j == 3 ? 1e6 : 1.0) + j;
        /* Four classes from features 0, 1 and 4; feature 3 has scale 1e6. */
        y[i] = (r[0] + (r[1] - 1) > 0) + 2 * (r[4] - 4 > 0);
    }
    h5_write_xy(path, x, N, IN, H5T_STD_I32LE, H5T_NATIVE_INT32, y);
}

/* A new directory made from the template dir, holding the spread set at
 * path (room for cap bytes), "<dir>/set.h5"; HDF5's own error printing
 * off. */
static void spread_set_in(char *dir, char *path, size_t cap)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    assert_non_null(mkdtemp(dir));
    snprintf(path, cap, "%s/set.h5", dir);
    write_spread_set(path);
}

/* Every batch of epoch 2, as host values, through a loader on ctx. */
static void epoch_batches(fn_context *ctx, const char *path, fn_loader_mode mode, float *out)
{
    fn_data_options opt = {.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                           .out_features = 4, .batch_size = 32,
                           .memory_budget = 64 * IN * 8, .shuffle = 1, .seed = 3};
    fn_data *d = NULL;
    assert_int_equal(fn_data_open(&d, path, &opt), FN_OK);
    norm_loader nl;
    norm_loader_start(&nl, ctx, d, mode, 2);
    size_t at = 0;
    fn_batch b;
    while (norm_loader_next(&nl, &b)) {
        assert_int_equal(fn_tensor_download(&b.x, out + at, (size_t)b.rows * IN), FN_OK);
        at += (size_t)b.rows * IN;
    }
    assert_int_equal(at, (size_t)N * IN);
    norm_loader_free(&nl);
    fn_data_close(d);
}

static void test_background_loader(void **state)
{
    (void)state;
    skip_without_gpu();
    char dir[] = "/tmp/fn_norm_cuda_XXXXXX", path[64];
    spread_set_in(dir, path, sizeof path);
    fn_context *cpu = NULL, *gpu = NULL;
    assert_int_equal(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32), FN_OK);
    assert_int_equal(fn_context_create(&gpu, FN_CUDA, 0, FN_MATH_FP32), FN_OK);
    static float a[N * IN], b[N * IN], c[N * IN];
    epoch_batches(cpu, path, FN_LOADER_SYNC, a);
    epoch_batches(gpu, path, FN_LOADER_BACKGROUND, b);
    epoch_batches(gpu, path, FN_LOADER_SYNC, c);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_equal(a, c, sizeof a);
    fn_context_destroy(gpu);
    fn_context_destroy(cpu);
    remove(path);
    rmdir(dir);
}

static void on_epoch(void *user, const fn_train_epoch *e) { *(double *)user = e->valid.acc; }

/* The trainer on `device` with [data] standardize over the set at path;
 * returns the last validation accuracy and the statistics written. */
static double train_on(const char *dir, const char *device, fn_input_norm **norm,
                       fn_context *cpu)
{
    char ini[128], set[160];
    snprintf(ini, sizeof ini, "%s/run.ini", dir);
    FILE *out = fopen(ini, "w");
    assert_non_null(out);
    fprintf(out, "[data]\ntrain = set.h5\nvalid = set.h5\nstandardize = true\n"
                 "[model]\nlayers = block 32, linear 4\ngroups = 4\n"
                 "[train]\nbatch_size = 32\nepochs = 15\nlr = 0.05\nmomentum = 0.9\n"
                 "[run]\nlog_every = 0\n");
    fclose(out);
    fn_config *cfg = NULL;
    assert_int_equal(fn_config_load(&cfg, ini), FN_OK);
    snprintf(set, sizeof set, "run.device=%s", device);
    assert_int_equal(fn_config_set(cfg, set), FN_OK);
    snprintf(set, sizeof set, "output.dir=%s/%s", dir, device);
    assert_int_equal(fn_config_set(cfg, set), FN_OK);
    assert_int_equal(fn_config_finish(cfg), FN_OK);
    double acc = 0;
    const fn_trainer_callbacks cb = {.on_epoch = on_epoch};
    const fn_trainer_options opt = {.callbacks = &cb, .user = &acc};
    fn_trainer *t = NULL;
    assert_int_equal(fn_trainer_create(&t, cfg, &opt), FN_OK);
    assert_int_equal(fn_trainer_run(t), FN_OK);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    char weights[192];
    snprintf(weights, sizeof weights, "%s/%s/weights.h5", dir, device);
    assert_int_equal(fn_input_norm_load(norm, cpu, weights, IN), FN_OK);
    assert_non_null(*norm);
    return acc;
}

static void test_trainer_standardizes(void **state)
{
    (void)state;
    skip_without_gpu();
    char dir[] = "/tmp/fn_norm_train_XXXXXX", path[64];
    spread_set_in(dir, path, sizeof path);
    fn_context *cpu = NULL;
    assert_int_equal(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32), FN_OK);
    fn_input_norm *a = NULL, *b = NULL;
    double acc_cpu = train_on(dir, "cpu", &a, cpu), acc_gpu = train_on(dir, "cuda", &b, cpu);
    printf("accuracy with standardize: cpu %.3f, cuda %.3f\n", acc_cpu, acc_gpu);
    assert_memory_equal(fn_input_norm_mean(a), fn_input_norm_mean(b), IN * sizeof(float));
    assert_memory_equal(fn_input_norm_std(a), fn_input_norm_std(b), IN * sizeof(float));
    /* Both separate the four classes (the devices' float32 sums differ in
     * their last bits, so the accuracies may differ by a row or two). */
    assert_true(acc_cpu > 0.85 && acc_gpu > 0.85);
    fn_input_norm_destroy(a);
    fn_input_norm_destroy(b);
    fn_context_destroy(cpu);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_kernel_matches_cpu),
          cmocka_unit_test(test_background_loader), cmocka_unit_test(test_trainer_standardizes))
