/* gemm_cuda.cu — the row-major products of gemm_cuda.h through cuBLASLt
 * (gemm_lt_cuda.h: the algorithm chosen once a shape, by a rule),
 * in the context's math mode: strict fp32, TF32 tensor cores, bf16 (both
 * operands rounded to bfloat16 by to_bf16_kernel, fp32 accumulation), or tf32x3 (each
 * operand split into a TF32-exact part and its remainder, and three TF32
 * GEMMs chained into one output, the second and third with beta = 1, so each
 * product is rounded to fp32 in C before the next adds to it: near-fp32
 * accuracy at tensor-core speed); the split and transpose kernels layers use to prepare operands
 * once and reuse them (fn_cuda_gemm_split). A given algorithm is
 * deterministic, and no choice is made by timing, which could differ between
 * runs and so change the bits.
 *
 * cuBLAS is column-major: a row-major [r, c] matrix is a column-major [c, r]
 * one, so each row-major product is computed as its transpose, C^T = B^T A^T,
 * with no data movement. */
#include <cuda_bf16.h>
#include <limits.h>
#include <stdint.h>

#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/gemm_cuda.h"
#include "core/gemm_lt_cuda.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"

static constexpr int kTile = 32;     /* transpose: tile side */
static constexpr int kTileRows = 8;  /* transpose: thread rows a tile */
static constexpr int kSplitThreads = 256;

/* ---- kernels ---- */

/* x rounded to the nearest TF32 value, ties away from zero, as PTX's
 * cvt.rna.tf32.f32 does, but in integer arithmetic so that it builds for any
 * target: add half of the 13 dropped mantissa bits, then clear them. Inf and
 * NaN pass unchanged. */
__device__ __forceinline__ float round_to_tf32(float x)
{
    uint32_t bits = __float_as_uint(x);
    if ((bits & 0x7f800000u) != 0x7f800000u)
        bits = (bits + 0x1000u) & 0xffffe000u;
    return __uint_as_float(bits);
}

/* big = x rounded to the nearest TF32 value (10-bit mantissa, the low 13 bits
 * zero), small = x - big, which is exact in fp32. Tensor cores then take big
 * exactly and small with a relative error of 2^-11, which is below fp32's
 * own rounding of the product. Both operands of a product in one launch. */
__global__ void split_tf32_kernel(float *a_big /* [na] */, float *a_small /* [na] */,
                                  float *b_big /* [nb] */, float *b_small /* [nb] */,
                                  const float *a /* [na] */, const float *b /* [nb] */, size_t na,
                                  size_t nb)
{
    FN_GRID_WAIT();
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < na + nb; i += stride) {
        const bool in_a = i < na;
        const size_t j = in_a ? i : i - na;
        const float v = in_a ? a[j] : b[j];
        const float hi = round_to_tf32(v);
        const float lo = __fsub_rn(v, hi);
        if (in_a) {
            a_big[j] = hi;
            a_small[j] = lo;
        } else {
            b_big[j] = hi;
            b_small[j] = lo;
        }
    }
}

/* a_h, b_h = a, b rounded to the nearest bfloat16 (__float2bfloat16_rn:
 * ties to even, Inf and NaN kept), both operands of a product in one launch. */
__global__ void to_bf16_kernel(__nv_bfloat16 *a_h /* [na] */, __nv_bfloat16 *b_h /* [nb] */,
                               const float *a /* [na] */, const float *b /* [nb] */, size_t na,
                               size_t nb)
{
    FN_GRID_WAIT();
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < na + nb; i += stride) {
        if (i < na)
            a_h[i] = __float2bfloat16_rn(a[i]);
        else
            b_h[i - na] = __float2bfloat16_rn(b[i - na]);
    }
}

/* The same, four values a thread (a 16-byte load, an 8-byte store), for
 * operands whose counts are multiples of 4 and whose pointers allow it:
 * the pass is memory-bound (W at the benchmark shape: 256 MiB read, 128
 * written), and scalar 2-byte stores leave half of each sector unused. The
 * bits are the scalar kernel's. qa, qb: quads of a and b. */
__global__ void to_bf16_quad_kernel(__nv_bfloat16 *a_h /* [4 qa] */, __nv_bfloat16 *b_h /* [4 qb] */,
                                    const float *a /* [4 qa] */, const float *b /* [4 qb] */,
                                    size_t qa, size_t qb)
{
    FN_GRID_WAIT();
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < qa + qb; i += stride) {
        const bool in_a = i < qa;
        const size_t j = in_a ? i : i - qa;
        const float4 v = reinterpret_cast<const float4 *>(in_a ? a : b)[j];
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(v.z, v.w);
        uint2 t;
        t.x = *reinterpret_cast<const unsigned *>(&lo);
        t.y = *reinterpret_cast<const unsigned *>(&hi);
        reinterpret_cast<uint2 *>(in_a ? a_h : b_h)[j] = t;
    }
}

