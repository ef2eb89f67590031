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

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/kind.h"
#include "fusenet/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_schedule_kind {
    /* name: the [train] schedule value ("cosine"); options_size: bytes of
     * its options block (0: it has none); options: its [train] keys;
     * check_options (optional): the rules across them and the base rate
     * (at->lr). */
    FN_KIND_HEAD;
    /* f(t): the rate of global step t before the warm-up factor. */
    double (*rate)(const fn_schedule *s, long long t);
    /* Optional: the end of an epoch with the monitored metric (lower is
     * better); updates s->state. */
    void (*epoch_end)(fn_schedule *s, double metric);
} fn_schedule_kind;

FN_API const fn_registry *fn_schedule_kinds(void); /* the table (kind.h) */
FN_API int fn_schedule_kind_count(void);
FN_API const fn_schedule_kind *fn_schedule_kind_at(int i); /* NULL past the end */

/* The kind called `name`; FN_ERR_INVALID "expected constant, step, cosine
 * or plateau, got 'x'" (the table's names) when there is none. */
FN_API fn_status fn_schedule_kind_find(const char *name, const fn_schedule_kind **kind);

#ifdef __cplusplus
}
#endif
#endif
