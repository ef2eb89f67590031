/* dense.h — a linear layer followed by an activation, y = f(x W^T + b),
 * the plain MLP's layer: f = ReLU (max(z, 0)) or GELU in its exact form,
 * z/2 (1 + erf(z / sqrt 2)), as torch.nn.GELU() by default.
 * Parameters: weight [out, in], bias [out], as nn.Linear names them.
 * CPU code: src/nn/layers/dense/dense_cpu.c; CUDA code: kernels/nn/layers/dense/dense_cuda.cu. As layer
 * kinds, "relu N" and "gelu N": a layer of width N with that activation;
 * their weights-file groups carry no attributes beyond kind and sizes. */
#ifndef FUSENET_DENSE_H
#define FUSENET_DENSE_H

#include "fusenet/api.h"

#include "fusenet/init.h"
#include "fusenet/layer.h"
#include "fusenet/layer_kind.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_activation { FN_ACTIVATION_RELU, FN_ACTIVATION_GELU, FN_ACTIVATION_COUNT } fn_activation;

/* Creates a dense layer for batches of up to max_batch rows, initialised as
 * nn.Linear: weight, bias ~ U(-1/sqrt(in), 1/sqrt(in)) from rng, weight
 * first. forward_only: no gradients and no backward caches. */
FN_API fn_status fn_dense_create(fn_layer **layer, fn_context *ctx, fn_activation act, int in_features,
                                 int out_features, int max_batch, fn_rng *rng, int forward_only);

/* The bytes a dense layer allocated besides its parameters and gradients:
 * its caches z and dz at max_batch and its product's workspace; 0 for
 * another layer. */
FN_API size_t fn_dense_buffer_bytes(const fn_layer *l);

/* Their entries in the registry of layer kinds. */
FN_API extern const fn_layer_kind fn_relu_kind;
FN_API extern const fn_layer_kind fn_gelu_kind;

#ifdef __cplusplus
}
#endif
#endif
