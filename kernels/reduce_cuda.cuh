/* reduce_cuda.cuh — deterministic sums inside a kernel: a butterfly over a
 * team of lanes and a block-wide sum in a fixed order. No atomics anywhere,
 * so a sum depends only on the launch shape, never on timing.
 *
 * The butterfly leaves the same bits in every lane of a team: at each step a
 * lane adds its partner's value to its own, and both partners hold the sum of
 * the same two operands (float addition is commutative). */
#ifndef FUSENET_KERNELS_REDUCE_CUDA_CUH
#define FUSENET_KERNELS_REDUCE_CUDA_CUH

#include <cuda_runtime.h>

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

/* Sum over the `team` lanes (a power of two <= 32, teams aligned at multiples
 * of it) that share this lane's team. Every lane of the warp must call it. */
template <typename T>
__device__ __forceinline__ T team_sum(T v, int team)
{
    for (int offset = team / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

/* Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the total, added warp by warp in warp order. `smem` holds one
 * value per warp. */
template <typename T>
__device__ __forceinline__ T block_sum(T v, T *smem /* [32] */)
{
    v = team_sum(v, kWarpSize);
    const int warp = threadIdx.x / kWarpSize;
    if (threadIdx.x % kWarpSize == 0)
        smem[warp] = v;
    __syncthreads();
    T total = 0;
    for (int w = 0; w < (int)(blockDim.x / kWarpSize); w++)
        total += smem[w];
    __syncthreads(); /* smem is free for the next call */
    return total;
}

#endif
