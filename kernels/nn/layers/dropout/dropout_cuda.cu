/* dropout_cuda.cu — dropout on the GPU: one element-wise kernel for both
 * directions (y = keep ? x * scale : 0, and dx from dy alike), each keep
 * bit drawn from its counter by the code the CPU runs (dropout_impl.h).
 * The kernels read the step and the share's first row from the layer's
 * pass on the device (set_pass copies it there before the step), not from
 * their arguments, so a step captured in a CUDA graph draws each replay's
 * own mask. */
#include <stdint.h>

#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"
#include "nn/layers/dropout/dropout_impl.h"

static constexpr int kThreads = 256;

/* ---- kernels ---- */

__global__ void dropout_mask_kernel(float *out /* [n] */, const float *in /* [n] */,
                                    const uint64_t *pass /* [2]: step, row0 */, size_t n,
                                    int width, uint64_t seed, uint64_t key, uint32_t threshold,
                                    float scale)
{
    FN_GRID_WAIT();
    const uint64_t step = pass[0];
    const uint64_t e0 = pass[1] * (uint64_t)width;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = fn_dropout_keeps(seed, key, step, e0 + i, threshold) ? in[i] * scale : 0.0f;
}

/* ---- launchers ---- */

static fn_status apply(fn_dropout *d, float *out, const float *in, size_t n)
{
    cudaStream_t s = fn_ctx_stream(d->base.ctx);
    if (!d->masked) {
        FN_CUDA_CHECK(cudaMemcpyAsync(out, in, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
        return FN_OK;
    }
    const size_t blocks = (n + kThreads - 1) / kThreads;
    fn_launch(d->base.ctx, dropout_mask_kernel,
              (unsigned)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), kThreads, 0, s, out,
              in, reinterpret_cast<const uint64_t *>(d->pass_dev.data), n, d->base.in_features,
              d->seed, d->key, d->threshold, d->scale);
    FN_CUDA_CHECK_LAUNCH(dropout_mask_kernel);
    return FN_OK;
}

static fn_status dropout_cuda_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_dropout *d = (fn_dropout *)l;
    d->masked = l->pass.training;
    return apply(d, y->data, x->data, fn_tensor_count(x));
}

static fn_status dropout_cuda_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_dropout *d = (fn_dropout *)l;
    return dx ? apply(d, dx->data, dy->data, fn_tensor_count(dy)) : FN_OK;
}

/* {step, row0} to the device, on the stream: ordered before the step's
 * kernels, and outside any capture (layer.h). */
static fn_status dropout_cuda_set_pass(fn_layer *l)
{
    fn_dropout *d = (fn_dropout *)l;
    const uint64_t pass[2] = {(uint64_t)l->pass.step, (uint64_t)l->pass.row0};
    FN_CUDA_CHECK(cudaMemcpyAsync(d->pass_dev.data, pass, sizeof pass, cudaMemcpyHostToDevice,
                                  fn_ctx_stream(l->ctx)));
    return FN_OK;
}

static void dropout_cuda_destroy(fn_layer *l)
{
    fn_dropout *d = (fn_dropout *)l;
    fn_tensor_free(&d->pass_dev);
    free(d);
}

extern "C" const fn_layer_ops fn_dropout_cuda_ops = {
    .kind = "dropout",
    .forward = dropout_cuda_forward,
    .backward = dropout_cuda_backward,
    .destroy = dropout_cuda_destroy,
    .backward_sgd = nullptr,
    .set_pass = dropout_cuda_set_pass,
    .forward_unbiased = nullptr,
    .bf16_input = nullptr, /* its mask's scaling reads and writes float */
    .forward_bf16 = nullptr,
};
