/* test_deep_net.c — a network thousands of layers deep builds, saves and
 * loads in time linear in its depth, and the initialisation that makes it
 * fast draws the same numbers (8000 `linear 4` layers would take minutes
 * if cuRAND were re-seeded per tensor, beyond the probe's 60 s in which
 * predict must load the weights its own train wrote).
 *
 * The bound: the probe allows a load 60 s (h5_probe.h), and the
 * per-tensor re-seeding alone cost 16000 x 7 ms = 112 s at this depth. Now
 * a build or a load takes 1 to 7 s on a busy 2-core machine (16000 tensors
 * continuing one Philox stream at tens of microseconds each, 8000 HDF5
 * groups read twice: probe and load), so 45 s leaves room for the
 * sanitizers and still fails the old code by more than a factor of 2. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/init.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/weights.h"
#include "test_main.h"

enum { DEPTH = 8000, WIDTH = 4 };
static const double BOUND_SECONDS = 45.0;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void deep_linear_builds_and_loads(fn_context *ctx)
{
    const fn_layer_kind *linear = NULL;
    EXPECT_OK(fn_layer_kind_find("linear", &linear));
    fn_layer_spec *specs = calloc(DEPTH, sizeof *specs);
    assert_non_null(specs);
    for (int i = 0; i < DEPTH; i++)
        specs[i] = (fn_layer_spec){.kind = linear, .width = WIDTH};
    const fn_layer_hparams hp = {.groups = 1, .eps = 1e-5f, .negative_slope = 0.01f};

    double t0 = now();
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create(&net, ctx, specs, DEPTH, WIDTH, &hp, 2, 1));
    const double built = now() - t0;

    char path[] = "/tmp/fn_deep_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    EXPECT_OK(fn_weights_save(path, net, NULL));
    t0 = now();
    fn_net *loaded = NULL;
    fn_status st = fn_weights_build(&loaded, ctx, path, 2);
    const double load = now() - t0;
    unlink(path);
    EXPECT_OK(st);
    printf("%s, %d layers: built in %.2f s, loaded in %.2f s (bound %.0f s each)\n",
           fn_device_name(fn_context_device(ctx)), DEPTH, built,
           load, BOUND_SECONDS);
    assert_int_equal(fn_net_n_layers(loaded), DEPTH);
    assert_true(built < BOUND_SECONDS);
    assert_true(load < BOUND_SECONDS);
    fn_net_destroy(loaded);
    fn_net_destroy(net);
    free(specs);
}

static void test_deep_linear_builds_and_loads(void **state) { deep_linear_builds_and_loads(*state); }

/* On the GPU the tensors are drawn by cuRAND's device generator. */
static void test_deep_linear_builds_and_loads_cuda(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    deep_linear_builds_and_loads(ctx);
    fn_context_destroy(ctx);
}

/* The kept generator (init.c) continues a stream without re-seeding: the
 * numbers must be those of a fresh draw at the same offset, whatever came
 * between (another seed, a jump back). */
static void test_continued_stream_equals_fresh_draw(void **state)
{
    (void)state;
    fn_tensor whole = {0}, a = {0}, b = {0}, other = {0};
    EXPECT_OK(fn_tensor_alloc(&whole, 1, 12, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&a, 1, 5, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&b, 1, 7, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&other, 1, 3, FN_CPU));
    fn_rng r = {.seed = 42, .offset = 3};
    EXPECT_OK(fn_init_uniform(&whole, -1.0f, 1.0f, &r));
    fn_rng elsewhere = {.seed = 7, .offset = 100};
    EXPECT_OK(fn_init_uniform(&other, -1.0f, 1.0f, &elsewhere));
    r = (fn_rng){.seed = 42, .offset = 3};
    EXPECT_OK(fn_init_uniform(&a, -1.0f, 1.0f, &r));
    EXPECT_OK(fn_init_uniform(&b, -1.0f, 1.0f, &r)); /* continues: no re-seeding */
    assert_memory_equal(a.data, whole.data, 5 * sizeof(float));
    assert_memory_equal(b.data, whole.data + 5, 7 * sizeof(float));
    fn_tensor_free(&whole);
    fn_tensor_free(&a);
    fn_tensor_free(&b);
    fn_tensor_free(&other);
}

TEST_MAIN(setup_cpu_context, teardown_context,
          cmocka_unit_test(test_continued_stream_equals_fresh_draw),
          cmocka_unit_test(test_deep_linear_builds_and_loads),
          cmocka_unit_test(test_deep_linear_builds_and_loads_cuda))
