/* test_fast_paths_cuda.c — the CUDA block's fast paths against its plain
 * ones, on the GPU: (a) the tf32x3 block (operands split once in forward,
 * the splits reused in backward, dW through dz^T) against the fp32 block on
 * the same parameters and data, outputs and all five gradients within 1e-4
 * relative (the products alone are within 3e-5, test_determinism_cuda.c);
 * (b) the fused plain-SGD step (fn_block_backward_sgd) against zero_grad,
 * forward, backward and fn_sgd_step, in every math mode: dx, bias, gamma and
 * beta bit for bit, the weight within a few float32 roundings of its
 * magnitude (the update is accumulated by the dW product), the gradient
 * tensors untouched. Every test skips, saying why, without a GPU. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nn/layers/block/block_impl.h"
#include "check.h"
#include "expect.h"
#include "fusenet/sgd.h"
#include "test_main.h"

typedef struct shape {
    int batch, in, out, groups;
} shape;

static const shape shapes[] = {
    {64, 96, 128, 8},  /* K = 16, the benchmark's group width */
    {7, 33, 48, 3},    /* odd batch and input width; K = 16, float4 team path */
    {130, 64, 256, 1}, /* one wide group */
};

/* A block on ctx with seed 7, and x, dy from seed 8, gamma and beta moved
 * off their defaults so that every gradient term is exercised. */
static fn_layer *make_block(fn_context *ctx, const shape *s, fn_tensor *x, fn_tensor *dy)
{
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 7, .offset = 0};
    const fn_block_config cfg = fn_block_config_default(s->in, s->out, s->groups);
    EXPECT_OK(fn_block_create(&l, ctx, &cfg, s->batch, &rng));
    EXPECT_OK(fn_init_uniform(&l->params[FN_BLOCK_GAMMA].value, 0.5f, 1.5f, &rng));
    EXPECT_OK(fn_init_uniform(&l->params[FN_BLOCK_BETA].value, -0.5f, 0.5f, &rng));
    fn_rng data = {.seed = 8, .offset = 0};
    EXPECT_OK(fn_tensor_alloc(x, s->batch, s->in, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(dy, s->batch, s->out, FN_CUDA));
    EXPECT_OK(fn_init_uniform(x, -1.0f, 1.0f, &data));
    EXPECT_OK(fn_init_uniform(dy, -1.0f, 1.0f, &data));
    return l;
}

/* Outputs of one forward + backward: y, dx, then the four gradients. */
static void run_block(fn_math math, const shape *s, float *out[6])
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, math));
    fn_tensor x = {0}, dy = {0}, y = {0}, dx = {0};
    fn_layer *l = make_block(ctx, s, &x, &dy);
    EXPECT_OK(fn_tensor_alloc(&y, s->batch, s->out, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&dx, s->batch, s->in, FN_CUDA));
    EXPECT_OK(fn_layer_forward(l, &x, &y));
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    out[0] = tensor_to_host(&y);
    out[1] = tensor_to_host(&dx);
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++)
        out[2 + i] = tensor_to_host(&l->params[i].grad);
    fn_layer_destroy(l);
    fn_tensor_free(&x);
    fn_tensor_free(&dy);
    fn_tensor_free(&y);
    fn_tensor_free(&dx);
    fn_context_destroy(ctx);
}

static void test_tf32x3_block_matches_fp32(void **state)
{
    (void)state;
    skip_without_gpu();
    static const char *names[6] = {"y", "dx", "dweight", "dbias", "dgamma", "dbeta"};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        const shape *s = &shapes[k];
        const size_t counts[6] = {
            (size_t)s->batch * s->out, (size_t)s->batch * s->in, (size_t)s->out * s->in,
            (size_t)s->out, (size_t)s->out, (size_t)s->out};
        float *ref[6], *got[6];
        run_block(FN_MATH_FP32, s, ref);
        run_block(FN_MATH_TF32X3, s, got);
        for (int q = 0; q < 6; q++) {
            const double e = chk_relative_error_f(got[q], ref[q], counts[q]);
            printf("tf32x3 vs fp32 [%d, %d -> %d, groups %d] %-8s relative error %.3g "
                   "(tolerance 1e-4)\n",
                   s->batch, s->in, s->out, s->groups, names[q], e);
            if (!(e <= 1e-4))
                fail_msg("%s: relative error %.3g", names[q], e);
            free(ref[q]);
            free(got[q]);
        }
    }
}

