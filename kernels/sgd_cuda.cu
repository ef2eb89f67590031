/* sgd_cuda.cu — SGD's CUDA backend: one tensor's torch.optim.SGD update in
 * one elementwise kernel (the rule is in include/fusenet/sgd.h), and the
 * backward with the plain step fused in (fn_sgd_fused_backward, sgd_fused.h). Every
 * multiply and add is rounded on its own (__fmul_rn, __fadd_rn: never fused
 * into an FMA), in the order torch.optim.SGD and optim/sgd_cpu.c write
 * them. */
#include "optim/sgd_backends.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/launch_cuda.cuh"

static constexpr int kThreads = 256;

/* ---- kernels ---- */

__global__ void __launch_bounds__(kThreads)
sgd_kernel(float *value /* [n] */, float *momentum_buf /* [n], or NULL when momentum == 0 */,
           const float *grad /* [n] */, float lr, float momentum, float one_minus_dampening,
           float weight_decay, int nesterov, int first_step, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float p = value[i];
        float g = grad[i];
        if (weight_decay != 0.0f)
            g = __fadd_rn(g, __fmul_rn(weight_decay, p));
        if (momentum != 0.0f) {
            const float b = first_step ? g
                                       : __fadd_rn(__fmul_rn(momentum, momentum_buf[i]),
                                                   __fmul_rn(one_minus_dampening, g));
            momentum_buf[i] = b;
            g = nesterov ? __fadd_rn(g, __fmul_rn(momentum, b)) : b;
        }
        value[i] = __fsub_rn(p, __fmul_rn(lr, g));
    }
}

/* ---- launchers and the backend ---- */

static fn_status cuda_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step)
{
    if (cfg->momentum != 0.0f && (!momentum_buf || !momentum_buf->data))
        return fn_fail(FN_ERR_INVALID, "SGD with momentum %g needs a momentum buffer",
                       (double)cfg->momentum);
    const size_t n = fn_tensor_count(value);
    const size_t blocks = fn_stride_blocks(ctx, n, kThreads);
    sgd_kernel<<<(unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx)>>>(
        value->data, cfg->momentum != 0.0f ? momentum_buf->data : NULL, grad->data, cfg->lr,
        cfg->momentum, 1.0f - cfg->dampening, cfg->weight_decay, cfg->nesterov, first_step, n);
    FN_CUDA_CHECK_LAUNCH(sgd_kernel);
    return FN_OK;
}

extern "C" const fn_sgd_backend fn_sgd_cuda_backend = {
    .device = FN_CUDA,
    .update = cuda_update,
    .backward_plain = fn_sgd_fused_backward,
};
