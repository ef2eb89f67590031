/* linear_cuda.cu — the affine output layer y = x W^T + b on the GPU: the
 * products through gemm_cuda.h, a bias-add kernel, and a deterministic
 * column sum for db (partial sums of row chunks into scratch, then the chunks
 * added in order). */
#include "cuda_backend.h"
#include "cuda_check.h"
#include "cuda_state.h"
#include "gemm_cuda.h"
#include "linear_impl.h"

static constexpr int kThreads = 256;
static constexpr int kColumnTile = 32; /* column sums: columns x rows a block */
static constexpr int kColumnRows = 8;
static constexpr int kMaxChunks = 32;
static constexpr int kRowsPerChunk = 32;
static constexpr size_t kAlignFloats = 64;

/* ---- kernels ---- */

__global__ void add_bias_kernel(float *y /* [N, C] */, const float *bias /* [C] */, size_t count,
                                int C)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] += bias[i % C];
}

/* partials[chunk, c] = sum of dy[n, c] over the chunk's rows; a block owns
 * kColumnTile columns (coalesced) and adds its thread rows in order. */
__global__ void __launch_bounds__(kColumnTile * kColumnRows)
column_partials_kernel(float *partials /* [chunks, C] */, const float *dy /* [N, C] */, int N,
                       int C, int rows_per_chunk)
{
    __shared__ float smem[kColumnRows][kColumnTile];
    const int c = blockIdx.x * kColumnTile + threadIdx.x;
    const int row0 = blockIdx.y * rows_per_chunk;
    const int row1 = min(N, row0 + rows_per_chunk);
    float s = 0.0f;
    if (c < C) {
        for (int n = row0 + threadIdx.y; n < row1; n += kColumnRows)
            s += dy[(size_t)n * C + c];
    }
    smem[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float total = 0.0f;
        for (int r = 0; r < kColumnRows; r++)
            total += smem[r][threadIdx.x];
        partials[(size_t)blockIdx.y * C + c] = total;
    }
}

/* dbias[c] += the chunks' partial sums, in chunk order. */
__global__ void column_finish_kernel(float *dbias /* [C] */, const float *partials /* [chunks, C] */,
                                     int chunks, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    float s = 0.0f;
    for (int k = 0; k < chunks; k++)
        s += partials[(size_t)k * C + c];
    dbias[c] += s;
}

/* ---- launchers ---- */

static int row_chunks(int n)
{
    const int c = (n + kRowsPerChunk - 1) / kRowsPerChunk;
    return c < 1 ? 1 : c > kMaxChunks ? kMaxChunks : c;
}

/* Scratch layout: db partials [row_chunks(max_batch), out], then the
 * products' workspace. */
static size_t partial_floats(const fn_linear *l)
{
    const size_t n = (size_t)row_chunks(l->base.max_batch) * (size_t)l->base.out_features;
    return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

static float *gemm_workspace(fn_linear *l, size_t *floats)
{
    const size_t skip = partial_floats(l);
    *floats = fn_tensor_count(&l->scratch) - skip;
    return l->scratch.data + skip;
}

static fn_status linear_cuda_forward(fn_layer *layer, const fn_tensor *x, fn_tensor *y)
{
    fn_linear *l = (fn_linear *)layer;
    const int N = x->rows, C = layer->out_features;
    size_t ws_floats;
    float *ws = gemm_workspace(l, &ws_floats);
    FN_TRY(fn_cuda_gemm_forward(layer->ctx, y->data, x->data,
                                l->params[FN_LINEAR_WEIGHT].value.data, N, layer->in_features, C,
                                ws, ws_floats));
    const size_t count = (size_t)N * C;
    size_t blocks = (count + kThreads - 1) / kThreads;
    if (blocks > 132 * 16)
        blocks = 132 * 16; /* a few waves on an H200; the kernel strides */
    add_bias_kernel<<<(unsigned)blocks, kThreads, 0, fn_ctx_stream(layer->ctx)>>>(
        y->data, l->params[FN_LINEAR_BIAS].value.data, count, C);
    FN_CUDA_CHECK_LAUNCH(add_bias_kernel);
    l->x = *x;
    l->batch = N;
    return FN_OK;
}

static fn_status linear_cuda_backward(fn_layer *layer, const fn_tensor *dy, fn_tensor *dx)
{
    fn_linear *l = (fn_linear *)layer;
    const int N = l->batch, C = layer->out_features;
    cudaStream_t s = fn_ctx_stream(layer->ctx);
    float *partials = l->scratch.data;
    const int chunks = row_chunks(N);
    const int rows_per_chunk = (N + chunks - 1) / chunks;
    const dim3 grid((unsigned)((C + kColumnTile - 1) / kColumnTile), (unsigned)chunks);
    column_partials_kernel<<<grid, dim3(kColumnTile, kColumnRows), 0, s>>>(partials, dy->data, N,
                                                                            C, rows_per_chunk);
    FN_CUDA_CHECK_LAUNCH(column_partials_kernel);
    column_finish_kernel<<<(unsigned)((C + kThreads - 1) / kThreads), kThreads, 0, s>>>(
        l->params[FN_LINEAR_BIAS].grad.data, partials, chunks, C);
    FN_CUDA_CHECK_LAUNCH(column_finish_kernel);

    size_t ws_floats;
    float *ws = gemm_workspace(l, &ws_floats);
    FN_TRY(fn_cuda_gemm_dweight(layer->ctx, l->params[FN_LINEAR_WEIGHT].grad.data, dy->data,
                                l->x.data, N, layer->in_features, C, ws, ws_floats));
    if (dx)
        FN_TRY(fn_cuda_gemm_dinput(layer->ctx, dx->data, dy->data,
                                   l->params[FN_LINEAR_WEIGHT].value.data, N, layer->in_features,
                                   C, ws, ws_floats));
    return FN_OK;
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
};

extern "C" fn_status fn_linear_cuda_setup(fn_linear *l)
{
    const fn_layer *b = &l->base;
    const size_t floats =
        partial_floats(l) + fn_cuda_gemm_workspace_floats(fn_context_math(b->ctx), b->max_batch,
                                                          b->in_features, b->out_features);
    return fn_cuda_workspace_alloc(&l->scratch, floats);
}
