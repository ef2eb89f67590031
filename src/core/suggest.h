/* suggest.h (private) — "did you mean": the name of a table nearest to a
 * word a user wrote, so a message about an unknown key, section or value
 * can name the likely fix. Registries and the config's key table pass
 * their own names, so a new entry is suggested without an edit. */
#ifndef FUSENET_CORE_SUGGEST_H
#define FUSENET_CORE_SUGGEST_H

#include "fusenet/status.h"

/* Index of the name equal to word, ignoring case; -1 when none is. */
int fn_name_find_nocase(const char *word, const char *const *names, int n);

/* The name of names[0..n) a mistyped word most likely meant, or NULL. A
 * name is near when, ignoring case, it is a few edits away (an insertion,
 * deletion, change or swap of two neighbours; at most a third of the
 * shorter length, at least one), when one of the two begins with the other
 * (three letters at least: "training" for "train"), or when it spells the
 * initials of the word's underscore-separated parts ("learning_rate" for
 * "lr"). The nearest by edits wins; the first on a tie. */
const char *fn_suggest(const char *word, const char *const *names, int n);

/* st as it is; a failure's message gets "; did you mean <before><name><after>?"
 * when suggestion is not NULL. */
fn_status fn_suggest_fix(fn_status st, const char *before, const char *suggestion,
                         const char *after);

#endif
