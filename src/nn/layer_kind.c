/* layer_kind.c — the registry of layer kinds (layer_kind.h): the one table
 * that lists them, lookup by name and the list of their names. What the
 * kinds share (the width argument, the checked create) is in
 * layer_kind_helpers.c. A new kind adds its line to the table. */
#include <stdio.h>
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
