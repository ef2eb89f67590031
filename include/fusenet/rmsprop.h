/* rmsprop.h — RMSprop with exactly torch.optim.RMSprop's rule. For each
 * parameter theta with gradient g, every step:
 *   g = g + weight_decay * theta                      (when weight_decay != 0)
 *   v = alpha * v + (1 - alpha) * g * g               (square_avg)
 *   centered: a = lerp(a, g, 1 - alpha)               (grad_avg)
 *             avg = sqrt(v - a * a) + eps
 *   else:     avg = sqrt(v) + eps
 *   momentum > 0: b = momentum * b + g / avg;  theta = theta - lr * b
 *   else:         theta = theta - lr * g / avg
 * with v, a and b zero before the first step. An optimiser
 * (optimizer.h) named "rmsprop" whose state is "square_avg" for every
 * parameter, "momentum_buffer" when momentum > 0 and "grad_avg" when
 * centered (torch keeps the same three, by those names). The step's scalars
 * are rounded to float once; both backends (src/optim/optimizers/rmsprop/rmsprop_cpu.c,
 * kernels/optim/optimizers/rmsprop/rmsprop_cuda.cu) then do the same float arithmetic in the same
 * order, one pass per tensor. */
#ifndef FUSENET_RMSPROP_H
#define FUSENET_RMSPROP_H

#include "fusenet/api.h"

#include "fusenet/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_rmsprop_config {
    float lr;           /* > 0 */
    float alpha;        /* the squares' smoothing, in [0, 1] */
    float eps;          /* > 0 */
    float weight_decay; /* >= 0: L2, added to the gradient */
    float momentum;     /* >= 0 */
    int centered;       /* 1: divide by the gradient's estimated variance */
} fn_rmsprop_config;

/* torch's defaults: alpha 0.99, eps 1e-8, weight_decay 0, momentum 0,
 * not centered. */
FN_API fn_rmsprop_config fn_rmsprop_config_default(float lr);
/* FN_ERR_INVALID with a message naming the offending option. */
FN_API fn_status fn_rmsprop_config_check(const fn_rmsprop_config *cfg);

/* One tensor's update: the primitive both backends implement. square_avg
 * (value's shape) is read and written, and momentum_buffer when
 * cfg->momentum > 0, grad_avg when cfg->centered (else they may be NULL);
 * before a first step they must hold zeros, as a new optimiser's do. */
FN_API fn_status fn_rmsprop_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                                   fn_tensor *square_avg, fn_tensor *momentum_buffer,
                                   fn_tensor *grad_avg, const fn_rmsprop_config *cfg);

/* An optimiser over params (borrowed; they must outlive it);
 * fn_optimizer_destroy frees it. Its state starts at zero; setting the
 * step count to 0 zeroes it again at the next step. */
FN_API fn_status fn_rmsprop_create(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                                   int n_params, const fn_rmsprop_config *cfg);
/* The optimiser's config (lr as set_lr left it); NULL for another kind. */
FN_API const fn_rmsprop_config *fn_rmsprop_get_config(const fn_optimizer *opt);

#ifdef __cplusplus
}
#endif
#endif
