/* test_device_cuda.c — how the library reports a missing or exhausted GPU:
 * FN_ERR_NODEV with a message that says which GPU, and FN_ERR_NOMEM (not a
 * crash) when device memory runs out. The no-GPU checks run on machines
 * without a GPU too; the out-of-memory check needs one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/device.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/tensor.h"
#include "test_main.h"

static void expect_message(const char *needle)
{
    if (!strstr(fn_last_error(), needle))
        fail_msg("message '%s' does not contain '%s'", fn_last_error(), needle);
}

/* A GPU index past the last one is FN_ERR_NODEV, naming the GPU asked for;
 * with no GPU at all, the message says there is none. */
static void test_missing_gpu_is_nodev(void **state)
{
    (void)state;
    fn_context *ctx = (fn_context *)1;
    fn_status st = fn_context_create(&ctx, FN_CUDA, 99, FN_MATH_FP32);
    assert_int_equal(st, FN_ERR_NODEV);
    assert_null(ctx);
    if (fn_cuda_device_count() == 0)
        expect_message("no CUDA GPU");
    else
        expect_message("GPU 99");
}

/* Without a GPU, even GPU 0 is FN_ERR_NODEV with "no CUDA GPU". */
static void test_no_gpu_is_nodev(void **state)
{
    (void)state;
    if (fn_cuda_device_count() > 0) {
        printf("skipped: this machine has a GPU; the no-GPU path is checked on CI\n");
        skip();
    }
    fn_context *ctx = (fn_context *)1;
    assert_int_equal(fn_context_create(&ctx, FN_CUDA, 0, FN_MATH_FP32), FN_ERR_NODEV);
    assert_null(ctx);
    expect_message("no CUDA GPU");
}

/* A negative index is no GPU either, whatever the machine. */
static void test_negative_gpu_is_nodev(void **state)
{
    (void)state;
    fn_context *ctx = (fn_context *)1;
    assert_int_equal(fn_context_create(&ctx, FN_CUDA, -1, FN_MATH_FP32), FN_ERR_NODEV);
    assert_null(ctx);
}

/* An absurd device allocation is FN_ERR_NOMEM with a message, and the
 * device stays usable: a small allocation right after it succeeds. */
static void test_out_of_device_memory_is_nomem(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    fn_tensor huge = {0};
    /* 2^20 x 2^20 floats: 4 TiB, far beyond any GPU. */
    assert_int_equal(fn_tensor_alloc(&huge, 1 << 20, 1 << 20, FN_CUDA), FN_ERR_NOMEM);
    assert_null(huge.data);
    expect_message("out of GPU memory");
    fn_tensor small = {0};
    if (fn_tensor_alloc(&small, 16, 16, FN_CUDA) != FN_OK)
        fail_msg("a small allocation after the failed one: %s", fn_last_error());
    fn_tensor_free(&small);
    assert_int_equal(fn_context_sync(ctx), FN_OK);
    fn_context_destroy(ctx);
}

/* The device's free memory is what a net is checked against before it is
 * built: a petabyte of layers fails at once naming the
 * need and the GPU's free memory, having allocated nothing. */
static void test_net_larger_than_the_gpu_is_refused(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    double free_bytes = 0;
    const char *source = NULL;
    assert_int_equal(fn_context_memory_available(ctx, &free_bytes, &source), FN_OK);
    assert_true(free_bytes > 0);
    assert_string_equal(source, "free GPU memory");
    const fn_layer_kind *block = NULL, *linear = NULL;
    assert_int_equal(fn_layer_kind_find("block", &block), FN_OK);
    assert_int_equal(fn_layer_kind_find("linear", &linear), FN_OK);
    const fn_layer_spec huge[] = {{block, 1 << 24, 0}, {block, 1 << 24, 0}, {linear, 4, 0}};
    const fn_layer_hparams hp = {.groups = 1, .eps = 1e-5f, .negative_slope = 0.01f};
    fn_net *net = NULL;
    assert_int_equal(fn_model_create(&net, ctx, huge, 3, 6, &hp, 8, 1), FN_ERR_NOMEM);
    assert_null(net);
    expect_message("the network needs at least 2251806.3 GB of GPU memory");
    expect_message("of free GPU memory");
    fn_context_destroy(ctx);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_missing_gpu_is_nodev),
              cmocka_unit_test(test_no_gpu_is_nodev), cmocka_unit_test(test_negative_gpu_is_nodev),
              cmocka_unit_test(test_out_of_device_memory_is_nomem),
              cmocka_unit_test(test_net_larger_than_the_gpu_is_refused))
