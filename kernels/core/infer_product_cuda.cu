/* infer_product_cuda.cu — the batch-invariant product of
 * infer_product_cuda.h: a tiled kernel on the CUDA cores. A block computes
 * kTileRows rows x kTileOuts outputs, kDepth values of k at a time staged
 * in shared memory (rounded there as the math mode says); each thread owns
 * kPerThread x kPerThread outputs (rows ty + 16 i, outputs tx + 16 j, so
 * the shared reads are broadcasts and consecutive words) and adds the
 * terms of k in order, one fmaf a term. What a thread computes for an
 * element depends on the element's row of x, row of w and `in`, never on
 * n, the tile or the block it falls in. */
#include <cuda_bf16.h>
#include <stdint.h>

#include "core/cuda_check.h"
#include "core/cuda_runtime.h"
#include "core/cuda_state.h"
#include "core/infer_product_cuda.h"
#include "core/kernel_launch_cuda.cuh"

static constexpr int kTileRows = 64;
static constexpr int kTileOuts = 64;
static constexpr int kDepth = 16;
static constexpr int kSide = 16;                    /* threads a side of the block */
static constexpr int kPerThread = kTileRows / kSide; /* 4 rows x 4 outputs a thread */
static constexpr int kThreads = kSide * kSide;
static_assert(kTileRows == kTileOuts, "one thread layout for rows and outputs");
static_assert(kTileRows * kDepth % kThreads == 0, "a tile's loads divide among the threads");

/* How operands are rounded, one per math mode. */
enum rounding { ROUND_NONE, ROUND_TF32, ROUND_TF32X3, ROUND_BF16 };

/* The nearest TF32 value, ties away from zero (gemm_cuda.cu's rounding). */
__device__ __forceinline__ float nearest_tf32(float x)
{
    uint32_t bits = __float_as_uint(x);
    if ((bits & 0x7f800000u) != 0x7f800000u)
        bits = (bits + 0x1000u) & 0xffffe000u;
    return __uint_as_float(bits);
}

__device__ __forceinline__ float value_of(float v) { return v; }
__device__ __forceinline__ float value_of(__nv_bfloat16 v) { return __bfloat162float(v); }

/* An operand as the mode takes it: big (the operand, rounded) and, in
 * tf32x3, small (the remainder, rounded to TF32). */
template <int R>
__device__ __forceinline__ void round_operand(float v, float *big, float *small)
{
    if constexpr (R == ROUND_TF32) {
        *big = nearest_tf32(v);
    } else if constexpr (R == ROUND_TF32X3) {
        *big = nearest_tf32(v);
        *small = nearest_tf32(__fsub_rn(v, *big));
    } else if constexpr (R == ROUND_BF16) {
        *big = __bfloat162float(__float2bfloat16_rn(v));
    } else {
        *big = v;
    }
}

__device__ __forceinline__ void store(float *y, float v) { *y = v; }
__device__ __forceinline__ void store(__nv_bfloat16 *y, float v) { *y = __float2bfloat16_rn(v); }

/* Block (blockIdx.x, blockIdx.y): rows blockIdx.x kTileRows.., outputs
 * blockIdx.y kTileOuts..; kThreads threads. */
