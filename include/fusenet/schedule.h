/* schedule.h — the learning rate of each step: a schedule (constant, step
 * decay or cosine annealing) with an optional linear warm-up, a pure
 * function of the global step t (0-based), so a resumed run continues it
 * without state. With base rate lr, W = warmup_steps and T the run's total
 * steps:
 *   constant: f(t) = lr
 *   step:     f(t) = lr * gamma^floor(t / step_size)
 *   cosine:   f(t) = min_lr + (lr - min_lr) * (1 + cos(pi * (t - W) / (T - W))) / 2
 *             for W <= t < T; lr for t < W (and when T <= W)
 *   lr(t) = f(t) * (t + 1) / W for t < W (warm-up), f(t) otherwise.
 * As PyTorch's LambdaLR with that factor; cosine after the warm-up is
 * CosineAnnealingLR(T_max = T - W, eta_min = min_lr). */
#ifndef FUSENET_SCHEDULE_H
#define FUSENET_SCHEDULE_H

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_schedule_kind {
    FN_SCHEDULE_CONSTANT = 0,
    FN_SCHEDULE_STEP,
    FN_SCHEDULE_COSINE
} fn_schedule_kind;
/* How many kinds there are: schedule.c's table of names is checked against
 * it when it compiles. */
enum { FN_SCHEDULE_KINDS = FN_SCHEDULE_COSINE + 1 };

typedef struct fn_schedule {
    fn_schedule_kind kind;
    double lr;              /* the base rate, > 0 */
    long long warmup_steps; /* W >= 0; 0: no warm-up */
    long long step_size;    /* step: >= 1 */
    double gamma;           /* step: > 0 */
    double min_lr;          /* cosine: >= 0 and <= lr */
    long long total_steps;  /* cosine: T, the run's steps */
} fn_schedule;

/* "constant", "step" or "cosine"; FN_ERR_INVALID naming the choices. */
fn_status fn_schedule_parse(const char *text, fn_schedule_kind *kind);
const char *fn_schedule_name(fn_schedule_kind kind);
/* FN_ERR_INVALID with a message naming the offending field. */
fn_status fn_schedule_check(const fn_schedule *s);
/* The learning rate of global step t >= 0 (the formulas above). */
double fn_schedule_lr(const fn_schedule *s, long long t);

#ifdef __cplusplus
}
#endif
#endif
