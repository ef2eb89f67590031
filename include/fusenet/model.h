/* model.h — a network built from a list of layers (layer_kind.h), such as
 * the items of [model] layers: each layer initialised from one Philox
 * stream, continuing where the previous one stopped. (The [model] section
 * of a run configuration goes through fn_model_build, config.h.) */
#ifndef FUSENET_MODEL_H
#define FUSENET_MODEL_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/init.h"
#include "fusenet/layer_kind.h"
#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The layers specs[0 .. n_layers) for inputs of in_features columns and
 * batches of up to max_batch rows, with the settings hp, initialised from
 * the stream of seed. The message names the failing layer ("layer 1 (block
 * 12): ..."). */
FN_API fn_status fn_model_create(fn_net **net, fn_context *ctx, const fn_layer_spec *specs, int n_layers,
                                 int in_features, const fn_layer_hparams *hp, int max_batch,
                                 uint64_t seed);

/* As fn_model_create, with layer i created with the settings hp[i]. */
FN_API fn_status fn_model_create_each(fn_net **net, fn_context *ctx, const fn_layer_spec *specs,
                                      int n_layers, int in_features, const fn_layer_hparams *hp,
                                      int max_batch, uint64_t seed);
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
FN_API void fn_model_memory_start(fn_model_memory *need, fn_device device, fn_math math);
FN_API void fn_model_memory_need(const fn_layer_spec *specs, int n_layers, int in_features,
                                 const fn_layer_hparams *hp, int max_batch, fn_model_memory *need);
/* Adds one layer's share to *need (first: the net's first layer, whose
 * input gradient is never kept), for lists whose layers have settings of
 * their own (a weights file's). */
FN_API void fn_model_memory_add(fn_model_memory *need, const fn_layer_spec *spec, int in_features,
                                const fn_layer_hparams *hp, int max_batch, int first);
/* FN_ERR_NOMEM naming need and limit when need->total exceeds what ctx can
 * still take, and when smaller batches would fit, the most rows that do
 * ("; batches of at most 96 rows would fit"). */
FN_API fn_status fn_model_memory_fits(const fn_context *ctx, const fn_model_memory *need,
                                      int max_batch);
/* FN_ERR_NOMEM, naming the need and the limit, when fn_model_memory_need's
 * total exceeds what ctx can still take (fn_context_memory_available):
 * "the network needs at least 68.7 GB of host memory (...), more than the
 * 22.1 GB of available host memory". fn_model_create checks this first. */
FN_API fn_status fn_model_specs_fit_memory(const fn_context *ctx, const fn_layer_spec *specs,
                                           int n_layers, int in_features, const fn_layer_hparams *hp, int max_batch);

/* Appends one layer of spec for inputs of in_features columns. */
FN_API fn_status fn_model_add_layer(fn_net *net, const fn_layer_spec *spec, int in_features,
                                    const fn_layer_hparams *hp, fn_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
