/* bce_cuda.cu — binary cross-entropy on logits on the GPU (src/nn/losses/bce/bce.h):
 * blocks own fixed slices of the elements and write one partial sum each
 * (in double) into the first half of the context's reduce buffer and
 * their count of labels predicted right into the second, assigning the
 * gradient as they go; the losses' shared finish (loss_cuda.cu) adds the
 * partials in order, or a loss tally does (the _partials form). The
 * arithmetic is src/nn/losses/bce/bce_cpu.c's, in double; no atomics. The pos_weight
 * travel by value in the kernel's arguments, so a CUDA graph captures
 * them. */
#include <math.h>

#include "nn/losses/bce/bce.h"
#include "nn/loss_backends.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/reduce_cuda.cuh"

static constexpr int kThreads = 256;
static constexpr size_t kMinPerBlock = 4 * kThreads; /* elements a block at least */
/* Blocks at most: the double partials fill the reduce buffer's first
 * half, the int counts the second. */
static constexpr size_t kSlots = FN_CUDA_REDUCE_SLOTS / 2;

/* The pos_weight by value; has = 0: all 1. */
struct pos_weights {
    float w[FN_BCE_MAX_WEIGHTS];
    int has;
};

/* ---- kernels ---- */

/* partials[block] = the sum of the block's slice of element losses,
 * counts[block] its labels predicted right; dpred the gradient * scale. */
__global__ void __launch_bounds__(kThreads)
bce_partial_kernel(double *partials /* [gridDim.x] */, int *counts /* [gridDim.x] */,
                   float *dpred /* [count] or NULL */, const float *pred /* [count] */,
                   const float *target /* [count] */, size_t count, size_t cols,
                   size_t per_block, double scale, pos_weights pw)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    const size_t i0 = (size_t)blockIdx.x * per_block;
    const size_t i1 = min(count, i0 + per_block);
    double s = 0.0, right = 0.0; /* right: a count below 2^31, exact in double */
    for (size_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        const double x = (double)pred[i], y = (double)target[i];
        const double w = pw.has ? 1.0 + ((double)pw.w[i % cols] - 1.0) * y : 1.0;
        const double softplus_neg = log1p(exp(-fabs(x))) + fmax(-x, 0.0);
        s += (1.0 - y) * x + w * softplus_neg;
        if (dpred)
            dpred[i] = (float)(((1.0 - y) - w / (1.0 + exp(x))) * scale);
        right += (x > 0.0) == (y >= 0.5) ? 1.0 : 0.0;
    }
    s = block_sum(s, smem);
    right = block_sum(right, smem);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = s;
        counts[blockIdx.x] = (int)right;
    }
}

/* ---- launchers ---- */

extern "C" fn_status fn_cuda_bce_partials(fn_context *ctx, const fn_tensor *pred,
                                          const fn_tensor *target, const float *pos_weight,
                                          fn_tensor *dpred, fn_loss_partials *p)
{
    const size_t count = fn_tensor_count(pred), cols = (size_t)pred->cols;
    if (pos_weight && cols > FN_BCE_MAX_WEIGHTS)
        return fn_fail(FN_ERR_INVALID, "pos_weight: %zu labels; at most %d take weights", cols,
                       (int)FN_BCE_MAX_WEIGHTS);
    size_t blocks = (count + kMinPerBlock - 1) / kMinPerBlock;
    if (blocks > kSlots)
        blocks = kSlots;
    const size_t per_block = (count + blocks - 1) / blocks;
    double *partials = (double *)ctx->cuda->reduce;
    int *counts = (int *)(partials + kSlots);
    const double scale = 1.0 / (double)count;
    pos_weights pw = {};
    pw.has = pos_weight != NULL;
    for (size_t c = 0; pos_weight && c < cols; c++)
        pw.w[c] = pos_weight[c];
    fn_launch(ctx, bce_partial_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), partials,
              counts, dpred ? dpred->data : NULL, pred->data, target->data, count, cols, per_block,
              scale, pw);
    FN_CUDA_CHECK_LAUNCH(bce_partial_kernel);
    *p = fn_loss_partials{partials, counts, (int)blocks, scale, 0};
    return FN_OK;
}

extern "C" fn_status fn_cuda_bce_loss(fn_context *ctx, const fn_tensor *pred,
                                      const fn_tensor *target, const float *pos_weight,
                                      fn_tensor *loss, fn_tensor *dpred, int *correct)
{
    fn_loss_partials p;
    FN_TRY(fn_cuda_bce_partials(ctx, pred, target, pos_weight, dpred, &p));
    if (correct) {
        int host[kSlots];
        cudaStream_t s = fn_ctx_stream(ctx);
        FN_CUDA_CHECK(cudaMemcpyAsync(host, p.counts, (size_t)p.count * sizeof(int),
                                      cudaMemcpyDeviceToHost, s));
        FN_CUDA_CHECK(cudaStreamSynchronize(s));
        long long right = 0;
        for (int b = 0; b < p.count; b++)
            right += host[b];
        *correct = (int)right;
    }
    return fn_cuda_loss_finish(ctx, loss, &p);
}
