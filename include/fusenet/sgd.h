/* sgd.h — stochastic gradient descent with exactly torch.optim.SGD's rules:
 *   g = grad + weight_decay * theta
 *   b = g on the first step, else b = momentum * b + (1 - dampening) * g
 *   g = nesterov ? g + momentum * b : b            (when momentum != 0)
 *   theta = theta - lr * g
 * An optimiser (optimizer.h) named "sgd" whose state is one "momentum"
 * buffer per parameter, and the SGD-specific calls beside it. Common code:
 * src/optim/optimizers/sgd/sgd.c; backends: src/optim/optimizers/sgd/sgd_cpu.c, kernels/optim/optimizers/sgd/sgd_cuda.cu. */
#ifndef FUSENET_SGD_H
#define FUSENET_SGD_H

#include "fusenet/api.h"

#include "fusenet/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_sgd_config {
    float lr;           /* > 0 */
    float momentum;     /* >= 0 */
    float dampening;    /* in [0, 1] */
    float weight_decay; /* >= 0 */
    int nesterov;       /* needs momentum > 0 and dampening == 0 */
    /* Keep the momentum buffer of each weight with a bfloat16 copy (a
     * block's weight on the GPU in bf16 math, param.h) in bfloat16: needs
     * momentum > 0, a GPU context in bf16 math (fn_sgd_create fails
     * otherwise). Biases, gamma, beta and the linear head keep float32
     * buffers. Each step's new buffer is rounded to bfloat16 (relative
     * error <= 2^-8 a rounding): once, or twice where folded with weight
     * decay (the product rounds mu buf + g, the update adds wd theta and
     * rounds again); folded, theta is updated from the rounded buffer. Folded into backward (as the trainer folds it) the dW product
     * reads and writes that buffer in bfloat16 (cuBLASLt C and D in
     * bfloat16, beta = mu), and the update reads it: at a block 8192 x
     * 8192 about 384 MiB a step less traffic than float32 buffers. The
     * state published (checkpoints, fn_sgd_momentum_buffer) stays float32:
     * fn_optimizer_state_export widens the bfloat16 buffers into it,
     * fn_optimizer_state_import rounds it back. */
    int momentum_bf16;
} fn_sgd_config;

/* lr as given, everything else as torch.optim.SGD's defaults (0, off). */
FN_API fn_sgd_config fn_sgd_config_default(float lr);
/* FN_ERR_INVALID with a message naming the offending option. */
FN_API fn_status fn_sgd_config_check(const fn_sgd_config *cfg);

/* One tensor's update; the primitive both backends implement. momentum_buf
 * (same shape as value) is read and written only when cfg->momentum != 0;
 * first_step says the buffer holds nothing yet. It writes value only:
 * where the parameter's bf16 copy is kept (param.h), call
 * fn_param_refresh_bf16 after. */
FN_API fn_status fn_sgd_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                               fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step);

typedef struct fn_sgd fn_sgd; /* opaque: an fn_optimizer with SGD's config and buffers */

/* An optimiser over params (borrowed; they must outlive it). */
FN_API fn_status fn_sgd_create(fn_sgd **opt, fn_context *ctx, fn_param *const *params, int n_params,
                               const fn_sgd_config *cfg);
/* The same optimiser through the common interface (fn_optimizer_destroy
 * then destroys it); NULL for NULL. */
FN_API fn_optimizer *fn_sgd_optimizer(fn_sgd *opt);
FN_API fn_status fn_sgd_step(fn_sgd *opt); /* fn_optimizer_step */
FN_API void fn_sgd_destroy(fn_sgd *opt); /* NULL is fine */

/* Plain SGD: momentum 0 and weight decay 0 (dampening and nesterov then
 * change nothing), so a step is theta <- theta - lr * grad and keeps no
 * state. On the GPU the trainer then fuses
 * the step into the backward pass (fn_sgd_fused_backward). A caller that
 * takes such a step itself counts it with fn_sgd_count_step, as
 * fn_sgd_step counts its own, so the step count (checkpoints) stays right.
 * FN_ERR_INVALID when the optimiser is not plain: its buffers would miss
 * the step. */
FN_API int fn_sgd_is_plain(const fn_sgd *opt);
FN_API fn_status fn_sgd_count_step(fn_sgd *opt);

/* State, also published through the optimiser interface: steps taken and
 * one momentum buffer per parameter (NULL when momentum is 0), float32;
 * with momentum_bf16 a weight's is a float32 view of its bfloat16 buffer,
 * current after fn_optimizer_state_export and read back by
 * fn_optimizer_state_import. Setting the step count to 0 restarts
 * buffers. */
FN_API long long fn_sgd_steps(const fn_sgd *opt);
FN_API void fn_sgd_set_steps(fn_sgd *opt, long long steps);
FN_API fn_tensor *fn_sgd_momentum_buffer(fn_sgd *opt, int i);
FN_API const fn_sgd_config *fn_sgd_get_config(const fn_sgd *opt);
/* Changes the learning rate (schedules); other options are fixed. */
FN_API void fn_sgd_set_lr(fn_sgd *opt, float lr);

#ifdef __cplusplus
}
#endif
#endif
