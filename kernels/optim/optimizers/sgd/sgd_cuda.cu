/* sgd_cuda.cu — SGD's CUDA backend: one tensor's torch.optim.SGD update in
 * one elementwise kernel (the rule is in include/fusenet/sgd.h), and the
 * backward with the plain step fused in (fn_sgd_fused_backward, sgd_fused.h). Every
 * multiply and add is rounded on its own (__fmul_rn, __fadd_rn: never fused
 * into an FMA), in the order torch.optim.SGD and optim/optimizers/sgd/sgd_cpu.c write
 * them. sgd_all_kernel does the same arithmetic for every tensor of a
 * multi-tensor table in one launch, its lr read on the device. With
 * momentum folded into backward (sgd.c) the buffer already holds
 * mu buf + g: the update (sgd_folded_math) reads theta and buf only. */
#include "optim/optimizers/sgd/sgd_backends.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/gemm_cuda.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"
#include "optim/multi_tensor_cuda.cuh"

static constexpr int kThreads = 256;

/* ---- kernels ---- */

/* One element's update from its value p, gradient g and momentum buffer b
 * (unread on the first step or without momentum): returns the new value,
 * and the new buffer in *b. Both kernels' arithmetic, so a table's launch
 * gives the bits of one launch per tensor. */
__device__ __forceinline__ float sgd_math(float p, float g, float *b, float lr, float momentum,
                                          float one_minus_dampening, float weight_decay,
                                          int nesterov, int first_step)
{
    if (weight_decay != 0.0f)
        g = __fadd_rn(g, __fmul_rn(weight_decay, p));
    if (momentum != 0.0f) {
        *b = first_step ? g
                        : __fadd_rn(__fmul_rn(momentum, *b), __fmul_rn(one_minus_dampening, g));
        g = nesterov ? __fadd_rn(g, __fmul_rn(momentum, *b)) : *b;
    }
    return __fsub_rn(p, __fmul_rn(lr, g));
}

/* The folded update of one element: buffer b (backward's mu b + g) gets
 * wd p added; returns p - lr b. Without weight decay b is unchanged, so
 * the kernels store it only with weight decay (a pass over the buffer
 * saved). */
__device__ __forceinline__ float sgd_folded_math(float p, float *b, float lr, float weight_decay)
{
    if (weight_decay != 0.0f)
        *b = __fadd_rn(*b, __fmul_rn(weight_decay, p));
    return __fsub_rn(p, __fmul_rn(lr, *b));
}

__global__ void __launch_bounds__(kThreads)
sgd_folded_kernel(float *value /* [n] */, float *momentum_buf /* [n] */, float lr,
                  float weight_decay, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float b = momentum_buf[i];
        value[i] = sgd_folded_math(value[i], &b, lr, weight_decay);
        if (weight_decay != 0.0f)
            momentum_buf[i] = b;
    }
}

__global__ void __launch_bounds__(kThreads)
sgd_kernel(float *value /* [n] */, float *momentum_buf /* [n], or NULL when momentum == 0 */,
           const float *grad /* [n] */, float lr, float momentum, float one_minus_dampening,
           float weight_decay, int nesterov, int first_step, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const int reads_buf = momentum != 0.0f && !first_step;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float b = reads_buf ? momentum_buf[i] : 0.0f;
        value[i] = sgd_math(value[i], grad[i], &b, lr, momentum, one_minus_dampening,
                            weight_decay, nesterov, first_step);
        if (momentum != 0.0f)
            momentum_buf[i] = b;
    }
}

/* sgd_kernel over every tensor of the table (Folded: sgd_folded_kernel,
 * the gradients unread); lr and first_step from the device, so a replayed
 * launch takes each step's. */
