/* dense_cpu.c — the dense layer's activations on the CPU, float32: ReLU
 * and exact GELU and their derivatives, element by element (as PyTorch's:
 * ReLU's derivative is 0 at z = 0; GELU's is Phi(z) + z phi(z)). */
#include <math.h>
#include <stddef.h>

#include "nn/layers/dense/dense_impl.h"

static const float kInvSqrt2 = 0.70710678118654752f;    /* 1/sqrt(2) */
static const float kInvSqrt2Pi = 0.39894228040143268f;  /* 1/sqrt(2 pi) */

static fn_status activate(fn_context *ctx, fn_activation act, float *y /* [n] */,
                          const float *z /* [n] */, size_t n)
{
    (void)ctx;
    if (act == FN_ACTIVATION_RELU) {
        for (size_t i = 0; i < n; i++)
            y[i] = z[i] > 0.0f ? z[i] : 0.0f;
    } else {
        for (size_t i = 0; i < n; i++)
            y[i] = 0.5f * z[i] * (1.0f + erff(z[i] * kInvSqrt2));
    }
    return FN_OK;
}

static fn_status derive(fn_context *ctx, fn_activation act, float *dz /* [n] */,
                        const float *dy /* [n] */, const float *z /* [n] */, size_t n)
{
    (void)ctx;
    if (act == FN_ACTIVATION_RELU) {
        for (size_t i = 0; i < n; i++)
            dz[i] = z[i] > 0.0f ? dy[i] : 0.0f;
    } else {
        for (size_t i = 0; i < n; i++) {
            const float cdf = 0.5f * (1.0f + erff(z[i] * kInvSqrt2));
            const float pdf = kInvSqrt2Pi * expf(-0.5f * z[i] * z[i]);
            dz[i] = dy[i] * (cdf + z[i] * pdf);
        }
    }
    return FN_OK;
}

const fn_dense_backend fn_dense_cpu_backend = {.activate = activate, .derive = derive};
