/* test_infer_product_cuda.c — inference on the GPU does not depend on the
 * batch (core/infer_product_cuda.h), in every math mode:
 *  - the product a network built for inference uses, against the float64
 *    reference at many shapes (one row, one column, one input, odd sizes),
 *    within estimate.h's bound for the mode's operand rounding;
 *  - its rows the same bits computed alone, in slices of 7 at any place,
 *    and in the whole batch;
 *  - in bf16 mode, a bfloat16 input (what the layer before writes where a
 *    net joins them) gives the bits of the float input it was rounded
 *    from, and a bfloat16 output is the float output rounded once;
 *  - fn_infer of a network of every layer kind, from its weights file,
 *    the same bits per row in batches of 1, 7, 64 and 300 and with its
 *    rows shuffled (cuBLAS, which this replaced there, picks its algorithm
 *    by the batch).
 * Every test skips, saying why, on a machine without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "core/gemm_cuda.h"
#include "core/infer_product_cuda.h"
#include "estimate.h"
#include "expect.h"
#include "fusenet/tensor.h"
#include "invariance.h"
#include "test_main.h"

static fn_context *mode_context(int mode)
{
    skip_without_gpu();
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, (fn_math)mode));
    return ctx;
}

/* A device copy of count host floats (at least one float allocated). */
static fn_tensor upload(const float *v, size_t count)
{
    fn_tensor t = {0};
    EXPECT_OK(fn_tensor_alloc(&t, 1, count > 0 ? (int)count : 1, FN_CUDA));
    if (count > 0)
        EXPECT_OK(fn_tensor_upload(&t, v, count));
    return t;
}

/* The product on the GPU of host arrays (arg: the context). */
static void gpu_product(void *arg, float *y, const float *x, const float *w, const float *bias,
                        int n, int in, int out)
{
    fn_context *ctx = arg;
    fn_tensor xd = upload(x, (size_t)n * in), wd = upload(w, (size_t)out * in);
    fn_tensor bd = upload(bias, bias ? (size_t)out : 0), yd = {0};
    EXPECT_OK(fn_tensor_alloc(&yd, n, out, FN_CUDA));
    EXPECT_OK(fn_cuda_infer_product(ctx, yd.data, 0, xd.data, 0, wd.data, bias ? bd.data : NULL,
                                    n, in, out));
    EXPECT_OK(fn_tensor_download(&yd, y, (size_t)n * out));
    fn_tensor_free(&xd);
    fn_tensor_free(&wd);
    fn_tensor_free(&bd);
    fn_tensor_free(&yd);
}

static void test_product_matches_reference(void **state)
{
    (void)state;
    for (int mode = 0; mode < FN_MATH_MODES; mode++) { /* every mode of device.h */
        fn_context *ctx = mode_context(mode);
        char name[48];
        snprintf(name, sizeof name, "infer product %s", fn_math_name((fn_math)mode));
        inv_expect_reference(name, gpu_product, ctx, est_operand_roundoff(mode));
        fn_context_destroy(ctx);
    }
}

static void test_product_rows_invariant(void **state)
{
    (void)state;
    for (int mode = 0; mode < FN_MATH_MODES; mode++) {
        fn_context *ctx = mode_context(mode);
        inv_expect_rows_invariant(fn_math_name((fn_math)mode), gpu_product, ctx);
        fn_context_destroy(ctx);
    }
}

/* Round to nearest bfloat16, ties to even (finite values). */
static uint16_t host_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static void test_bf16_input_and_output(void **state)
{
    (void)state;
    enum { N = 37, IN = 83, OUT = 70 };
    fn_context *ctx = mode_context(FN_MATH_BF16);
    float *x = chk_alloc_float((size_t)N * IN), *w = chk_alloc_float((size_t)OUT * IN);
    float *b = chk_alloc_float(OUT), *y = chk_alloc_float((size_t)N * OUT),
          *y2 = chk_alloc_float((size_t)N * OUT);
    uint16_t *yh = calloc((size_t)N * OUT, sizeof *yh);
    assert_non_null(yh);
    chk_rng rng = chk_rng_seed(21);
    chk_fill_float(x, (size_t)N * IN, -1, 1, &rng);
    chk_fill_float(w, (size_t)OUT * IN, -1, 1, &rng);
    chk_fill_float(b, OUT, -1, 1, &rng);
    fn_tensor xd = upload(x, (size_t)N * IN), wd = upload(w, (size_t)OUT * IN),
              bd = upload(b, OUT), xh = upload(x, (size_t)N * IN),
              yd = upload(y, (size_t)N * OUT), yhd = upload(y, (size_t)N * OUT);
    EXPECT_OK(fn_cuda_to_bf16(ctx, (fn_bf16 *)xh.data, xd.data, (size_t)N * IN, NULL, NULL, 0));
    EXPECT_OK(fn_cuda_infer_product(ctx, yd.data, 0, xd.data, 0, wd.data, bd.data, N, IN, OUT));
    EXPECT_OK(fn_tensor_download(&yd, y, (size_t)N * OUT));
    EXPECT_OK(fn_cuda_infer_product(ctx, yd.data, 0, xh.data, 1, wd.data, bd.data, N, IN, OUT));
    EXPECT_OK(fn_tensor_download(&yd, y2, (size_t)N * OUT));
    assert_memory_equal(y, y2, sizeof(float) * (size_t)N * OUT);
    EXPECT_OK(fn_cuda_infer_product(ctx, yhd.data, 1, xd.data, 0, wd.data, bd.data, N, IN, OUT));
    EXPECT_OK(fn_context_sync(ctx));
    /* The bfloat16 outputs' bits: the first N * OUT halves of the tensor. */
    EXPECT_OK(fn_tensor_download(&yhd, y2, (size_t)N * OUT));
    memcpy(yh, y2, sizeof(uint16_t) * (size_t)N * OUT);
    for (size_t i = 0; i < (size_t)N * OUT; i++)
        if (yh[i] != host_to_bf16(y[i]))
            fail_msg("bf16 output %zu: 0x%04x, the float output %.9g rounds to 0x%04x", i,
                     yh[i], (double)y[i], host_to_bf16(y[i]));
    /* A bfloat16 input on another mode's context is refused. */
    fn_context *fp32 = mode_context(FN_MATH_FP32);
    EXPECT_FAIL(fn_cuda_infer_product(fp32, yd.data, 0, xh.data, 1, wd.data, NULL, N, IN, OUT),
                FN_ERR_INVALID, "bfloat16 input on a fp32 context");
    fn_context_destroy(fp32);
    fn_tensor_free(&xd);
    fn_tensor_free(&wd);
    fn_tensor_free(&bd);
    fn_tensor_free(&xh);
    fn_tensor_free(&yd);
    fn_tensor_free(&yhd);
    free(x);
    free(w);
    free(b);
    free(y);
    free(y2);
    free(yh);
    fn_context_destroy(ctx);
}

static void test_infer_batch_invariant(void **state)
{
    (void)state;
    for (int mode = 0; mode < FN_MATH_MODES; mode++) {
        fn_context *ctx = mode_context(mode);
        inv_expect_infer_invariant(ctx);
        fn_context_destroy(ctx);
    }
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_product_matches_reference),
              cmocka_unit_test(test_product_rows_invariant),
              cmocka_unit_test(test_bf16_input_and_output),
              cmocka_unit_test(test_infer_batch_invariant))
