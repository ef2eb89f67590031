/* huber_cuda.cu — the Huber loss on the GPU (src/nn/losses/huber/huber.h): blocks own
 * fixed slices of the elements and write one partial sum each (in double)
 * into the context's reduce buffer, assigning the gradient as they go;
 * the losses' shared finish (loss_cuda.cu) adds the partials in order, or
 * a loss tally does (the _partials form). The arithmetic is
 * src/nn/losses/huber/huber_cpu.c's, in double; no atomics. */
#include <math.h>

#include "nn/losses/huber/huber.h"
#include "nn/loss_backends.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/reduce_cuda.cuh"

static constexpr int kThreads = 256;
static constexpr size_t kMinPerBlock = 4 * kThreads; /* elements a block at least */

/* ---- kernels ---- */

/* partials[block] = the sum of the block's slice of element losses;
 * dpred = clamp(e, -delta, delta) * scale. */
__global__ void __launch_bounds__(kThreads)
huber_partial_kernel(double *partials /* [gridDim.x] */, float *dpred /* [count] or NULL */,
                     const float *pred /* [count] */, const float *target /* [count] */,
                     size_t count, size_t per_block, double delta, double scale)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    const size_t i0 = (size_t)blockIdx.x * per_block;
    const size_t i1 = min(count, i0 + per_block);
    double s = 0.0;
    for (size_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        const double e = (double)pred[i] - (double)target[i];
        const double a = fabs(e);
        s += a < delta ? 0.5 * e * e : delta * (a - 0.5 * delta);
        if (dpred)
            dpred[i] = (float)(fmin(fmax(e, -delta), delta) * scale);
    }
    s = block_sum(s, smem);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = s;
}

/* ---- launchers ---- */

extern "C" fn_status fn_cuda_huber_partials(fn_context *ctx, const fn_tensor *pred,
                                            const fn_tensor *target, float delta,
                                            fn_tensor *dpred, fn_loss_partials *p)
{
    const size_t count = fn_tensor_count(pred);
    size_t blocks = (count + kMinPerBlock - 1) / kMinPerBlock;
    if (blocks > FN_CUDA_REDUCE_SLOTS)
        blocks = FN_CUDA_REDUCE_SLOTS;
    const size_t per_block = (count + blocks - 1) / blocks;
    double *partials = (double *)ctx->cuda->reduce;
    const double scale = 1.0 / (double)count;
    fn_launch(ctx, huber_partial_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx),
              partials, dpred ? dpred->data : NULL, pred->data, target->data, count, per_block,
              (double)delta, scale);
    FN_CUDA_CHECK_LAUNCH(huber_partial_kernel);
    *p = fn_loss_partials{partials, NULL, (int)blocks, scale, 0};
    return FN_OK;
}

extern "C" fn_status fn_cuda_huber_loss(fn_context *ctx, const fn_tensor *pred,
                                        const fn_tensor *target, float delta, fn_tensor *loss,
                                        fn_tensor *dpred)
{
    fn_loss_partials p;
    FN_TRY(fn_cuda_huber_partials(ctx, pred, target, delta, dpred, &p));
    return fn_cuda_loss_finish(ctx, loss, &p);
}
