/* schedule.h — the learning rate of each step: a schedule kind
 * (schedule_kind.h: constant, step decay, cosine annealing, ...) with an
 * optional linear warm-up. With base rate lr and W = warmup_steps, the rate
 * of global step t (0-based) is
 *   lr(t) = f(t) * (t + 1) / W for t < W (warm-up), f(t) otherwise,
 * where f is the kind's rate (its file states its formula). As PyTorch's
 * LambdaLR with that factor over the kind's own scheduler.
 *
 * Most kinds are pure functions of t and their options, so a resumed run
 * continues them without state. A kind that reacts to the run (reduce on
 * plateau) keeps its state in `state`, which the trainer stores in
 * checkpoints and restores on resume; all zeros is a fresh start. */
#ifndef FUSENET_SCHEDULE_H
#define FUSENET_SCHEDULE_H

#include "fusenet/api.h"

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fn_schedule_kind;

/* The most doubles of state a kind keeps. */
enum { FN_SCHEDULE_STATE_MAX = 8 };

typedef struct fn_schedule {
    const struct fn_schedule_kind *kind;
    double lr;              /* the base rate, > 0 */
    long long warmup_steps; /* W >= 0; 0: no warm-up */
    long long total_steps;  /* T, the run's steps (cosine spans them) */
    const void *options;    /* the kind's options block (its struct), borrowed */
    double state[FN_SCHEDULE_STATE_MAX]; /* the kind's state between epochs; zeros: fresh */
} fn_schedule;

/* FN_ERR_INVALID with a message naming the offending field. */
FN_API fn_status fn_schedule_check(const fn_schedule *s);
/* The learning rate of global step t >= 0 (the formula above). */
FN_API double fn_schedule_lr(const fn_schedule *s, long long t);
/* The end of an epoch whose monitored metric (lower is better) is
 * `metric`: a kind with state updates it; the others do nothing. */
FN_API void fn_schedule_epoch_end(fn_schedule *s, double metric);
/* The kind's name ("cosine"). */
FN_API const char *fn_schedule_name(const fn_schedule *s);

#ifdef __cplusplus
}
#endif
#endif
