/* loss_rows_cuda.cuh (private) — what the classification losses' kernels
 * (kernels/nn/loss_cuda.cu, kernels/nn/losses/cross_entropy/cross_entropy_options_cuda.cu) share: a
 * warp's largest value and argmax of one row, and a block's sum of its
 * warps' row losses and counts. */
#ifndef FUSENET_NN_LOSS_ROWS_CUDA_CUH
#define FUSENET_NN_LOSS_ROWS_CUDA_CUH

#include <stdint.h>

#include "core/reduce_cuda.cuh"

/* row's largest value, on every lane of the warp. */
__device__ __forceinline__ float row_max(const float *row /* [C] */, int C, int lane)
{
    float m = -INFINITY;
    for (int c = lane; c < C; c += kWarpSize)
        m = fmaxf(m, row[c]);
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        m = fmaxf(m, __shfl_xor_sync(kFullMask, m, offset));
    return m;
}

/* The column of row's first largest value, on every lane of the warp: a
 * lane scans its columns upwards and keeps the first maximum; merging
 * prefers the larger value, then the lower index, so ties go to the lowest
 * index whatever the order of the merge. */
__device__ __forceinline__ int row_argmax(const float *row /* [C] */, int C, int lane)
{
    float best = -INFINITY;
    int at = INT32_MAX;
    for (int c = lane; c < C; c += kWarpSize) {
        if (at == INT32_MAX || row[c] > best) {
            best = row[c];
            at = c;
        }
    }
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        const float other = __shfl_xor_sync(kFullMask, best, offset);
        const int other_at = __shfl_xor_sync(kFullMask, at, offset);
        if (other > best || (other == best && other_at < at)) {
            best = other;
            at = other_at;
        }
    }
    return at;
}

/* partials[blockIdx.x] = the block's sum of its warps' `loss`, counts[blockIdx.x]
 * the sum of their `correct` (each NULL to leave out), added by thread 0 in
 * warp order, so the bits do not depend on which warp finished first. Every
 * thread of the block calls it once, after its warp's rows; a warp's values
 * are lane 0's. */
template <int kWarps>
__device__ __forceinline__ void block_row_partials(double *partials /* [gridDim.x] or NULL */,
                                                   int *counts /* [gridDim.x] or NULL */,
                                                   double loss, int correct)
{
    __shared__ double warp_loss[kWarps];
    __shared__ int warp_count[kWarps];
    const int warp = threadIdx.x / kWarpSize;
    if (threadIdx.x % kWarpSize == 0) {
        warp_loss[warp] = loss;
        warp_count[warp] = correct;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0;
        int total_correct = 0;
        for (int w = 0; w < kWarps; w++) {
            total += warp_loss[w];
            total_correct += warp_count[w];
        }
        if (partials)
            partials[blockIdx.x] = total;
        if (counts)
            counts[blockIdx.x] = total_correct;
    }
}

#endif
