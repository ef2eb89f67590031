/* loss_kind.h — the registry of losses: for each, its [train] loss name,
 * the targets it takes from a data set, its value and gradient (read at
 * once, or left on the device as partial sums for a loss tally to count),
 * its metric and which figure a run watches, and its own [train] keys
 * (type, range, default) with the check across them. The trainer, the data sets,
 * the config, the loss tally and predict ask this table; none of them
 * names a loss.
 *
 * A new loss is its own files (its arithmetic, loss.h's pattern; its
 * descriptor, src/nn/losses/mse/mse_kind.c's) plus one line in the table of
 * src/nn/loss_kind.c. */
#ifndef FUSENET_LOSS_KIND_H
#define FUSENET_LOSS_KIND_H

#include "fusenet/api.h"

#include <stddef.h>
#include <stdint.h>

#include "fusenet/data.h"
#include "fusenet/kind.h"
#include "fusenet/option.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A batch's targets as a loss takes them: labels or values, by the kind's
 * `targets` (the other is unused), and optionally a weight per row.
 * With weights w (each finite and >= 0) a loss of per-row values l_n is
 * sum_n w_n l_n / sum_n w_n, l_n being the row's loss as the mean would
 * count it (the mean over the row's columns for mse, huber and
 * bce_with_logits; for cross_entropy with class_weights cw the row
 * counts w_n cw[y_n] and the divisor is sum_n w_n cw[y_n]), the gradient
 * scaled to match; rows whose weights sum to 0 give a value and gradient
 * of 0. Weights are a CPU feature: a loss on the GPU refuses them. */
typedef struct fn_loss_targets {
    const int32_t *labels;   /* FN_DATA_LABELS: [rows] on the predictions' device */
    const fn_tensor *values; /* FN_DATA_FLOATS: [rows, out] */
    const float *weights;    /* [rows] in host memory, or NULL: every row 1 */
} fn_loss_targets;

/* A loss's value left on the GPU as per-block partial sums, for a loss
 * tally to finish (loss_tally.h): the value is (the sums added in order) *
 * scale, the correct count the counts added in order. The buffers are the
 * context's reduce buffer, valid until the next kernel that uses it. */
typedef struct fn_loss_partials {
    const double *sums; /* device [count] */
    const int *counts;  /* device [count], or NULL: the loss counts nothing right */
    int count;          /* the partial sums (blocks) */
    double scale;       /* 1 / the mean's divisor */
    int finished;       /* the loss's kernel finished them into the tally (into) */
} fn_loss_partials;

struct fn_loss_tally_value; /* loss_tally.h */

/* Where a loss tally (loss_tally.h) wants a step's value finished, all
 * device memory: a loss whose kernel can finish its own partial sums does
 * so in the launch's last block (the value into loss, counted in sums as
 * the tally's own finish counts it, bit for bit) and says so in
 * fn_loss_partials.finished; one that cannot leaves them to the tally. */
typedef struct fn_loss_tally_into {
    float *loss;                      /* [1]: the step's value */
    struct fn_loss_tally_value *sums; /* [1]: the running sums it is counted in */
    int *ticket;                      /* [1]: the blocks' arrival count, 0 between launches */
    int rows;                         /* the step's rows */
} fn_loss_tally_into;

