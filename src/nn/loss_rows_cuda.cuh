/* loss_rows_cuda.cuh (private) — what the classification losses' kernels
 * (kernels/loss_cuda.cu, kernels/cross_entropy_options_cuda.cu) share: a
 * warp's argmax of one row. */
#ifndef FUSENET_NN_LOSS_ROWS_CUDA_CUH
#define FUSENET_NN_LOSS_ROWS_CUDA_CUH

#include <stdint.h>

#include "core/reduce_cuda.cuh"

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

#endif