/* Fused and unfused plain-SGD steps from the same state. */
static void check_fused_step(fn_math math, const shape *s, int with_dx)
{
    const float lr = 0.1f;
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, math));
    fn_tensor x[2] = {{0}}, dy[2] = {{0}}, y = {0}, dx[2] = {{0}};
    fn_layer *l[2];
    for (int k = 0; k < 2; k++) {
        l[k] = make_block(ctx, s, &x[k], &dy[k]);
        EXPECT_OK(fn_tensor_alloc(&dx[k], s->batch, s->in, FN_CUDA));
    }
    EXPECT_OK(fn_tensor_alloc(&y, s->batch, s->out, FN_CUDA));
    float *w0 = tensor_to_host(&l[0]->params[FN_BLOCK_WEIGHT].value);

    fn_param *params[FN_BLOCK_N_PARAMS];
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++)
        params[i] = &l[0]->params[i];
    fn_sgd *opt = NULL;
    const fn_sgd_config cfg = fn_sgd_config_default(lr);
    EXPECT_OK(fn_sgd_create(&opt, ctx, params, FN_BLOCK_N_PARAMS, &cfg));
    EXPECT_OK(fn_layer_zero_grad(l[0]));
    EXPECT_OK(fn_layer_forward(l[0], &x[0], &y));
    EXPECT_OK(fn_layer_backward(l[0], &dy[0], with_dx ? &dx[0] : NULL));
    EXPECT_OK(fn_sgd_step(opt));
    float *g = tensor_to_host(&l[0]->params[FN_BLOCK_WEIGHT].grad);

    EXPECT_OK(fn_layer_forward(l[1], &x[1], &y));
    EXPECT_OK(fn_block_backward_sgd(l[1], &dy[1], with_dx ? &dx[1] : NULL, lr));

    const char *mode = fn_math_name(math);
    if (with_dx) {
        float *a = tensor_to_host(&dx[0]), *b = tensor_to_host(&dx[1]);
        assert_memory_equal(a, b, (size_t)s->batch * s->in * sizeof(float));
        free(a);
        free(b);
    }
    for (int i = FN_BLOCK_BIAS; i < FN_BLOCK_N_PARAMS; i++) {
        float *a = tensor_to_host(&l[0]->params[i].value);
        float *b = tensor_to_host(&l[1]->params[i].value);
        if (memcmp(a, b, (size_t)s->out * sizeof(float)) != 0)
            fail_msg("%s: %s differs between the fused and the unfused step", mode,
                     l[0]->params[i].name);
        float *gr = tensor_to_host(&l[1]->params[i].grad);
        for (int c = 0; c < s->out; c++)
            if (gr[c] != 0.0f)
                fail_msg("%s: the fused step wrote %s's gradient", mode, l[1]->params[i].name);
        free(a);
        free(b);
        free(gr);
    }
    float *a = tensor_to_host(&l[0]->params[FN_BLOCK_WEIGHT].value);
    float *b = tensor_to_host(&l[1]->params[FN_BLOCK_WEIGHT].value);
    float *gw = tensor_to_host(&l[1]->params[FN_BLOCK_WEIGHT].grad);
    double worst = 0.0, moved = 0.0;
    for (size_t i = 0; i < (size_t)s->out * s->in; i++) {
        const double tol = 8.0 * FLT_EPSILON * (fabs((double)w0[i]) + lr * fabs((double)g[i]));
        const double d = fabs((double)a[i] - b[i]);
        if (d > tol)
            fail_msg("%s: weight %zu: fused %.9g, unfused %.9g (tolerance %.3g)", mode, i,
                     (double)b[i], (double)a[i], tol);
        if (gw[i] != 0.0f)
            fail_msg("%s: the fused step wrote the weight's gradient", mode);
        worst = d > worst ? d : worst;
        moved = fmax(moved, fabs((double)b[i] - w0[i]));
    }
    printf("%-6s [%d, %d -> %d] dx %s: fused weight within %.3g of unfused, update up to %.3g\n",
           mode, s->batch, s->in, s->out, with_dx ? "yes" : "no", worst, moved);
    assert_true(moved > 0.0);
    free(a);
    free(b);
    free(gw);
    free(g);
    free(w0);
    fn_sgd_destroy(opt);
    for (int k = 0; k < 2; k++) {
        fn_layer_destroy(l[k]);
        fn_tensor_free(&x[k]);
        fn_tensor_free(&dy[k]);
        fn_tensor_free(&dx[k]);
    }
    fn_tensor_free(&y);
    fn_context_destroy(ctx);
}

static void test_fused_step_matches_unfused(void **state)
{
    (void)state;
    skip_without_gpu();
    for (int mode = 0; mode < FN_MATH_MODES; mode++) /* every mode of device.h */
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
            for (int with_dx = 0; with_dx < 2; with_dx++)
                check_fused_step((fn_math)mode, &shapes[k], with_dx);
}

static void test_fused_step_rejects_misuse(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, FN_MATH_FP32));
    fn_tensor x = {0}, dy = {0};
    fn_layer *l = make_block(ctx, &shapes[0], &x, &dy);
    assert_int_equal(fn_block_backward_sgd(l, &dy, NULL, 0.1f), FN_ERR_INVALID);
    printf("before forward: %s\n", fn_last_error());
    fn_tensor y = {0};
    EXPECT_OK(fn_tensor_alloc(&y, shapes[0].batch, shapes[0].out, FN_CUDA));
    EXPECT_OK(fn_layer_forward(l, &x, &y));
    assert_int_equal(fn_block_backward_sgd(l, &dy, NULL, -1.0f), FN_ERR_INVALID);
    printf("negative lr: %s\n", fn_last_error());
    assert_int_equal(fn_block_backward_sgd(l, &x, NULL, 0.1f), FN_ERR_INVALID);
    printf("wrong dy: %s\n", fn_last_error());
    fn_layer_destroy(l);
    fn_tensor_free(&x);
    fn_tensor_free(&dy);
    fn_tensor_free(&y);
    fn_context_destroy(ctx);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_tf32x3_block_matches_fp32),
              cmocka_unit_test(test_fused_step_matches_unfused),
              cmocka_unit_test(test_fused_step_rejects_misuse))
