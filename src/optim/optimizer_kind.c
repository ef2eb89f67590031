/* optimizer_kind.c — the registry of optimisers (optimizer_kind.h): the
 * one table that lists them (count and lookup are the registries' own,
 * core/kind.c). A new optimiser adds its line to the table. */
#include "fusenet/optimizer_kind.h"
#include "core/option.h"

static const fn_kind *const kinds[] = {
    &fn_sgd_kind.kind,
    &fn_adam_kind.kind,
    &fn_adamw_kind.kind,
    &fn_rmsprop_kind.kind,
};
static const fn_registry registry = {kinds, sizeof kinds / sizeof kinds[0]};

const fn_registry *fn_optimizer_kinds(void) { return &registry; }

int fn_optimizer_kind_count(void) { return fn_registry_count(&registry); }

const fn_optimizer_kind *fn_optimizer_kind_at(int i)
{
    return (const fn_optimizer_kind *)fn_registry_at(&registry, i);
}

fn_status fn_optimizer_kind_find(const char *name, const fn_optimizer_kind **kind)
{
    const fn_kind *k = NULL;
    FN_TRY(fn_registry_find(&registry, name, &k));
    *kind = (const fn_optimizer_kind *)k;
    return FN_OK;
}
