/* rmsprop_cpu.c — RMSprop's CPU backend: one tensor's update in one pass,
 * in float, in the order torch.optim's single-tensor RMSprop writes it
 * (rmsprop.h), each operation rounded on its own (ISO C11, no fused
 * multiply-add), as kernels/optim/optimizers/rmsprop/rmsprop_cuda.cu does, so the two agree bit for
 * bit. Arguments were validated by optim/optimizers/rmsprop/rmsprop.c. */
#include <math.h>
#include <stddef.h>

#include "optim/optimizers/rmsprop/rmsprop_backends.h"

/* torch's lerp(start, end, w): the form it picks by |w| < 0.5. */
static float lerp(float start, float end, float w)
{
    return w < 0.5f ? start + w * (end - start) : end - (end - start) * (1.0f - w);
}

static fn_status cpu_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                            fn_tensor *square_avg, fn_tensor *momentum_buffer,
                            fn_tensor *grad_avg, const fn_rmsprop_step *s)
{
    (void)ctx;
    const size_t n = fn_tensor_count(value);
    float *theta = value->data;                                  /* [n] */
    const float *dtheta = grad->data;                            /* [n] */
    float *v = square_avg->data;                                 /* [n] */
    float *b = s->has_momentum ? momentum_buffer->data : NULL;   /* [n] or NULL */
    float *a = s->centered ? grad_avg->data : NULL;              /* [n] or NULL */
    for (size_t i = 0; i < n; i++) {
        const float p = theta[i];
        float g = dtheta[i];
        if (s->l2 != 0.0f)
            g = g + s->l2 * p;
        const float vi = v[i] * s->alpha + s->one_minus_alpha * g * g;
        v[i] = vi;
        float avg;
        if (a) {
            const float ai = lerp(a[i], g, s->one_minus_alpha);
            a[i] = ai;
            avg = sqrtf(vi - ai * ai);
        } else {
            avg = sqrtf(vi);
        }
        avg = avg + s->eps;
        if (b) {
            const float bi = b[i] * s->momentum + g / avg;
            b[i] = bi;
            theta[i] = p + s->neg_lr * bi;
        } else {
            theta[i] = p + s->neg_lr * g / avg;
        }
    }
    return FN_OK;
}

const fn_rmsprop_backend fn_rmsprop_cpu_backend = {
    .device = FN_CPU,
    .update = cpu_update,
};
