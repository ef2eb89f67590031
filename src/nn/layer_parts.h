/* layer_parts.h (private) — what one layer kind builds another from. A kind's
 * folder includes no other kind's folder (scripts/check_layers.py), so a
 * part one kind offers another is declared here, at the room's root, and
 * defined in the offering kind's folder: the relu and gelu layers
 * (layers/dense/) hold a linear layer (layers/linear/). */
#ifndef FUSENET_SRC_NN_LAYER_PARTS_H
#define FUSENET_SRC_NN_LAYER_PARTS_H

#include "fusenet/linear.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fn_linear_create, or with forward_only a layer without gradients
 * (fn_layer.forward_only). Defined in layers/linear/linear.c. */
fn_status fn_linear_create_as(fn_layer **layer, fn_context *ctx, int in_features,
                              int out_features, int max_batch, fn_rng *rng, int forward_only);

#ifdef __cplusplus
}
#endif
#endif
