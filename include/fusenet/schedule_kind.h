/* schedule_kind.h — the registry of learning-rate schedules: for each, its
 * [train] schedule name, the [train] keys of its own options (option.h:
 * type, range, default; a key two kinds share, such as min_lr, is declared
 * by each), the check across them, and its rate. The config reads a kind's
 * keys from this table into the kind's own options block; its messages
 * ("applies to schedule = step only", "expected constant, step, cosine or plateau",
 * "schedule = step needs step_size") are generated from it; the trainer
 * computes each step's rate through it. None of them names a schedule.
 *
 * A new schedule is its own files (its options struct and this
 * descriptor, src/optim/schedules/step/step_schedule.c's pattern) plus one line in the
 * table of src/optim/schedule_kind.c. */
#ifndef FUSENET_SCHEDULE_KIND_H
#define FUSENET_SCHEDULE_KIND_H

#include <stddef.h>

#include "fusenet/option.h"
#include "fusenet/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_schedule_kind {
    const char *name;    /* "cosine": the [train] schedule value */
    size_t options_size; /* bytes of its options block (0: it has none) */
    const fn_option *options;
    int n_options;
    /* The rules across its keys and the base rate lr: FN_ERR_INVALID with
     * the problem, *key the key to name (one of options). Optional. */
    fn_status (*check)(const void *options, double lr, const char **key);
    /* f(t): the rate of global step t before the warm-up factor. */
    double (*rate)(const fn_schedule *s, long long t);
    /* Optional: the end of an epoch with the monitored metric (lower is
     * better); updates s->state. */
    void (*epoch_end)(fn_schedule *s, double metric);
} fn_schedule_kind;

int fn_schedule_kind_count(void);
const fn_schedule_kind *fn_schedule_kind_at(int i); /* NULL past the end */

/* The kind called `name`; FN_ERR_INVALID "expected constant, step, cosine
 * or plateau, got 'x'" (the table's names) when there is none. */
fn_status fn_schedule_kind_find(const char *name, const fn_schedule_kind **kind);

/* kind's option called `name`, or NULL. */
const fn_option *fn_schedule_option(const fn_schedule_kind *kind, const char *name);

#ifdef __cplusplus
}
#endif
#endif
