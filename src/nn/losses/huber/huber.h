/* huber.h (private) — the Huber loss, as torch.nn.HuberLoss (mean
 * reduction): per element e = pred - target,
 *   l = e^2 / 2              where |e| < delta
 *   l = delta (|e| - delta/2) elsewhere,
 * loss = sum l / (rows * cols), dpred = clamp(e, -delta, delta) / (rows * cols).
 * The value into a [1, 1] tensor on the device, the gradient ASSIGNED
 * (NULL: the value only). Checks and dispatch: src/nn/losses/huber/huber.c; CPU:
 * src/nn/losses/huber/huber_cpu.c; CUDA: kernels/nn/losses/huber/huber_cuda.cu; its registered loss:
 * src/nn/losses/huber/huber_kind.c ([train] loss = huber, delta). */
#ifndef FUSENET_NN_HUBER_H
#define FUSENET_NN_HUBER_H

#include "fusenet/loss_kind.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The huber kind's options block: [train] delta. */
typedef struct fn_huber_options {
    float delta; /* > 0; 1.0 */
} fn_huber_options;

extern const fn_loss_kind fn_huber_kind;

/* weights: per-row sample weights [rows] in host memory, or NULL
 * (fn_loss_targets.weights: sum_n w_n sum_c l / (sum_n w_n * cols); CPU only). */
fn_status fn_huber_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                        float delta, const float *weights, fn_tensor *loss, fn_tensor *dpred);

/* The halves, arguments checked by fn_huber_loss. */
fn_status fn_cpu_huber_loss(const fn_tensor *pred, const fn_tensor *target, float delta,
                            const float *weights, fn_tensor *loss, fn_tensor *dpred);
fn_status fn_cuda_huber_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                             float delta, fn_tensor *loss, fn_tensor *dpred);
/* The value's partial sums for a loss tally (loss_kind.h, partials). */
fn_status fn_cuda_huber_partials(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                                 float delta, fn_tensor *dpred, fn_loss_partials *p);

#ifdef __cplusplus
}
#endif
#endif
