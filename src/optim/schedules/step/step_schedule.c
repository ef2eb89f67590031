/* step_schedule.c — step decay (schedule_kind.h), as torch's StepLR
 * counted in steps: f(t) = lr * gamma^floor(t / step_size). step_size has
 * no default (a decay interval is the schedule's point); gamma's is
 * StepLR's, 0.1. */
#include <math.h>
#include <stddef.h>

#include "fusenet/schedule_kind.h"
#include "optim/schedules/step/step_schedule.h"

#define AT(field) offsetof(fn_step_schedule_options, field)

static const fn_option options[] = {
    {"step_size", FN_OPTION_INT, AT(step_size), 1, 1e9, 0, NULL},
    {"gamma", FN_OPTION_FLOAT, AT(gamma), 0, 1e6, 1, "0.1"},
};

static fn_status check(const void *options_, const fn_option_context *at, const char **key)
{
    const fn_step_schedule_options *o = options_;
    (void)at;
    *key = "step_size";
    if (o->step_size < 1)
        return fn_fail(FN_ERR_INVALID, "step needs step_size >= 1 (got %d)", o->step_size);
    *key = "gamma";
    if (!(o->gamma > 0) || !isfinite(o->gamma))
        return fn_fail(FN_ERR_INVALID, "gamma %g must be positive and finite", (double)o->gamma);
    return FN_OK;
}

static double rate(const fn_schedule *s, long long t)
{
    const fn_step_schedule_options *o = s->options;
    return s->lr * pow((double)o->gamma, (double)(t / (long long)o->step_size));
}

const fn_schedule_kind fn_step_schedule = {
    .name = "step",
    .options_size = sizeof(fn_step_schedule_options),
    .options = options,
    .n_options = sizeof options / sizeof options[0],
    .check_options = check,
    .rate = rate,
};
