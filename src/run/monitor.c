/* monitor.c — the names and directions of the metrics a run may watch
 * (monitor.h). */

#include "core/name_list.h"
#include "run/monitor.h"

static const char *const names[] = {
    [FN_MONITOR_VALID_LOSS] = "valid_loss",
    [FN_MONITOR_VALID_ACCURACY] = "valid_accuracy",
    [FN_MONITOR_TRAIN_LOSS] = "train_loss",
};
_Static_assert(sizeof names / sizeof *names == FN_MONITOR_KINDS, "every monitor has its name");

fn_status fn_monitor_parse(const char *text, fn_monitor *monitor)
{
    int at = 0;
    FN_TRY(fn_name_lookup(text, names, FN_MONITOR_KINDS, &at));
    *monitor = (fn_monitor)at;
    return FN_OK;
}

const char *fn_monitor_name(fn_monitor monitor)
{
    return (unsigned)monitor < FN_MONITOR_KINDS ? names[monitor] : "unknown";
}

int fn_monitor_lower_better(fn_monitor monitor) { return monitor != FN_MONITOR_VALID_ACCURACY; }

int fn_monitor_needs_valid(fn_monitor monitor) { return monitor != FN_MONITOR_TRAIN_LOSS; }