template <bool Folded>
__global__ void __launch_bounds__(kMtThreads)
sgd_all_kernel(const fn_mt_entry *table /* [n_tensors] */, int n_tensors, long long chunks,
               const fn_sgd_scalars *scalars, const int *skip /* or NULL */, float momentum,
               float one_minus_dampening, float weight_decay, int nesterov)
{
    FN_GRID_WAIT();
    if (skip && *skip)
        return;
    const float lr = scalars->lr;
    const int first_step = scalars->first_step;
    const int reads_buf = Folded || (momentum != 0.0f && !first_step);
    mt_for_each_piece(table, n_tensors, chunks, [&](const fn_mt_entry &e, size_t first,
                                                     size_t end) {
        float p[kMtPerThread], g[kMtPerThread], b[kMtPerThread];
#pragma unroll
        for (int k = 0; k < kMtPerThread; k++) {
            const size_t i = first + (size_t)k * kMtThreads;
            if (i < end) {
                p[k] = e.value[i];
                g[k] = Folded ? 0.0f : e.grad[i];
                b[k] = reads_buf ? mt_load_state1(e, i) : 0.0f;
            }
        }
#pragma unroll
        for (int k = 0; k < kMtPerThread; k++) {
            const size_t i = first + (size_t)k * kMtThreads;
            if (i < end) {
                mt_store_value(e, i,
                               Folded ? sgd_folded_math(p[k], &b[k], lr, weight_decay)
                                      : sgd_math(p[k], g[k], &b[k], lr, momentum,
                                                 one_minus_dampening, weight_decay, nesterov,
                                                 first_step));
                if (Folded ? weight_decay != 0.0f : momentum != 0.0f)
                    mt_store_state1(e, i, b[k]);
            }
        }
    });
}

/* A bfloat16 momentum buffer widened exactly into float32. */
__global__ void __launch_bounds__(kThreads)
sgd_widen_kernel(float *out /* [n] */, const __nv_bfloat16 *in /* [n] */, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = __bfloat162float(in[i]);
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
    fn_launch(ctx, sgd_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), value->data,
              cfg->momentum != 0.0f ? momentum_buf->data : NULL, grad->data, cfg->lr, cfg->momentum,
              1.0f - cfg->dampening, cfg->weight_decay, cfg->nesterov, first_step, n);
    FN_CUDA_CHECK_LAUNCH(sgd_kernel);
    return FN_OK;
}

static fn_status cuda_update_folded(fn_context *ctx, fn_tensor *value, fn_tensor *momentum_buf,
                                    const fn_sgd_config *cfg)
{
    const size_t n = fn_tensor_count(value);
    const size_t blocks = fn_stride_blocks(ctx, n, kThreads);
    fn_launch(ctx, sgd_folded_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx),
              value->data, momentum_buf->data, cfg->lr, cfg->weight_decay, n);
    FN_CUDA_CHECK_LAUNCH(sgd_folded_kernel);
    return FN_OK;
}

static fn_status cuda_update_all(const fn_multi_tensor *mt, const fn_sgd_config *cfg,
                                 const int *skip, int folded)
{
    auto kernel = folded ? sgd_all_kernel<true> : sgd_all_kernel<false>;
    fn_launch(mt->ctx, kernel, fn_mt_blocks(mt), kMtThreads, 0, fn_ctx_stream(mt->ctx),
              (const fn_mt_entry *)mt->table, mt->n, mt->chunks,
              (const fn_sgd_scalars *)mt->scalars, skip, cfg->momentum, 1.0f - cfg->dampening,
              cfg->weight_decay, cfg->nesterov);
    FN_CUDA_CHECK_LAUNCH(sgd_all_kernel);
    return FN_OK;
}

static fn_status cuda_widen_bf16(fn_context *ctx, float *out, const void *in, size_t n)
{
    const size_t blocks = fn_stride_blocks(ctx, n, kThreads);
    if (blocks == 0)
        return FN_OK;
    fn_launch(ctx, sgd_widen_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), out,
              static_cast<const __nv_bfloat16 *>(in), n);
    FN_CUDA_CHECK_LAUNCH(sgd_widen_kernel);
    return FN_OK;
}

/* fn_cuda_to_bf16's rounding: __float2bfloat16_rn, the table's store. */
static fn_status cuda_narrow_bf16(fn_context *ctx, void *out, const float *in, size_t n)
{
    return fn_cuda_to_bf16(ctx, static_cast<fn_bf16 *>(out), in, n, NULL, NULL, 0);
}

extern "C" const fn_sgd_backend fn_sgd_cuda_backend = {
    .device = FN_CUDA,
    .update = cuda_update,
    .backward_plain = fn_sgd_fused_backward,
    .update_folded = cuda_update_folded,
    .update_all = cuda_update_all,
    .widen_bf16 = cuda_widen_bf16,
    .narrow_bf16 = cuda_narrow_bf16,
};
