/* model_memory.h (nn) — the bytes a network's layers take, counted before
 * any is built: what fn_model_specs_fit_memory (fusenet/model.h) checks,
 * and what weights files and safetensors exports check before building. */
#ifndef FUSENET_NN_MODEL_MEMORY_H
#define FUSENET_NN_MODEL_MEMORY_H

#include "fusenet/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the layers specs[0 .. n_layers) take in bytes, before any is built:
 * parameter values, their gradients, and for batches of max_batch rows the
 * activations, their gradients (net.c) and the layers' own buffers; with
 * hp->forward_only (a net for forward passes) no gradient and no buffer
 * only backward uses. A lower
 * bound of the run's need: an optimiser's state, data slabs and allocator
 * overhead come on top. */
typedef struct fn_model_memory {
    double params, grads, activations, total;
    int bf16_joins;             /* the layout of a GPU in bf16 math (fn_model_memory_start) */
    const fn_layer_kind *last;  /* the kind of the layer added last, or NULL */
} fn_model_memory;
/* An empty tally for a net on `device` in `math`: on a GPU in bf16 math
 * two layers that net.c joins through bfloat16 (the first kind's
 * bf16_output, the second's bf16_input) share their activation, whose
 * float buffer is never allocated, so it is not counted. A zeroed tally
 * counts as on the CPU (fn_model_memory_need's). */
void fn_model_memory_start(fn_model_memory *need, fn_device device, fn_math math);
void fn_model_memory_need(const fn_layer_spec *specs, int n_layers, int in_features,
                          const fn_layer_hparams *hp, int max_batch, fn_model_memory *need);
/* Adds one layer's share to *need (first: the net's first layer, whose
 * input gradient is never kept), for lists whose layers have settings of
 * their own (a weights file's). */
void fn_model_memory_add(fn_model_memory *need, const fn_layer_spec *spec, int in_features,
                         const fn_layer_hparams *hp, int max_batch, int first);
/* FN_ERR_NOMEM naming need and limit when need->total exceeds what ctx can
 * still take, and when smaller batches would fit, the most rows that do
 * ("; batches of at most 96 rows would fit"). */
fn_status fn_model_memory_fits(const fn_context *ctx, const fn_model_memory *need,
                               int max_batch);

#ifdef __cplusplus
}
#endif
#endif
