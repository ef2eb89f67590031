/* option.h — one [train] key that a registered kind declares for itself
 * (an optimiser's, optimizer_kind.h; a schedule's, schedule_kind.h; a loss's,
 * loss_kind.h): its
 * name, type, range, default and where its value goes in the kind's own
 * options block (the kind's config struct). The config reads every
 * registry's keys through this description alone. */
#ifndef FUSENET_OPTION_H
#define FUSENET_OPTION_H

#include "fusenet/api.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_option_type {
    FN_OPTION_FLOAT, /* a float32 number in [min, max] (min excluded when min_exclusive) */
    FN_OPTION_BOOL,  /* true/false, yes/no, on/off, 1/0: an int */
    FN_OPTION_PAIR,  /* "a, b": two float32 numbers, each in [0, 1) (betas) */
    FN_OPTION_INT,   /* an integer in [min, max]: an int */
    FN_OPTION_LIST   /* "a, b, ...": float32 numbers, each in [min, max]: an fn_option_list;
                      * "" (the default) is the empty list */
} fn_option_type;

/* An FN_OPTION_LIST's value; the config owns `values`. */
typedef struct fn_option_list {
    float *values; /* [n] */
    int n;
} fn_option_list;

/* One [train] key of a kind's options. */
typedef struct fn_option {
    const char *name;     /* the [train] key */
    fn_option_type type;
    size_t offset;        /* of its field in the kind's options block */
    double min, max;      /* FN_OPTION_FLOAT, _INT, _LIST: the allowed range */
    int min_exclusive;    /* min itself is not allowed */
    /* The default, as text; NULL: none, the kind needs the key given
     * ("schedule = step needs step_size"). */
    const char *fallback;
} fn_option;

/* What the rule across a kind's keys (fn_kind.check_options) reads
 * besides them. */
typedef struct fn_option_context {
    double lr;   /* [train] lr: the base learning rate (a schedule's) */
    int outputs; /* the network's outputs, the last layer's width (a loss's) */
} fn_option_context;

#ifdef __cplusplus
}
#endif
#endif
