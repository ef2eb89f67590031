/* loss_kind.h — the registry of losses: for each, its [train] loss name,
 * the targets it takes from a data set, its value and gradient (read at
 * once, or counted on the device in a loss tally), its metrics and which
 * of them a run watches. The trainer, the data sets, the config and
 * predict ask this table; none of them names a loss.
 *
 * A new loss is its own files (its arithmetic, loss.h's pattern; its
 * descriptor, src/nn/mse_kind.c's) plus one line in the table of
 * src/nn/loss_kind.c. */
#ifndef FUSENET_LOSS_KIND_H
#define FUSENET_LOSS_KIND_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/data.h"
#include "fusenet/loss_tally.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A batch's targets as a loss takes them: labels or values, by the kind's
 * `targets` (the other is unused). */
typedef struct fn_loss_targets {
    const int32_t *labels;   /* FN_DATA_LABELS: [rows] on the predictions' device */
    const fn_tensor *values; /* FN_DATA_FLOATS: [rows, out] */
} fn_loss_targets;

typedef struct fn_loss_kind {
    const char *name;        /* "cross_entropy": the [train] loss value */
    fn_data_targets targets; /* what a set's targets must be (fn_data_options) */
    int accuracy;            /* it counts the rows classified right: an accuracy metric */
    int watch_loss;          /* keep_best and patience watch the validation loss (lower
                              * is better); else its accuracy (higher is better) */
    int takes_logits;        /* it reads unbounded scores: a last layer of bounded
                              * outputs (fn_layer_kind.bounded_outputs) gets a notice */
    /* The loss into loss [1, 1] and *value, the gradient assigned to dpred
     * (NULL: the value only), the rows classified right into *correct (0
     * without accuracy); waits for the device. */
    fn_status (*read)(fn_context *ctx, const fn_tensor *pred, const fn_loss_targets *t,
                      fn_tensor *loss, fn_tensor *dpred, float *value, int *correct);
    /* The same value and gradient counted in the tally; launches only on
     * the GPU (loss_tally.h). */
    fn_status (*tally)(fn_loss_tally *tally, const fn_tensor *pred, const fn_loss_targets *t,
                       fn_tensor *loss, fn_tensor *dpred);
} fn_loss_kind;

extern const fn_loss_kind fn_cross_entropy_kind;
extern const fn_loss_kind fn_mse_kind;

/* The kind called `name`; FN_ERR_INVALID "expected cross_entropy or mse,
 * got 'x'" (the table's names) when there is none. */
fn_status fn_loss_kind_find(const char *name, const fn_loss_kind **kind);

/* The table's names, "a", "a or b", "a, b or c", into buf. */
const char *fn_loss_kind_list(char *buf, size_t cap);

/* The table's i-th kind; NULL past the end. */
const fn_loss_kind *fn_loss_kind_at(int i);

#ifdef __cplusplus
}
#endif
#endif
