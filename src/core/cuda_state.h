/* cuda_state.h — the GPU half of a fn_context: the stream every kernel and
 * product of a network runs on, a side stream beside it, the cuBLAS and
 * cuBLASLt handles and their workspaces, the products' chosen algorithms
 * (gemm_lt_cuda.h), a small buffer for the losses' reductions and the
 * device's multiprocessor count (grid sizes, launch_cuda.cuh) and whether
 * its kernels launch with PDL (kernel_launch_cuda.cuh). Allocated
 * once when the context is created. */
#ifndef FUSENET_KERNELS_CUDA_STATE_H
#define FUSENET_KERNELS_CUDA_STATE_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/device_impl.h"

enum { FN_CUDA_REDUCE_SLOTS = 1024 };

struct fn_cuda_state {
    cudaStream_t stream;      /* own_stream, or the caller's (fn_context_use_stream) */
    cudaStream_t own_stream;
    cudaEvent_t switch_event; /* orders work across a change of stream */
    cudaStream_t side_stream; /* cuda_runtime.h: fn_cuda_side_begin */
    int on_side;              /* work goes to side_stream now */
    cudaEvent_t fork_event, join_event;
    cublasHandle_t cublas;
    cublasLtHandle_t lt;
    /* [cublas_workspace_bytes] each: the main stream's (both handles'),
     * the side stream's */
    void *cublas_workspace, *side_workspace;
    size_t cublas_workspace_bytes;
    struct fn_gemm_lt_cache *gemm_algos;
    /* Per-block partial sums of the losses and the correct-count
     * (loss_cuda.cu): FN_CUDA_REDUCE_SLOTS + 1 doubles, the last one for a
     * result, so a loss never allocates. */
    void *reduce;
    int sm_count; /* multiprocessors of the context's GPU */
    /* Kernels may launch with programmatic dependent launch
     * (kernel_launch_cuda.cuh): sm_90 or later, and FUSENET_PDL is not "0"
     * when the context is created. */
    int pdl;
    /* The context's stream is being captured into a graph (graph_cuda.cu):
     * the only time launches use PDL. */
    int capturing;
};

/* The stream work is queued on now: the main one, or the side one between
 * fn_cuda_side_begin and _end. */
static inline cudaStream_t fn_ctx_stream(const fn_context *ctx)
{
    return ctx->cuda->on_side ? ctx->cuda->side_stream : ctx->cuda->stream;
}
/* The cuBLAS workspace of that stream. */
static inline void *fn_ctx_cublas_workspace(const fn_context *ctx)
{
    return ctx->cuda->on_side ? ctx->cuda->side_workspace : ctx->cuda->cublas_workspace;
}
/* The cuBLAS handle, bound to the main stream (bench's bare products). */
static inline cublasHandle_t fn_ctx_cublas(const fn_context *ctx) { return ctx->cuda->cublas; }
static inline int fn_ctx_sm_count(const fn_context *ctx) { return ctx->cuda->sm_count; }

#endif
