/* cuda_state.h — the GPU half of a fn_context: the stream every kernel and
 * product of a network runs on, the cuBLAS handle bound to it, cuBLAS's
 * workspace and a small buffer for the losses' reductions. Allocated once
 * when the context is created. */
#ifndef FUSENET_KERNELS_CUDA_STATE_H
#define FUSENET_KERNELS_CUDA_STATE_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "context.h"

enum { FN_CUDA_REDUCE_SLOTS = 1024 };

struct fn_cuda_state {
    cudaStream_t stream;
    cublasHandle_t cublas;
    void *cublas_workspace; /* [cublas_workspace_bytes] */
    size_t cublas_workspace_bytes;
    /* Per-block partial sums of the losses and the correct-count
     * (loss_cuda.cu): FN_CUDA_REDUCE_SLOTS + 1 doubles, the last one for a
     * result, so a loss never allocates. */
    void *reduce;
};

static inline cudaStream_t fn_ctx_stream(const fn_context *ctx) { return ctx->cuda->stream; }
static inline cublasHandle_t fn_ctx_cublas(const fn_context *ctx) { return ctx->cuda->cublas; }

#endif
