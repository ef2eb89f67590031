/* cuda_state.h — the GPU half of a fn_context: the stream every kernel and
 * product of a network runs on, the cuBLAS handle bound to it, and cuBLAS's
 * workspace. Allocated once when the context is created. */
#ifndef FUSENET_KERNELS_CUDA_STATE_H
#define FUSENET_KERNELS_CUDA_STATE_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "context.h"

struct fn_cuda_state {
    cudaStream_t stream;
    cublasHandle_t cublas;
    void *cublas_workspace; /* [cublas_workspace_bytes] */
    size_t cublas_workspace_bytes;
};

static inline cudaStream_t fn_ctx_stream(const fn_context *ctx) { return ctx->cuda->stream; }
static inline cublasHandle_t fn_ctx_cublas(const fn_context *ctx) { return ctx->cuda->cublas; }

#endif
