/* name_list.h (private) — the names of a table as a message lists them:
 * "a", "a or b", "a, b or c". Registries and enum tables generate their
 * "expected ..." text with it, so a new entry is named without an edit. */
#ifndef FUSENET_CORE_NAME_LIST_H
#define FUSENET_CORE_NAME_LIST_H

#include <stddef.h>

#include "fusenet/status.h"

/* names[0..n) into buf (cut short to cap); returns buf. */
const char *fn_name_list(char *buf, size_t cap, const char *const *names, int n);
/* *at = the index of name among names[0..n); FN_ERR_INVALID "expected a,
 * b or c, got 'name'" when it is none of them (NULL included). */
fn_status fn_name_lookup(const char *name, const char *const *names, int n, int *at);

#endif
