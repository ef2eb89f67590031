/* loss_backends.h (private) — the losses of nn/loss_cpu.c and kernels/nn/loss_cuda.cu
 * that nn/loss.c dispatches to once it has validated the arguments; they
 * trust shapes and devices. Also the validation every loss of one value a
 * prediction shares (nn/loss.c), which the other losses' entry points
 * (huber.c, bce.c) run before their own checks. */
#ifndef FUSENET_NN_LOSS_BACKENDS_H
#define FUSENET_NN_LOSS_BACKENDS_H

#include <stdint.h>

#include "fusenet/loss_kind.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* nn/loss.c: ctx present; pred [N, C] on its device; target of pred's
 * shape, loss [1, 1] and dpred (pred's shape, or NULL) on pred's device. */
fn_status fn_loss_check_pointwise(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                                  const fn_tensor *loss, const fn_tensor *dpred);

/* nn/loss.c: per-row sample weights (fn_loss_targets.weights) with pred:
 * NULL is fine; refused, naming `name` (may be NULL) and the fix, when pred is on the
 * GPU (the losses' kernels take no per-row weights). */
fn_status fn_loss_check_weights(const fn_tensor *pred, const float *weights, const char *name);
/* nn/loss_cpu.c: 1 / (the mean's divisor) of an elementwise loss over
 * rows x cols values: 1 / (rows * cols) without weights (the unweighted
 * mean's own scale, bit for bit), 1 / (sum(w) * cols) with them, 0 when
 * the weights sum to 0. */
double fn_loss_elementwise_scale(const float *weights, int rows, int cols);

/* nn/loss.c: fn_mse_loss with per-row weights (NULL: none) on the CPU. */
fn_status fn_mse_loss_weighted(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                               const float *weights, fn_tensor *loss, fn_tensor *dpred);

/* nn/loss_cpu.c; weights [rows] or NULL (fn_loss_targets.weights). */
fn_status fn_cpu_mse_loss(const fn_tensor *pred, const fn_tensor *target, const float *weights,
                          fn_tensor *loss, fn_tensor *dpred);
fn_status fn_cpu_cross_entropy_loss(const fn_tensor *logits, const int32_t *labels,
                                    fn_tensor *loss, fn_tensor *dlogits);
fn_status fn_cpu_count_correct(const fn_tensor *logits, const int32_t *labels, int *correct);


/* kernels/nn/loss_cuda.cu */
fn_status fn_cuda_mse_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                           fn_tensor *loss, fn_tensor *dpred);
fn_status fn_cuda_cross_entropy_loss(fn_context *ctx, const fn_tensor *logits,
                                     const int32_t *labels, fn_tensor *loss, fn_tensor *dlogits);
fn_status fn_cuda_count_correct(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                                int *correct);
fn_status fn_cuda_cross_entropy_loss_read(fn_context *ctx, const fn_tensor *logits,
                                          const int32_t *labels, fn_tensor *loss,
                                          fn_tensor *dlogits, float *value, int *correct);
/* A loss's partial sums finished into its value: loss [1, 1] = (the sums
 * added in order) * p->scale, as every loss's own finish; for the losses
 * whose kernels leave partials (loss_kind.h). Launches only. */
fn_status fn_cuda_loss_finish(fn_context *ctx, fn_tensor *loss, const fn_loss_partials *p);

/* The losses' partial sums for a loss tally (loss_kind.h, partials),
 * finished into `into` by the same launch when it is given. */
fn_status fn_cuda_mse_partials(fn_context *ctx, const fn_tensor *pred, const float *pred_bias,
                               const fn_tensor *target, fn_tensor *dpred,
                               const fn_loss_tally_into *into, fn_loss_partials *p);
fn_status fn_cuda_cross_entropy_partials(fn_context *ctx, const fn_tensor *logits,
                                         const float *logits_bias, const int32_t *labels,
                                         fn_tensor *dlogits, const fn_loss_tally_into *into,
                                         fn_loss_partials *p);
/* pred [rows, cols] += bias [cols] (device), for a loss that does not
 * take the bias itself (loss_kind.h, takes_bias): the bits the layer's
 * forward would give. Launches only. */
fn_status fn_cuda_add_pred_bias(fn_context *ctx, const fn_tensor *pred, const float *bias);

#ifdef __cplusplus
}
#endif
#endif
