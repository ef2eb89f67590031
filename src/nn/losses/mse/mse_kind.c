/* mse_kind.c — the mean squared error as a registered loss (loss_kind.h):
 * float targets in, the loss alone out, the best run the one of lowest
 * validation loss. */
#include "nn/loss_backends.h"
#include "fusenet/loss.h"
#include "fusenet/loss_kind.h"

static fn_status mse_read(fn_context *ctx, const void *options, const fn_tensor *pred,
                          const fn_loss_targets *t, fn_tensor *loss, fn_tensor *dpred,
                          float *value, int *correct)
{
    (void)options;
    *correct = 0;
    FN_TRY(fn_mse_loss_weighted(ctx, pred, t->values, t->weights, loss, dpred));
    return fn_tensor_download(loss, value, 1);
}

static fn_status mse_partials(fn_context *ctx, const void *options, const fn_tensor *pred,
                              const float *pred_bias, const fn_loss_targets *t, fn_tensor *dpred,
                              const fn_loss_tally_into *into, fn_loss_partials *p)
{
    (void)options;
    FN_TRY(fn_tensor_check_on(t->values, "target", FN_CUDA, pred->rows, pred->cols));
    return fn_cuda_mse_partials(ctx, pred, pred_bias, t->values, dpred, into, p);
}

static int mse_takes_bias(const void *options)
{
    (void)options;
    return 1;
}

const fn_loss_kind fn_mse_kind = {
    .name = "mse",
    .targets = FN_DATA_FLOATS,
    .metric = NULL,
    .watch_loss = 1,
    .read = mse_read,
    .partials = mse_partials,
    .takes_bias = mse_takes_bias,
};
