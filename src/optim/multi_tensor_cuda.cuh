/* multi_tensor_cuda.cuh (private) — the device side of a multi-tensor
 * table (multi_tensor.h): its entries and how a kernel's block finds the
 * piece of a tensor it owns. The tensors are cut into kMtChunk-element
 * pieces, numbered across the table; a block takes pieces blockIdx.x,
 * blockIdx.x + gridDim.x, ... Each element's arithmetic is the one-tensor
 * kernel's, so the results do not depend on how the work is cut. */
#ifndef FUSENET_OPTIM_MULTI_TENSOR_CUDA_CUH
#define FUSENET_OPTIM_MULTI_TENSOR_CUDA_CUH

#include <stddef.h>

#include "core/cuda_state.h"
#include "optim/multi_tensor.h"

inline constexpr int kMtChunk = 4096;  /* elements a piece */
inline constexpr int kMtThreads = 256; /* threads a block */

struct fn_mt_entry {
    float *value;    /* [n] */
    float *grad;     /* [n] */
    float *state1;   /* [n] or NULL */
    float *state2;   /* [n] or NULL */
    size_t n;
    long long chunk0; /* the first piece of this tensor */
};

/* The entry that holds piece `chunk` (entries in chunk0 order; few). */
__device__ __forceinline__ int mt_entry_of(const fn_mt_entry *table, int n, long long chunk)
{
    int k = 0;
    while (k + 1 < n && table[k + 1].chunk0 <= chunk)
        k++;
    return k;
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
