/* adam.h — Adam and AdamW with exactly torch.optim.Adam's and
 * torch.optim.AdamW's rules (amsgrad off). At step t (1-based), for each
 * parameter theta with gradient g:
 *   Adam:  g = g + weight_decay * theta                  (L2, when wd != 0)
 *   AdamW: theta = theta * (1 - lr * weight_decay)       (decoupled)
 *   m = lerp(m, g, 1 - beta1)        (m + (1 - beta1) (g - m); m = 0 at t = 1)
 *   v = beta2 * v + (1 - beta2) * g * g
 *   step_size = lr / (1 - beta1^t),  bc2 = sqrt(1 - beta2^t)
 *   theta = theta - step_size * m / (sqrt(v) / bc2 + eps)
 * An optimiser (optimizer.h) named "adam" or "adamw" whose state is
 * "exp_avg" (m) and "exp_avg_sq" (v) per parameter; t is the optimiser's
 * step count plus one (PyTorch keeps one count per parameter: here every
 * parameter steps together, so one count is theirs). The scalars of a step
 * are computed once, in double as PyTorch's Python code does, then rounded
 * to float; both backends (src/optim/optimizers/adam/adam_cpu.c, kernels/optim/optimizers/adam/adam_cuda.cu) then
 * do the same float arithmetic in the same order, one pass per tensor. */
#ifndef FUSENET_ADAM_H
#define FUSENET_ADAM_H

#include "fusenet/api.h"

#include "fusenet/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_adam_config {
    float lr;           /* > 0 */
    float beta1, beta2; /* in [0, 1) */
    float eps;          /* >= 0 */
    float weight_decay; /* >= 0 */
    int decoupled;      /* 1: AdamW (decoupled decay), 0: Adam (L2) */
} fn_adam_config;

/* torch's defaults: betas (0.9, 0.999), eps 1e-8, weight_decay 0 (Adam) or
 * 1e-2 (AdamW). */
FN_API fn_adam_config fn_adam_config_default(float lr, int decoupled);
/* FN_ERR_INVALID with a message naming the offending option. */
FN_API fn_status fn_adam_config_check(const fn_adam_config *cfg);

/* One tensor's update at step t >= 1: the primitive both backends
 * implement. exp_avg and exp_avg_sq (value's shape) are read and written;
 * at t = 1 they must hold zeros, as a new optimiser's do. It writes value
 * only: where the parameter's bf16 copy is kept (param.h), call
 * fn_param_refresh_bf16 after. */
FN_API fn_status fn_adam_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                                fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_config *cfg,
                                long long t);

/* An optimiser over params (borrowed; they must outlive it), named "adamw"
 * when cfg->decoupled, else "adam"; fn_optimizer_destroy frees it. Its
 * state starts at zero; setting the step count to 0 zeroes it again at the
 * next step. */
FN_API fn_status fn_adam_create(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                                int n_params, const fn_adam_config *cfg);
/* The optimiser's config (lr as set_lr left it); NULL for another kind. */
FN_API const fn_adam_config *fn_adam_get_config(const fn_optimizer *opt);

#ifdef __cplusplus
}
#endif
#endif
