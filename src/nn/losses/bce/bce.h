/* bce.h (private) — binary cross-entropy on logits for multi-label
 * targets, as torch.nn.BCEWithLogitsLoss (mean reduction, pos_weight):
 * per element x = pred, y = target in [0, 1], p = pos_weight of its
 * column (1 without), w = 1 + (p - 1) y,
 *   l = (1 - y) x + w (log1p(exp(-|x|)) + max(-x, 0))
 * (without pos_weight: max(x, 0) - x y + log1p(exp(-|x|))),
 * loss = sum l / (rows * cols),
 * dpred = ((1 - y) - w sigmoid(-x)) / (rows * cols)   (sigmoid(x) - y without).
 * Its metric counts the labels predicted right: x > 0 against y >= 0.5.
 * The value into a [1, 1] tensor on the device, the gradient ASSIGNED
 * (NULL: the value only). Checks and dispatch: src/nn/losses/bce/bce.c; CPU:
 * src/nn/losses/bce/bce_cpu.c; CUDA: kernels/nn/losses/bce/bce_cuda.cu; its registered loss:
 * src/nn/losses/bce/bce_kind.c ([train] loss = bce_with_logits, pos_weight). */
#ifndef FUSENET_NN_BCE_H
#define FUSENET_NN_BCE_H

#include "fusenet/loss_kind.h"
#include "fusenet/option.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Labels (columns) that take a pos_weight at most: the GPU's kernels get
 * the weights by value, so a CUDA graph captures them. */
enum { FN_BCE_MAX_WEIGHTS = 1024 };

/* The kind's options block: [train] pos_weight. */
typedef struct fn_bce_options {
    fn_option_list pos_weight; /* [cols] weights >= 0, or empty: all 1 */
} fn_bce_options;

extern const fn_loss_kind fn_bce_with_logits_kind;

/* pos_weight: [pred->cols] host floats, or NULL; weights: per-row sample
 * weights [rows] in host memory, or NULL (fn_loss_targets.weights:
 * sum_n w_n sum_c l / (sum_n w_n * cols); CPU only); correct: the labels
 * predicted right, or NULL. */
fn_status fn_bce_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                      const float *pos_weight, const float *weights, fn_tensor *loss,
                      fn_tensor *dpred, int *correct);

/* The halves, arguments checked by fn_bce_loss. */
fn_status fn_cpu_bce_loss(const fn_tensor *pred, const fn_tensor *target,
                          const float *pos_weight, const float *weights, fn_tensor *loss,
                          fn_tensor *dpred, int *correct);
fn_status fn_cuda_bce_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                           const float *pos_weight, fn_tensor *loss, fn_tensor *dpred,
                           int *correct);
/* The value's partial sums and correct counts for a loss tally
 * (loss_kind.h, partials). */
fn_status fn_cuda_bce_partials(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                               const float *pos_weight, fn_tensor *dpred, fn_loss_partials *p);

/* The metric: the fraction of the rows * outputs labels predicted right. */
double fn_bce_label_accuracy(long long correct, long long rows, int outputs);

#ifdef __cplusplus
}
#endif
#endif
