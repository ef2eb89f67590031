/* adam_cuda.cu — Adam's CUDA backend: one tensor's torch.optim Adam or
 * AdamW update (the rule is in include/fusenet/adam.h) in one elementwise
 * pass that reads theta, g, m, v once and writes theta, m, v once. Every
 * operation is rounded on its own (__fmul_rn, __fadd_rn, __fsqrt_rn,
 * __fdiv_rn: never fused into an FMA, never approximated), in the order
 * optim/optimizers/adam/adam_cpu.c computes it, so the two agree bit for bit.
 * adam_all_kernel: the same for every tensor of a multi-tensor table in
 * one launch, the step's scalars read on the device. */
#include "optim/optimizers/adam/adam_backends.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
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

/* One element's update from its value p, gradient g and moments *m, *v:
 * returns the new value, the new moments in *m and *v. */
__device__ __forceinline__ float adam_math(float p, float g, float *m, float *v,
                                           const fn_adam_step &s, float neg_step)
{
    if (s.decay != 1.0f)
        p = __fmul_rn(p, s.decay);
    if (s.l2 != 0.0f)
        g = __fadd_rn(g, __fmul_rn(s.l2, p));
    *m = lerp_rn(*m, g, s.lerp_weight);
    *v = __fadd_rn(__fmul_rn(*v, s.beta2), __fmul_rn(__fmul_rn(s.one_minus_beta2, g), g));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(*v), s.bc2_sqrt), s.eps);
    return __fadd_rn(p, __fdiv_rn(__fmul_rn(neg_step, *m), denom));
}

__global__ void __launch_bounds__(kThreads)
adam_kernel(float *value /* [n] */, float *exp_avg /* [n] */, float *exp_avg_sq /* [n] */,
            const float *grad /* [n] */, fn_adam_step s, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const float neg_step = -s.step_size;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float m = exp_avg[i], v = exp_avg_sq[i];
        value[i] = adam_math(value[i], grad[i], &m, &v, s, neg_step);
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
    }
}

/* adam_kernel over every tensor of the table; the step's scalars from the
 * device, so a replayed launch takes each step's. */
__global__ void __launch_bounds__(kMtThreads)
adam_all_kernel(const fn_mt_entry *table /* [n_tensors] */, int n_tensors, long long chunks,
                const fn_adam_step *scalars, const int *skip /* or NULL */)
{
    FN_GRID_WAIT();
    if (skip && *skip)
        return;
    const fn_adam_step s = *scalars;
    const float neg_step = -s.step_size;
    mt_for_each_piece(table, n_tensors, chunks, [&](const fn_mt_entry &e, size_t first,
                                                     size_t end) {
        float p[kMtPerThread], g[kMtPerThread], m[kMtPerThread], v[kMtPerThread];
#pragma unroll
        for (int k = 0; k < kMtPerThread; k++) {
            const size_t i = first + (size_t)k * kMtThreads;
            if (i < end) {
                p[k] = e.value[i];
                g[k] = e.grad[i];
                m[k] = e.state1[i];
                v[k] = e.state2[i];
            }
        }
#pragma unroll
        for (int k = 0; k < kMtPerThread; k++) {
            const size_t i = first + (size_t)k * kMtThreads;
            if (i < end) {
                mt_store_value(e, i, adam_math(p[k], g[k], &m[k], &v[k], s, neg_step));
                e.state1[i] = m[k];
                e.state2[i] = v[k];
            }
        }
    });
}

/* ---- launchers and the backend ---- */

static fn_status cuda_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_step *s)
{
    const size_t n = fn_tensor_count(value);
    const size_t blocks = fn_stride_blocks(ctx, n, kThreads);
    fn_launch(ctx, adam_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), value->data,
              exp_avg->data, exp_avg_sq->data, grad->data, *s, n);
    FN_CUDA_CHECK_LAUNCH(adam_kernel);
    return FN_OK;
}

static fn_status cuda_update_all(const fn_multi_tensor *mt, const int *skip)
{
    fn_launch(mt->ctx, adam_all_kernel, fn_mt_blocks(mt), kMtThreads, 0, fn_ctx_stream(mt->ctx),
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
