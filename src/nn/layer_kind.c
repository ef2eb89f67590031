/* layer_kind.c — the registry of layer kinds (layer_kind.h): the one table
 * that lists them, lookup by name, and what kinds share (the width
 * argument, the checked create). A new kind adds its line to the table. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "fusenet/block.h"
#include "fusenet/dense.h"
#include "fusenet/dropout.h"
#include "fusenet/layer_kind.h"
#include "fusenet/linear.h"

static const fn_layer_kind *const kinds[] = {
    &fn_block_kind,
    &fn_linear_kind,
    &fn_relu_kind,
    &fn_gelu_kind,
    &fn_residual_kind,
    &fn_dropout_kind,
};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

int fn_layer_kind_count(void) { return N_KINDS; }

const fn_layer_kind *fn_layer_kind_at(int i) { return i >= 0 && i < N_KINDS ? kinds[i] : NULL; }

static const fn_layer_kind *lookup(const char *name)
{
    for (int i = 0; name && i < N_KINDS; i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return kinds[i];
    return NULL;
}

fn_status fn_layer_kind_find(const char *name, const fn_layer_kind **kind)
{
    *kind = lookup(name);
    if (*kind)
        return FN_OK;
    char known[256], shown[96]; /* a name from a file: escaped, never raw */
    return fn_fail(FN_ERR_INVALID, "unknown layer kind '%s' (expected %s)",
                   fn_escape_str(name ? name : "", shown, sizeof shown),
                   fn_layer_kind_list(known, sizeof known, 0));
}

const fn_layer_kind *fn_layer_kind_of(const fn_layer *l)
{
    return l && l->ops ? lookup(l->ops->kind) : NULL;
}

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

/* "a", "a or b", "a, b or c". */
const char *fn_layer_kind_list(char *buf, size_t cap, int usages)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_KINDS && len < cap; i++) {
        const char *sep = i == 0 ? "" : i == N_KINDS - 1 ? " or " : ", ";
        const char *quote = usages ? "'" : "";
        int n = snprintf(buf + len, cap - len, "%s%s%s%s", sep, quote,
                         usages ? kinds[i]->usage : kinds[i]->name, quote);
        len += n > 0 ? (size_t)n : 0;
    }
    return buf;
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
