/* test_block_memory.c — the fused block on caller-owned memory
 * (block_memory.h) against a block layer of the same parameters on the
 * CPU: the output, the caches, the input gradient and the parameter
 * gradients are the same bits; parameter gradients accumulate; and bad
 * calls fail with a message naming the call and the problem. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "fusenet/block_memory.h"
#include "fusenet/device.h"
#include "test_main.h"

enum { ROWS = 9, IN = 13, OUT = 24, GROUPS = 4 };

/* The arrays of one call, the caller's. */
typedef struct arrays {
    float x[ROWS * IN], w[OUT * IN], b[OUT], gamma[OUT], beta[OUT];
    float z[ROWS * OUT], mean[ROWS * GROUPS], rstd[ROWS * GROUPS];
    float y[ROWS * OUT], dy[ROWS * OUT], dz[ROWS * OUT], dx[ROWS * IN];
    float dw[OUT * IN], db[OUT], dgamma[OUT], dbeta[OUT];
} arrays;

static void fill(float *v, int n, float lo, float hi, uint64_t *s)
{
    for (int i = 0; i < n; i++) {
        *s = *s * 6364136223846793005u + 1442695040888963407u;
        v[i] = lo + (hi - lo) * (float)((*s >> 40) / (double)(1u << 24));
    }
}

static fn_block_memory memory_of(arrays *a)
{
    return (fn_block_memory){.x = a->x,
                             .weight = a->w,
                             .bias = a->b,
                             .gamma = a->gamma,
                             .beta = a->beta,
                             .z = a->z,
                             .mean = a->mean,
                             .rstd = a->rstd};
}

static void download(const fn_tensor *t, float *host)
{
    assert_int_equal(fn_tensor_download(t, host, fn_tensor_count(t)), FN_OK);
}

static void test_same_bits_as_the_layer(void **state)
{
    (void)state;
    fn_context *ctx = NULL;
    assert_int_equal(fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32), FN_OK);
    fn_block_config cfg = fn_block_config_default(IN, OUT, GROUPS);
    cfg.negative_slope = 0.2f;
    fn_layer *layer = NULL;
    fn_rng rng = {.seed = 7};
    assert_int_equal(fn_block_create(&layer, ctx, &cfg, ROWS, &rng), FN_OK);
    arrays *a = calloc(1, sizeof *a), *ref = calloc(1, sizeof *ref);
    uint64_t s = 3;
    fill(a->x, ROWS * IN, -2, 2, &s);
    fill(a->gamma, OUT, 0.5f, 1.5f, &s);
    fill(a->beta, OUT, -0.5f, 0.5f, &s);
    fill(a->dy, ROWS * OUT, -1, 1, &s);
    download(&fn_layer_param(layer, "weight")->value, a->w);
    download(&fn_layer_param(layer, "bias")->value, a->b);
    assert_int_equal(fn_tensor_upload(&fn_layer_param(layer, "gamma")->value, a->gamma, OUT),
                     FN_OK);
    assert_int_equal(fn_tensor_upload(&fn_layer_param(layer, "beta")->value, a->beta, OUT), FN_OK);
    /* The layer's values. */
    fn_tensor x = fn_tensor_view(a->x, ROWS, IN, FN_CPU),
              y = fn_tensor_view(ref->y, ROWS, OUT, FN_CPU);
    fn_tensor dy = fn_tensor_view(a->dy, ROWS, OUT, FN_CPU);
    fn_tensor dx = fn_tensor_view(ref->dx, ROWS, IN, FN_CPU);
    assert_int_equal(fn_layer_forward(layer, &x, &y), FN_OK);
    assert_int_equal(fn_layer_zero_grad(layer), FN_OK);
    assert_int_equal(fn_layer_backward(layer, &dy, &dx), FN_OK);
    download(&fn_layer_param(layer, "weight")->grad, ref->dw);
    download(&fn_layer_param(layer, "bias")->grad, ref->db);
    download(&fn_layer_param(layer, "gamma")->grad, ref->dgamma);
    download(&fn_layer_param(layer, "beta")->grad, ref->dbeta);
    /* The same on the caller's arrays. */
    const fn_block_memory m = memory_of(a);
    assert_int_equal(fn_block_memory_forward(ctx, &cfg, ROWS, &m, a->y), FN_OK);
    assert_int_equal(fn_block_memory_backward(ctx, &cfg, ROWS, &m, a->dy, a->dz, a->dx, a->dw,
                                              a->db, a->dgamma, a->dbeta),
                     FN_OK);
    assert_memory_equal(a->y, ref->y, sizeof a->y);
    assert_memory_equal(a->dx, ref->dx, sizeof a->dx);
    assert_memory_equal(a->dw, ref->dw, sizeof a->dw);
    assert_memory_equal(a->db, ref->db, sizeof a->db);
    assert_memory_equal(a->dgamma, ref->dgamma, sizeof a->dgamma);
    assert_memory_equal(a->dbeta, ref->dbeta, sizeof a->dbeta);
    /* Parameter gradients and dx are assigned (a second backward gives the
     * same bits, whatever the arrays held); NULL dx is allowed. */
    assert_int_equal(fn_block_memory_backward(ctx, &cfg, ROWS, &m, a->dy, a->dz, NULL, a->dw, a->db,
                                              a->dgamma, a->dbeta),
                     FN_OK);
    assert_memory_equal(a->dw, ref->dw, sizeof a->dw);
    assert_memory_equal(a->dbeta, ref->dbeta, sizeof a->dbeta);
    assert_memory_equal(a->dx, ref->dx, sizeof a->dx);
    fn_layer_destroy(layer);
    fn_context_destroy(ctx);
    free(a);
    free(ref);
}

static void test_bad_calls_name_the_problem(void **state)
{
    (void)state;
    fn_context *ctx = NULL;
    assert_int_equal(fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32), FN_OK);
    arrays *a = calloc(1, sizeof *a);
    fn_block_memory m = memory_of(a);
    fn_block_config cfg = fn_block_config_default(IN, OUT, 5);
    assert_int_equal(fn_block_memory_forward(ctx, &cfg, ROWS, &m, a->y), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "fn_block_memory_forward: in 13, out 24, groups 5"));
    cfg.groups = GROUPS;
    assert_int_equal(fn_block_memory_forward(ctx, &cfg, 0, &m, a->y), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "rows 0 must be at least 1"));
    m.z = NULL;
    assert_int_equal(fn_block_memory_forward(ctx, &cfg, ROWS, &m, a->y), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "is NULL"));
    m = memory_of(a);
    assert_int_equal(fn_block_memory_backward(ctx, &cfg, ROWS, &m, a->dy, NULL, a->dx, a->dw, a->db,
                                              a->dgamma, a->dbeta),
                     FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "fn_block_memory_backward"));
    fn_context_destroy(ctx);
    free(a);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_same_bits_as_the_layer),
          cmocka_unit_test(test_bad_calls_name_the_problem))
