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
/* FN_ERR_NOMEM, naming the need and the limit, when what the layers take
 * in bytes before any is built (parameters, gradients, activations and
 * the layers' own buffers for batches of max_batch rows) exceeds what ctx
 * can still take (fn_context_memory_available):
 * "the network needs at least 68.7 GB of host memory (...), more than the
 * 22.1 GB of available host memory". fn_model_create checks this first. */
FN_API fn_status fn_model_specs_fit_memory(const fn_context *ctx, const fn_layer_spec *specs,
                                           int n_layers, int in_features,
                                           const fn_layer_hparams *hp, int max_batch);

/* Appends one layer of spec for inputs of in_features columns. */
FN_API fn_status fn_model_add_layer(fn_net *net, const fn_layer_spec *spec, int in_features,
                                    const fn_layer_hparams *hp, fn_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
