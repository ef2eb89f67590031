/* model.c — builds an fn_net from a list of layer specs, each created by its
 * kind (layer_kind.h). */
#include "fusenet/model.h"

fn_status fn_model_add_layer(fn_net *net, const fn_layer_spec *spec, int in_features,
                             const fn_layer_hparams *hp, fn_rng *rng)
{
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_model_add_layer: net is NULL");
    fn_layer *layer = NULL;
    FN_TRY(fn_layer_create(&layer, fn_net_context(net), in_features, spec, hp,
                           fn_net_max_batch(net), rng));
    return fn_net_add(net, layer);
}

/* hp[i * hp_step] is layer i's settings: hp_step 0 shares one. */
static fn_status add_layers(fn_net *net, const fn_layer_spec *specs, int n_layers,
                            int in_features, const fn_layer_hparams *hp, int hp_step, fn_rng *rng)
{
    int in = in_features;
    for (int i = 0; i < n_layers; i++) {
        fn_status st = fn_model_add_layer(net, &specs[i], in, &hp[i * hp_step], rng);
        if (st != FN_OK) {
            fn_error_prefix("layer %d (%s %d): ", i, specs[i].kind ? specs[i].kind->name : "?",
                            specs[i].width);
            return st;
        }
        in = specs[i].width;
    }
    return FN_OK;
}

static fn_status create(fn_net **out, fn_context *ctx, const fn_layer_spec *specs, int n_layers,
                        int in_features, const fn_layer_hparams *hp, int hp_step, int max_batch,
                        uint64_t seed)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_model_create: net is NULL");
    *out = NULL;
    if (n_layers > 0 && (!specs || !hp))
        return fn_fail(FN_ERR_INVALID, "fn_model_create: specs or settings are NULL");
    fn_net *net = NULL;
    FN_TRY(fn_net_create(&net, ctx, max_batch));
    fn_rng rng = {.seed = seed, .offset = 0};
    fn_status st = add_layers(net, specs, n_layers, in_features, hp, hp_step, &rng);
    if (st != FN_OK) {
        fn_net_destroy(net);
        return st;
    }
    *out = net;
    return FN_OK;
}

fn_status fn_model_create(fn_net **net, fn_context *ctx, const fn_layer_spec *specs, int n_layers,
                          int in_features, const fn_layer_hparams *hp, int max_batch,
                          uint64_t seed)
{
    return create(net, ctx, specs, n_layers, in_features, hp, 0, max_batch, seed);
}

fn_status fn_model_create_each(fn_net **net, fn_context *ctx, const fn_layer_spec *specs,
                               int n_layers, int in_features, const fn_layer_hparams *hp,
                               int max_batch, uint64_t seed)
{
    return create(net, ctx, specs, n_layers, in_features, hp, 1, max_batch, seed);
}
