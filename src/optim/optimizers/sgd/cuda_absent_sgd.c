/* cuda_absent_sgd.c — SGD's GPU backend (kernels/optim/optimizers/sgd/) in a
 * build without CUDA (core/cuda_absent.h). A backend is chosen by its
 * parameters' device, which cannot be a GPU in such a build; each entry fails
 * naming the build option, the optional ones are absent. */
#include "core/cuda_absent.h"
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

const fn_sgd_backend fn_sgd_cuda_backend = {
    .device = FN_CUDA, .update = sgd_update, .update_folded = sgd_update_folded};
