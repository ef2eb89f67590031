/* graph_cuda.h (private) — CUDA graphs of work queued on a context's
 * stream (kernels/core/graph_cuda.cu): capture what the calls between begin and
 * end queue (nothing runs then), instantiate it once, and replay it with
 * one launch. Capture is thread-local (cudaStreamCaptureModeThreadLocal),
 * so the loader's thread may keep copying on its own stream meanwhile;
 * inside it no allocation, no synchronisation and no copy from pageable
 * host memory is allowed: such a call fails, and abort leaves the stream
 * as it was. */
#ifndef FUSENET_CORE_GRAPH_CUDA_H
#define FUSENET_CORE_GRAPH_CUDA_H

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_cuda_graph fn_cuda_graph; /* opaque: an instantiated graph */

fn_status fn_cuda_graph_begin(fn_context *ctx);
/* Ends the capture and instantiates what it queued. */
fn_status fn_cuda_graph_end(fn_context *ctx, fn_cuda_graph **graph);
/* Ends a capture that failed, discarding it and the sticky error it left. */
void fn_cuda_graph_abort(fn_context *ctx);
/* Queues the graph's work on the context's stream. */
fn_status fn_cuda_graph_launch(fn_context *ctx, fn_cuda_graph *graph);
void fn_cuda_graph_destroy(fn_cuda_graph *graph); /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif
