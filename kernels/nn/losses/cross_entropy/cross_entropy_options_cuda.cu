/* cross_entropy_options_cuda.cu — cross-entropy with class weights and
 * label smoothing on the GPU (src/nn/losses/cross_entropy/cross_entropy_options.h). One block
 * first adds the rows' label weights in a fixed order into W (a double in
 * the reduce buffer's last free slot); then one warp a row computes the
 * row's loss and gradient, both divided by W, and the block's partial sum
 * and correct count go into the reduce buffer's halves as
 * loss_cuda.cu's cross-entropy does; the losses' shared finish (or a loss
 * tally's) adds them in order. The weights travel by value in the
 * kernels' arguments. The arithmetic is cross_entropy_options_cpu.c's, in
 * double; no atomics. */
#include <math.h>
#include <stdint.h>

#include "nn/losses/cross_entropy/cross_entropy_options.h"
#include "nn/loss_backends.h"
#include "nn/loss_rows_cuda.cuh"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/reduce_cuda.cuh"

static constexpr int kThreads = 256;
static constexpr int kWarps = kThreads / kWarpSize;
/* As loss_cuda.cu's cross-entropy: partial sums in the first half, the
 * counts (ints) after them; W in the buffer's last slot before the
 * result slot. */
static constexpr int kSlots = FN_CUDA_REDUCE_SLOTS / 2;
static constexpr int kWeightSumSlot = FN_CUDA_REDUCE_SLOTS - 1;

/* The class weights by value; has = 0: all 1. */
struct class_weights {
    float w[FN_CE_MAX_WEIGHTS];
    int has;
};

__device__ __forceinline__ double weight_at(const class_weights &cw, int c)
{
    return cw.has ? (double)cw.w[c] : 1.0;
}

/* ---- kernels ---- */

/* inv_w[0] = 1 / sum_n w[labels[n]], the rows added in a fixed order. */
__global__ void __launch_bounds__(kThreads)
label_weight_sum_kernel(double *inv_w /* [1] */, const int32_t *labels /* [N] */, int N,
                        class_weights cw)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    double s = 0.0;
    for (int n = threadIdx.x; n < N; n += blockDim.x)
        s += weight_at(cw, labels[n]);
    s = block_sum(s, smem);
    if (threadIdx.x == 0)
        inv_w[0] = 1.0 / s;
}

/* One warp a row: its loss and gradient (cross_entropy_options.h), both
 * times 1 / W; partials[block] the block's row losses, rows in order;
 * counts[block] its rows whose first largest logit is the label. */
__global__ void __launch_bounds__(kThreads)
smoothed_partial_kernel(double *partials /* [gridDim.x] */, int *counts /* [gridDim.x] */,
                        float *dlogits /* [N, C] or NULL */, const double *inv_w /* [1] */,
                        const float *logits /* [N, C] */, const int32_t *labels /* [N] */, int N,
                        int C, int rows_per_block, class_weights cw, double eps)
{
    FN_GRID_WAIT();
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int row0 = blockIdx.x * rows_per_block, row1 = min(N, row0 + rows_per_block);
    const double scale = inv_w[0];
    double acc = 0.0;
    int correct = 0;
    for (int n = row0 + warp; n < row1; n += kWarps) {
        const float *row = logits + (size_t)n * C;
        const float m = row_max(row, C, lane);
        double z = 0.0, wsum = 0.0, wx = 0.0;
        for (int c = lane; c < C; c += kWarpSize) {
            z += exp((double)row[c] - (double)m);
            wsum += weight_at(cw, c);
            wx += weight_at(cw, c) * (double)row[c];
        }
        z = team_sum(z, kWarpSize);
        wsum = team_sum(wsum, kWarpSize);
        wx = team_sum(wx, kWarpSize);
        const double lse = (double)m + log(z);
        const int label = labels[n];
        const double wy = weight_at(cw, label);
        if (lane == 0)
            acc += ((1.0 - eps) * wy * (lse - (double)row[label]) + eps / C * (wsum * lse - wx)) *
                   scale;
        if (row_argmax(row, C, lane) == label)
            correct++;
        for (int c = lane; dlogits && c < C; c += kWarpSize) {
            const double p = exp((double)row[c] - lse);
            const double g = (1.0 - eps) * wy * (p - (c == label ? 1.0 : 0.0)) +
                             eps / C * (wsum * p - weight_at(cw, c));
            dlogits[(size_t)n * C + c] = (float)(g * scale);
        }
    }
    block_row_partials<kWarps>(partials, counts, acc, correct);
}

/* ---- launchers ---- */

extern "C" fn_status fn_cuda_cross_entropy_smoothed_partials(fn_context *ctx,
                                                             const fn_tensor *logits,
                                                             const int32_t *labels,
                                                             const fn_ce_smoothing *s,
                                                             fn_tensor *dlogits,
                                                             fn_loss_partials *p)
{
    const int N = logits->rows, C = logits->cols;
    if (s->weights && C > FN_CE_MAX_WEIGHTS)
        return fn_fail(FN_ERR_INVALID, "class_weights: %d classes; the GPU takes at most %d", C,
                       FN_CE_MAX_WEIGHTS);
    class_weights cw = {};
    cw.has = s->weights != NULL;
    for (int c = 0; cw.has && c < C; c++)
        cw.w[c] = s->weights[c];
    cudaStream_t stream = fn_ctx_stream(ctx);
    double *partials = (double *)ctx->cuda->reduce;
    int *counts = (int *)(partials + kSlots);
    double *inv_w = partials + kWeightSumSlot;
    fn_launch(ctx, label_weight_sum_kernel, 1, kThreads, 0, stream, inv_w, labels, N, cw);
    FN_CUDA_CHECK_LAUNCH(label_weight_sum_kernel);
    int blocks = (N + kWarps - 1) / kWarps;
    blocks = blocks > kSlots ? kSlots : blocks < 1 ? 1 : blocks;
    const int rows_per_block = (N + blocks - 1) / blocks;
    fn_launch(ctx, smoothed_partial_kernel, (unsigned)blocks, kThreads, 0, stream, partials, counts,
              dlogits ? dlogits->data : NULL, inv_w, logits->data, labels, N, C, rows_per_block, cw,
              (double)s->eps);
    FN_CUDA_CHECK_LAUNCH(smoothed_partial_kernel);
    *p = fn_loss_partials{partials, counts, blocks, 1.0, 0};
    return FN_OK;
}

extern "C" fn_status fn_cuda_cross_entropy_smoothed(fn_context *ctx, const fn_tensor *logits,
                                                    const int32_t *labels,
                                                    const fn_ce_smoothing *s, fn_tensor *loss,
                                                    fn_tensor *dlogits)
{
    fn_loss_partials p;
    FN_TRY(fn_cuda_cross_entropy_smoothed_partials(ctx, logits, labels, s, dlogits, &p));
    return fn_cuda_loss_finish(ctx, loss, &p);
}
