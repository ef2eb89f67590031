/* reduce_cuda.cuh — deterministic sums: inside a kernel, a butterfly over a
 * team of lanes and a block-wide sum in a fixed order; across a launch, the
 * column sums over the batch (partial sums of row chunks, then the chunks
 * added in order). No atomics anywhere, so a sum depends only on the launch
 * shape, never on timing.
 *
 * The butterfly leaves the same bits in every lane of a team: at each step a
 * lane adds its partner's value to its own, and both partners hold the sum of
 * the same two operands (float addition is commutative). */
#ifndef FUSENET_KERNELS_REDUCE_CUDA_CUH
#define FUSENET_KERNELS_REDUCE_CUDA_CUH

#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/launch_cuda.cuh"

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

/* ---- column sums over the batch ----
 *
 * Q quantities per element (n, c), summed over the rows n of each column c
 * in two launches: column_partials_kernel writes the sums of each chunk of
 * rows (fn_row_chunks) into partials [chunks, Q, C]; column_finish_kernel
 * adds the chunks in chunk order to the outputs. Op supplies the
 * quantities, trivially copyable (it is a kernel argument):
 *   typename Op::column k = op.column_at(c);   what a column reads once
 *   op.accumulate(acc, k, n, c);               acc[q] += quantity q of (n, c)
 * A kernel that computes its own partials (block_cuda.cu's team path)
 * writes the same layout and shares the finish. */

inline constexpr int kColumnTile = 32; /* partials: columns x thread rows a block */
inline constexpr int kColumnRows = 8;
inline constexpr int kColumnFinishThreads = 256;

/* A block owns kColumnTile columns (coalesced) of one chunk; its thread rows
 * take every kColumnRows-th row, and thread row 0 adds them in order. */
template <int Q, typename Op>
__global__ void __launch_bounds__(kColumnTile * kColumnRows)
column_partials_kernel(float *partials /* [chunks, Q, C] */, Op op, int N, int C,
                       int rows_per_chunk)
{
    __shared__ float smem[Q][kColumnRows][kColumnTile];
    const int c = blockIdx.x * kColumnTile + threadIdx.x;
    const bool active = c < C;
    const int row0 = blockIdx.y * rows_per_chunk;
    const int row1 = min(N, row0 + rows_per_chunk);
    float acc[Q];
#pragma unroll
    for (int q = 0; q < Q; q++)
        acc[q] = 0.0f;
    if (active) {
        const typename Op::column k = op.column_at(c);
        for (int n = row0 + threadIdx.y; n < row1; n += kColumnRows)
            op.accumulate(acc, k, n, c);
    }
#pragma unroll
    for (int q = 0; q < Q; q++)
        smem[q][threadIdx.y][threadIdx.x] = acc[q];
    __syncthreads();
    if (threadIdx.y == 0 && active) {
        for (int q = 0; q < Q; q++) {
            float s = 0.0f;
            for (int r = 0; r < kColumnRows; r++)
                s += smem[q][r][threadIdx.x];
            partials[((size_t)blockIdx.y * Q + q) * C + c] = s;
        }
    }
}

/* Where column_finish_kernel puts quantity q: out[q] [C], combined with
 * what it held by beta[q] (a gradient's grad_beta, param.h). */
template <int Q>
struct column_outputs {
    float *out[Q];
    float beta[Q];
};

/* Sums the chunks' partial sums s, in chunk order, into the outputs (lr ==
 * 0: out = s when beta is 0, never reading out; out + s when 1; else
 * beta out + s rounded once), or applies plain SGD with them (lr > 0: out
 * -= lr * s, rounded as sgd_cuda.cu rounds, so the bits equal a backward
 * followed by an SGD step). */
template <int Q>
__global__ void column_finish_kernel(column_outputs<Q> out,
                                     const float *partials /* [chunks, Q, C] */, float lr,
                                     int chunks, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    float s[Q];
#pragma unroll
    for (int q = 0; q < Q; q++)
        s[q] = 0.0f;
    for (int k = 0; k < chunks; k++) {
#pragma unroll
        for (int q = 0; q < Q; q++)
            s[q] += partials[((size_t)k * Q + q) * C + c];
    }
#pragma unroll
    for (int q = 0; q < Q; q++) {
        float *o = &out.out[q][c];
        const float beta = out.beta[q];
        if (lr > 0.0f)
            *o = __fsub_rn(*o, __fmul_rn(lr, s[q]));
        else
            *o = beta == 0.0f   ? s[q]
                 : beta == 1.0f ? __fadd_rn(*o, s[q])
                                : __fmaf_rn(beta, *o, s[q]);
    }
}

/* The two launches, for N rows in `chunks` chunks (fn_row_chunks(N)). */
template <int Q, typename Op>
static fn_status fn_column_partials(cudaStream_t s, float *partials /* [chunks, Q, C] */,
                                    const Op &op, int N, int C, int chunks)
{
    const dim3 grid((unsigned)((C + kColumnTile - 1) / kColumnTile), (unsigned)chunks);
    column_partials_kernel<Q, Op><<<grid, dim3(kColumnTile, kColumnRows), 0, s>>>(
        partials, op, N, C, fn_chunk_rows(N, chunks));
    FN_CUDA_CHECK_LAUNCH(column_partials_kernel);
    return FN_OK;
}

template <int Q>
static fn_status fn_column_finish(cudaStream_t s, column_outputs<Q> out,
                                  const float *partials /* [chunks, Q, C] */, float lr, int chunks,
                                  int C)
{
    column_finish_kernel<Q>
        <<<(unsigned)((C + kColumnFinishThreads - 1) / kColumnFinishThreads),
           kColumnFinishThreads, 0, s>>>(out, partials, lr, chunks, C);
    FN_CUDA_CHECK_LAUNCH(column_finish_kernel);
    return FN_OK;
}

#endif