template <typename X, typename Y, int R>
__global__ void __launch_bounds__(kThreads)
infer_product_kernel(Y *y /* [n, out] */, const X *x /* [n, in] */, const float *w /* [out, in] */,
                     const float *bias /* [out] or NULL */, int n, int in, int out)
{
    FN_GRID_WAIT();
    constexpr int kSmall = R == ROUND_TF32X3 ? kDepth : 1;
    __shared__ float xs[kDepth][kTileRows], ws[kDepth][kTileOuts];
    __shared__ float xs_small[kSmall][kTileRows], ws_small[kSmall][kTileOuts];
    const int tid = threadIdx.x, tx = tid % kSide, ty = tid / kSide;
    const int n0 = blockIdx.x * kTileRows, o0 = blockIdx.y * kTileOuts;
    float acc[kPerThread][kPerThread] = {}, cross[kPerThread][kPerThread] = {};

    for (int k0 = 0; k0 < in; k0 += kDepth) {
        /* Stage x [kTileRows, kDepth] and w [kTileOuts, kDepth], transposed,
         * a row's kDepth values read by consecutive threads. */
        for (int e = tid; e < kTileRows * kDepth; e += kThreads) {
            const int r = e / kDepth, kk = e % kDepth, k = k0 + kk;
            float xv = 0.0f, wv = 0.0f;
            if (k < in && n0 + r < n)
                xv = value_of(x[(size_t)(n0 + r) * in + k]);
            if (k < in && o0 + r < out)
                wv = w[(size_t)(o0 + r) * in + k];
            float small = 0.0f;
            round_operand<R>(xv, &xs[kk][r], &small);
            if constexpr (R == ROUND_TF32X3)
                xs_small[kk][r] = small;
            round_operand<R>(wv, &ws[kk][r], &small);
            if constexpr (R == ROUND_TF32X3)
                ws_small[kk][r] = small;
        }
        __syncthreads();
        /* Only k < in: an element's terms are exactly its own, in order. */
        const int depth = in - k0 < kDepth ? in - k0 : kDepth;
        for (int kk = 0; kk < depth; kk++) {
            float a[kPerThread], b[kPerThread];
#pragma unroll
            for (int i = 0; i < kPerThread; i++) {
                a[i] = xs[kk][ty + kSide * i];
                b[i] = ws[kk][tx + kSide * i];
            }
            if constexpr (R == ROUND_TF32X3) {
                float as[kPerThread], bs[kPerThread];
#pragma unroll
                for (int i = 0; i < kPerThread; i++) {
                    as[i] = xs_small[kk][ty + kSide * i];
                    bs[i] = ws_small[kk][tx + kSide * i];
                }
#pragma unroll
                for (int i = 0; i < kPerThread; i++)
#pragma unroll
                    for (int j = 0; j < kPerThread; j++) {
                        cross[i][j] = fmaf(as[i], b[j], cross[i][j]);
                        cross[i][j] = fmaf(a[i], bs[j], cross[i][j]);
                    }
            }
#pragma unroll
            for (int i = 0; i < kPerThread; i++)
#pragma unroll
                for (int j = 0; j < kPerThread; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < kPerThread; i++) {
        const int r = n0 + ty + kSide * i;
#pragma unroll
        for (int j = 0; j < kPerThread; j++) {
            const int o = o0 + tx + kSide * j;
            if (r >= n || o >= out)
                continue;
            /* tf32x3: the cross terms' sum first, then the dominant product,
             * as gemm_cuda.cu chains its three products. */
            float v = R == ROUND_TF32X3 ? __fadd_rn(cross[i][j], acc[i][j]) : acc[i][j];
            if (bias)
                v = __fadd_rn(v, bias[o]);
            store(y + (size_t)r * out + o, v);
        }
    }
}

/* The kernel of the context's math mode, launched. */
template <typename X, typename Y>
static fn_status launch(fn_context *ctx, dim3 grid, Y *y, const X *x, const float *w,
                        const float *bias, int n, int in, int out)
{
    const fn_math_policy *p = fn_math_policy_of(fn_context_math(ctx));
    void (*kernel)(Y *, const X *, const float *, const float *, int, int, int) =
        p->bf16_operands ? infer_product_kernel<X, Y, ROUND_BF16>
        : p->split       ? infer_product_kernel<X, Y, ROUND_TF32X3>
        : p->tensor_cores ? infer_product_kernel<X, Y, ROUND_TF32>
                          : infer_product_kernel<X, Y, ROUND_NONE>;
    fn_launch(ctx, kernel, grid, kThreads, 0, fn_ctx_stream(ctx), y, x, w, bias, n, in, out);
    FN_CUDA_CHECK_LAUNCH(infer_product_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_infer_product(fn_context *ctx, void *y, int y_bf16, const void *x,
                                           int x_bf16, const float *w, const float *bias, int n,
                                           int in, int out)
{
    if (n <= 0 || out <= 0)
        return FN_OK;
    const unsigned row_tiles = (unsigned)((n + kTileRows - 1) / kTileRows);
    const unsigned out_tiles = (unsigned)((out + kTileOuts - 1) / kTileOuts);
    if (out_tiles > 65535u)
        return fn_fail(FN_ERR_INVALID, "inference product: %d outputs is too many (at most %d)",
                       out, 65535 * kTileOuts);
    if (x_bf16 && !fn_math_policy_of(fn_context_math(ctx))->bf16_operands)
        return fn_fail(FN_ERR_INVALID, "inference product: a bfloat16 input on a %s context",
                       fn_math_name(fn_context_math(ctx)));
    const dim3 grid(row_tiles, out_tiles);
    using bf16 = __nv_bfloat16;
    if (x_bf16 && y_bf16)
        return launch(ctx, grid, static_cast<bf16 *>(y), static_cast<const bf16 *>(x), w, bias, n,
                      in, out);
    if (x_bf16)
        return launch(ctx, grid, static_cast<float *>(y), static_cast<const bf16 *>(x), w, bias, n,
                      in, out);
    if (y_bf16)
        return launch(ctx, grid, static_cast<bf16 *>(y), static_cast<const float *>(x), w, bias, n,
                      in, out);
    return launch(ctx, grid, static_cast<float *>(y), static_cast<const float *>(x), w, bias, n,
                  in, out);
}
