/* cuda_absent_adam.c — Adam's (and AdamW's) GPU backend
 * (kernels/optim/optimizers/adam/) in a build without CUDA
 * (core/cuda_absent.h). A backend is chosen by its parameters' device, which
 * cannot be a GPU in such a build; its entry fails naming the build option,
 * the optional ones are absent. */
#include "core/cuda_absent.h"
#include "optim/optimizers/adam/adam_backends.h"

static fn_status adam_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_step *s)
{
    (void)ctx, (void)value, (void)grad, (void)exp_avg, (void)exp_avg_sq, (void)s;
    return fn_cuda_absent("Adam on the GPU");
}

const fn_adam_backend fn_adam_cuda_backend = {.device = FN_CUDA, .update = adam_update};
