/* adam_cuda.cu — Adam's CUDA backend: one tensor's torch.optim Adam or
 * AdamW update (the rule is in include/fusenet/adam.h) in one elementwise
 * pass that reads theta, g, m, v once and writes theta, m, v once. Every
 * operation is rounded on its own (__fmul_rn, __fadd_rn, __fsqrt_rn,
 * __fdiv_rn: never fused into an FMA, never approximated), in the order
 * optim/adam_cpu.c computes it, so the two agree bit for bit.
 * adam_all_kernel: the same for every tensor of a multi-tensor table in
 * one launch, the step's scalars read on the device. */
#include "optim/adam_backends.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/launch_cuda.cuh"
#include "optim/multi_tensor_cuda.cuh"

static constexpr int kThreads = 256;

/* ---- kernels ---- */

/* torch's lerp(start, end, w): the form it picks by |w| < 0.5. */
__device__ __forceinline__ float lerp_rn(float start, float end, float w)
{
    return w < 0.5f ? __fadd_rn(start, __fmul_rn(w, __fsub_rn(end, start)))
                    : __fsub_rn(end, __fmul_rn(__fsub_rn(end, start), __fsub_rn(1.0f, w)));
}

/* One element's update. */
__device__ __forceinline__ void adam_element(float *value, float *exp_avg, float *exp_avg_sq,
                                             const float *grad, const fn_adam_step &s,
                                             float neg_step, size_t i)
{
    float p = value[i], g = grad[i];
    if (s.decay != 1.0f)
        p = __fmul_rn(p, s.decay);
    if (s.l2 != 0.0f)
        g = __fadd_rn(g, __fmul_rn(s.l2, p));
    const float m = lerp_rn(exp_avg[i], g, s.lerp_weight);
    const float v = __fadd_rn(__fmul_rn(exp_avg_sq[i], s.beta2),
                              __fmul_rn(__fmul_rn(s.one_minus_beta2, g), g));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), s.bc2_sqrt), s.eps);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    value[i] = __fadd_rn(p, __fdiv_rn(__fmul_rn(neg_step, m), denom));
}

__global__ void __launch_bounds__(kThreads)
adam_kernel(float *value /* [n] */, float *exp_avg /* [n] */, float *exp_avg_sq /* [n] */,
            const float *grad /* [n] */, fn_adam_step s, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const float neg_step = -s.step_size;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        adam_element(value, exp_avg, exp_avg_sq, grad, s, neg_step, i);
}

__global__ void __launch_bounds__(kMtThreads)
adam_all_kernel(const fn_mt_entry *table /* [n_tensors] */, int n_tensors, long long chunks,
                const fn_adam_step *scalars, const int *skip /* or NULL */)
{
    if (skip && *skip)
        return;
    const fn_adam_step s = *scalars;
    const float neg_step = -s.step_size;
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        const fn_mt_entry e = table[mt_entry_of(table, n_tensors, c)];
        const size_t begin = (size_t)(c - e.chunk0) * kMtChunk;
        const size_t end = begin + kMtChunk < e.n ? begin + kMtChunk : e.n;
        for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
            adam_element(e.value, e.state1, e.state2, e.grad, s, neg_step, i);
    }
}

/* ---- launchers and the backend ---- */

static fn_status cuda_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_step *s)
{
    const size_t n = fn_tensor_count(value);
    const size_t blocks = fn_stride_blocks(ctx, n, kThreads);
    adam_kernel<<<(unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx)>>>(
        value->data, exp_avg->data, exp_avg_sq->data, grad->data, *s, n);
    FN_CUDA_CHECK_LAUNCH(adam_kernel);
    return FN_OK;
}

static fn_status cuda_update_all(const fn_multi_tensor *mt, const int *skip)
{
    adam_all_kernel<<<fn_mt_blocks(mt), kMtThreads, 0, fn_ctx_stream(mt->ctx)>>>(
        (const fn_mt_entry *)mt->table, mt->n, mt->chunks, (const fn_adam_step *)mt->scalars,
        skip);
    FN_CUDA_CHECK_LAUNCH(adam_all_kernel);
    return FN_OK;
}

extern "C" const fn_adam_backend fn_adam_cuda_backend = {
    .device = FN_CUDA,
    .update = cuda_update,
    .update_all = cuda_update_all,
};
