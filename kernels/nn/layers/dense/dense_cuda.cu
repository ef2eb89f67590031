/* dense_cuda.cu — the dense layer's activations on the GPU: ReLU and exact
 * GELU and their derivatives, one element-wise kernel each direction, the
 * same float formulas as dense_cpu.c (erff and expf of CUDA's math library,
 * which may differ from glibc's in the last bit). */
#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"
#include "nn/layers/dense/dense_impl.h"

static constexpr int kThreads = 256;
static constexpr float kInvSqrt2 = 0.70710678118654752f;   /* 1/sqrt(2) */
static constexpr float kInvSqrt2Pi = 0.39894228040143268f; /* 1/sqrt(2 pi) */

/* ---- kernels ---- */

__global__ void dense_activate_kernel(float *y /* [n] */, const float *z /* [n] */, size_t n,
                                      int gelu)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = z[i];
        y[i] = gelu ? 0.5f * v * (1.0f + erff(v * kInvSqrt2)) : (v > 0.0f ? v : 0.0f);
    }
}

__global__ void dense_derive_kernel(float *dz /* [n] */, const float *dy /* [n] */,
                                    const float *z /* [n] */, size_t n, int gelu)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = z[i];
        if (gelu) {
            const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
            const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
            dz[i] = dy[i] * (cdf + v * pdf);
        } else {
            dz[i] = v > 0.0f ? dy[i] : 0.0f;
        }
    }
}

/* ---- launchers ---- */

static unsigned blocks_for(size_t n)
{
    const size_t b = (n + kThreads - 1) / kThreads;
    return (unsigned)(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

static fn_status activate(fn_context *ctx, fn_activation act, float *y, const float *z, size_t n)
{
    fn_launch(ctx, dense_activate_kernel, blocks_for(n), kThreads, 0, fn_ctx_stream(ctx), y, z, n,
              act == FN_ACTIVATION_GELU);
    FN_CUDA_CHECK_LAUNCH(dense_activate_kernel);
    return FN_OK;
}

static fn_status derive(fn_context *ctx, fn_activation act, float *dz, const float *dy,
                        const float *z, size_t n)
{
    fn_launch(ctx, dense_derive_kernel, blocks_for(n), kThreads, 0, fn_ctx_stream(ctx), dz, dy, z,
              n, act == FN_ACTIVATION_GELU);
    FN_CUDA_CHECK_LAUNCH(dense_derive_kernel);
    return FN_OK;
}

extern "C" const fn_dense_backend fn_dense_cuda_backend = {activate, derive};
