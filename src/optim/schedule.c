/* schedule.c — a learning-rate schedule (schedule.h): the checks every
 * kind shares, the kind's rate times the linear warm-up factor, in double,
 * and the end of an epoch handed to a kind that keeps state. */
#include <math.h>

#include "fusenet/schedule_kind.h"

fn_status fn_schedule_check(const fn_schedule *s)
{
    if (!s)
        return fn_fail(FN_ERR_INVALID, "schedule: NULL");
    if (!s->kind || !s->kind->rate)
        return fn_fail(FN_ERR_INVALID, "schedule: no kind");
    if (s->kind->options_size && !s->options)
        return fn_fail(FN_ERR_INVALID, "schedule: %s has no options block", s->kind->name);
    if (!(s->lr > 0) || !isfinite(s->lr))
        return fn_fail(FN_ERR_INVALID, "schedule: lr %g must be positive and finite", s->lr);
    if (s->warmup_steps < 0)
        return fn_fail(FN_ERR_INVALID, "schedule: warmup_steps %lld must be >= 0",
                       s->warmup_steps);
    const char *key = NULL;
    const fn_option_context at = {.lr = s->lr};
    if (s->kind->check_options && s->kind->check_options(s->options, &at, &key) != FN_OK) {
        fn_error_prefix("schedule: ");
        return FN_ERR_INVALID;
    }
    return FN_OK;
}

double fn_schedule_lr(const fn_schedule *s, long long t)
{
    const double f = s->kind->rate(s, t);
    if (t < s->warmup_steps)
        return f * (double)(t + 1) / (double)s->warmup_steps;
    return f;
}

void fn_schedule_epoch_end(fn_schedule *s, double metric)
{
    if (s->kind->epoch_end)
        s->kind->epoch_end(s, metric);
}

const char *fn_schedule_name(const fn_schedule *s)
{
    return s && s->kind ? s->kind->name : "unknown";
}
