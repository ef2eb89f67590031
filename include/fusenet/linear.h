/* linear.h — the affine layer y = x W^T + b, for output heads.
 * Parameters: weight [out, in], bias [out], as nn.Linear names them.
 * CPU code: src/nn/layers/linear/linear_cpu.c; CUDA code: kernels/nn/layers/linear/linear_cuda.cu. As a
 * layer kind, "linear N": a linear layer of width N. */
#ifndef FUSENET_LINEAR_H
#define FUSENET_LINEAR_H

#include "fusenet/api.h"

#include "fusenet/init.h"
#include "fusenet/layer.h"
#include "fusenet/layer_kind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a linear layer for batches of up to max_batch rows, initialised as
 * nn.Linear: weight, bias ~ U(-1/sqrt(in), 1/sqrt(in)) from rng, weight first. */
FN_API fn_status fn_linear_create(fn_layer **layer, fn_context *ctx, int in_features,
                                  int out_features, int max_batch, fn_rng *rng);

/* The bytes a linear layer allocated besides its parameters and gradients
 * (its backend's workspace); 0 for another layer. */
FN_API size_t fn_linear_buffer_bytes(const fn_layer *l);

/* Its entry in the registry of layer kinds. */
FN_API extern const fn_layer_kind fn_linear_kind;

#ifdef __cplusplus
}
#endif
#endif
