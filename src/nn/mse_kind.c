/* mse_kind.c — the mean squared error as a registered loss (loss_kind.h):
 * float targets in, the loss alone out, the best run the one of lowest
 * validation loss. */
#include "fusenet/loss.h"
#include "fusenet/loss_kind.h"

static fn_status mse_read(fn_context *ctx, const fn_tensor *pred, const fn_loss_targets *t,
                      fn_tensor *loss, fn_tensor *dpred, float *value, int *correct)
{
    *correct = 0;
    FN_TRY(fn_mse_loss(ctx, pred, t->values, loss, dpred));
    return fn_tensor_download(loss, value, 1);
}

static fn_status mse_tally(fn_loss_tally *tally, const fn_tensor *pred, const fn_loss_targets *t,
                       fn_tensor *loss, fn_tensor *dpred)
{
    return fn_loss_tally_mse(tally, pred, t->values, loss, dpred);
}

const fn_loss_kind fn_mse_kind = {
    .name = "mse",
    .targets = FN_DATA_FLOATS,
    .accuracy = 0,
    .watch_loss = 1,
    .read = mse_read,
    .tally = mse_tally,
};
