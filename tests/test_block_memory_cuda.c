/* test_block_memory_cuda.c — the fused block on caller-owned GPU memory
 * (block_memory.h) against a block layer of the same parameters on the
 * same GPU, in every math mode: the output, the input gradient and the
 * parameter gradients are the same bits (the same kernels on the same
 * values), with the work on the context's own stream and on another
 * (fn_context_use_stream with the legacy default stream, as PyTorch's
 * default stream is); the scratch is sized by
 * fn_block_memory_scratch_floats and a GPU call without one is refused;
 * a caller's stream captured into a CUDA graph (as torch.cuda.graph
 * captures PyTorch's) takes forward and backward, and the graph's replay
 * gives the same bits. Skips without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "expect.h"
#include "fusenet/block_memory.h"
#include "fusenet/device.h"
#include "test_main.h"

enum { ROWS = 37, IN = 48, OUT = 64, GROUPS = 8 };

/* Device arrays of one call, each a tensor the test owns. */
typedef struct device_arrays {
    fn_tensor x, z, mean, rstd, y, dy, dz, dx, dw, db, dgamma, dbeta, scratch;
} device_arrays;

static void alloc(fn_tensor *t, int rows, int cols)
{
    EXPECT_OK(fn_tensor_alloc(t, rows, cols, FN_CUDA));
    EXPECT_OK(fn_tensor_zero(t));
}

static void alloc_arrays(device_arrays *d, size_t scratch)
{
    alloc(&d->x, ROWS, IN);
    alloc(&d->z, ROWS, OUT);
    alloc(&d->mean, ROWS, GROUPS);
    alloc(&d->rstd, ROWS, GROUPS);
    alloc(&d->y, ROWS, OUT);
    alloc(&d->dy, ROWS, OUT);
    alloc(&d->dz, ROWS, OUT);
    alloc(&d->dx, ROWS, IN);
    alloc(&d->dw, OUT, IN);
    alloc(&d->db, 1, OUT);
    alloc(&d->dgamma, 1, OUT);
    alloc(&d->dbeta, 1, OUT);
    alloc(&d->scratch, 1, (int)scratch);
}

static void free_arrays(device_arrays *d)
{
    fn_tensor *all[] = {&d->x,  &d->z,  &d->mean, &d->rstd, &d->y,      &d->dy,    &d->dz,
                        &d->dx, &d->dw, &d->db,   &d->dgamma, &d->dbeta, &d->scratch};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        fn_tensor_free(all[i]);
}

static void fill(fn_tensor *t, float lo, float hi, uint64_t *s)
{
    size_t n = fn_tensor_count(t);
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005u + 1442695040888963407u;
        v[i] = lo + (hi - lo) * (float)((*s >> 40) / (double)(1u << 24));
    }
    EXPECT_OK(fn_tensor_upload(t, v, n));
    free(v);
}

/* The layer's forward and backward from zeroed gradients, then the same
 * on the caller's arrays; other_stream: the caller's calls on the legacy
 * default stream. */
static void check_math(fn_math math, int other_stream)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, math));
    fn_block_config cfg = fn_block_config_default(IN, OUT, GROUPS);
    cfg.negative_slope = 0.2f;
    fn_layer *layer = NULL;
    fn_rng rng = {.seed = 7};
    EXPECT_OK(fn_block_create(&layer, ctx, &cfg, ROWS, &rng));
    const size_t scratch = fn_block_memory_scratch_floats(ctx, &cfg, ROWS);
    assert_true(scratch > 0); /* the column sums' partials at least */
    device_arrays d, ref;
    alloc_arrays(&d, scratch);
    alloc_arrays(&ref, 1);
    uint64_t s = 3;
    fill(&d.x, -2, 2, &s);
    fill(&d.dy, -1, 1, &s);
    fill(&fn_layer_param(layer, "gamma")->value, 0.5f, 1.5f, &s);
    fill(&fn_layer_param(layer, "beta")->value, -0.5f, 0.5f, &s);
    EXPECT_OK(fn_layer_forward(layer, &d.x, &ref.y));
    EXPECT_OK(fn_layer_zero_grad(layer));
    EXPECT_OK(fn_layer_backward(layer, &d.dy, &ref.dx));

    const fn_block_memory m = {
        .x = d.x.data,
        .weight = fn_layer_param(layer, "weight")->value.data,
        .bias = fn_layer_param(layer, "bias")->value.data,
        .gamma = fn_layer_param(layer, "gamma")->value.data,
        .beta = fn_layer_param(layer, "beta")->value.data,
        .z = d.z.data, .mean = d.mean.data, .rstd = d.rstd.data, .scratch = d.scratch.data};
    if (other_stream)
        EXPECT_OK(fn_context_use_stream(ctx, NULL)); /* 0: the legacy default stream */
    EXPECT_OK(fn_block_memory_forward(ctx, &cfg, ROWS, &m, d.y.data));
    EXPECT_OK(fn_block_memory_backward(ctx, &cfg, ROWS, &m, d.dy.data, d.dz.data, d.dx.data,
                                       d.dw.data, d.db.data, d.dgamma.data, d.dbeta.data));
    if (other_stream)
        EXPECT_OK(fn_context_own_stream(ctx));
    EXPECT_OK(fn_context_sync(ctx));
    expect_tensors_equal(&d.y, &ref.y, "y on the caller's arrays");
    expect_tensors_equal(&d.dx, &ref.dx, "dx on the caller's arrays");
    expect_tensors_equal(&d.dw, &fn_layer_param(layer, "weight")->grad,
                         "dW on the caller's arrays");
    expect_tensors_equal(&d.db, &fn_layer_param(layer, "bias")->grad, "db on the caller's arrays");
    expect_tensors_equal(&d.dgamma, &fn_layer_param(layer, "gamma")->grad,
                         "dgamma on the caller's arrays");
    expect_tensors_equal(&d.dbeta, &fn_layer_param(layer, "beta")->grad,
                         "dbeta on the caller's arrays");

    fn_block_memory no_scratch = m;
    no_scratch.scratch = NULL;
    assert_int_equal(fn_block_memory_forward(ctx, &cfg, ROWS, &no_scratch, d.y.data),
                     FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "scratch is NULL"));
    free_arrays(&d);
    free_arrays(&ref);
    fn_layer_destroy(layer);
    fn_context_destroy(ctx);
}

