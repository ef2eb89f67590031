/* optimizer_kind.c — the registry of optimisers (optimizer_kind.h): the
 * one table that lists them and lookup by name. A new optimiser adds its
 * line to the table. */
#include "core/name_list.h"
#include "fusenet/optimizer_kind.h"

static const fn_optimizer_kind *const kinds[] = {
    &fn_sgd_kind,
    &fn_adam_kind,
    &fn_adamw_kind,
    &fn_rmsprop_kind,
};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

int fn_optimizer_kind_count(void) { return N_KINDS; }

const fn_optimizer_kind *fn_optimizer_kind_at(int i)
{
    return i >= 0 && i < N_KINDS ? kinds[i] : NULL;
}

fn_status fn_optimizer_kind_find(const char *name, const fn_optimizer_kind **kind)
{
    const char *names[N_KINDS];
    for (int i = 0; i < N_KINDS; i++)
        names[i] = kinds[i]->name;
    int at = 0;
    FN_TRY(fn_name_lookup(name, names, N_KINDS, &at));
    *kind = kinds[at];
    return FN_OK;
}

const fn_option *fn_optimizer_option(const fn_optimizer_kind *kind, const char *name)
{
    return kind ? fn_option_find(kind->options, kind->n_options, name) : NULL;
}
