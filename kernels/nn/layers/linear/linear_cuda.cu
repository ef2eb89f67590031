/* linear_cuda.cu — the affine output layer y = x W^T + b on the GPU: the
 * products through gemm_cuda.h, a bias-add kernel, and db as a deterministic
 * column sum of dy in one launch (reduce_cuda.cuh), beside dx on the side
 * stream. In a network built for inference (fn_layer.forward_only) forward
 * is the batch-invariant product of infer_product_cuda.h, bias included,
 * so a row's outputs do not depend on the batch it is predicted in. */
#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/gemm_cuda.h"
#include "core/infer_product_cuda.h"
#include "core/launch_cuda.cuh"
#include "nn/layers/linear/linear_impl.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/reduce_cuda.cuh"

static constexpr int kThreads = 256;

/* ---- kernels ---- */

/* y += bias, one float addition an element: the bits a loss's kernel that
 * takes the bias (forward_unbiased) gives too. */
__global__ void add_bias_kernel(float *y /* [N, C] */, const float *bias /* [C] */, size_t count,
                                int C)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] += bias[i % C];
}

/* db's one quantity for the column sums: dy itself. */
struct dy_column_op {
    const float *dy; /* [N, C] */
    int C;
    struct column {};
    __device__ column column_at(int) const { return {}; }
    __device__ void accumulate(float (&acc)[1], column, int n, int c) const
    {
        acc[0] += dy[(size_t)n * C + c];
    }
};

/* ---- launchers ---- */

/* Scratch layout: db partials [fn_row_chunks(max_batch), out], the
 * column tiles' tickets [fn_column_tiles(out)] (ints, zero as allocated),
 * then the products' workspace. */
static size_t partial_floats(const fn_linear *l)
{
    return fn_pad_floats((size_t)fn_row_chunks(l->base.max_batch) * (size_t)l->base.out_features);
}

static size_t column_floats(const fn_linear *l)
{
    return partial_floats(l) + fn_pad_floats((size_t)fn_column_tiles(l->base.out_features));
}

static int *column_tickets(fn_linear *l)
{
    return reinterpret_cast<int *>(l->scratch.data + partial_floats(l));
}

static float *gemm_workspace(fn_linear *l, size_t *floats)
{
    const size_t skip = column_floats(l);
    *floats = fn_tensor_count(&l->scratch) - skip;
    return l->scratch.data + skip;
}

/* The ops' forward_unbiased (layer.h): y = x W^T, the bias left to the
 * caller's kernel (a loss's, which adds it as add_bias_kernel does). */
static fn_status linear_cuda_forward_unbiased(fn_layer *layer, const fn_tensor *x, fn_tensor *y,
                                              const float **bias)
{
    fn_linear *l = (fn_linear *)layer;
    size_t ws_floats;
    float *ws = gemm_workspace(l, &ws_floats);
    FN_TRY(fn_cuda_gemm_forward(layer->ctx, y->data, x->data,
                                l->params[FN_LINEAR_WEIGHT].value.data, x->rows,
                                layer->in_features, layer->out_features, ws, ws_floats));
    l->x = *x;
    *bias = l->params[FN_LINEAR_BIAS].value.data;
    return FN_OK;
}

static fn_status linear_cuda_forward(fn_layer *layer, const fn_tensor *x, fn_tensor *y)
{
    if (layer->forward_only) {
        fn_linear *l = (fn_linear *)layer;
        l->x = *x;
        return fn_cuda_infer_product(layer->ctx, y->data, 0, x->data, 0,
                                     l->params[FN_LINEAR_WEIGHT].value.data,
                                     l->params[FN_LINEAR_BIAS].value.data, x->rows,
                                     layer->in_features, layer->out_features);
    }
    const float *bias;
    FN_TRY(linear_cuda_forward_unbiased(layer, x, y, &bias));
    const int C = layer->out_features;
    const size_t count = (size_t)x->rows * C;
    fn_launch(layer->ctx, add_bias_kernel, (unsigned)fn_stride_blocks(layer->ctx, count, kThreads),
              kThreads, 0, fn_ctx_stream(layer->ctx), y->data, bias, count, C);
    FN_CUDA_CHECK_LAUNCH(add_bias_kernel);
    return FN_OK;
}

