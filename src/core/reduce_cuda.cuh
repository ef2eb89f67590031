/* reduce_cuda.cuh — deterministic sums: inside a kernel, a butterfly over a
 * team of lanes and a block-wide sum in a fixed order; across the blocks
 * of a launch, partial results added in a fixed order by the block that
 * arrives last (block_arrived_last), as the column sums over the batch do
 * (partial sums of row chunks, then the chunks added in order). No float
 * atomics, so a sum depends only on the launch shape, never on timing: the
 * integer counter that finds the last block is the one atomic, and it
 * picks only which block adds, never the order of the additions.
 *
 * The butterfly leaves the same bits in every lane of a team: at each step a
 * lane adds its partner's value to its own, and both partners hold the sum of
 * the same two operands (float addition is commutative). */
#ifndef FUSENET_KERNELS_REDUCE_CUDA_CUH
#define FUSENET_KERNELS_REDUCE_CUDA_CUH

#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/kernel_launch_cuda.cuh"
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
 * in one launch: each block sums one chunk of rows (fn_row_chunks) of one
 * tile of columns into partials [chunks, Q, C]; the last block of a tile
 * to arrive (block_arrived_last) adds the tile's chunks in chunk order and
 * writes the sums through column_store. Which block arrives last depends
 * on timing, the order of the additions does not, so the sums are the
 * same bits on every run. Op supplies the quantities, trivially copyable
 * (it is a kernel argument):
 *   typename Op::column k = op.column_at(c);   what a column reads once
 *   op.accumulate(acc, k, n, c);               acc[q] += quantity q of (n, c)
 * A kernel that computes its own partials (block_cuda.cu's team path)
 * writes the same layout and finishes with the same two functions. */

inline constexpr int kColumnTile = 32; /* columns x thread rows a block */
inline constexpr int kColumnRows = 8;

/* Where the column sums go: out[q] [C], combined with what it held by
 * beta[q] (a gradient's grad_beta, param.h). */
template <int Q>
struct column_outputs {
    float *out[Q];
    float beta[Q];
};

/* The one place a column sum s is written into its output. lr == 0: into
 * a gradient by its grad_beta (0: out = s, never reading out; 1: out + s;
 * else beta out + s rounded once); lr > 0: applied by plain SGD (out -= lr
 * * s, rounded as sgd_cuda.cu rounds, so the bits equal a backward followed
 * by an SGD step). */
__device__ __forceinline__ void column_store(float *out, float s, float beta, float lr)
{
    if (lr > 0.0f)
        *out = __fsub_rn(*out, __fmul_rn(lr, s));
    else
        *out = beta == 0.0f   ? s
               : beta == 1.0f ? __fadd_rn(*out, s)
                              : __fmaf_rn(beta, *out, s);
}

/* Called by every thread of each of `blocks` blocks that share a ticket,
 * once the block's partial results are written; true in the block that
 * arrives last (in all its threads), which then finishes the work of all
 * of them. ticket: their arrival count, 0 between launches: the last
 * block sets it back to 0, so a later launch or a graph's replay starts
 * afresh. The one atomic of the sums: it picks which block adds the
 * partial results, never the order of the additions. */
__device__ __forceinline__ bool block_arrived_last(int *ticket, int blocks)
{
    __shared__ int last;
    __threadfence(); /* this block's partials reach memory before its ticket */
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        last = atomicAdd(ticket, 1) == blocks - 1;
        if (last)
            atomicExch(ticket, 0); /* every block has arrived */
    }
    __syncthreads();
    if (last)
        __threadfence(); /* the other blocks' partials are read after their tickets */
    return last;
}

/* Sum of quantity q of column c over the chunks, in chunk order (through
 * L2: the partials were written by other blocks of this launch). Sixteen
 * loads are issued before their additions, so the last block waits for L2
 * once every sixteen chunks rather than once a chunk; the order of the
 * additions is the chunks' all the same. */
template <int Q>
__device__ __forceinline__ float column_chunks_sum(const float *partials /* [chunks, Q, C] */,
                                                   int q, int c, int chunks, int C)
{
    constexpr int kInFlight = 16;
    const float *at = partials + (size_t)q * C + c;
    const size_t stride = (size_t)Q * C;
    float s = 0.0f;
    int k = 0;
    for (; k + kInFlight <= chunks; k += kInFlight) {
        float v[kInFlight];
#pragma unroll
        for (int i = 0; i < kInFlight; i++)
            v[i] = __ldcg(at + (size_t)(k + i) * stride);
#pragma unroll
        for (int i = 0; i < kInFlight; i++)
            s += v[i];
    }
    for (; k < chunks; k++)
        s += __ldcg(at + (size_t)k * stride);
    return s;
}

/* A block owns kColumnTile columns (coalesced) of one chunk; its thread rows
 * take every kColumnRows-th row, and thread row 0 adds them in order; the
 * tile's last block writes the sums. */
template <int Q, typename Op>
__global__ void __launch_bounds__(kColumnTile * kColumnRows)
column_sums_kernel(column_outputs<Q> out, float *partials /* [chunks, Q, C] */,
                   int *tickets /* [column tiles], 0 */, Op op, int N, int C, int rows_per_chunk,
                   float lr)
{
    FN_GRID_WAIT();
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
    if (!block_arrived_last(&tickets[blockIdx.x], (int)gridDim.y))
        return;
    static_assert(Q <= kColumnRows, "one thread row a quantity");
    if (threadIdx.y < Q && active) /* thread row q finishes quantity q */
        column_store(out.out[threadIdx.y] + c,
                     column_chunks_sum<Q>(partials, threadIdx.y, c, gridDim.y, C),
                     out.beta[threadIdx.y], lr);
}

/* Column tiles of column_sums_kernel: the tickets it needs. */
static inline int fn_column_tiles(int C) { return (C + kColumnTile - 1) / kColumnTile; }

/* The one launch, for N rows in `chunks` chunks (fn_row_chunks(N));
 * tickets: [fn_column_tiles(C)] ints, zero before the first launch. */
template <int Q, typename Op>
static fn_status fn_column_sums(const fn_context *ctx, column_outputs<Q> out,
                                float *partials /* [chunks, Q, C] */, int *tickets, const Op &op,
                                int N, int C, int chunks, float lr)
{
    const dim3 grid((unsigned)fn_column_tiles(C), (unsigned)chunks);
    fn_launch(ctx, column_sums_kernel<Q, Op>, grid, dim3(kColumnTile, kColumnRows), 0,
              fn_ctx_stream(ctx), out, partials, tickets, op, N, C, fn_chunk_rows(N, chunks), lr);
    FN_CUDA_CHECK_LAUNCH(column_sums_kernel);
    return FN_OK;
}

#endif
