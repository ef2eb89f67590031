/* multi_tensor_cuda.cuh (private) — the device side of a multi-tensor
 * table (multi_tensor.h): its entries and how a kernel's block finds the
 * piece of a tensor it owns. The tensors are cut into kMtChunk-element
 * pieces, numbered across the table; a block takes pieces blockIdx.x,
 * blockIdx.x + gridDim.x, ... and each of its threads kMtPerThread elements
 * of a piece, which a kernel loads together before it writes any: one
 * memory round trip a piece, where a loop of loads and stores through
 * pointers that may alias waits for each in turn (a 4096-element piece
 * took 11 us that way). Each element's arithmetic is the one-tensor
 * kernel's, so the results do not depend on how the work is cut. */
#ifndef FUSENET_OPTIM_MULTI_TENSOR_CUDA_CUH
#define FUSENET_OPTIM_MULTI_TENSOR_CUDA_CUH

#include <stddef.h>

#include <cuda_bf16.h>

#include "core/cuda_state.h"
#include "optim/multi_tensor.h"

inline constexpr int kMtThreads = 256;  /* threads a block */
inline constexpr int kMtPerThread = 4;  /* elements a thread of a piece */
inline constexpr int kMtChunk = kMtThreads * kMtPerThread; /* elements a piece */

struct fn_mt_entry {
    float *value;    /* [n] */
    __nv_bfloat16 *value_bf16; /* [n]: the value's kept bfloat16 copy (param.h), or NULL */
    float *grad;     /* [n] */
    float *state1;   /* [n] or NULL */
    float *state2;   /* [n] or NULL */
    __nv_bfloat16 *state1_bf16; /* [n]: state1 kept in bfloat16 instead (the kernels that
                                 * take it read and write this, not state1), or NULL */
    size_t n;
    long long chunk0; /* the first piece of this tensor */
};

/* A kernel's store of element i's new value v: the value, and its kept
 * bfloat16 copy rounded as fn_cuda_to_bf16 rounds it (ties to even), so
 * the forward that reads the copy sees the bits it would have made. */
__device__ __forceinline__ void mt_store_value(const fn_mt_entry &e, size_t i, float v)
{
    e.value[i] = v;
    if (e.value_bf16)
        e.value_bf16[i] = __float2bfloat16_rn(v);
}

/* State1's element i as float (widened exactly from its bfloat16 form
 * where the entry keeps one), and its store: rounded to the nearest
 * bfloat16 (ties to even) there. */
__device__ __forceinline__ float mt_load_state1(const fn_mt_entry &e, size_t i)
{
    return e.state1_bf16 ? __bfloat162float(e.state1_bf16[i]) : e.state1[i];
}

__device__ __forceinline__ void mt_store_state1(const fn_mt_entry &e, size_t i, float v)
{
    if (e.state1_bf16)
        e.state1_bf16[i] = __float2bfloat16_rn(v);
    else
        e.state1[i] = v;
}

/* The entry that holds piece `chunk`: the last whose chunk0 <= chunk
 * (entries in chunk0 order, the first's 0), by bisection. */
__device__ __forceinline__ int mt_entry_of(const fn_mt_entry *table, int n, long long chunk)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (table[mid].chunk0 <= chunk)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Calls piece(e, first, end) for each piece this block takes: the
 * thread's elements of it are first + k * kMtThreads, k < kMtPerThread,
 * those below end. */
template <class Piece>
__device__ __forceinline__ void mt_for_each_piece(const fn_mt_entry *table, int n, long long chunks,
                                                  Piece piece)
{
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        /* a copy: the piece's stores may alias the table */
        const fn_mt_entry e = table[mt_entry_of(table, n, c)];
        const size_t begin = (size_t)(c - e.chunk0) * kMtChunk;
        const size_t end = begin + kMtChunk < e.n ? begin + kMtChunk : e.n;
        piece(e, begin + threadIdx.x, end);
    }
}

/* The blocks of a multi-tensor launch: a piece each, at most 16 a
 * multiprocessor (launch_cuda.cuh's cap for grid-stride kernels). */
static inline unsigned fn_mt_blocks(const fn_multi_tensor *mt)
{
    const int sms = fn_ctx_sm_count(mt->ctx);
    const long long cap = 16LL * (sms > 0 ? sms : 1);
    const long long b = mt->chunks < cap ? mt->chunks : cap;
    return (unsigned)(b > 0 ? b : 1);
}

#endif