/* out = src^T through a padded shared tile (both sides coalesced); with
 * out_small, the transpose is split as split_tf32_kernel splits. Block
 * (kTile, kTileRows) covers a kTile x kTile tile. */
__global__ void __launch_bounds__(kTile * kTileRows)
transpose_kernel(float *out /* [cols, rows] */, float *out_small /* [cols, rows] or NULL */,
                 const float *src /* [rows, cols] */, int rows, int cols)
{
    FN_GRID_WAIT();
    __shared__ float tile[kTile][kTile + 1];
    const int c = blockIdx.x * kTile + threadIdx.x;
    const int r0 = blockIdx.y * kTile;
    for (int i = threadIdx.y; i < kTile; i += kTileRows)
        if (r0 + i < rows && c < cols)
            tile[i][threadIdx.x] = src[(size_t)(r0 + i) * cols + c];
    __syncthreads();
    const int r = r0 + threadIdx.x;
    const int c0 = blockIdx.x * kTile;
    for (int i = threadIdx.y; i < kTile; i += kTileRows) {
        if (c0 + i < cols && r < rows) {
            const float v = tile[threadIdx.x][i];
            const size_t o = (size_t)(c0 + i) * rows + r;
            if (out_small) {
                const float hi = round_to_tf32(v);
                out[o] = hi;
                out_small[o] = __fsub_rn(v, hi);
            } else {
                out[o] = v;
            }
        }
    }
}

/* ---- launchers ---- */

/* Split or rounded operands start on fn_pad_floats boundaries: tf32x3 keeps
 * two floats per value, bf16 half of one. */
static size_t split_floats(size_t na, size_t nb)
{
    return 2 * (fn_pad_floats(na) + fn_pad_floats(nb));
}

static size_t bf16_pair_floats(size_t na, size_t nb)
{
    return fn_pad_floats(fn_bf16_floats(na)) + fn_pad_floats(fn_bf16_floats(nb));
}

/* The larger of what the three products' operand pairs need: forward (x, w),
 * dweight (x, dy), dinput (w, dy). */
static size_t most_of_pairs(size_t (*pair)(size_t, size_t), size_t nx, size_t nw, size_t ny)
{
    size_t need = pair(nx, nw);
    if (pair(nx, ny) > need)
        need = pair(nx, ny);
    if (pair(nw, ny) > need)
        need = pair(nw, ny);
    return need;
}

extern "C" size_t fn_cuda_gemm_workspace_floats(fn_math math, int max_batch, int in, int out)
{
    const size_t nx = (size_t)max_batch * (size_t)in;  /* x, dx */
    const size_t nw = (size_t)out * (size_t)in;        /* w */
    const size_t ny = (size_t)max_batch * (size_t)out; /* y, dy */
    const fn_math_policy *p = fn_math_policy_of(math);
    if (p->bf16_operands)
        return most_of_pairs(bf16_pair_floats, nx, nw, ny);
    if (p->split)
        return most_of_pairs(split_floats, nx, nw, ny);
    return 0;
}

/* A product of fp32 operands into fp32, computed as `compute` says. */
static fn_status gemm_f32(fn_context *ctx, cublasComputeType_t compute, cublasOperation_t ta,
                          cublasOperation_t tb, int m, int n, int k, float alpha, const float *a,
                          int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    return fn_gemm_lt(ctx, compute, CUDA_R_32F, CUDA_R_32F, ta, tb, m, n, k, alpha, a, lda, b,
                      ldb, beta, c, ldc);
}

static bool quad_ok(const void *dst, const float *src, size_t n)
{
    return n % 4 == 0 && ((uintptr_t)src & 15u) == 0 && ((uintptr_t)dst & 7u) == 0;
}

