/* bce_kind.c — binary cross-entropy on logits as a registered loss
 * (loss_kind.h): float targets [N, K] in [0, 1] in (one column a label),
 * the loss and the label accuracy out (the fraction of the N * K labels
 * predicted right: logit > 0 against target >= 0.5), the best run the one
 * of lowest validation loss; its key [train] pos_weight
 * (torch.nn.BCEWithLogitsLoss's pos_weight). */
#include <math.h>
#include <stddef.h>

#include "nn/losses/bce/bce.h"

static const fn_option bce_options[] = {
    {"pos_weight", FN_OPTION_LIST, offsetof(fn_bce_options, pos_weight), 0, 1e30, 0, ""},
};

/* The call's weights: NULL when the list is empty (all 1). */
static const float *weights_of(const void *options)
{
    const fn_bce_options *o = options;
    return o && o->pos_weight.n ? o->pos_weight.values : NULL;
}

static fn_status bce_check(const void *options, const fn_option_context *at, const char **key)
{
    const int outputs = at->outputs;
    const fn_bce_options *o = options;
    const int n = o->pos_weight.n;
    *key = "pos_weight";
    if (n && n != outputs)
        return fn_fail(FN_ERR_INVALID, "%d weights, but the network has %d outputs (one a label)",
                       n, outputs);
    if (n > FN_BCE_MAX_WEIGHTS)
        return fn_fail(FN_ERR_INVALID, "%d weights: at most %d labels take weights", n,
                       FN_BCE_MAX_WEIGHTS);
    return FN_OK;
}

static fn_status bce_read(fn_context *ctx, const void *options, const fn_tensor *pred,
                          const fn_loss_targets *t, fn_tensor *loss, fn_tensor *dpred,
                          float *value, int *correct)
{
    *correct = 0;
    FN_TRY(fn_bce_loss(ctx, pred, t->values, weights_of(options), t->weights, loss, dpred,
                       correct));
    return fn_tensor_download(loss, value, 1);
}

static fn_status bce_partials(fn_context *ctx, const void *options, const fn_tensor *pred,
                              const float *pred_bias, const fn_loss_targets *t, fn_tensor *dpred,
                              const fn_loss_tally_into *into, fn_loss_partials *p)
{
    (void)pred_bias, (void)into; /* the tally adds the bias and finishes bce's sums */
    FN_TRY(fn_tensor_check_on(t->values, "target", FN_CUDA, pred->rows, pred->cols));
    return fn_cuda_bce_partials(ctx, pred, t->values, weights_of(options), dpred, p);
}

/* The sigmoid of each output on its own (labels are independent, their
 * probabilities need not sum to 1), in float64 in the form whose exp
 * cannot overflow: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below. */
static void bce_probabilities(float *outputs, int rows, int cols)
{
    const size_t n = (size_t)rows * (size_t)cols;
    for (size_t k = 0; k < n; k++) {
        const double x = outputs[k], e = exp(-fabs(x));
        outputs[k] = (float)(x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e));
    }
}

const fn_loss_kind fn_bce_with_logits_kind = {
    .name = "bce_with_logits",
    .targets = FN_DATA_FLOATS,
    .unit_targets = 1,
    .metric = fn_bce_label_accuracy,
    .watch_loss = 1,
    .options_size = sizeof(fn_bce_options),
    .options = bce_options,
    .n_options = sizeof bce_options / sizeof bce_options[0],
    .check_options = bce_check,
    .takes_logits = 1,
    .read = bce_read,
    .partials = bce_partials,
    .probabilities = bce_probabilities,
};
