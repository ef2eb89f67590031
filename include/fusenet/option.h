/* option.h — one key of a component's own options, as a registry entry
 * declares it (an optimiser's, optimizer_kind.h; a loss's, loss_kind.h):
 * its name, type, place in the component's options block, range and
 * default. The config reads such keys into the chosen component's block
 * and generates its messages from the declarations; it names no key of
 * a component. */
#ifndef FUSENET_OPTION_H
#define FUSENET_OPTION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_option_type {
    FN_OPTION_FLOAT, /* a float32 number in [min, max] (min excluded when min_exclusive) */
    FN_OPTION_BOOL,  /* true/false, yes/no, on/off, 1/0: an int */
    FN_OPTION_PAIR,  /* "a, b": two float32 numbers, each in [0, 1) (betas) */
    FN_OPTION_LIST   /* "a, b, ...": float32 numbers, each in [min, max]: an fn_option_list;
                      * "" (the default) is the empty list */
} fn_option_type;

/* An FN_OPTION_LIST's value; the config owns `values`. */
typedef struct fn_option_list {
    float *values; /* [n] */
    int n;
} fn_option_list;

/* One key of a component's options. */
typedef struct fn_option {
    const char *name;     /* the key (in the section of the component's choice) */
    fn_option_type type;
    size_t offset;        /* of its field in the kind's options block */
    double min, max;      /* FN_OPTION_FLOAT, FN_OPTION_LIST: the allowed range */
    int min_exclusive;    /* min itself is not allowed */
    const char *fallback; /* the default, as text */
} fn_option;

#ifdef __cplusplus
}
#endif
#endif
