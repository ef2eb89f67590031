/* loss.h — the two losses, each a forward (the loss value) and a backward
 * (its gradient) in one call.
 *
 * The value is written to a [1, 1] tensor on the inputs' device, so a GPU step
 * needs no host round trip; read it when logging. The gradient is ASSIGNED
 * (dpred = d loss / d pred) and may be NULL when only the value is wanted.
 * CPU code: src/nn/loss_cpu.c; CUDA code: kernels/nn/loss_cuda.cu. Each is a
 * registered loss (loss_kind.h) for the trainer. */
#ifndef FUSENET_LOSS_H
#define FUSENET_LOSS_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Mean squared error, averaged over every element as torch.nn.MSELoss:
 * loss = sum (pred - target)^2 / (rows * cols). */
FN_API fn_status fn_mse_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                             fn_tensor *loss, fn_tensor *dpred);

/* Softmax cross-entropy over integer labels, averaged over the batch as
 * torch.nn.CrossEntropyLoss, with a stable log-sum-exp. labels: [rows] on
 * the logits' device, each in [0, cols); the CPU checks the range, the GPU
 * trusts the data loader's check. */
FN_API fn_status fn_cross_entropy_loss(fn_context *ctx, const fn_tensor *logits,
                                       const int32_t *labels, fn_tensor *loss, fn_tensor *dlogits);

/* How many rows of logits have their largest value at the label's column
 * (ties go to the lower index). Synchronises with the device. */
FN_API fn_status fn_count_correct(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                                  int *correct);

/* What a training step needs of its loss: fn_cross_entropy_loss (the value
 * into loss, the gradient into dlogits, which may be NULL), and the value
 * and the correct count (as fn_count_correct) handed to the host in *value
 * and *correct. On the GPU both come back in one 8-byte copy: one
 * synchronisation a call, where fn_cross_entropy_loss, fn_count_correct and
 * a download of the value would take two. */
FN_API fn_status fn_cross_entropy_loss_read(fn_context *ctx, const fn_tensor *logits,
                                            const int32_t *labels, fn_tensor *loss, fn_tensor *dlogits,
                                            float *value, int *correct);

#ifdef __cplusplus
}
#endif
#endif
