/* huber_kind.c — the Huber loss as a registered loss (loss_kind.h): float
 * targets in, the loss alone out, the best run the one of lowest
 * validation loss; its key [train] delta (torch.nn.HuberLoss's delta). */
#include <stddef.h>

#include "nn/losses/huber/huber.h"

static const fn_option huber_options[] = {
    {"delta", FN_OPTION_FLOAT, offsetof(fn_huber_options, delta), 0, 1e30, 1, "1.0"},
};

static float delta_of(const void *options)
{
    return ((const fn_huber_options *)options)->delta;
}

static fn_status huber_read(fn_context *ctx, const void *options, const fn_tensor *pred,
                            const fn_loss_targets *t, fn_tensor *loss, fn_tensor *dpred,
                            float *value, int *correct)
{
    *correct = 0;
    FN_TRY(fn_huber_loss(ctx, pred, t->values, delta_of(options), t->weights, loss, dpred));
    return fn_tensor_download(loss, value, 1);
}

static fn_status huber_partials(fn_context *ctx, const void *options, const fn_tensor *pred,
                                const float *pred_bias, const fn_loss_targets *t,
                                fn_tensor *dpred, const fn_loss_tally_into *into,
                                fn_loss_partials *p)
{
    (void)pred_bias, (void)into; /* the tally adds the bias and finishes huber's sums */
    FN_TRY(fn_tensor_check_on(t->values, "target", FN_CUDA, pred->rows, pred->cols));
    return fn_cuda_huber_partials(ctx, pred, t->values, delta_of(options), dpred, p);
}

const fn_loss_kind fn_huber_kind = {
    .name = "huber",
    .targets = FN_DATA_FLOATS,
    .metric = NULL,
    .watch_loss = 1,
    .options_size = sizeof(fn_huber_options),
    .options = huber_options,
    .n_options = sizeof huber_options / sizeof huber_options[0],
    .read = huber_read,
    .partials = huber_partials,
};
