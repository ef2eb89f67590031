/* rmsprop_cuda.cu — RMSprop's CUDA backend: one tensor's torch.optim
 * RMSprop update (the rule is in include/fusenet/rmsprop.h) in one
 * elementwise pass that reads theta, g and the state once and writes theta
 * and the state once. Every operation is rounded on its own (__fmul_rn,
 * __fadd_rn, __fsqrt_rn, __fdiv_rn: never fused into an FMA, never
 * approximated), in the order optim/optimizers/rmsprop/rmsprop_cpu.c computes it, so the two
 * agree bit for bit. rmsprop_all_kernel: the same for every tensor of a
 * multi-tensor table in one launch, the step's scalars read on the device;
 * a centered step reads each tensor's grad_avg from a second table whose
 * entries are the first's, one for one. */
#include "optim/optimizers/rmsprop/rmsprop_backends.h"
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

/* One element's update from its value p, gradient g and state *v, *b (when
 * s.has_momentum), *a (when s.centered): returns the new value, the new
 * state in place. */
__device__ __forceinline__ float rmsprop_math(float p, float g, float *v, float *b, float *a,
                                              const fn_rmsprop_step &s)
{
    if (s.l2 != 0.0f)
        g = __fadd_rn(g, __fmul_rn(s.l2, p));
    *v = __fadd_rn(__fmul_rn(*v, s.alpha), __fmul_rn(__fmul_rn(s.one_minus_alpha, g), g));
    float avg;
    if (s.centered) {
        *a = lerp_rn(*a, g, s.one_minus_alpha);
        avg = __fsqrt_rn(__fsub_rn(*v, __fmul_rn(*a, *a)));
    } else {
        avg = __fsqrt_rn(*v);
    }
    avg = __fadd_rn(avg, s.eps);
    if (s.has_momentum) {
        *b = __fadd_rn(__fmul_rn(*b, s.momentum), __fdiv_rn(g, avg));
        return __fadd_rn(p, __fmul_rn(s.neg_lr, *b));
    }
    return __fadd_rn(p, __fdiv_rn(__fmul_rn(s.neg_lr, g), avg));
}

__global__ void __launch_bounds__(kThreads)
rmsprop_kernel(float *value /* [n] */, float *square_avg /* [n] */,
               float *momentum_buffer /* [n] or NULL */, float *grad_avg /* [n] or NULL */,
               const float *grad /* [n] */, fn_rmsprop_step s, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = square_avg[i];
        float b = s.has_momentum ? momentum_buffer[i] : 0.0f;
        float a = s.centered ? grad_avg[i] : 0.0f;
        value[i] = rmsprop_math(value[i], grad[i], &v, &b, &a, s);
        square_avg[i] = v;
        if (s.has_momentum)
            momentum_buffer[i] = b;
        if (s.centered)
            grad_avg[i] = a;
    }
}

/* rmsprop_kernel over every tensor of the table; the step's scalars from
 * the device, so a replayed launch takes each step's. averages: the
 * grad_avg table (state1), NULL unless centered. */
__global__ void __launch_bounds__(kMtThreads)
rmsprop_all_kernel(const fn_mt_entry *table /* [n_tensors] */,
                   const fn_mt_entry *averages /* [n_tensors] or NULL */, int n_tensors,
                   long long chunks, const fn_rmsprop_step *scalars, const int *skip /* or NULL */)
{
    FN_GRID_WAIT();
    if (skip && *skip)
        return;
    const fn_rmsprop_step s = *scalars;
    mt_for_each_piece(table, n_tensors, chunks, [&](const fn_mt_entry &e, size_t first,
                                                     size_t end) {
        /* The grad_avg of this piece's tensor: the entry with the same chunk0. */
        float *ga = s.centered ? averages[mt_entry_of(table, n_tensors, e.chunk0)].state1
                               : nullptr;
        float p[kMtPerThread], g[kMtPerThread], v[kMtPerThread], b[kMtPerThread],
            a[kMtPerThread];
#pragma unroll
        for (int k = 0; k < kMtPerThread; k++) {
            const size_t i = first + (size_t)k * kMtThreads;
            if (i < end) {
                p[k] = e.value[i];
                g[k] = e.grad[i];
                v[k] = e.state1[i];
                b[k] = s.has_momentum ? e.state2[i] : 0.0f;
                a[k] = s.centered ? ga[i] : 0.0f;
            }
        }
#pragma unroll
        for (int k = 0; k < kMtPerThread; k++) {
            const size_t i = first + (size_t)k * kMtThreads;
            if (i < end) {
                mt_store_value(e, i, rmsprop_math(p[k], g[k], &v[k], &b[k], &a[k], s));
                e.state1[i] = v[k];
                if (s.has_momentum)
                    e.state2[i] = b[k];
                if (s.centered)
                    ga[i] = a[k];
            }
        }
    });
}

/* ---- launchers and the backend ---- */

static fn_status cuda_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *square_avg, fn_tensor *momentum_buffer,
                             fn_tensor *grad_avg, const fn_rmsprop_step *s)
{
    const size_t n = fn_tensor_count(value);
    const size_t blocks = fn_stride_blocks(ctx, n, kThreads);
    fn_launch(ctx, rmsprop_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), value->data,
              square_avg->data, s->has_momentum ? momentum_buffer->data : nullptr,
              s->centered ? grad_avg->data : nullptr, grad->data, *s, n);
    FN_CUDA_CHECK_LAUNCH(rmsprop_kernel);
    return FN_OK;
}

static fn_status cuda_update_all(const fn_multi_tensor *mt, const fn_multi_tensor *averages,
                                 const int *skip)
{
    fn_launch(mt->ctx, rmsprop_all_kernel, fn_mt_blocks(mt), kMtThreads, 0, fn_ctx_stream(mt->ctx),
              (const fn_mt_entry *)mt->table,
              averages ? (const fn_mt_entry *)averages->table : nullptr, mt->n, mt->chunks,
              (const fn_rmsprop_step *)mt->scalars, skip);
    FN_CUDA_CHECK_LAUNCH(rmsprop_all_kernel);
    return FN_OK;
}

extern "C" const fn_rmsprop_backend fn_rmsprop_cuda_backend = {
    .device = FN_CUDA,
    .update = cuda_update,
    .update_all = cuda_update_all,
};
