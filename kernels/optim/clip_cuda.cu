/* clip_cuda.cu — the clipper's CUDA backend (clip.h): per tensor, a fixed
 * number of blocks each sum the squares of a grid-stride share of its
 * gradient in double into partials; one block adds every partial in order,
 * takes the square root and torch's coefficient max_norm / (norm + 1e-6),
 * clamped to 1; then each tensor is scaled by it where it is below 1. The
 * coefficient never leaves the device, so applying never waits; the norm
 * is copied back only when asked for. No atomics: the launch shapes depend
 * only on the tensors' sizes, so the norm does too. Over the ranks
 * (clip.c) the same partials and their sum in the same order, brought to
 * pinned host memory and polled for within $FN_COMM_TIMEOUT_S (the stream
 * holds the gradient sums' collectives before it: a rank that stopped
 * answering gives an error, never a hang), and once clip.c has the factor
 * from every rank's sum the same scaling with the factor passed by value. */
#include <stdlib.h>
#include <time.h>

#include "optim/clip_backends.h"
#include "core/cuda_check.h"
#include "core/cuda_runtime.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/reduce_cuda.cuh"
#include "dist/host_collectives.h"

static constexpr int kThreads = 256;
static constexpr int kMaxBlocks = 128; /* per tensor: a fixed cap, not the device's */

/* The workspace: [partials][norm, coef, sum]. */
typedef struct clip_result {
    double norm;
    double coef; /* min(1, max_norm / (norm + 1e-6)) */
    double sum;  /* over the ranks: this rank's sum of squares */
} clip_result;

/* ---- kernels ---- */

__global__ void __launch_bounds__(kThreads)
sum_squares_kernel(double *partials /* [gridDim.x] */, const float *grad /* [n] */, size_t n)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    double acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double g = grad[i];
        acc += g * g;
    }
    acc = block_sum(acc, smem);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = acc;
}

/* Every partial added by one block, in the same order for both kernels
 * below (the one-process norm and a rank's sum equal bit for bit). */
__device__ double sum_partials(const double *partials /* [count] */, int count, double *smem)
{
    double acc = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        acc += partials[i];
    return block_sum(acc, smem);
}

__global__ void __launch_bounds__(kThreads)
clip_finish_kernel(clip_result *result, const double *partials /* [count] */, int count,
                   double max_norm)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    const double acc = sum_partials(partials, count, smem);
    if (threadIdx.x == 0) {
        const double norm = sqrt(acc);
        const double coef = max_norm / (norm + FN_CLIP_EPS);
        result->norm = norm;
        result->coef = coef < 1.0 ? coef : 1.0;
    }
}

__global__ void __launch_bounds__(kThreads)
scale_kernel(float *grad /* [n] */, const clip_result *result, size_t n)
{
    FN_GRID_WAIT();
    const double coef = result->coef;
    if (!(coef < 1.0))
        return;
    const float factor = (float)coef;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        grad[i] = __fmul_rn(grad[i], factor);
}

/* Over the ranks: the rank's sum of squares alone. */
__global__ void __launch_bounds__(kThreads)
local_sum_kernel(clip_result *result, const double *partials /* [count] */, int count)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    const double acc = sum_partials(partials, count, smem);
    if (threadIdx.x == 0)
        result->sum = acc;
}

/* Over the ranks: grad *= factor, as scale_kernel with the factor known. */
__global__ void __launch_bounds__(kThreads)
scale_by_kernel(float *grad /* [n] */, float factor, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        grad[i] = __fmul_rn(grad[i], factor);
}

/* ---- launchers and the backend ---- */

static int blocks_for(size_t n)
{
    const size_t b = (n + kThreads - 1) / kThreads;
    return b < 1 ? 1 : b > (size_t)kMaxBlocks ? kMaxBlocks : (int)b;
}

static clip_result *result_of(const fn_clip *clip, int total_blocks)
{
    return (clip_result *)((double *)clip->workspace + total_blocks);
}

static int total_blocks(const fn_clip *clip)
{
    int total = 0;
    for (int i = 0; i < clip->n_params; i++)
        total += clip->blocks[i];
    return total;
}

static fn_status cuda_create(fn_clip *clip)
{
    clip->blocks = (int *)malloc((size_t)clip->n_params * sizeof *clip->blocks);
    if (!clip->blocks)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a gradient clipper");
    for (int i = 0; i < clip->n_params; i++)
        clip->blocks[i] = blocks_for(fn_tensor_count(&clip->params[i]->grad));
    const size_t bytes = (size_t)total_blocks(clip) * sizeof(double) + sizeof(clip_result);
    return fn_cuda_alloc(&clip->workspace, bytes);
}