typedef struct fn_loss_kind {
    /* name: the [train] loss value ("cross_entropy"); its own [train] keys,
     * read by the config into an options block of options_size bytes (0,
     * NULL, 0: none) that read and partials get; check_options
     * (optional): the rules across them and against the network's outputs
     * (at->outputs). */
    FN_KIND_HEAD;
    fn_data_targets targets; /* what a set's targets must be (fn_data_options) */
    int unit_targets;        /* FN_DATA_FLOATS only: each value in [0, 1] (probabilities) */
    /* The run's metric beside the loss (the "acc" of the epoch lines and
     * metrics.csv) from the correct count its read or partials give over
     * `rows` rows of `outputs` columns; NULL: none (reported as NaN). */
    double (*metric)(long long correct, long long rows, int outputs);
    int watch_loss;          /* keep_best and patience watch the validation loss (lower
                              * is better); else its metric (higher is better) */
    int takes_logits;        /* it reads unbounded scores: a last layer of bounded
                              * outputs (fn_layer_kind.bounded_outputs) gets a notice */
    /* Optional: when a batch's targets alone make its loss not finite
     * with these options (cross_entropy: every row of a class whose
     * class_weights weight is 0, a weighted mean of 0/0), says why into
     * buf (snprintf's rules), naming the key, and returns 1; else 0.
     * host_labels: [rows] in host memory (NULL for values). */
    int (*explain_nonfinite)(const void *options, const int32_t *host_labels, int rows,
                             char *buf, size_t cap);
    /* The loss into loss [1, 1] and *value, the gradient assigned to dpred
     * (NULL: the value only), the correct count into *correct (0 without
     * a metric); waits for the device. */
    fn_status (*read)(fn_context *ctx, const void *options, const fn_tensor *pred,
                      const fn_loss_targets *t, fn_tensor *loss, fn_tensor *dpred, float *value,
                      int *correct);
    /* The GPU only: the same value's partial sums and correct counts left
     * on the device and described in *p, the gradient assigned to dpred
     * (NULL: none); launches only (no copy, no synchronisation: a CUDA
     * graph may capture it); pred_bias: NULL, or as takes_bias says.
     * With `into` (NULL: none), a kind may finish the sums there in the
     * same launch (fn_loss_tally_into) and set p->finished; else the tally
     * finishes them. pred, dpred are checked by the caller, the targets by
     * the kind. */
    fn_status (*partials)(fn_context *ctx, const void *options, const fn_tensor *pred,
                          const float *pred_bias, const fn_loss_targets *t, fn_tensor *dpred,
                          const fn_loss_tally_into *into, fn_loss_partials *p);
    /* Optional: whether partials, with these options, takes pred_bias:
     * the bias [cols] the predictions still lack (the last layer's,
     * fn_net_forward_unbiased), added in its own kernel to each row before
     * anything reads it and written back (pred += bias, one float addition
     * an element, the bits the layer's forward gives). NULL or 0: the
     * tally adds it first and partials gets NULL. */
    int (*takes_bias)(const void *options);
    /* Optional: the weight of a batch's value, the divisor read's mean
     * took, in rows (cross_entropy with class_weights: the sum of its rows'
     * label weights, torch.nn.CrossEntropyLoss's; times the rows' sample
     * weights when given); host_labels [rows] in host memory, NULL for
     * values; host_weights: fn_loss_targets.weights. A set's loss over
     * several batches is sum(value * weight) / sum(weight), whatever the
     * batches. NULL: the sum of host_weights, or rows without them
     * (fn_loss_mean_weight). */
    double (*mean_weight)(const void *options, const int32_t *host_labels,
                          const float *host_weights, int rows);
    /* Optional: the link its outputs take to the probabilities they stand
     * for, applied in place to outputs [rows, cols] in host memory
     * (predict --probabilities): cross_entropy's classes exclude each
     * other, the softmax across a row; bce_with_logits's labels are
     * independent, the sigmoid of each output. NULL: its outputs are
     * values, not probabilities. */
    void (*probabilities)(float *outputs, int rows, int cols);
} fn_loss_kind;

FN_API extern const fn_loss_kind fn_cross_entropy_kind;
FN_API extern const fn_loss_kind fn_mse_kind;

/* The kind called `name`; FN_ERR_INVALID "expected bce_with_logits, cross_entropy, huber or mse,
 * got 'x'" (the table's names) when there is none. */
FN_API fn_status fn_loss_kind_find(const char *name, const fn_loss_kind **kind);

FN_API const fn_registry *fn_loss_kinds(void); /* the table (kind.h) */
FN_API int fn_loss_kind_count(void);
FN_API const fn_loss_kind *fn_loss_kind_at(int i); /* NULL past the end */

/* A kind's name and the targets it takes, for bindings that do not mirror
 * the struct: FN_DATA_LABELS (classes), FN_DATA_FLOATS (values), and
 * whether those values are each in [0, 1] (bce_with_logits: labels of a
 * multi-label set). */
FN_API const char *fn_loss_kind_name(const fn_loss_kind *kind);
FN_API fn_data_targets fn_loss_kind_targets(const fn_loss_kind *kind);
FN_API int fn_loss_kind_unit_targets(const fn_loss_kind *kind);

/* kind's link (fn_loss_kind.probabilities) applied to outputs [rows,
 * cols] in host memory, for bindings that do not mirror the struct;
 * FN_ERR_INVALID naming the loss when its outputs are values. */
FN_API fn_status fn_loss_kind_probabilities(const fn_loss_kind *kind, float *outputs, int rows,
                                            int cols);

/* The divisor of kind's mean over a batch (its mean_weight, else the sum
 * of host_weights, else rows). */
FN_API double fn_loss_mean_weight(const fn_loss_kind *kind, const void *options,
                                  const int32_t *host_labels, const float *host_weights, int rows);

/* The metric of a loss that counts rows classified right: correct / rows. */
FN_API double fn_loss_row_accuracy(long long correct, long long rows, int outputs);

#ifdef __cplusplus
}
#endif
#endif
