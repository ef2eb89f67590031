/* adam_cpu.c — Adam's CPU backend: one tensor's update in one pass, in
 * float, in the order torch.optim's single-tensor Adam writes it (adam.h),
 * each operation rounded on its own (ISO C11, CMAKE_C_EXTENSIONS OFF: GCC
 * then fuses no multiply-add, -ffp-contract=off), as kernels/optim/optimizers/adam/adam_cuda.cu does, so the two agree bit for
 * bit. Arguments were validated by optim/optimizers/adam/adam.c. */
#include <math.h>
#include <stddef.h>

#include "optim/optimizers/adam/adam_backends.h"

/* torch's lerp(start, end, w): the form it picks by |w| < 0.5. */
static float lerp(float start, float end, float w)
{
    return w < 0.5f ? start + w * (end - start) : end - (end - start) * (1.0f - w);
}

static fn_status cpu_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                            fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_step *s)
{
    (void)ctx;
    const size_t n = fn_tensor_count(value);
    float *theta = value->data;      /* [n] */
    const float *dtheta = grad->data; /* [n] */
    float *m = exp_avg->data;        /* [n] */
    float *v = exp_avg_sq->data;     /* [n] */
    const float neg_step = -s->step_size;
    for (size_t i = 0; i < n; i++) {
        float p = theta[i], g = dtheta[i];
        if (s->decay != 1.0f)
            p = p * s->decay;
        if (s->l2 != 0.0f)
            g = g + s->l2 * p;
        const float mi = lerp(m[i], g, s->lerp_weight);
        const float vi = v[i] * s->beta2 + s->one_minus_beta2 * g * g;
        const float denom = sqrtf(vi) / s->bc2_sqrt + s->eps;
        m[i] = mi;
        v[i] = vi;
        theta[i] = p + neg_step * mi / denom;
    }
    return FN_OK;
}

const fn_adam_backend fn_adam_cpu_backend = {
    .device = FN_CPU,
    .update = cpu_update,
};