/* db, then dW where its product needs no workspace (fp32, tf32: the
 * bf16 and tf32x3 products round or split their operands into the one
 * workspace dx's product uses too). */
static fn_status linear_cuda_side_gradients(fn_linear *l, const fn_tensor *dy, bool with_dweight)
{
    fn_layer *layer = &l->base;
    const int N = layer->batch, C = layer->out_features;
    const fn_param *db = &l->params[FN_LINEAR_BIAS], *dw = &l->params[FN_LINEAR_WEIGHT];
    FN_TRY(fn_column_sums<1>(layer->ctx, column_outputs<1>{{db->grad.data}, {db->grad_beta}},
                             l->scratch.data, column_tickets(l), dy_column_op{dy->data, C}, N, C,
                             fn_row_chunks(N), 0.0f));
    if (!with_dweight)
        return FN_OK;
    return fn_cuda_gemm_dweight(layer->ctx, dw->grad.data, dw->grad_beta, dy->data, l->x.data, N,
                                layer->in_features, C, NULL, 0);
}

/* db (and dW, where it can) on the context's side stream, beside dx on the
 * main one: all read dy and write different outputs. */
static fn_status linear_cuda_backward(fn_layer *layer, const fn_tensor *dy, fn_tensor *dx)
{
    fn_linear *l = (fn_linear *)layer;
    const int N = layer->batch, C = layer->out_features;
    const fn_math_policy *p = fn_math_policy_of(fn_context_math(layer->ctx));
    const bool dweight_beside = !p->split && !p->bf16_operands;
    FN_TRY(fn_cuda_side_begin(layer->ctx));
    fn_status st = linear_cuda_side_gradients(l, dy, dweight_beside);
    fn_cuda_side_end(layer->ctx);

    size_t ws_floats;
    float *ws = gemm_workspace(l, &ws_floats);
    if (st == FN_OK && !dweight_beside)
        st = fn_cuda_gemm_dweight(layer->ctx, l->params[FN_LINEAR_WEIGHT].grad.data,
                                  l->params[FN_LINEAR_WEIGHT].grad_beta, dy->data, l->x.data, N,
                                  layer->in_features, C, ws, ws_floats);
    if (st == FN_OK && dx)
        st = fn_cuda_gemm_dinput(layer->ctx, dx->data, dy->data,
                                 l->params[FN_LINEAR_WEIGHT].value.data, N, layer->in_features, C,
                                 ws, ws_floats);
    /* Joined on failure too (block_products_cuda.cu says why). */
    const fn_status joined = fn_cuda_join(layer->ctx);
    return st != FN_OK ? st : joined;
}

static void linear_cuda_destroy(fn_layer *layer)
{
    fn_linear *l = (fn_linear *)layer;
    /* fn_tensor_free clears the descriptor, so a release that frees the
     * scratch as well finds nothing left to free. */
    fn_tensor_free(&l->scratch);
    fn_linear_release(l);
}

extern "C" const fn_layer_ops fn_linear_cuda_ops = {
    .kind = "linear",
    .forward = linear_cuda_forward,
    .backward = linear_cuda_backward,
    .destroy = linear_cuda_destroy,
    .backward_sgd = NULL, /* the net's fallback: backward, then fn_sgd_update */
    .set_pass = NULL,
    .forward_unbiased = linear_cuda_forward_unbiased,
    .bf16_input = NULL, /* its dW product rounds the float input again in backward */
    .forward_bf16 = NULL,
};

extern "C" fn_status fn_linear_cuda_setup(fn_linear *l)
{
    const fn_layer *b = &l->base;
    const size_t floats =
        column_floats(l) + fn_cuda_gemm_workspace_floats(fn_context_math(b->ctx), b->max_batch,
                                                          b->in_features, b->out_features);
    return fn_cuda_workspace_alloc(&l->scratch, floats);
}
