/* layer_kind.c — the registry of layer kinds (layer_kind.h): the one table
 * that lists them; count, lookup and the list of their names are the
 * registries' own (core/kind.c). What the kinds share (the width argument,
 * the checked create) is in layer_kind_helpers.c. A new kind adds its line
 * to the table. */
#include "core/escape.h"
#include "fusenet/block.h"
#include "fusenet/dense.h"
#include "fusenet/dropout.h"
#include "fusenet/layer_kind.h"
#include "fusenet/linear.h"

static const fn_kind *const kinds[] = {
    &fn_block_kind.kind,
    &fn_linear_kind.kind,
    &fn_relu_kind.kind,
    &fn_gelu_kind.kind,
    &fn_residual_kind.kind,
    &fn_dropout_kind.kind,
};
static const fn_registry registry = {kinds, sizeof kinds / sizeof kinds[0]};

const fn_registry *fn_layer_kinds(void) { return &registry; }

int fn_layer_kind_count(void) { return fn_registry_count(&registry); }

const fn_layer_kind *fn_layer_kind_at(int i)
{
    return (const fn_layer_kind *)fn_registry_at(&registry, i);
}

fn_status fn_layer_kind_find(const char *name, const fn_layer_kind **kind)
{
    *kind = (const fn_layer_kind *)fn_registry_lookup(&registry, name);
    if (*kind)
        return FN_OK;
    char known[256], shown[96]; /* a name from a file: escaped, never raw */
    return fn_fail(FN_ERR_INVALID, "unknown layer kind '%s' (expected %s)",
                   fn_escape_str(name ? name : "", shown, sizeof shown),
                   fn_layer_kind_list(known, sizeof known, 0));
}

const fn_layer_kind *fn_layer_kind_of(const fn_layer *l)
{
    return l && l->ops ? (const fn_layer_kind *)fn_registry_lookup(&registry, l->ops->kind)
                       : NULL;
}

const char *fn_layer_kind_list(char *buf, size_t cap, int usages)
{
    return fn_registry_list(&registry, buf, cap, usages);
}
