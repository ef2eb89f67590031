/* plateau_schedule.c — reduce the rate when the monitored metric stops
 * improving (schedule_kind.h): torch.optim.lr_scheduler.ReduceLROnPlateau
 * in its default mode 'min', threshold_mode 'rel', stepped once at each
 * epoch's end with the epoch's metric (lower is better). An epoch is
 * better when metric < best * (1 - threshold); after more than
 * plateau_patience epochs without a better one (not counted during
 * cooldown epochs after a reduction) the rate becomes
 * max(rate * factor, min_lr), unless that changes it by 1e-8 or less
 * (torch's eps). Between epochs f(t) is the rate in effect, in double as
 * torch's Python keeps it; the warm-up factor multiplies it as it does
 * every schedule's. Its state (schedule.h) is the rate, the best metric,
 * the bad epochs and the cooldown left, stored in checkpoints. */
#include <math.h>
#include <stddef.h>

#include "fusenet/schedule_kind.h"
#include "optim/schedules/plateau/plateau_schedule.h"

#define AT(field) offsetof(fn_plateau_schedule_options, field)

/* torch's defaults; plateau_patience is torch's patience ([train]
 * patience is early stopping's). */
static const fn_option options[] = {
    {"factor", FN_OPTION_FLOAT, AT(factor), 0, 1, 1, "0.1"},
    {"plateau_patience", FN_OPTION_INT, AT(patience), 0, 1e6, 0, "10"},
    {"threshold", FN_OPTION_FLOAT, AT(threshold), 0, 1, 0, "1e-4"},
    {"cooldown", FN_OPTION_INT, AT(cooldown), 0, 1e6, 0, "0"},
    {"min_lr", FN_OPTION_FLOAT, AT(min_lr), 0, 1e6, 0, "0"},
};

/* torch's eps: a reduction smaller than this is not made. */
static const double min_change = 1e-8;

static fn_status check(const void *options_, const fn_option_context *at, const char **key)
{
    const fn_plateau_schedule_options *o = options_;
    (void)at;
    *key = "factor";
    if (!(o->factor > 0 && o->factor < 1))
        return fn_fail(FN_ERR_INVALID, "factor %g must be > 0 and < 1 (a reduction multiplies "
                       "the rate by it)", (double)o->factor);
    *key = "threshold";
    if (!(o->threshold >= 0 && o->threshold < 1))
        return fn_fail(FN_ERR_INVALID, "threshold %g must be >= 0 and < 1", (double)o->threshold);
    *key = o->patience < 0 ? "plateau_patience" : "cooldown";
    if (o->patience < 0 || o->cooldown < 0)
        return fn_fail(FN_ERR_INVALID, "plateau_patience and cooldown must be >= 0");
    *key = "min_lr";
    if (!(o->min_lr >= 0) || !isfinite(o->min_lr))
        return fn_fail(FN_ERR_INVALID, "min_lr %g must be >= 0 and finite", (double)o->min_lr);
    return FN_OK;
}

static double rate(const fn_schedule *s, long long t)
{
    (void)t;
    return s->state[FN_PLATEAU_STARTED] != 0 ? s->state[FN_PLATEAU_LR] : s->lr;
}

static void epoch_end(fn_schedule *s, double metric)
{
    const fn_plateau_schedule_options *o = s->options;
    double *st = s->state;
    if (st[FN_PLATEAU_STARTED] == 0) {
        st[FN_PLATEAU_STARTED] = 1;
        st[FN_PLATEAU_LR] = s->lr;
        st[FN_PLATEAU_BEST] = INFINITY;
    }
    if (metric < st[FN_PLATEAU_BEST] * (1.0 - (double)o->threshold)) {
        st[FN_PLATEAU_BEST] = metric;
        st[FN_PLATEAU_BAD] = 0;
    } else {
        st[FN_PLATEAU_BAD] += 1;
    }
    if (st[FN_PLATEAU_COOLDOWN] > 0) {
        st[FN_PLATEAU_COOLDOWN] -= 1;
        st[FN_PLATEAU_BAD] = 0;
    }
    if (st[FN_PLATEAU_BAD] > o->patience) {
        const double old = st[FN_PLATEAU_LR];
        const double reduced = fmax(old * (double)o->factor, (double)o->min_lr);
        if (old - reduced > min_change)
            st[FN_PLATEAU_LR] = reduced;
        st[FN_PLATEAU_COOLDOWN] = o->cooldown;
        st[FN_PLATEAU_BAD] = 0;
    }
}

const fn_schedule_kind fn_plateau_schedule = {
    .name = "plateau",
    .options_size = sizeof(fn_plateau_schedule_options),
    .options = options,
    .n_options = sizeof options / sizeof options[0],
    .check_options = check,
    .rate = rate,
    .epoch_end = epoch_end,
};
