/* metrics_csv.h (private) — metrics.csv: a header line, then one line per
 * epoch (epoch, train_loss, train_acc, valid_loss, valid_acc, seconds,
 * samples_per_s: the epoch's training rows over its training time, lr: the
 * rate of the epoch's last step, grad_norm: that step's gradient norm
 * before clipping, nan without clip_grad_norm). */
#ifndef FUSENET_TRAIN_METRICS_CSV_H
#define FUSENET_TRAIN_METRICS_CSV_H

#include "fusenet/status.h"

typedef struct fn_metrics_csv fn_metrics_csv; /* opaque */

/* Opens path for writing, keeping the header and the first `epochs` lines
 * of what it held: those a resumed checkpoint covers. */
fn_status fn_metrics_csv_open(fn_metrics_csv **csv, const char *path, long long epochs);
/* One epoch's line (epoch 1-based), flushed. */
void fn_metrics_csv_add(fn_metrics_csv *csv, long long epoch, double train_loss, double train_acc,
                        double valid_loss, double valid_acc, double seconds,
                        double samples_per_s, double lr, double grad_norm);
void fn_metrics_csv_close(fn_metrics_csv *csv); /* NULL is fine */

#endif
