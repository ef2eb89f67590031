/* cross_entropy_kind.c — softmax cross-entropy over integer labels as a
 * registered loss (loss_kind.h): labels in, loss and accuracy out, the
 * best run the one of highest validation accuracy. */
#include "fusenet/loss.h"
#include "fusenet/loss_kind.h"

static fn_status ce_read(fn_context *ctx, const fn_tensor *pred, const fn_loss_targets *t,
                      fn_tensor *loss, fn_tensor *dpred, float *value, int *correct)
{
    *correct = 0;
    return fn_cross_entropy_loss_read(ctx, pred, t->labels, loss, dpred, value, correct);
}

static fn_status ce_tally(fn_loss_tally *tally, const fn_tensor *pred, const fn_loss_targets *t,
                       fn_tensor *loss, fn_tensor *dpred)
{
    return fn_loss_tally_cross_entropy(tally, pred, t->labels, loss, dpred);
}

const fn_loss_kind fn_cross_entropy_kind = {
    .name = "cross_entropy",
    .targets = FN_DATA_LABELS,
    .accuracy = 1,
    .watch_loss = 0,
    .takes_logits = 1,
    .read = ce_read,
    .tally = ce_tally,
};
