/* option.c — a kind's option by name (option.h), for every registry whose
 * kinds declare their own keys (optimisers, schedules, losses). */
#include <string.h>

#include "fusenet/option.h"
#include "core/option.h"

const fn_option *fn_option_find(const fn_option *options, int n, const char *name)
{
    for (int i = 0; options && name && i < n; i++)
        if (strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}
