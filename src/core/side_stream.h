/* side_stream.h (private) — the context's side stream (cuda_runtime.h:
 * fn_cuda_side_begin, _end, fn_cuda_join) for code above the kernels
 * that runs on either device: on the GPU these are those calls, on the
 * CPU, where everything runs in call order anyway, they do nothing. The
 * trainer queues a layer's update there beside the backward of the
 * layers before it (trainer/step_common.c). */
#ifndef FUSENET_CORE_SIDE_STREAM_H
#define FUSENET_CORE_SIDE_STREAM_H

#include "fusenet/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What is queued next goes to the side stream, after everything queued on
 * the main one so far. */
fn_status fn_context_side_begin(fn_context *ctx);
/* Back to the main stream. */
void fn_context_side_end(fn_context *ctx);
/* What the main stream queues next waits for everything queued on the
 * side stream so far. */
fn_status fn_context_join(fn_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
