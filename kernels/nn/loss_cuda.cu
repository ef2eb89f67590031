/* loss_cuda.cu — the losses on the GPU: mean squared error, softmax
 * cross-entropy (stable log-sum-exp, one warp a row) and the correct-count.
 * A tally's step may hand them the bias the predictions still lack (the
 * last layer's, loss_kind.h takes_bias): they add it as they first read
 * each row, and write it back, so the head's bias, the loss, its gradient
 * and its count are one launch.
 *
 * Each loss runs in two kernels: blocks own fixed slices of the data and
 * write one partial sum each (in double) into the context's reduce buffer,
 * then one block adds the partials in order and writes the mean to the
 * [1, 1] loss tensor. The gradient is assigned in the first kernel. The
 * arithmetic is src/nn/loss_cpu.c's, in double. No atomics and no host round
 * trip; only the correct-count synchronises, to hand its number to the host.
 * fn_cuda_cross_entropy_loss_read counts in the loss's own kernels (partial
 * counts in the reduce buffer's second half, so the cross-entropy uses at
 * most half its slots) and its finish kernel puts the value and the count
 * side by side in the buffer's last slot: one 8-byte copy reads both.
 * The _partials variants describe the partial sums (and counts) they left
 * (loss_kind.h) and, given a tally's `into`, finish them into the
 * device's running sums in their last block to arrive
 * (loss_tally_finish_cuda.cuh): the whole loss, its gradient and its
 * count in one launch; nothing leaves the device. */
#include <math.h>
#include <stdint.h>

#include "nn/loss_backends.h"
#include "fusenet/loss_kind.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/reduce_cuda.cuh"
#include "nn/loss_rows_cuda.cuh"
#include "nn/loss_tally_finish_cuda.cuh"

static constexpr int kThreads = kTallyFinishThreads; /* a block may finish a tally's sums */
static constexpr int kWarps = kThreads / kWarpSize;
static constexpr size_t kMinPerBlock = 4 * kThreads; /* MSE: elements a block at least */
/* Cross-entropy blocks at most: its double partials fill the reduce
 * buffer's first half, the partial counts of the _read variant the second. */
static constexpr int kCrossEntropySlots = FN_CUDA_REDUCE_SLOTS / 2;

/* The last slot of the reduce buffer: what fn_cuda_cross_entropy_loss_read
 * copies to the host. */
struct loss_result {
    float loss;
    int correct;
};
static_assert(sizeof(loss_result) == sizeof(double), "one reduce slot");

/* ---- kernels ---- */

/* y += bias, in place, as the layer's own forward adds it. */
__global__ void add_pred_bias_kernel(float *y /* [N, C] */, const float *bias /* [C] */,
                                     size_t count, int C)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] += bias[i % C];
}

/* partials[block] = sum of (pred - target)^2 over the block's slice;
 * dpred = 2 (pred - target) / count; with bias, pred += bias first (pred
 * [count / C, C]); with into.sums, the last block finishes the partials
 * into a tally. */
__global__ void __launch_bounds__(kThreads)
mse_partial_kernel(double *partials /* [gridDim.x] */, float *dpred /* [count] or NULL */,
                   float *pred /* [count] */, const float *bias /* [C] or NULL */,
                   const float *target /* [count] */, size_t count, int C, size_t per_block,
                   double scale, fn_loss_tally_into into)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    const size_t i0 = (size_t)blockIdx.x * per_block;
    const size_t i1 = min(count, i0 + per_block);
    double s = 0.0;
    for (size_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        float p = pred[i];
        if (bias) {
            p += bias[i % C];
            pred[i] = p;
        }
        const double d = (double)p - (double)target[i];
        s += d * d;
        if (dpred)
            dpred[i] = (float)(2.0 * d * scale);
    }
    s = block_sum(s, smem);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = s;
    tally_finish_last(into, partials, NULL, scale);
}

/* One warp a row: loss_n = logsumexp(row) - row[label], gradient
 * (softmax(row) - onehot(label)) * scale; partials[block] = the sum of the
 * block's row losses, rows in order; counts[block], when given, the block's
 * rows whose first largest logit is at the label. With bias, a warp
 * first adds it to its row of logits (written back) and reads the sums
 * after; with into.sums, the last block finishes the partials into a
 * tally. */
__global__ void __launch_bounds__(kThreads)
cross_entropy_partial_kernel(double *partials /* [gridDim.x] */, int *counts /* [gridDim.x] or NULL */,
                             float *dlogits /* [N, C] or NULL */, float *logits /* [N, C] */,
                             const float *bias /* [C] or NULL */, const int32_t *labels /* [N] */,
                             int N, int C, int rows_per_block, double scale,
                             fn_loss_tally_into into)
{
    FN_GRID_WAIT();
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int row0 = blockIdx.x * rows_per_block;
    const int row1 = min(N, row0 + rows_per_block);
    double acc = 0.0;
    int correct = 0;
    for (int n = row0 + warp; n < row1; n += kWarps) {
        float *row = logits + (size_t)n * C;
        if (bias) {
            for (int c = lane; c < C; c += kWarpSize)
                row[c] += bias[c];
            __syncwarp(); /* every lane reads the whole row below */
        }
        const float m = row_max(row, C, lane);
        double s = 0.0;
        for (int c = lane; c < C; c += kWarpSize)
            s += exp((double)row[c] - (double)m);
        s = team_sum(s, kWarpSize);
        const double lse = (double)m + log(s);
        const int label = labels[n];
        if (lane == 0)
            acc += lse - (double)row[label];
        if (counts && row_argmax(row, C, lane) == label)
            correct++;
        if (dlogits) {
            for (int c = lane; c < C; c += kWarpSize) {
                const double p = exp((double)row[c] - lse) - (c == label ? 1.0 : 0.0);
                dlogits[(size_t)n * C + c] = (float)(p * scale);
            }
        }
    }
    block_row_partials<kWarps>(partials, counts, acc, correct);
    tally_finish_last(into, partials, counts, scale);
}

/* loss[0] = (sum of the partials, in order of their blocks' slices) * scale;
 * with counts, result = that value and the sum of the counts. */
__global__ void __launch_bounds__(kThreads)
loss_finish_kernel(float *loss /* [1] */, loss_result *result /* or NULL */,
                   const double *partials /* [count] */, const int *counts /* [count] or NULL */,
                   int count, double scale)
{
    FN_GRID_WAIT();
    __shared__ double smem[kWarpSize];
    double s = 0.0, c = 0.0; /* c: a sum of ints below 2^31, exact in double */
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        s += partials[i];
        if (counts)
            c += (double)counts[i];
    }
    s = block_sum(s, smem);
    if (counts)
        c = block_sum(c, smem);
    if (threadIdx.x == 0) {
        const float value = (float)(s * scale);
        loss[0] = value;
        if (result)
            *result = loss_result{value, (int)c};
    }
}

/* One warp a row: partials[block] = rows whose first largest logit is at the
 * label's column. */
__global__ void __launch_bounds__(kThreads)
count_correct_partial_kernel(int *partials /* [gridDim.x] */, const float *logits /* [N, C] */,
                             const int32_t *labels /* [N] */, int N, int C, int rows_per_block)
{
    FN_GRID_WAIT();
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int row0 = blockIdx.x * rows_per_block;
    const int row1 = min(N, row0 + rows_per_block);
    int correct = 0;
    for (int n = row0 + warp; n < row1; n += kWarps) {
        const float *row = logits + (size_t)n * C;
        const int at = row_argmax(row, C, lane);
        if (lane == 0 && at == labels[n])
            correct++;
    }
    block_row_partials<kWarps>(NULL, partials, 0.0, correct);
}

__global__ void count_finish_kernel(int *total /* [1] */, const int *partials /* [count] */,
                                    int count)
{
    FN_GRID_WAIT();
    int s = 0;
    for (int i = 0; i < count; i++)
        s += partials[i];
    total[0] = s;
}

/* ---- launchers ---- */

/* Blocks of one row-wise kernel: a warp a row, at most the reduce slots. */
static int row_blocks(int rows, int most, int *rows_per_block)
{
    int blocks = (rows + kWarps - 1) / kWarps;
    if (blocks > most)
        blocks = most;
    if (blocks < 1)
        blocks = 1;
    *rows_per_block = (rows + blocks - 1) / blocks;
    return blocks;
}

