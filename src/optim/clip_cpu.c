/* clip_cpu.c — the clipper's CPU backend: the sum of squares in double,
 * tensor by tensor and element by element in order, then the scaling in
 * float as torch's grad.mul_(clip_coef). Over the ranks the same two
 * halves, clip.c adding the ranks' sums between them. */
#include <math.h>
#include <stddef.h>

#include "optim/clip_backends.h"

static double sum_squares(const fn_tensor *g)
{
    const size_t n = fn_tensor_count(g);
    const float *x = g->data; /* [n] */
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * (double)x[i];
    return s;
}

static void scale(fn_tensor *g, float factor)
{
    const size_t n = fn_tensor_count(g);
    float *x = g->data; /* [n] */
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] * factor;
}

static fn_status cpu_sum_squares(fn_clip *clip, double *sum)
{
    double total = 0;
    for (int i = 0; i < clip->n_params; i++)
        total += sum_squares(&clip->params[i]->grad);
    *sum = total;
    return FN_OK;
}

static fn_status cpu_scale(fn_clip *clip, double coef)
{
    for (int i = 0; i < clip->n_params; i++)
        scale(&clip->params[i]->grad, (float)coef);
    return FN_OK;
}

static fn_status cpu_apply(fn_clip *clip)
{
    double total = 0;
    FN_TRY(cpu_sum_squares(clip, &total));
    clip->norm = sqrt(total);
    const double coef = clip->max_norm / (clip->norm + FN_CLIP_EPS);
    return coef < 1.0 ? cpu_scale(clip, coef) : FN_OK;
}

static fn_status cpu_last_norm(fn_clip *clip, double *norm)
{
    *norm = clip->norm;
    return FN_OK;
}

const fn_clip_backend fn_clip_cpu_backend = {
    .device = FN_CPU,
    .apply = cpu_apply,
    .last_norm = cpu_last_norm,
    .sum_squares = cpu_sum_squares,
    .scale = cpu_scale,
};
