/* model.c — builds an fn_net from a layer list ([model] of the config, or
 * the layers recorded in a weights file). */
#include "fusenet/block.h"
#include "fusenet/linear.h"
#include "fusenet/model.h"

fn_status fn_model_add_layer(fn_net *net, const fn_layer_spec *spec, int in_features, int groups,
                             float eps, float negative_slope, fn_rng *rng)
{
    fn_layer *layer = NULL;
    if (spec->kind == FN_LAYER_BLOCK) {
        fn_block_config bc = fn_block_config_default(in_features, spec->width, groups);
        bc.eps = eps;
        bc.negative_slope = negative_slope;
        FN_TRY(fn_block_create(&layer, net->ctx, &bc, net->max_batch, rng));
    } else {
        FN_TRY(fn_linear_create(&layer, net->ctx, in_features, spec->width, net->max_batch, rng));
    }
    return fn_net_add(net, layer);
}

fn_status fn_model_build(fn_net **out, fn_context *ctx, const fn_config *cfg, int in_features)
{
    *out = NULL;
    fn_net *net = NULL;
    FN_TRY(fn_net_create(&net, ctx, cfg->batch_size));
    fn_rng rng = {.seed = cfg->seed, .offset = 0};
    int in = in_features;
    for (int i = 0; i < cfg->n_layers; i++) {
        fn_status st = fn_model_add_layer(net, &cfg->layers[i], in, cfg->groups, cfg->eps,
                                          cfg->negative_slope, &rng);
        if (st != FN_OK) {
            fn_error_prefix("layer %d (%s %d): ", i, fn_layer_kind_name(cfg->layers[i].kind),
                            cfg->layers[i].width);
            fn_net_destroy(net);
            return st;
        }
        in = cfg->layers[i].width;
    }
    *out = net;
    return FN_OK;
}
