/* config_layers.c — [model] layers: a list of "kind arguments [x N]"
 * items, each kind found in the layer kinds' registry (matched ignoring
 * case, with "did you mean") and parsing its own arguments. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/suggest.h"
#include "fusenet/config.h"
#include "fusenet/layer_kind.h"

/* The most layers one item's repetition ("residual 64 x 16") makes. */
enum { MAX_REPEAT = 4096 };

/* A trailing " x N" of buf, cut off: *times = N (1 when there is none). */
static fn_status take_repeat(char *buf, int item, int *times)
{
    *times = 1;
    char *last = strrchr(buf, ' '), *tab = strrchr(buf, '\t');
    if (tab > last)
        last = tab;
    if (!last)
        return FN_OK;
    char *x = last;
    while (x > buf && (x[-1] == ' ' || x[-1] == '\t'))
        x--;
    if (x - buf < 2 || x[-1] != 'x' || (x[-2] != ' ' && x[-2] != '\t'))
        return FN_OK;
    char *end = NULL;
    errno = 0;
    const long n = strtol(last + 1, &end, 10);
    if (end == last + 1 || *end != '\0' || errno == ERANGE || n < 1 || n > MAX_REPEAT)
        return fn_fail(FN_ERR_INVALID, "item %d: repetition 'x %s' is not an integer from 1 to %d",
                       item, last + 1, MAX_REPEAT);
    *times = (int)n;
    x[-2] = '\0';
    return FN_OK;
}

/* One "kind arguments [x N]" item of a layer list; `item` is its 1-based
 * position. The kind (layer_kind.h) parses its arguments; *times is N. */
static fn_status parse_layer_item(const char *start, size_t len, int item, fn_layer_spec *spec,
                                  int *times)
{
    char buf[64], usages[256];
    while (len > 0 && (*start == ' ' || *start == '\t'))
        start++, len--;
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t'))
        len--;
    if (len == 0)
        return fn_fail(FN_ERR_INVALID, "item %d is empty (expected %s)", item,
                       fn_layer_kind_list(usages, sizeof usages, 1));
    if (len >= sizeof buf)
        return fn_fail(FN_ERR_INVALID, "item %d is too long", item);
    memcpy(buf, start, len);
    buf[len] = '\0';
    FN_TRY(take_repeat(buf, item, times));
    char *space = strpbrk(buf, " \t");
    if (!space)
        return fn_fail(FN_ERR_INVALID, "item %d '%s': expected %s", item, buf,
                       fn_layer_kind_list(usages, sizeof usages, 1));
    *space = '\0';
    const char *args = space + 1;
    while (*args == ' ' || *args == '\t')
        args++;
    const fn_registry *kinds = fn_layer_kinds();
    fn_status st = fn_layer_kind_find(fn_registry_spelling(kinds, buf), &spec->kind);
    if (st != FN_OK)
        st = fn_suggest_fix(st, "", fn_registry_suggest(kinds, buf), "");
    if (st == FN_OK)
        st = spec->kind->parse(args, spec);
    if (st != FN_OK)
        fn_error_prefix("item %d: ", item);
    return st;
}

/* Appends `times` copies of spec to *specs [*n, *cap), growing it. */
static fn_status append_layers(fn_layer_spec **specs, int *n, int *cap, const fn_layer_spec *spec,
                               int times)
{
    if (*n + times > *cap) {
        int grown = *cap ? *cap : 8;
        while (grown < *n + times)
            grown *= 2;
        fn_layer_spec *more = realloc(*specs, (size_t)grown * sizeof *more);
        if (!more)
            return fn_fail(FN_ERR_NOMEM, "out of memory for %d layers", grown);
        *specs = more;
        *cap = grown;
    }
    for (int i = 0; i < times; i++)
        (*specs)[(*n)++] = *spec;
    return FN_OK;
}

fn_status fn_config_parse_layers(const char *text, fn_layer_spec **layers, int *n_layers)
{
    fn_layer_spec *specs = NULL;
    int n = 0, cap = 0;
    const char *start = text;
    for (int item = 1;; item++) {
        const char *comma = strchr(start, ',');
        const size_t len = comma ? (size_t)(comma - start) : strlen(start);
        fn_layer_spec spec = {0};
        int times = 1;
        fn_status st = parse_layer_item(start, len, item, &spec, &times);
        if (st == FN_OK)
            st = append_layers(&specs, &n, &cap, &spec, times);
        if (st != FN_OK) {
            free(specs);
            return st;
        }
        if (!comma)
            break;
        start = comma + 1;
    }
    /* An item that keeps its input's width (0) after one that has a width
     * takes that width here; only leading ones wait for the data's. */
    for (int i = 1; i < n; i++)
        if (specs[i].width == 0)
            specs[i].width = specs[i - 1].width;
    if (n > 0 && specs[n - 1].width == 0) {
        free(specs);
        return fn_fail(FN_ERR_INVALID, "no item sets a width: the last layer's width is the "
                       "number of outputs (add a layer such as 'linear 10')");
    }
    *layers = specs;
    *n_layers = n;
    return FN_OK;
}
