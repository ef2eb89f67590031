/* sgd_cpu.c — SGD's CPU backend: one tensor's update, in float, in the
 * order torch.optim.SGD's for-each loop computes it, so a run can be
 * compared with PyTorch step by step. Arguments were validated by
 * optim/sgd.c. No fused backward: on the CPU it would save nothing. */
#include <stddef.h>

#include "optim/sgd_backends.h"

/* The step's scalars, read once so the loops below carry no branch (each
 * select is between two values both computed, which vectorises). */
typedef struct sgd_scalars {
    float lr, mu, wd, keep; /* keep = 1 - dampening */
    int nesterov, first_step;
} sgd_scalars;

/* theta -= lr (g + wd theta), without momentum. */
static void update_plain(float *restrict theta /* [n] */, const float *restrict dtheta /* [n] */,
                         size_t n, const sgd_scalars *s)
{
    const float lr = s->lr, wd = s->wd;
    for (size_t i = 0; i < n; i++) {
        const float g = wd != 0.0f ? dtheta[i] + wd * theta[i] : dtheta[i];
        theta[i] = theta[i] - lr * g;
    }
}

/* torch: buf.mul_(mu).add_(g, alpha=1-dampening) (buf = g on the first
 * step), then theta -= lr (nesterov ? g + mu buf : buf). */
static void update_momentum(float *restrict theta /* [n] */,
                            const float *restrict dtheta /* [n] */, float *restrict buf /* [n] */,
                            size_t n, const sgd_scalars *s)
{
    const float lr = s->lr, mu = s->mu, wd = s->wd, keep = s->keep;
    const int nesterov = s->nesterov, first_step = s->first_step;
    for (size_t i = 0; i < n; i++) {
        const float g = wd != 0.0f ? dtheta[i] + wd * theta[i] : dtheta[i];
        const float b = first_step ? g : mu * buf[i] + keep * g;
        buf[i] = b;
        theta[i] = theta[i] - lr * (nesterov ? g + mu * b : b);
    }
}

static fn_status cpu_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                           fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step)
{
    (void)ctx;
    const sgd_scalars s = {
        .lr = cfg->lr,
        .mu = cfg->momentum,
        .wd = cfg->weight_decay,
        .keep = 1.0f - cfg->dampening,
        .nesterov = cfg->nesterov,
        .first_step = first_step,
    };
    const size_t n = fn_tensor_count(value);
    if (s.mu != 0.0f)
        update_momentum(value->data, grad->data, momentum_buf->data, n, &s);
    else
        update_plain(value->data, grad->data, n, &s);
    return FN_OK;
}

const fn_sgd_backend fn_sgd_cpu_backend = {
    .device = FN_CPU,
    .update = cpu_update,
};
