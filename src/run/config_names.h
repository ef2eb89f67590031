/* config_names.h (private) — the names an enum key of the config takes,
 * each read from its registry (losses, optimisers, schedules, math modes,
 * layer kinds), so a value is matched ignoring case and a misspelt one
 * gets "did you mean" (core/suggest.h) without a list kept here. */
#ifndef FUSENET_RUN_CONFIG_NAMES_H
#define FUSENET_RUN_CONFIG_NAMES_H

#include "fusenet/status.h"

/* A registry's names into names[0..cap); returns how many there are. */
typedef int (*fn_names_fn)(const char **names, int cap);

int fn_loss_names(const char **names, int cap);
int fn_optimizer_names(const char **names, int cap);
int fn_schedule_names(const char **names, int cap);
int fn_math_names(const char **names, int cap);
int fn_layer_kind_names(const char **names, int cap);

/* The registry's spelling of text where the two differ in case only
 * ("Adam" reads "adam"), else text itself. */
const char *fn_value_spelling(fn_names_fn names, const char *text);

/* st as it is; a failure's message gets "; did you mean <name>?" when a
 * registry name is near text. */
fn_status fn_value_suggest(fn_status st, fn_names_fn names, const char *text);

/* st as it is; a failure's message gets "; did you mean <before><name><after>?"
 * when suggestion is not NULL. */
fn_status fn_suggest_fix(fn_status st, const char *before, const char *suggestion,
                         const char *after);

#endif