static fn_status finish_loss(fn_context *ctx, fn_tensor *loss, const double *partials, int count,
                             double scale)
{
    fn_launch(ctx, loss_finish_kernel, 1, kThreads, 0, fn_ctx_stream(ctx), loss->data, NULL,
              partials, NULL, count, scale);
    FN_CUDA_CHECK_LAUNCH(loss_finish_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_loss_finish(fn_context *ctx, fn_tensor *loss,
                                         const fn_loss_partials *p)
{
    fn_launch(ctx, loss_finish_kernel, 1, kThreads, 0, fn_ctx_stream(ctx), loss->data, NULL,
              p->sums, NULL, p->count, p->scale);
    FN_CUDA_CHECK_LAUNCH(loss_finish_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_mse_loss(fn_context *ctx, const fn_tensor *pred,
                                      const fn_tensor *target, fn_tensor *loss, fn_tensor *dpred)
{
    const size_t count = fn_tensor_count(pred);
    size_t blocks = (count + kMinPerBlock - 1) / kMinPerBlock;
    if (blocks > FN_CUDA_REDUCE_SLOTS)
        blocks = FN_CUDA_REDUCE_SLOTS;
    const size_t per_block = (count + blocks - 1) / blocks;
    double *partials = (double *)ctx->cuda->reduce;
    fn_launch(ctx, mse_partial_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), partials,
              dpred ? dpred->data : NULL, pred->data, NULL, target->data, count, pred->cols,
              per_block, 1.0 / (double)count, fn_loss_tally_into{});
    FN_CUDA_CHECK_LAUNCH(mse_partial_kernel);
    return finish_loss(ctx, loss, partials, (int)blocks, 1.0 / (double)count);
}

/* The cross-entropy's per-block partial sums (and, with counts, the
 * correct rows) of the context's reduce buffer, and dlogits; the number of
 * blocks, for the kernel that finishes the sums. */
static fn_status cross_entropy_partials(fn_context *ctx, const fn_tensor *logits,
                                        const float *bias, const int32_t *labels,
                                        fn_tensor *dlogits, int with_counts,
                                        const fn_loss_tally_into *into, int *blocks)
{
    const int N = logits->rows, C = logits->cols;
    int rows_per_block;
    *blocks = row_blocks(N, kCrossEntropySlots, &rows_per_block);
    double *partials = (double *)ctx->cuda->reduce;
    int *counts = with_counts ? (int *)(partials + kCrossEntropySlots) : NULL;
    fn_launch(ctx, cross_entropy_partial_kernel, (unsigned)*blocks, kThreads, 0, fn_ctx_stream(ctx),
              partials, counts, dlogits ? dlogits->data : NULL, logits->data, bias, labels, N, C,
              rows_per_block, 1.0 / (double)N, into ? *into : fn_loss_tally_into{});
    FN_CUDA_CHECK_LAUNCH(cross_entropy_partial_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_cross_entropy_loss(fn_context *ctx, const fn_tensor *logits,
                                                const int32_t *labels, fn_tensor *loss,
                                                fn_tensor *dlogits)
{
    int blocks;
    FN_TRY(cross_entropy_partials(ctx, logits, NULL, labels, dlogits, 0, NULL, &blocks));
    return finish_loss(ctx, loss, (double *)ctx->cuda->reduce, blocks, 1.0 / (double)logits->rows);
}

extern "C" fn_status fn_cuda_cross_entropy_loss_read(fn_context *ctx, const fn_tensor *logits,
                                                     const int32_t *labels, fn_tensor *loss,
                                                     fn_tensor *dlogits, float *value,
                                                     int *correct)
{
    cudaStream_t s = fn_ctx_stream(ctx);
    int blocks;
    FN_TRY(cross_entropy_partials(ctx, logits, NULL, labels, dlogits, 1, NULL, &blocks));
    double *partials = (double *)ctx->cuda->reduce;
    int *counts = (int *)(partials + kCrossEntropySlots);
    loss_result *result = (loss_result *)(partials + FN_CUDA_REDUCE_SLOTS);
    const double scale = 1.0 / (double)logits->rows;
    fn_launch(ctx, loss_finish_kernel, 1, kThreads, 0, s, loss->data, result, partials, counts,
              blocks, scale);
    FN_CUDA_CHECK_LAUNCH(loss_finish_kernel);
    loss_result host;
    FN_CUDA_CHECK(cudaMemcpyAsync(&host, result, sizeof host, cudaMemcpyDeviceToHost, s));
    FN_CUDA_CHECK(cudaStreamSynchronize(s));
    *value = host.loss;
    *correct = host.correct;
    return FN_OK;
}

extern "C" fn_status fn_cuda_count_correct(fn_context *ctx, const fn_tensor *logits,
                                           const int32_t *labels, int *correct)
{
    const int N = logits->rows, C = logits->cols;
    cudaStream_t s = fn_ctx_stream(ctx);
    int rows_per_block;
    const int blocks = row_blocks(N, FN_CUDA_REDUCE_SLOTS, &rows_per_block);
    int *partials = (int *)ctx->cuda->reduce;
    int *total = partials + FN_CUDA_REDUCE_SLOTS;
    fn_launch(ctx, count_correct_partial_kernel, (unsigned)blocks, kThreads, 0, s, partials,
              logits->data, labels, N, C, rows_per_block);
    FN_CUDA_CHECK_LAUNCH(count_correct_partial_kernel);
    fn_launch(ctx, count_finish_kernel, 1, 1, 0, s, total, partials, blocks);
    FN_CUDA_CHECK_LAUNCH(count_finish_kernel);
    FN_CUDA_CHECK(cudaMemcpyAsync(correct, total, sizeof *total, cudaMemcpyDeviceToHost, s));
    FN_CUDA_CHECK(cudaStreamSynchronize(s));
    return FN_OK;
}

extern "C" fn_status fn_cuda_mse_partials(fn_context *ctx, const fn_tensor *pred,
                                          const float *pred_bias, const fn_tensor *target,
                                          fn_tensor *dpred, const fn_loss_tally_into *into,
                                          fn_loss_partials *p)
{
    const size_t count = fn_tensor_count(pred);
    size_t blocks = (count + kMinPerBlock - 1) / kMinPerBlock;
    if (blocks > FN_CUDA_REDUCE_SLOTS)
        blocks = FN_CUDA_REDUCE_SLOTS;
    const size_t per_block = (count + blocks - 1) / blocks;
    double *partials = (double *)ctx->cuda->reduce;
    fn_launch(ctx, mse_partial_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), partials,
              dpred ? dpred->data : NULL, pred->data, pred_bias, target->data, count, pred->cols,
              per_block, 1.0 / (double)count, into ? *into : fn_loss_tally_into{});
    FN_CUDA_CHECK_LAUNCH(mse_partial_kernel);
    *p = fn_loss_partials{partials, NULL, (int)blocks, 1.0 / (double)count, into != NULL};
    return FN_OK;
}

extern "C" fn_status fn_cuda_cross_entropy_partials(fn_context *ctx, const fn_tensor *logits,
                                                    const float *logits_bias,
                                                    const int32_t *labels, fn_tensor *dlogits,
                                                    const fn_loss_tally_into *into,
                                                    fn_loss_partials *p)
{
    int blocks;
    FN_TRY(cross_entropy_partials(ctx, logits, logits_bias, labels, dlogits, 1, into, &blocks));
    const double *partials = (const double *)ctx->cuda->reduce;
    *p = fn_loss_partials{partials, (const int *)(partials + kCrossEntropySlots), blocks,
                          1.0 / (double)logits->rows, into != NULL};
    return FN_OK;
}

extern "C" fn_status fn_cuda_add_pred_bias(fn_context *ctx, const fn_tensor *pred,
                                           const float *bias)
{
    const size_t count = fn_tensor_count(pred);
    fn_launch(ctx, add_pred_bias_kernel, (unsigned)fn_stride_blocks(ctx, count, kThreads), kThreads,
              0, fn_ctx_stream(ctx), pred->data, bias, count, pred->cols);
    FN_CUDA_CHECK_LAUNCH(add_pred_bias_kernel);
    return FN_OK;
}
