/* monitor.h — the metric a run watches for [train] keep_best and patience
 * ([train] monitor): the validation loss (lower is better), the
 * validation accuracy (higher) or the training loss (lower), each an
 * epoch's mean; an epoch improves on the best so far when it is better by
 * more than [train] min_delta, as Keras' EarlyStopping counts it. */
#ifndef FUSENET_RUN_MONITOR_H
#define FUSENET_RUN_MONITOR_H

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_monitor {
    FN_MONITOR_VALID_LOSS = 0,
    FN_MONITOR_VALID_ACCURACY,
    FN_MONITOR_TRAIN_LOSS
} fn_monitor;
/* How many there are: monitor.c's table of names is checked against it. */
enum { FN_MONITOR_KINDS = FN_MONITOR_TRAIN_LOSS + 1 };

/* "valid_loss", "valid_accuracy", "train_loss". */
fn_status fn_monitor_parse(const char *text, fn_monitor *monitor);
const char *fn_monitor_name(fn_monitor monitor);
/* 1 when a lower value is better (the losses), 0 for the accuracy. */
int fn_monitor_lower_better(fn_monitor monitor);
/* 1 when the metric is the validation set's. */
int fn_monitor_needs_valid(fn_monitor monitor);

#ifdef __cplusplus
}
#endif
#endif
