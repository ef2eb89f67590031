/* name_list.c — a table's names as one phrase for messages (name_list.h). */
#include <stdio.h>

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
