/* cuda_absent_rmsprop.c — RMSprop's GPU backend in a build without CUDA
 * (core/cuda_absent.h): a backend is chosen by its parameters' device,
 * which cannot be a GPU in such a build; the update fails naming the build
 * option, and the multi-tensor update is absent. */
#include "core/cuda_absent.h"
#include "optim/optimizers/rmsprop/rmsprop_backends.h"

static fn_status rmsprop_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                                fn_tensor *square_avg, fn_tensor *momentum_buffer,
                                fn_tensor *grad_avg, const fn_rmsprop_step *s)
{
    (void)ctx, (void)value, (void)grad, (void)square_avg, (void)momentum_buffer, (void)grad_avg,
        (void)s;
    return fn_cuda_absent("RMSprop on the GPU");
}

const fn_rmsprop_backend fn_rmsprop_cuda_backend = {.device = FN_CUDA, .update = rmsprop_update};
