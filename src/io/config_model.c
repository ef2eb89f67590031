/* config_model.c — the network a run configuration describes: its [model]
 * layers and settings, seeded and sized by [train] (fn_model_build). */
#include "fusenet/config.h"

fn_status fn_model_build(fn_net **net, fn_context *ctx, const fn_config *cfg, int in_features)
{
    const fn_layer_hparams hp = {
        .groups = cfg->groups,
        .eps = cfg->eps,
        .negative_slope = cfg->negative_slope,
    };
    return fn_model_create(net, ctx, cfg->layers, cfg->n_layers, in_features, &hp,
                           cfg->batch_size, cfg->seed);
}
