/* name_list.c — a table's names as one phrase for messages (name_list.h). */
#include <stdio.h>
#include <string.h>

#include "core/name_list.h"

const char *fn_name_list(char *buf, size_t cap, const char *const *names, int n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < cap; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        int w = snprintf(buf + len, cap - len, "%s%s", sep, names[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

fn_status fn_name_lookup(const char *name, const char *const *names, int n, int *at)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return *at = i, FN_OK;
    char known[256];
    return fn_fail(FN_ERR_INVALID, "expected %s, got '%s'",
                   fn_name_list(known, sizeof known, names, n), name ? name : "");
}
