/* launch_cuda.cuh — launch geometry shared by the kernels' launchers: grid
 * sizes of grid-stride kernels, the row chunks of the deterministic column
 * sums (reduce_cuda.cuh), and the padding of sub-buffers carved out of one
 * workspace. */
#ifndef FUSENET_KERNELS_LAUNCH_CUDA_CUH
#define FUSENET_KERNELS_LAUNCH_CUDA_CUH

#include <stddef.h>

#include "core/cuda_state.h"

/* Grid-stride kernels get at most this many blocks per multiprocessor: two
 * waves of 256-thread blocks (8 resident a multiprocessor), enough to hide
 * memory latency, few enough that every thread loops over several
 * elements. Their results do not depend on the grid size. */
inline constexpr size_t kStrideBlocksPerSm = 16;

/* Blocks for a grid-stride kernel over `count` elements, `threads` a block:
 * one element a thread, capped at kStrideBlocksPerSm per multiprocessor. */
static inline size_t fn_stride_blocks(const fn_context *ctx, size_t count, int threads)
{
    const size_t blocks = (count + (size_t)threads - 1) / (size_t)threads;
    const int sms = fn_ctx_sm_count(ctx);
    const size_t cap = kStrideBlocksPerSm * (size_t)(sms > 0 ? sms : 1);
    return blocks < cap ? blocks : cap;
}

/* Column sums over the batch are split into row chunks: at least
 * kRowsPerChunk rows a chunk, at most kMaxChunks chunks (which bounds the
 * scratch of partial sums, [chunks, ..., C]). 8 rows is one a warp of the
 * normalisation backward's 8 (block_cuda.cu), so a batch of up to 256 rows
 * spreads over as many blocks as it can: a 256-row batch of 512 columns in
 * groups of 64 is 4 column tiles of 32 chunks, not of 8. */
inline constexpr int kRowsPerChunk = 8;
inline constexpr int kMaxChunks = 32;

static inline int fn_row_chunks(int rows)
{
    const int c = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
    return c < 1 ? 1 : c > kMaxChunks ? kMaxChunks : c;
}

/* Rows of each chunk (the last may have fewer) when `rows` are split into
 * `chunks`. */
static inline int fn_chunk_rows(int rows, int chunks) { return (rows + chunks - 1) / chunks; }

/* Sub-buffers of a workspace start on 256-byte boundaries, as cuBLAS's
 * fastest kernels and float4 loads like them. */
inline constexpr size_t kAlignFloats = 64;

static inline size_t fn_pad_floats(size_t n)
{
    return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

#endif
