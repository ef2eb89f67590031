/* cuda_absent_optim.c — the optimisation layer's GPU backends in a build
 * without CUDA (core/cuda_absent.h): SGD, Adam and clipping. A backend is
 * chosen by its parameters' device, which cannot be a GPU in such a build;
 * each entry fails naming the build option, the optional ones are absent,
 * so the GPU's multi-tensor table is never made. */
#include "core/cuda_absent.h"
#include "optim/optimizers/adam/adam_backends.h"
#include "optim/clip_backends.h"
#include "optim/multi_tensor.h"
#include "optim/optimizers/sgd/sgd_backends.h"

static fn_status sgd_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                            fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step)
{
    (void)ctx, (void)value, (void)grad, (void)momentum_buf, (void)cfg, (void)first_step;
    return fn_cuda_absent("SGD on the GPU");
}

static fn_status sgd_update_folded(fn_context *ctx, fn_tensor *value, fn_tensor *momentum_buf,
                                   const fn_sgd_config *cfg)
{
    (void)ctx, (void)value, (void)momentum_buf, (void)cfg;
    return fn_cuda_absent("SGD on the GPU");
}

static fn_status adam_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_step *s)
{
    (void)ctx, (void)value, (void)grad, (void)exp_avg, (void)exp_avg_sq, (void)s;
    return fn_cuda_absent("Adam on the GPU");
}

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

const fn_sgd_backend fn_sgd_cuda_backend = {
    .device = FN_CUDA, .update = sgd_update, .update_folded = sgd_update_folded};
const fn_adam_backend fn_adam_cuda_backend = {.device = FN_CUDA, .update = adam_update};
const fn_clip_backend fn_clip_cuda_backend = {
    .device = FN_CUDA, .apply = clip_apply, .last_norm = clip_last_norm,
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
