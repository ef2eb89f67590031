/* config_model.c — the network a run configuration describes: its [model]
 * layers and settings, seeded and sized by [train] (fn_model_build). With
 * [model] init, a layer's eps and negative_slope are the init file's where
 * the config leaves them unset, and must equal them where it sets them, and
 * an item's own value (dropout's p) must equal the file's: a fine-tuning
 * run never changes them silently. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/config.h"
#include "run/config_impl.h"
#include "fusenet/block.h"
#include "fusenet/weights.h"

int fn_config_groups(const fn_config *cfg, int width)
{
    return cfg->groups > 0 ? cfg->groups : fn_block_auto_groups(width);
}

/* Whether layers of `kind` store the attribute `name` in a weights file:
 * only those settings of the file are the file's to give. */
static int stores_attr(const fn_layer_kind *kind, const char *name)
{
    for (int a = 0; a < kind->n_attrs; a++)
        if (!strcmp(kind->attrs[a].name, name))
            return 1;
    return 0;
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

/* The item's own value (dropout's p: fn_layer_spec.value) must be the
 * file's: [model] layers always gives it, so there is no unset to fall
 * back on. */
static fn_status reconcile_value(const fn_config *cfg, int layer, const fn_layer_attr_value *values)
{
    const fn_layer_spec *mine = &cfg->layers[layer];
    const fn_layer_kind *kind = mine->kind;
    if (!kind->spec_value || kind->spec_value(values) == mine->value)
        return FN_OK;
    fn_layer_spec theirs = *mine;
    theirs.value = kind->spec_value(values);
    char item[64], file_item[64];
    fn_layer_spec_format(mine, item, sizeof item);
    fn_layer_spec_format(&theirs, file_item, sizeof file_item);
    return fn_fail(FN_ERR_INVALID,
                   "%s: [model] layers has '%s' as layer %d, but layer %d (%s) of [model] init %s "
                   "is '%s'; set the item to '%s' to train with the file's value",
                   cfg->path, item, layer, layer, kind->name, cfg->init, file_item, file_item);
}

/* Layer i of the file against the config's: hp->eps and hp->negative_slope
 * become the file's where its kind stores them. */
static fn_status reconcile_layer(const fn_config *cfg, int i, const fn_layer *l,
                                 fn_layer_hparams *hp)
{
    const fn_layer_kind *kind = fn_layer_kind_of(l);
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    fn_layer_hparams theirs = *hp;
    FN_TRY(kind->get_attrs(l, values));
    FN_TRY(kind->set_attrs(values, l->in_features, l->out_features, &theirs));
    FN_TRY(reconcile_value(cfg, i, values));
    if (stores_attr(kind, "eps")) {
        FN_TRY(reconcile(cfg, "eps", hp->eps, &theirs.eps, i, kind->name));
        hp->eps = theirs.eps;
    }
    if (stores_attr(kind, "negative_slope")) {
        FN_TRY(reconcile(cfg, "negative_slope", hp->negative_slope, &theirs.negative_slope, i,
                         kind->name));
        hp->negative_slope = theirs.negative_slope;
    }
    return FN_OK;
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
        const fn_layer_kind *kind = fn_layer_kind_of(l);
        if (kind == cfg->layers[i].kind && kind->get_attrs && kind->set_attrs)
            st = reconcile_layer(cfg, i, l, &hp[i]);
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