/* Every tensor's partial sums of squares into the workspace; the count. */
static fn_status launch_partials(fn_clip *clip, int *count)
{
    cudaStream_t s = fn_ctx_stream(clip->ctx);
    double *partials = (double *)clip->workspace;
    int offset = 0;
    for (int i = 0; i < clip->n_params; i++) {
        const fn_tensor *g = &clip->params[i]->grad;
        fn_launch(clip->ctx, sum_squares_kernel, (unsigned)clip->blocks[i], kThreads, 0, s,
                  partials + offset, g->data, fn_tensor_count(g));
        FN_CUDA_CHECK_LAUNCH(sum_squares_kernel);
        offset += clip->blocks[i];
    }
    *count = offset;
    return FN_OK;
}

static fn_status cuda_apply(fn_clip *clip)
{
    cudaStream_t s = fn_ctx_stream(clip->ctx);
    double *partials = (double *)clip->workspace;
    int offset = 0;
    FN_TRY(launch_partials(clip, &offset));
    clip_result *result = result_of(clip, offset);
    fn_launch(clip->ctx, clip_finish_kernel, 1, kThreads, 0, s, result, partials, offset,
              clip->max_norm);
    FN_CUDA_CHECK_LAUNCH(clip_finish_kernel);
    for (int i = 0; i < clip->n_params; i++) {
        fn_tensor *g = &clip->params[i]->grad;
        const size_t n = fn_tensor_count(g);
        fn_launch(clip->ctx, scale_kernel, (unsigned)fn_stride_blocks(clip->ctx, n, kThreads),
                  kThreads, 0, s, g->data, result, n);
        FN_CUDA_CHECK_LAUNCH(scale_kernel);
    }
    return FN_OK;
}

static fn_status cuda_last_norm(fn_clip *clip, double *norm)
{
    cudaStream_t s = fn_ctx_stream(clip->ctx);
    const clip_result *result = result_of(clip, total_blocks(clip));
    FN_CUDA_CHECK(cudaMemcpyAsync(norm, &result->norm, sizeof *norm, cudaMemcpyDeviceToHost, s));
    FN_CUDA_CHECK(cudaStreamSynchronize(s));
    return FN_OK;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The stream's work done, polled until $FN_COMM_TIMEOUT_S: it includes
 * the wait for every rank's gradient sums. */
static fn_status wait_stream(cudaStream_t s)
{
    const double timeout = fn_comm_timeout_s(), deadline = now() + timeout;
    for (;;) {
        const cudaError_t q = cudaStreamQuery(s);
        if (q == cudaSuccess)
            return FN_OK;
        if (q != cudaErrorNotReady)
            FN_CUDA_CHECK_NAMED(q, "the gradient norm's sum of squares (cudaStreamQuery)");
        if (now() > deadline)
            return fn_fail(FN_ERR_CUDA,
                           "the gradient norm's sum of squares, after the gradient sums, did not "
                           "finish in %.0f s ($FN_COMM_TIMEOUT_S): another rank stopped answering",
                           timeout);
        const struct timespec pause = {0, 20000}; /* 20 us */
        nanosleep(&pause, NULL);
    }
}

static fn_status cuda_sum_squares(fn_clip *clip, double *sum)
{
    if (!clip->host_sum)
        FN_TRY(fn_cuda_host_alloc((void **)&clip->host_sum, sizeof *clip->host_sum));
    cudaStream_t s = fn_ctx_stream(clip->ctx);
    int count = 0;
    FN_TRY(launch_partials(clip, &count));
    clip_result *result = result_of(clip, count);
    fn_launch(clip->ctx, local_sum_kernel, 1, kThreads, 0, s, result,
              (const double *)clip->workspace, count);
    FN_CUDA_CHECK_LAUNCH(local_sum_kernel);
    FN_CUDA_CHECK(cudaMemcpyAsync(clip->host_sum, &result->sum, sizeof *clip->host_sum,
                                  cudaMemcpyDeviceToHost, s));
    FN_TRY(wait_stream(s));
    *sum = *clip->host_sum;
    return FN_OK;
}

static fn_status cuda_scale(fn_clip *clip, double coef)
{
    cudaStream_t s = fn_ctx_stream(clip->ctx);
    const float factor = (float)coef;
    for (int i = 0; i < clip->n_params; i++) {
        fn_tensor *g = &clip->params[i]->grad;
        const size_t n = fn_tensor_count(g);
        fn_launch(clip->ctx, scale_by_kernel, (unsigned)fn_stride_blocks(clip->ctx, n, kThreads),
                  kThreads, 0, s, g->data, factor, n);
        FN_CUDA_CHECK_LAUNCH(scale_by_kernel);
    }
    return FN_OK;
}

static void cuda_release(fn_clip *clip)
{
    fn_cuda_free(clip->workspace);
    clip->workspace = NULL;
    free(clip->blocks);
    clip->blocks = NULL;
    fn_cuda_host_free(clip->host_sum);
    clip->host_sum = NULL;
}

extern "C" const fn_clip_backend fn_clip_cuda_backend = {
    .device = FN_CUDA,
    .create = cuda_create,
    .apply = cuda_apply,
    .last_norm = cuda_last_norm,
    .sum_squares = cuda_sum_squares,
    .scale = cuda_scale,
    .release = cuda_release,
};
