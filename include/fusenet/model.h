/* model.h — a network built from the [model] settings of a run
 * configuration: one block or linear layer per item of `layers`, initialised
 * from one Philox stream seeded with [train] seed (each layer continuing where
 * the previous one stopped), for batches of up to [train] batch_size rows. */
#ifndef FUSENET_MODEL_H
#define FUSENET_MODEL_H

#include "fusenet/config.h"
#include "fusenet/init.h"
#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds the layers of cfg->layers for inputs of in_features columns. */
fn_status fn_model_build(fn_net **net, fn_context *ctx, const fn_config *cfg, int in_features);

/* One layer of a list: a block (groups, eps, slope as given) or a linear. */
fn_status fn_model_add_layer(fn_net *net, const fn_layer_spec *spec, int in_features, int groups,
                             float eps, float negative_slope, fn_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
