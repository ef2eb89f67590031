/* trainer_monitor.c — the value of the metric a run watches ([train]
 * monitor, monitor.h) at an epoch's end: the one place that picks it from
 * the epoch's training and validation metrics, for keep_best and patience
 * and for anything else that steps on it. */
#include "trainer/trainer_impl.h"

double fn_trainer_monitored(const fn_trainer *t, fn_train_metrics train, fn_train_metrics valid)
{
    switch (t->cfg->monitor) {
    case FN_MONITOR_VALID_ACCURACY: return valid.acc;
    case FN_MONITOR_TRAIN_LOSS: return train.loss;
    case FN_MONITOR_VALID_LOSS: break;
    }
    return valid.loss;
}

int fn_trainer_monitor_lower_better(const fn_trainer *t)
{
    return fn_monitor_lower_better(t->cfg->monitor);
}
