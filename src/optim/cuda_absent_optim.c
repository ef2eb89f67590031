/* cuda_absent_optim.c — the optimisation room's own GPU backends in a build
 * without CUDA (core/cuda_absent.h): clipping and the multi-tensor table.
 * Each optimiser's stand-ins sit in its own folder
 * (optimizers/sgd/cuda_absent_sgd.c, ...). A backend is chosen by its
 * parameters' device, which cannot be a GPU in such a build; each entry
 * fails naming the build option, the optional ones are absent, so the GPU's
 * multi-tensor table is never made. */
#include "core/cuda_absent.h"
#include "optim/clip_backends.h"
#include "optim/multi_tensor.h"

static fn_status clip_apply(fn_clip *clip)
{
    (void)clip;
    return fn_cuda_absent("clipping on the GPU");
}

static fn_status clip_last_norm(fn_clip *clip, double *norm)
{
    (void)clip, (void)norm;
    return fn_cuda_absent("clipping on the GPU");
}

static fn_status clip_sum_squares(fn_clip *clip, double *sum)
{
    (void)clip, (void)sum;
    return fn_cuda_absent("clipping on the GPU");
}

static fn_status clip_scale(fn_clip *clip, double coef)
{
    (void)clip, (void)coef;
    return fn_cuda_absent("clipping on the GPU");
}

const fn_clip_backend fn_clip_cuda_backend = {
    .device = FN_CUDA, .apply = clip_apply, .last_norm = clip_last_norm,
    .sum_squares = clip_sum_squares, .scale = clip_scale,
};

fn_status fn_multi_tensor_create(fn_multi_tensor *mt, fn_context *ctx, fn_param *const *params,
                                 int n, const fn_tensor *state1, const fn_tensor *state2,
                                 size_t scalar_bytes)
{
    (void)ctx, (void)params, (void)n, (void)state1, (void)state2, (void)scalar_bytes;
    *mt = (fn_multi_tensor){0};
    return fn_cuda_absent("the optimiser's table on the GPU");
}

void fn_multi_tensor_release(fn_multi_tensor *mt) { (void)mt; }

fn_status fn_multi_tensor_set_scalars(fn_multi_tensor *mt, const void *scalars)
{
    (void)mt, (void)scalars;
    return fn_cuda_absent("the optimiser's table on the GPU");
}

fn_status fn_multi_tensor_zero_grad(const fn_multi_tensor *mt)
{
    (void)mt;
    return fn_cuda_absent("the optimiser's table on the GPU");
}

fn_status fn_multi_tensor_split(fn_multi_tensor *mt, const int *first, int n)
{
    (void)mt, (void)first, (void)n;
    return fn_cuda_absent("the optimiser's table on the GPU");
}

fn_status fn_multi_tensor_set_state1_bf16(fn_multi_tensor *mt, int i, void *state1_bf16)
{
    (void)mt, (void)i, (void)state1_bf16;
    return fn_cuda_absent("the optimiser's table on the GPU");
}

fn_status fn_multi_tensor_set_grad(fn_multi_tensor *mt, int i, float *grad)
{
    (void)mt, (void)i, (void)grad;
    return fn_cuda_absent("the optimiser's table on the GPU");
}
