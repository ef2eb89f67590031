/* graph_cuda.cu — CUDA graphs of a context's stream (graph_cuda.h):
 * stream capture, instantiation and launch, each checked. */
#include <stdlib.h>

#include "core/graph_cuda.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"

struct fn_cuda_graph {
    cudaGraphExec_t exec;
};

extern "C" fn_status fn_cuda_graph_begin(fn_context *ctx)
{
    FN_CUDA_CHECK(cudaStreamBeginCapture(fn_ctx_stream(ctx), cudaStreamCaptureModeThreadLocal));
    ctx->cuda->capturing = 1;
    return FN_OK;
}

extern "C" fn_status fn_cuda_graph_end(fn_context *ctx, fn_cuda_graph **out)
{
    *out = NULL;
    cudaGraph_t graph = NULL;
    ctx->cuda->capturing = 0;
    FN_CUDA_CHECK(cudaStreamEndCapture(fn_ctx_stream(ctx), &graph));
    fn_cuda_graph *g = (fn_cuda_graph *)calloc(1, sizeof *g);
    if (!g) {
        cudaGraphDestroy(graph);
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a CUDA graph");
    }
    const cudaError_t e = cudaGraphInstantiate(&g->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        free(g);
        return fn_cuda_status(e, "cudaGraphInstantiate", __FILE__, __LINE__);
    }
    *out = g;
    return FN_OK;
}

extern "C" void fn_cuda_graph_abort(fn_context *ctx)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    ctx->cuda->capturing = 0;
    if (cudaStreamIsCapturing(fn_ctx_stream(ctx), &status) == cudaSuccess &&
        status != cudaStreamCaptureStatusNone) {
        cudaGraph_t graph = NULL;
        cudaStreamEndCapture(fn_ctx_stream(ctx), &graph);
        if (graph)
            cudaGraphDestroy(graph);
    }
    cudaGetLastError(); /* the capture's error, not sticky: the context is fine */
}

extern "C" fn_status fn_cuda_graph_launch(fn_context *ctx, fn_cuda_graph *g)
{
    FN_CUDA_CHECK(cudaGraphLaunch(g->exec, fn_ctx_stream(ctx)));
    return FN_OK;
}

extern "C" void fn_cuda_graph_destroy(fn_cuda_graph *g)
{
    if (!g)
        return;
    cudaGraphExecDestroy(g->exec);
    free(g);
}
