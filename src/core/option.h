/* option.h (core) — finding a kind's option by name (fusenet/option.h
 * describes one); the registries and the config call it. */
#ifndef FUSENET_CORE_OPTION_H
#define FUSENET_CORE_OPTION_H

#include "fusenet/option.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The option called `name` of options[0..n), or NULL (NULL options or
 * name: NULL): how each registry finds a kind's key. */
const fn_option *fn_option_find(const fn_option *options, int n, const char *name);

#ifdef __cplusplus
}
#endif
#endif
