/* kind.h — what every registered kind says of itself, and the registries
 * that list them. A layer kind, a loss, an optimiser and a schedule each
 * open their descriptor with the same head (fn_kind): the name that
 * chooses it, how an item of it is written, and its own [train] keys
 * (option.h) with the rule across them. A registry is a table of heads;
 * counting, lookup by name, the list a message names and "did you mean"
 * are the same code for every registry (src/core/kind.c), so the config
 * reads every family's keys through the head alone. */
#ifndef FUSENET_KIND_H
#define FUSENET_KIND_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/option.h"
#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The head's fields: name ("block", "adam": in config values, weights
 * files, messages), usage (how an item of it is written, "block N"; NULL:
 * its name), its options block (options_size bytes, its own config
 * struct; 0: none) and the [train] keys that fill it (options[0..
 * n_options); NULL, 0: none), and check_options (optional): the rule
 * across its keys, FN_ERR_INVALID with the problem and *key the key to
 * name (one of options). */
#define FN_KIND_FIELDS                                                                           \
    const char *name;                                                                            \
    const char *usage;                                                                           \
    size_t options_size;                                                                         \
    const fn_option *options;                                                                    \
    int n_options;                                                                               \
    fn_status (*check_options)(const void *options, const fn_option_context *at,               \
                               const char **key);

typedef struct fn_kind {
    FN_KIND_FIELDS
} fn_kind;

/* First in every descriptor: the head as one member, `kind` (what a
 * registry's table holds: &fn_adam_kind.kind), and its fields by their own
 * names (fn_adam_kind.name). A descriptor is initialised by the fields'
 * names (.name = "adam"). */
#define FN_KIND_HEAD                                                                             \
    union {                                                                                      \
        fn_kind kind;                                                                            \
        struct {                                                                                 \
            FN_KIND_FIELDS                                                                       \
        };                                                                                       \
    }

/* A registry: its kinds' heads in the order messages list them. */
typedef struct fn_registry {
    const fn_kind *const *kinds; /* [n] */
    int n;
} fn_registry;

FN_API int fn_registry_count(const fn_registry *r);
FN_API const fn_kind *fn_registry_at(const fn_registry *r, int i); /* [0, count), else NULL */
/* The kind called name (exactly), or NULL (NULL name included). */
FN_API const fn_kind *fn_registry_lookup(const fn_registry *r, const char *name);
/* The kind called name; else FN_ERR_INVALID "expected a, b or c, got
 * 'name'" (the registry's names). */
FN_API fn_status fn_registry_find(const fn_registry *r, const char *name, const fn_kind **kind);
/* The kinds for a message, "a", "a or b", "a, b or c", or with usages set
 * their items, "'block N' or 'linear N'"; cut to fit cap. Returns buf. */
FN_API const char *fn_registry_list(const fn_registry *r, char *buf, size_t cap, int usages);
/* The name equal to word ignoring case ("Adam": "adam"), else word. */
FN_API const char *fn_registry_spelling(const fn_registry *r, const char *word);
/* The name a mistyped word most likely meant (core/suggest.h's rule), or
 * NULL. */
FN_API const char *fn_registry_suggest(const fn_registry *r, const char *word);
/* kind's option called name, or NULL (NULL kind or name included). */
FN_API const fn_option *fn_kind_option(const fn_kind *kind, const char *name);

#ifdef __cplusplus
}
#endif
#endif