extern "C" fn_status fn_cuda_to_bf16(fn_context *ctx, fn_bf16 *a_h, const float *a, size_t na,
                                     fn_bf16 *b_h, const float *b, size_t nb)
{
    cudaStream_t s = fn_ctx_stream(ctx);
    if (quad_ok(a_h, a, na) && (nb == 0 || quad_ok(b_h, b, nb))) {
        const size_t blocks = fn_stride_blocks(ctx, (na + nb) / 4, kSplitThreads);
        if (blocks == 0)
            return FN_OK;
        fn_launch(ctx, to_bf16_quad_kernel, (unsigned)blocks, kSplitThreads, 0, s,
                  reinterpret_cast<__nv_bfloat16 *>(a_h), reinterpret_cast<__nv_bfloat16 *>(b_h), a,
                  b, na / 4, nb / 4);
        FN_CUDA_CHECK_LAUNCH(to_bf16_quad_kernel);
        return FN_OK;
    }
    const size_t blocks = fn_stride_blocks(ctx, na + nb, kSplitThreads);
    if (blocks == 0)
        return FN_OK;
    fn_launch(ctx, to_bf16_kernel, (unsigned)blocks, kSplitThreads, 0, s,
              reinterpret_cast<__nv_bfloat16 *>(a_h), reinterpret_cast<__nv_bfloat16 *>(b_h), a, b,
              na, nb);
    FN_CUDA_CHECK_LAUNCH(to_bf16_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_gemm_bf16(fn_context *ctx, int trans_a, int trans_b, int m, int n,
                                       int k, float alpha, const fn_bf16 *a, int lda,
                                       const fn_bf16 *b, int ldb, float beta, void *c, int c_bf16,
                                       int ldc)
{
    if (!fn_math_policy_of(fn_context_math(ctx))->bf16_operands)
        return fn_fail(FN_ERR_INVALID, "bf16 product [%d x %d x %d] on a %s context", m, n, k,
                       fn_math_name(fn_context_math(ctx)));
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    return fn_gemm_lt(ctx, CUBLAS_COMPUTE_32F, CUDA_R_16BF, c_bf16 ? CUDA_R_16BF : CUDA_R_32F, ta,
                      tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

extern "C" fn_status fn_cuda_split_tf32(fn_context *ctx, float *a_big, float *a_small,
                                        const float *a, size_t na, float *b_big, float *b_small,
                                        const float *b, size_t nb)
{
    const size_t blocks = fn_stride_blocks(ctx, na + nb, kSplitThreads);
    if (blocks == 0)
        return FN_OK;
    fn_launch(ctx, split_tf32_kernel, (unsigned)blocks, kSplitThreads, 0, fn_ctx_stream(ctx), a_big,
              a_small, b_big, b_small, a, b, na, nb);
    FN_CUDA_CHECK_LAUNCH(split_tf32_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_transpose(fn_context *ctx, float *out, float *out_small,
                                       const float *src, int rows, int cols)
{
    const dim3 grid((unsigned)((cols + kTile - 1) / kTile), (unsigned)((rows + kTile - 1) / kTile));
    if (grid.y > 65535u)
        return fn_fail(FN_ERR_INVALID, "transpose: %d rows is too many", rows);
    fn_launch(ctx, transpose_kernel, grid, dim3(kTile, kTileRows), 0, fn_ctx_stream(ctx), out,
              out_small, src, rows, cols);
    FN_CUDA_CHECK_LAUNCH(transpose_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_gemm_split(fn_context *ctx, int trans_a, int trans_b, int m, int n,
                                        int k, float alpha, const float *a, const float *a_small,
                                        int lda, const float *b, const float *b_small, int ldb,
                                        float beta, float *c, int ldc)
{
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const fn_math_policy *p = fn_math_policy_of(fn_context_math(ctx));
    if (p->bf16_operands)
        return fn_fail(FN_ERR_INVALID,
                       "product [%d x %d x %d]: bf16 operands go through fn_cuda_gemm_bf16", m,
                       n, k);
    /* cuBLASLt's COMPUTE_32F is plain fp32 FMA: no tensor cores. */
    if (!p->split)
        return gemm_f32(ctx, p->tensor_cores ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                        ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (!a_small || !b_small)
        return fn_fail(FN_ERR_INVALID, "tf32x3 product [%d x %d x %d]: an operand is not split",
                       m, n, k);
    const cublasComputeType_t tf32 = CUBLAS_COMPUTE_32F_FAST_TF32;
    /* The small cross terms first, the dominant big product last, so the
     * small terms are added together in C before the big one swamps them. */
    FN_TRY(gemm_f32(ctx, tf32, ta, tb, m, n, k, alpha, a_small, lda, b, ldb, beta, c, ldc));
    FN_TRY(gemm_f32(ctx, tf32, ta, tb, m, n, k, alpha, a, lda, b_small, ldb, 1.0f, c, ldc));
    return gemm_f32(ctx, tf32, ta, tb, m, n, k, alpha, a, lda, b, ldb, 1.0f, c, ldc);
}

/* bf16 mode's gemm: both operands rounded into ws, then one bf16 product. */
static fn_status gemm_bf16(fn_context *ctx, int ta, int tb, int m, int n, int k, const float *a,
                           int lda, size_t na, const float *b, int ldb, size_t nb, float beta,
                           float *c, int ldc, float *ws, size_t ws_floats)
{
    if (!ws || ws_floats < bf16_pair_floats(na, nb))
        return fn_fail(FN_ERR_INVALID,
                       "bf16 product [%d x %d x %d]: workspace of %zu floats, needs %zu", m, n, k,
                       ws_floats, bf16_pair_floats(na, nb));
    fn_bf16 *a_h = reinterpret_cast<fn_bf16 *>(ws);
    fn_bf16 *b_h = reinterpret_cast<fn_bf16 *>(ws + fn_pad_floats(fn_bf16_floats(na)));
    FN_TRY(fn_cuda_to_bf16(ctx, a_h, a, na, b_h, b, nb));
    return fn_cuda_gemm_bf16(ctx, ta, tb, m, n, k, 1.0f, a_h, lda, b_h, ldb, beta, c, 0, ldc);
}

/* Column-major C [m, n] = op(A) op(B) + beta C, where A holds na floats and B
 * nb (both dense), in the context's math mode; tf32x3 splits both operands
 * into ws first, bf16 rounds them into ws. */
static fn_status gemm(fn_context *ctx, int ta, int tb, int m, int n, int k, const float *a,
                      int lda, size_t na, const float *b, int ldb, size_t nb, float beta,
                      float *c, int ldc, float *ws, size_t ws_floats)
{
    const fn_math_policy *p = fn_math_policy_of(fn_context_math(ctx));
    if (p->bf16_operands)
        return gemm_bf16(ctx, ta, tb, m, n, k, a, lda, na, b, ldb, nb, beta, c, ldc, ws,
                         ws_floats);
    if (!p->split)
        return fn_cuda_gemm_split(ctx, ta, tb, m, n, k, 1.0f, a, NULL, lda, b, NULL, ldb, beta, c,
                                  ldc);
    if (!ws || ws_floats < split_floats(na, nb))
        return fn_fail(FN_ERR_INVALID,
                       "tf32x3 product [%d x %d x %d]: workspace of %zu floats, needs %zu", m, n,
                       k, ws_floats, split_floats(na, nb));
    float *a_big = ws;
    float *a_small = a_big + fn_pad_floats(na);
    float *b_big = a_small + fn_pad_floats(na);
    float *b_small = b_big + fn_pad_floats(nb);
    FN_TRY(fn_cuda_split_tf32(ctx, a_big, a_small, a, na, b_big, b_small, b, nb));
    return fn_cuda_gemm_split(ctx, ta, tb, m, n, k, 1.0f, a_big, a_small, lda, b_big, b_small,
                              ldb, beta, c, ldc);
}

/* Row-major y [n, out] = x [n, in] w^T is column-major y^T [out, n] =
 * (w^T)^T x^T, where w^T [in, out] and x^T [in, n] are w and x as stored. */
extern "C" fn_status fn_cuda_gemm_forward(fn_context *ctx, float *y, const float *x,
                                          const float *w, int n, int in, int out, float *ws,
                                          size_t ws_floats)
{
    return gemm(ctx, 1, 0, out, n, in, w, in, (size_t)out * in, x, in,
                (size_t)n * in, 0.0f, y, out, ws, ws_floats);
}

/* Row-major dw [out, in] = beta dw + dy^T x is column-major dw^T [in, out]
 * = beta dw^T + x^T dy, where x^T [in, n] is x as stored and dy [n, out]
 * is (dy^T as stored)^T. */
extern "C" fn_status fn_cuda_gemm_dweight(fn_context *ctx, float *dw, float beta, const float *dy,
                                          const float *x, int n, int in, int out, float *ws,
                                          size_t ws_floats)
{
    return gemm(ctx, 0, 1, in, out, n, x, in, (size_t)n * in, dy, out,
                (size_t)n * out, beta, dw, in, ws, ws_floats);
}

/* Row-major dx [n, in] = dy [n, out] w is column-major dx^T [in, n] =
 * w^T dy^T, both as stored. */
extern "C" fn_status fn_cuda_gemm_dinput(fn_context *ctx, float *dx, const float *dy,
                                         const float *w, int n, int in, int out, float *ws,
                                         size_t ws_floats)
{
    return gemm(ctx, 0, 0, in, n, out, w, in, (size_t)out * in, dy, out,
                (size_t)n * out, 0.0f, dx, in, ws, ws_floats);
}

extern "C" fn_status fn_cuda_workspace_alloc(fn_tensor *t, size_t floats)
{
    const size_t cols = 4096;
    if (floats <= cols)
        return fn_tensor_alloc(t, 1, floats > 0 ? (int)floats : 1, FN_CUDA);
    const size_t rows = (floats + cols - 1) / cols;
    if (rows > (size_t)INT_MAX)
        return fn_fail(FN_ERR_NOMEM, "a GPU workspace of %zu floats is too large", floats);
    return fn_tensor_alloc(t, (int)rows, (int)cols, FN_CUDA);
}
