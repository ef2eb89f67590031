/* cuda_absent_dense.c — the activations' (relu, gelu) calls into
 * kernels/nn/layers/dense/ in a build without CUDA (core/cuda_absent.h):
 * answered only for completeness (no context is a GPU's in such a build);
 * each fails naming the build option. */
#include "core/cuda_absent.h"
#include "nn/layers/dense/dense_impl.h"

static fn_status absent_activate(fn_context *ctx, fn_activation act, float *y, const float *z,
                                 size_t n)
{
    (void)ctx, (void)act, (void)y, (void)z, (void)n;
    return fn_cuda_absent("an activation on the GPU");
}

static fn_status absent_derive(fn_context *ctx, fn_activation act, float *dz, const float *dy,
                               const float *z, size_t n)
{
    (void)ctx, (void)act, (void)dz, (void)dy, (void)z, (void)n;
    return fn_cuda_absent("an activation's derivative on the GPU");
}

const fn_dense_backend fn_dense_cuda_backend = {.activate = absent_activate,
                                                .derive = absent_derive};
