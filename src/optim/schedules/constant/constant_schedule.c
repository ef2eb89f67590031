/* constant_schedule.c — the constant schedule (schedule_kind.h):
 * f(t) = lr, with no keys of its own. */
#include "fusenet/schedule_kind.h"

static double rate(const fn_schedule *s, long long t)
{
    (void)t;
    return s->lr;
}

const fn_schedule_kind fn_constant_schedule = {
    .name = "constant",
    .rate = rate,
};
