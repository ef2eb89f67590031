/* config_names.c — the enum keys' names from their registries, matched
 * ignoring case, with "did you mean" for a near miss (config_names.h). */
#include <stdio.h>

#include "core/suggest.h"
#include "fusenet/device.h"
#include "fusenet/layer_kind.h"
#include "fusenet/loss_kind.h"
#include "fusenet/optimizer_kind.h"
#include "fusenet/schedule_kind.h"
#include "run/config_names.h"

enum { MAX_NAMES = 64 };

int fn_loss_names(const char **names, int cap)
{
    int n = 0;
    for (const fn_loss_kind *k; (k = fn_loss_kind_at(n)) != NULL; n++)
        if (n < cap)
            names[n] = k->name;
    return n;
}

int fn_optimizer_names(const char **names, int cap)
{
    const int n = fn_optimizer_kind_count();
    for (int i = 0; i < n && i < cap; i++)
        names[i] = fn_optimizer_kind_at(i)->name;
    return n;
}

int fn_schedule_names(const char **names, int cap)
{
    const int n = fn_schedule_kind_count();
    for (int i = 0; i < n && i < cap; i++)
        names[i] = fn_schedule_kind_at(i)->name;
    return n;
}

int fn_math_names(const char **names, int cap)
{
    for (int i = 0; i < FN_MATH_MODES && i < cap; i++)
        names[i] = fn_math_name((fn_math)i);
    return FN_MATH_MODES;
}

int fn_layer_kind_names(const char **names, int cap)
{
    const int n = fn_layer_kind_count();
    for (int i = 0; i < n && i < cap; i++)
        names[i] = fn_layer_kind_at(i)->name;
    return n;
}

static int gather(fn_names_fn names, const char **out)
{
    const int n = names(out, MAX_NAMES);
    return n < MAX_NAMES ? n : MAX_NAMES;
}

const char *fn_value_spelling(fn_names_fn names, const char *text)
{
    const char *table[MAX_NAMES];
    const int n = gather(names, table);
    const int i = fn_name_find_nocase(text, table, n);
    return i >= 0 ? table[i] : text;
}

fn_status fn_value_suggest(fn_status st, fn_names_fn names, const char *text)
{
    if (st == FN_OK)
        return st;
    const char *table[MAX_NAMES];
    const int n = gather(names, table);
    return fn_suggest_fix(st, "", fn_suggest(text, table, n), "");
}

fn_status fn_suggest_fix(fn_status st, const char *before, const char *suggestion,
                         const char *after)
{
    if (st == FN_OK || !suggestion)
        return st;
    char message[1024];
    snprintf(message, sizeof message, "%s", fn_last_error());
    return fn_fail(st, "%s; did you mean %s%s%s?", message, before, suggestion, after);
}
