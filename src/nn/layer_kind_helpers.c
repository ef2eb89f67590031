/* layer_kind_helpers.c — what the layer kinds share (layer_kind.h): a
 * spec's width and how it is written, the width argument most kinds parse,
 * the checked create, and the optional sizes a kind may report. The table
 * of kinds is in layer_kind.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fusenet/layer_kind.h"

int fn_layer_spec_out(const fn_layer_spec *spec, int in_features)
{
    return spec->width > 0 ? spec->width : in_features;
}

int fn_layer_spec_format(const fn_layer_spec *spec, char *buf, size_t cap)
{
    if (spec->kind && spec->kind->format)
        return spec->kind->format(spec, buf, cap);
    return snprintf(buf, cap, "%s %d", spec->kind ? spec->kind->name : "?", spec->width);
}

size_t fn_layer_buffer_bytes(const fn_layer *l)
{
    const fn_layer_kind *k = fn_layer_kind_of(l);
    return k && k->buffer_bytes ? k->buffer_bytes(l) : 0;
}

size_t fn_layer_weight_copy_bytes(const fn_layer *l)
{
    const fn_layer_kind *k = fn_layer_kind_of(l);
    return k && k->weight_copy_bytes ? k->weight_copy_bytes(l) : 0;
}

fn_status fn_layer_create(fn_layer **layer, fn_context *ctx, int in_features,
                          const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                          fn_rng *rng)
{
    if (!layer)
        return fn_fail(FN_ERR_INVALID, "fn_layer_create: layer is NULL");
    *layer = NULL;
    if (!spec || !spec->kind || !hp)
        return fn_fail(FN_ERR_INVALID, "fn_layer_create: %s is NULL",
                       !spec ? "spec" : !spec->kind ? "spec->kind" : "hp");
    return spec->kind->create(layer, ctx, in_features, spec, hp, max_batch, rng);
}

fn_status fn_layer_parse_width(const char *args, fn_layer_spec *spec)
{
    char *end = NULL;
    errno = 0;
    long w = strtol(args, &end, 10);
    if (end == args || *end != '\0' || errno == ERANGE || w < 1 || w > (1 << 24))
        return fn_fail(FN_ERR_INVALID, "width '%s' is not an integer from 1 to 16777216", args);
    spec->width = (int)w;
    return FN_OK;
}
