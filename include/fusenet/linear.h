/* linear.h — the affine layer y = x W^T + b, for output heads.
 * Parameters: weight [out, in], bias [out], as nn.Linear names them.
 * CPU code: src/linear_cpu.c; CUDA code: kernels/linear_cuda.cu. */
#ifndef FUSENET_LINEAR_H
#define FUSENET_LINEAR_H

#include "fusenet/init.h"
#include "fusenet/layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a linear layer for batches of up to max_batch rows, initialised as
 * nn.Linear: weight, bias ~ U(-1/sqrt(in), 1/sqrt(in)) from rng, weight first. */
fn_status fn_linear_create(fn_layer **layer, fn_context *ctx, int in_features,
                           int out_features, int max_batch, fn_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
