/* config_model.c — the network a run configuration describes: its [model]
 * layers and settings, seeded and sized by [train] (fn_model_build). With
 * [model] init, a layer's eps and negative_slope are the init file's where
 * the config leaves them unset, and must equal them where it sets them: a
 * fine-tuning run never changes them silently. */
#include <stdio.h>
#include <stdlib.h>

#include "fusenet/config.h"
#include "run/config_impl.h"
#include "fusenet/block.h"
#include "fusenet/weights.h"

int fn_config_groups(const fn_config *cfg, int width)
{
    return cfg->groups > 0 ? cfg->groups : fn_block_auto_groups(width);
}

/* Layer i of the init file's settings, as its kind reads them back. */
static fn_status file_layer_settings(const fn_layer *l, fn_layer_hparams *hp)
{
    const fn_layer_kind *kind = fn_layer_kind_of(l);
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    if (!kind || !kind->get_attrs || !kind->set_attrs)
        return FN_OK;
    FN_TRY(kind->get_attrs(l, values));
    return kind->set_attrs(values, l->in_features, l->out_features, hp);
}

/* One setting: the file's unless the config set it; then they must agree. */
static fn_status reconcile(const fn_config *cfg, const char *key, float mine, float *file,
                           int layer, const char *kind)
{
    if (!fn_config_given(cfg, "model", key) || mine == *file)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID,
                   "%s: [model] %s = %g, but layer %d (%s) of [model] init %s has %s = %g; leave "
                   "[model] %s unset to train with the file's value, or set it to %g",
                   cfg->path, key, (double)mine, layer, kind, cfg->init, key, (double)*file, key,
                   (double)*file);
}

/* hp[i]: the config's settings, eps and negative_slope from the init file
 * for each layer whose kind stores them. The file is read on the host; a
 * file that does not fit the layers is left for fn_weights_load to name. */
static fn_status init_settings(const fn_config *cfg, fn_layer_hparams *hp)
{
    fn_context *cpu = NULL;
    fn_net *file = NULL;
    FN_TRY(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    fn_status st = fn_weights_build(&file, cpu, cfg->init, 1);
    const int n = st == FN_OK && fn_net_n_layers(file) == cfg->n_layers ? cfg->n_layers : 0;
    for (int i = 0; st == FN_OK && i < n; i++) {
        const fn_layer *l = fn_net_layer(file, i);
        fn_layer_hparams theirs = hp[i];
        if (fn_layer_kind_of(l) != cfg->layers[i].kind || !fn_layer_kind_of(l)->set_attrs)
            continue;
        st = file_layer_settings(l, &theirs);
        if (st == FN_OK)
            st = reconcile(cfg, "eps", hp[i].eps, &theirs.eps, i, l->ops->kind);
        if (st == FN_OK)
            st = reconcile(cfg, "negative_slope", hp[i].negative_slope, &theirs.negative_slope,
                           i, l->ops->kind);
        hp[i].eps = theirs.eps;
        hp[i].negative_slope = theirs.negative_slope;
    }
    fn_net_destroy(file);
    fn_context_destroy(cpu);
    return st;
}

fn_status fn_model_build(fn_net **net, fn_context *ctx, const fn_config *cfg, int in_features)
{
    *net = NULL;
    fn_layer_hparams *hp = calloc((size_t)cfg->n_layers, sizeof *hp);
    if (!hp)
        return fn_fail(FN_ERR_NOMEM, "out of memory for %d layers", cfg->n_layers);
    for (int i = 0; i < cfg->n_layers; i++)
        hp[i] = (fn_layer_hparams){.groups = fn_config_groups(cfg, cfg->layers[i].width),
                                   .eps = cfg->eps,
                                   .negative_slope = cfg->negative_slope};
    fn_status st = cfg->init ? init_settings(cfg, hp) : FN_OK;
    if (st == FN_OK)
        st = fn_model_create_each(net, ctx, cfg->layers, cfg->n_layers, in_features, hp,
                                  cfg->batch_size, cfg->seed);
    free(hp);
    return st;
}
