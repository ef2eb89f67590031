/* schedule.c — learning-rate schedules with warm-up (schedule.h): the
 * formulas in double, so the rate of a step depends on nothing but t and
 * the settings, and a resumed run continues the same sequence. */
#include <math.h>
#include <string.h>

#include "core/name_list.h"
#include "fusenet/schedule.h"

static const char *const names[] = {
    [FN_SCHEDULE_CONSTANT] = "constant",
    [FN_SCHEDULE_STEP] = "step",
    [FN_SCHEDULE_COSINE] = "cosine",
};
_Static_assert(sizeof names / sizeof *names == FN_SCHEDULE_KINDS, "every schedule has its name");

/* M_PI is POSIX, not C11. */
static const double pi = 3.14159265358979323846;

fn_status fn_schedule_parse(const char *text, fn_schedule_kind *kind)
{
    for (int i = 0; i < FN_SCHEDULE_KINDS; i++)
        if (strcmp(text, names[i]) == 0)
            return *kind = (fn_schedule_kind)i, FN_OK;
    char known[64];
    return fn_fail(FN_ERR_INVALID, "expected %s, got '%s'",
                   fn_name_list(known, sizeof known, names, FN_SCHEDULE_KINDS), text);
}

const char *fn_schedule_name(fn_schedule_kind kind)
{
    return (unsigned)kind < FN_SCHEDULE_KINDS ? names[kind] : "unknown";
}

fn_status fn_schedule_check(const fn_schedule *s)
{
    if (!s)
        return fn_fail(FN_ERR_INVALID, "schedule: NULL");
    if ((unsigned)s->kind >= FN_SCHEDULE_KINDS)
        return fn_fail(FN_ERR_INVALID, "schedule: unknown kind %d", (int)s->kind);
    if (!(s->lr > 0) || !isfinite(s->lr))
        return fn_fail(FN_ERR_INVALID, "schedule: lr %g must be positive and finite", s->lr);
    if (s->warmup_steps < 0)
        return fn_fail(FN_ERR_INVALID, "schedule: warmup_steps %lld must be >= 0",
                       s->warmup_steps);
    if (s->kind == FN_SCHEDULE_STEP && s->step_size < 1)
        return fn_fail(FN_ERR_INVALID, "schedule: step needs step_size >= 1 (got %lld)",
                       s->step_size);
    if (s->kind == FN_SCHEDULE_STEP && (!(s->gamma > 0) || !isfinite(s->gamma)))
        return fn_fail(FN_ERR_INVALID, "schedule: gamma %g must be positive and finite", s->gamma);
    if (s->kind == FN_SCHEDULE_COSINE && !(s->min_lr >= 0 && s->min_lr <= s->lr))
        return fn_fail(FN_ERR_INVALID, "schedule: min_lr %g must be >= 0 and <= lr %g",
                       s->min_lr, s->lr);
    return FN_OK;
}

/* The schedule's rate before the warm-up factor. */
static double decayed(const fn_schedule *s, long long t)
{
    if (s->kind == FN_SCHEDULE_STEP)
        return s->lr * pow(s->gamma, (double)(t / s->step_size));
    if (s->kind != FN_SCHEDULE_COSINE)
        return s->lr;
    const long long w = s->warmup_steps, span = s->total_steps - w;
    if (t < w || span <= 0)
        return s->lr;
    /* A step past T (a resumed run given fewer epochs) stays at the end. */
    const double x = (double)(t - w < span ? t - w : span) / (double)span;
    return s->min_lr + (s->lr - s->min_lr) * (1 + cos(pi * x)) / 2;
}

double fn_schedule_lr(const fn_schedule *s, long long t)
{
    const double f = decayed(s, t);
    if (t < s->warmup_steps)
        return f * (double)(t + 1) / (double)s->warmup_steps;
    return f;
}
