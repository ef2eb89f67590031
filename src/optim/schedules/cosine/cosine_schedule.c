/* cosine_schedule.c — cosine annealing (schedule_kind.h) over the run's
 * steps after the warm-up: with W = warmup_steps and T the run's steps,
 *   f(t) = min_lr + (lr - min_lr) * (1 + cos(pi * (t - W) / (T - W))) / 2
 * for W <= t < T, min_lr from T on, lr for t < W (and when T <= W): after
 * the warm-up torch's CosineAnnealingLR(T_max = T - W, eta_min = min_lr). */
#include <math.h>
#include <stddef.h>

#include "fusenet/schedule_kind.h"
#include "optim/schedules/cosine/cosine_schedule.h"

#define AT(field) offsetof(fn_cosine_schedule_options, field)

static const fn_option options[] = {
    {"min_lr", FN_OPTION_FLOAT, AT(min_lr), 0, 1e6, 0, "0"},
};

/* M_PI is POSIX, not C11. */
static const double pi = 3.14159265358979323846;

static fn_status check(const void *options_, const fn_option_context *at, const char **key)
{
    const double lr = at->lr;
    const fn_cosine_schedule_options *o = options_;
    *key = "min_lr";
    if (!(o->min_lr >= 0 && o->min_lr <= lr))
        return fn_fail(FN_ERR_INVALID, "min_lr %g is above lr %g", (double)o->min_lr, lr);
    return FN_OK;
}

static double rate(const fn_schedule *s, long long t)
{
    const double min_lr = ((const fn_cosine_schedule_options *)s->options)->min_lr;
    const long long w = s->warmup_steps, span = s->total_steps - w;
    if (t < w || span <= 0)
        return s->lr;
    /* A step past T (a resumed run given fewer epochs) stays at the end. */
    const double x = (double)(t - w < span ? t - w : span) / (double)span;
    return min_lr + (s->lr - min_lr) * (1 + cos(pi * x)) / 2;
}

const fn_schedule_kind fn_cosine_schedule = {
    .name = "cosine",
    .options_size = sizeof(fn_cosine_schedule_options),
    .options = options,
    .n_options = sizeof options / sizeof options[0],
    .check_options = check,
    .rate = rate,
};
