/* sgd_cpu.c — SGD's CPU backend: one tensor's update, in float, in the
 * order torch.optim.SGD's for-each loop computes it, so a run can be
 * compared with PyTorch step by step. Arguments were validated by
 * optim/sgd.c. No fused backward: on the CPU it would save nothing. */
#include <stddef.h>

#include "optim/sgd_backends.h"

static fn_status cpu_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                           fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step)
{
    (void)ctx;
    const size_t n = fn_tensor_count(value);
    const float lr = cfg->lr, mu = cfg->momentum, wd = cfg->weight_decay;
    const float keep = 1.0f - cfg->dampening; /* torch: buf.mul_(mu).add_(g, alpha=1-dampening) */
    float *theta = value->data;                 /* [n] */
    const float *dtheta = grad->data;           /* [n] */
    float *buf = mu != 0.0f ? momentum_buf->data : NULL; /* [n] */
    for (size_t i = 0; i < n; i++) {
        float g = wd != 0.0f ? dtheta[i] + wd * theta[i] : dtheta[i];
        if (buf) {
            buf[i] = first_step ? g : mu * buf[i] + keep * g;
            g = cfg->nesterov ? g + mu * buf[i] : buf[i];
        }
        theta[i] = theta[i] - lr * g;
    }
    return FN_OK;
}

const fn_sgd_backend fn_sgd_cpu_backend = {
    .device = FN_CPU,
    .update = cpu_update,
};
