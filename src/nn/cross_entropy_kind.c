/* cross_entropy_kind.c — softmax cross-entropy over integer labels as a
 * registered loss (loss_kind.h): labels in, loss and accuracy out, the
 * best run the one of highest validation accuracy. */
#include "nn/loss_backends.h"
#include "fusenet/loss.h"
#include "fusenet/loss_kind.h"

static fn_status ce_read(fn_context *ctx, const void *options, const fn_tensor *pred,
                          const fn_loss_targets *t, fn_tensor *loss, fn_tensor *dpred,
                          float *value, int *correct)
{
    (void)options;
    *correct = 0;
    return fn_cross_entropy_loss_read(ctx, pred, t->labels, loss, dpred, value, correct);
}

static fn_status ce_partials(fn_context *ctx, const void *options, const fn_tensor *pred,
                              const fn_loss_targets *t, fn_tensor *dpred, fn_loss_partials *p)
{
    (void)options;
    if (!t->labels)
        return fn_fail(FN_ERR_INVALID, "cross_entropy loss: labels is NULL");
    return fn_cuda_cross_entropy_partials(ctx, pred, t->labels, dpred, p);
}

const fn_loss_kind fn_cross_entropy_kind = {
    .name = "cross_entropy",
    .targets = FN_DATA_LABELS,
    .metric = fn_loss_row_accuracy,
    .watch_loss = 0,
    .read = ce_read,
    .partials = ce_partials,
};
