/* kind.c — the registries' one set of helpers (kind.h): count, lookup by
 * name, the list a message names, the spelling that ignores case and "did
 * you mean", over any table of kinds' heads. */
#include <stdio.h>
#include <string.h>

#include "core/suggest.h"
#include "fusenet/kind.h"
#include "core/option.h"

enum { MAX_NAMES = 64 }; /* names compared for a spelling or a suggestion */

int fn_registry_count(const fn_registry *r) { return r ? r->n : 0; }

const fn_kind *fn_registry_at(const fn_registry *r, int i)
{
    return r && i >= 0 && i < r->n ? r->kinds[i] : NULL;
}

const fn_kind *fn_registry_lookup(const fn_registry *r, const char *name)
{
    for (int i = 0; name && i < fn_registry_count(r); i++)
        if (strcmp(r->kinds[i]->name, name) == 0)
            return r->kinds[i];
    return NULL;
}

fn_status fn_registry_find(const fn_registry *r, const char *name, const fn_kind **kind)
{
    *kind = fn_registry_lookup(r, name);
    if (*kind)
        return FN_OK;
    char known[256];
    return fn_fail(FN_ERR_INVALID, "expected %s, got '%s'",
                   fn_registry_list(r, known, sizeof known, 0), name ? name : "");
}

const char *fn_registry_list(const fn_registry *r, char *buf, size_t cap, int usages)
{
    const int n = fn_registry_count(r);
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < cap; i++) {
        const fn_kind *k = r->kinds[i];
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        const char *quote = usages ? "'" : "";
        int w = snprintf(buf + len, cap - len, "%s%s%s%s", sep, quote,
                         usages && k->usage ? k->usage : k->name, quote);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* The registry's names into names[0..MAX_NAMES); returns how many. */
static int names_of(const fn_registry *r, const char **names)
{
    int n = 0;
    for (; n < fn_registry_count(r) && n < MAX_NAMES; n++)
        names[n] = r->kinds[n]->name;
    return n;
}

const char *fn_registry_spelling(const fn_registry *r, const char *word)
{
    const char *names[MAX_NAMES];
    const int n = names_of(r, names);
    const int i = fn_name_find_nocase(word, names, n);
    return i >= 0 ? names[i] : word;
}

const char *fn_registry_suggest(const fn_registry *r, const char *word)
{
    const char *names[MAX_NAMES];
    const int n = names_of(r, names);
    return fn_suggest(word, names, n);
}

const fn_option *fn_kind_option(const fn_kind *kind, const char *name)
{
    return kind ? fn_option_find(kind->options, kind->n_options, name) : NULL;
}
