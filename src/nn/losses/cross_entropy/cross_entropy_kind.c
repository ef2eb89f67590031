/* cross_entropy_kind.c — softmax cross-entropy over integer labels as a
 * registered loss (loss_kind.h): labels in, loss and accuracy out, the
 * best run the one of highest validation accuracy; its keys [train]
 * class_weights and label_smoothing (torch.nn.CrossEntropyLoss's weight
 * and label_smoothing). Without them the plain loss of loss.h runs; with
 * either, cross_entropy_options.h's. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "nn/losses/cross_entropy/cross_entropy_options.h"
#include "nn/loss_backends.h"
#include "fusenet/loss.h"
#include "fusenet/loss_kind.h"

static const fn_option ce_options[] = {
    {"class_weights", FN_OPTION_LIST, offsetof(fn_cross_entropy_options, class_weights), 0, 1e30,
     0, ""},
    {"label_smoothing", FN_OPTION_FLOAT, offsetof(fn_cross_entropy_options, label_smoothing), 0,
     1, 0, "0"},
};

/* The call's weights and smoothing (and the rows' sample weights, NULL:
 * none); 0 when the options are the defaults and there are no sample
 * weights (the plain loss). */
static int smoothing_of(const void *options, const float *row_weights, fn_ce_smoothing *s)
{
    const fn_cross_entropy_options *o = options;
    *s = (fn_ce_smoothing){o && o->class_weights.n ? o->class_weights.values : NULL,
                           o ? o->label_smoothing : 0.0f, row_weights};
    return s->weights || s->eps != 0.0f || s->row_weights;
}

static fn_status ce_check(const void *options, const fn_option_context *at, const char **key)
{
    const int outputs = at->outputs;
    const fn_cross_entropy_options *o = options;
    const int n = o->class_weights.n;
    *key = "class_weights";
    if (n && n != outputs)
        return fn_fail(FN_ERR_INVALID, "%d weights, but the network has %d outputs (one a class)",
                       n, outputs);
    if (n > FN_CE_MAX_WEIGHTS)
        return fn_fail(FN_ERR_INVALID, "%d weights: at most %d classes take weights", n,
                       FN_CE_MAX_WEIGHTS);
    /* The loss is sum(w l) / sum(w) over a batch's rows: with every weight
     * 0 it is 0/0 on every batch. */
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += o->class_weights.values[i];
    if (n && !(sum > 0))
        return fn_fail(FN_ERR_INVALID, "every weight is 0, so the weighted loss sum(w l) / "
                       "sum(w) is 0/0 on every batch; give at least one class a weight above 0");
    return FN_OK;
}

/* A batch whose every row is of a class of weight 0: its weighted mean is
 * 0/0, whatever the learning rate or the inputs. */
static int ce_explain_nonfinite(const void *options, const int32_t *labels, int rows, char *buf,
                                size_t cap)
{
    const fn_cross_entropy_options *o = options;
    const int n = o ? o->class_weights.n : 0;
    if (!n || !labels || rows < 1)
        return 0;
    for (int i = 0; i < rows; i++)
        if (labels[i] < 0 || labels[i] >= n || o->class_weights.values[labels[i]] != 0.0f)
            return 0;
    snprintf(buf, cap, "every row of this batch is of a class whose [train] class_weights weight "
             "is 0 (class %d of its first row), so its weighted loss sum(w l) / sum(w) is 0/0; "
             "give those classes a weight above 0, or train with a batch_size that mixes in "
             "other classes", (int)labels[0]);
    return 1;
}

static fn_status ce_read(fn_context *ctx, const void *options, const fn_tensor *pred,
                         const fn_loss_targets *t, fn_tensor *loss, fn_tensor *dpred,
                         float *value, int *correct)
{
    fn_ce_smoothing s;
    *correct = 0;
    if (!smoothing_of(options, t->weights, &s))
        return fn_cross_entropy_loss_read(ctx, pred, t->labels, loss, dpred, value, correct);
    FN_TRY(fn_cross_entropy_smoothed_loss(ctx, pred, t->labels, &s, loss, dpred));
    FN_TRY(fn_count_correct(ctx, pred, t->labels, correct));
    return fn_tensor_download(loss, value, 1);
}

static fn_status ce_partials(fn_context *ctx, const void *options, const fn_tensor *pred,
                             const float *pred_bias, const fn_loss_targets *t, fn_tensor *dpred,
                             const fn_loss_tally_into *into, fn_loss_partials *p)
{
    fn_ce_smoothing s;
    if (!t->labels)
        return fn_fail(FN_ERR_INVALID, "cross_entropy loss: labels is NULL");
    if (!smoothing_of(options, t->weights, &s))
        return fn_cuda_cross_entropy_partials(ctx, pred, pred_bias, t->labels, dpred, into, p);
    /* The weighted or smoothed loss leaves the bias and its sums to the
     * tally (ce_takes_bias). */
    return fn_cuda_cross_entropy_smoothed_partials(ctx, pred, t->labels, &s, dpred, p);
}

/* The plain loss adds the bias itself. */
static int ce_takes_bias(const void *options)
{
    fn_ce_smoothing s;
    return !smoothing_of(options, NULL, &s);
}

/* With class_weights a batch's value is sum(w[y] l) / sum(w[y]): its
 * weight is sum(w[y]); with sample weights r, sum(r w[y]) (w all 1
 * without class_weights). The labels were checked in range as the set was
 * read (data.h). */
static double ce_mean_weight(const void *options, const int32_t *host_labels,
                             const float *host_weights, int rows)
{
    const fn_cross_entropy_options *o = options;
    const int classes = o && host_labels ? o->class_weights.n : 0;
    if (!classes && !host_weights)
        return rows;
    double w = 0.0;
    for (int n = 0; n < rows; n++)
        w += (classes ? (double)o->class_weights.values[host_labels[n]] : 1.0) *
             (host_weights ? (double)host_weights[n] : 1.0);
    return w;
}

/* The softmax across each row (float64 inside, the row's max subtracted
 * first so no exp overflows): one class a row, the probabilities summing
 * to 1. */
static void ce_probabilities(float *outputs, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        float *row = outputs + (size_t)i * (size_t)cols;
        double m = row[0], sum = 0;
        for (int j = 1; j < cols; j++)
            m = row[j] > m ? row[j] : m;
        for (int j = 0; j < cols; j++)
            sum += exp((double)row[j] - m);
        for (int j = 0; j < cols; j++)
            row[j] = (float)(exp((double)row[j] - m) / sum);
    }
}

const fn_loss_kind fn_cross_entropy_kind = {
    .name = "cross_entropy",
    .targets = FN_DATA_LABELS,
    .metric = fn_loss_row_accuracy,
    .watch_loss = 0,
    .options_size = sizeof(fn_cross_entropy_options),
    .options = ce_options,
    .n_options = sizeof ce_options / sizeof ce_options[0],
    .check_options = ce_check,
    .explain_nonfinite = ce_explain_nonfinite,
    .takes_logits = 1,
    .read = ce_read,
    .partials = ce_partials,
    .takes_bias = ce_takes_bias,
    .mean_weight = ce_mean_weight,
    .probabilities = ce_probabilities,
};