static void test_same_bits_as_the_layer(void **state)
{
    (void)state;
    skip_without_gpu();
    const fn_math maths[] = {FN_MATH_FP32, FN_MATH_TF32, FN_MATH_TF32X3, FN_MATH_BF16};
    for (size_t i = 0; i < sizeof maths / sizeof maths[0]; i++)
        for (int other = 0; other <= 1; other++)
            check_math(maths[i], other);
}

/* The caller's stream is captured in global mode (PyTorch's default)
 * after a first call on the context's own stream, so use_stream moves the
 * context from a stream outside the capture to one inside it; the graph's
 * replay gives the layer's bits, in fp32 and bf16 (whose weight copy and
 * caches are in the scratch). */
static void check_captured(fn_math math)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, math));
    fn_block_config cfg = fn_block_config_default(IN, OUT, GROUPS);
    fn_layer *layer = NULL;
    fn_rng rng = {.seed = 11};
    EXPECT_OK(fn_block_create(&layer, ctx, &cfg, ROWS, &rng));
    const size_t scratch = fn_block_memory_scratch_floats(ctx, &cfg, ROWS);
    device_arrays d, ref;
    alloc_arrays(&d, scratch);
    alloc_arrays(&ref, 1);
    uint64_t s = 5;
    fill(&d.x, -2, 2, &s);
    fill(&d.dy, -1, 1, &s);
    EXPECT_OK(fn_layer_forward(layer, &d.x, &ref.y));
    EXPECT_OK(fn_layer_zero_grad(layer));
    EXPECT_OK(fn_layer_backward(layer, &d.dy, &ref.dx));
    const fn_block_memory m = {
        .x = d.x.data,
        .weight = fn_layer_param(layer, "weight")->value.data,
        .bias = fn_layer_param(layer, "bias")->value.data,
        .gamma = fn_layer_param(layer, "gamma")->value.data,
        .beta = fn_layer_param(layer, "beta")->value.data,
        .z = d.z.data, .mean = d.mean.data, .rstd = d.rstd.data, .scratch = d.scratch.data};
    EXPECT_OK(fn_block_memory_forward(ctx, &cfg, ROWS, &m, d.y.data)); /* the warm-up */
    EXPECT_OK(fn_context_sync(ctx));
    EXPECT_OK(fn_tensor_zero(&d.y));
    EXPECT_OK(fn_context_sync(ctx));

    cudaStream_t stream = NULL;
    assert_int_equal(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT_OK(fn_context_use_stream(ctx, stream));
    EXPECT_OK(fn_block_memory_forward(ctx, &cfg, ROWS, &m, d.y.data));
    EXPECT_OK(fn_block_memory_backward(ctx, &cfg, ROWS, &m, d.dy.data, d.dz.data, d.dx.data,
                                       d.dw.data, d.db.data, d.dgamma.data, d.dbeta.data));
    cudaGraph_t graph = NULL;
    assert_int_equal(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = NULL;
    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 2; replay++)
        assert_int_equal(cudaGraphLaunch(exec, stream), cudaSuccess);
    /* Back to the context's own stream, ordered after the replays. */
    EXPECT_OK(fn_context_own_stream(ctx));
    EXPECT_OK(fn_context_sync(ctx));
    expect_tensors_equal(&d.y, &ref.y, "y replayed");
    expect_tensors_equal(&d.dx, &ref.dx, "dx replayed");
    expect_tensors_equal(&d.dw, &fn_layer_param(layer, "weight")->grad, "dW replayed");
    expect_tensors_equal(&d.dgamma, &fn_layer_param(layer, "gamma")->grad, "dgamma replayed");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    free_arrays(&d);
    free_arrays(&ref);
    fn_layer_destroy(layer);
    fn_context_destroy(ctx);
}

static void test_a_captured_stream_replays_the_same_bits(void **state)
{
    (void)state;
    skip_without_gpu();
    check_captured(FN_MATH_FP32);
    check_captured(FN_MATH_BF16);
}

static void test_streams_of_a_cpu_context_are_refused(void **state)
{
    (void)state;
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32));
    assert_int_equal(fn_context_use_stream(ctx, NULL), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "not on a GPU"));
    fn_block_config cfg = fn_block_config_default(IN, OUT, GROUPS);
    assert_int_equal(fn_block_memory_scratch_floats(ctx, &cfg, ROWS), 0);
    fn_context_destroy(ctx);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_same_bits_as_the_layer),
          cmocka_unit_test(test_a_captured_stream_replays_the_same_bits),
          cmocka_unit_test(test_streams_of_a_cpu_context_are_refused))
