/* gemm_cuda.h — the three matrix products of a layer on the GPU, in row-major
 * terms, through cuBLAS in the context's math mode (fp32, tf32, tf32x3,
 * bf16).
 *
 * A layer maps x [n, in] to y [n, out] with weight w [out, in]:
 *   forward  y  = x w^T
 *   dweight  dw = beta dw + dy^T x   (beta: the gradient's grad_beta,
 *            param.h; 0 writes dw without reading it, 1 accumulates)
 *   dinput   dx = dy w
 * In tf32x3 mode each operand is split into a TF32-exact part and the
 * remainder, and in bf16 mode rounded to bfloat16, written into `ws` (device
 * floats the caller allocated at layer creation, fn_cuda_gemm_workspace_floats
 * of them); fp32 and tf32 ignore it. Results are fp32 in every mode.
 * Plain C can include this header (the tests call these directly). */
#ifndef FUSENET_KERNELS_GEMM_CUDA_H
#define FUSENET_KERNELS_GEMM_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A bfloat16 as its 16 bits (the GPU's __nv_bfloat16: fp32's sign, 8-bit
 * exponent and top 7 mantissa bits), so that C code can hold pointers to
 * bf16 arrays; only CUDA code reads the values. */
typedef uint16_t fn_bf16;

/* Floats of storage that n bf16 values take. */
static inline size_t fn_bf16_floats(size_t n) { return (n + 1) / 2; }

/* Floats of workspace the three products of an [max_batch, in] -> [max_batch,
 * out] layer need in `math` (0 in fp32 and tf32). */
size_t fn_cuda_gemm_workspace_floats(fn_math math, int max_batch, int in, int out);

fn_status fn_cuda_gemm_forward(fn_context *ctx, float *y /* [n, out] */,
                               const float *x /* [n, in] */, const float *w /* [out, in] */,
                               int n, int in, int out, float *ws /* [ws_floats] */,
                               size_t ws_floats);

fn_status fn_cuda_gemm_dweight(fn_context *ctx, float *dw /* [out, in] */, float beta,
                               const float *dy /* [n, out] */, const float *x /* [n, in] */,
                               int n, int in, int out, float *ws /* [ws_floats] */,
                               size_t ws_floats);

fn_status fn_cuda_gemm_dinput(fn_context *ctx, float *dx /* [n, in] */,
                              const float *dy /* [n, out] */, const float *w /* [out, in] */,
                              int n, int in, int out, float *ws /* [ws_floats] */,
                              size_t ws_floats);

/* The lower level the block uses to keep operands between products (it
 * splits x and w once in forward and reuses the splits in backward, and
 * folds plain SGD into the dW product). Column-major
 *   C [m, n] = alpha op(A) op(B) + beta C,   op = transpose when trans_* != 0,
 * in the context's math mode. In fp32 and tf32 modes a and b are the operands
 * and a_small, b_small are ignored (NULL is fine); in tf32x3 mode a and b are
 * the TF32-exact parts and a_small, b_small the remainders, as
 * fn_cuda_split_tf32 writes them. */
fn_status fn_cuda_gemm_split(fn_context *ctx, int trans_a, int trans_b, int m, int n, int k,
                             float alpha, const float *a, const float *a_small, int lda,
                             const float *b, const float *b_small, int ldb, float beta, float *c,
                             int ldc);

/* bf16 mode's product: column-major C [m, n] = alpha op(A) op(B) + beta C
 * with A and B bfloat16 (as fn_cuda_to_bf16 writes them), fp32 accumulation
 * (CUBLAS_COMPUTE_32F), and C fp32 (c_bf16 == 0) or bfloat16 (c_bf16 != 0,
 * rounded to nearest once, from the fp32 result). cuBLAS takes any leading
 * dimension and pointer here; widths that are multiples of 8 and 16-byte
 * aligned pointers let it use its fastest (tensor-core) kernels. */
fn_status fn_cuda_gemm_bf16(fn_context *ctx, int trans_a, int trans_b, int m, int n, int k,
                            float alpha, const fn_bf16 *a, int lda, const fn_bf16 *b, int ldb,
                            float beta, void *c, int c_bf16, int ldc);

/* a_h = a and b_h = b rounded to the nearest bfloat16 (ties to even; Inf and
 * NaN kept), na and nb values, in one launch (nb may be 0, b and b_h NULL). */
fn_status fn_cuda_to_bf16(fn_context *ctx, fn_bf16 *a_h /* [na] */, const float *a /* [na] */,
                          size_t na, fn_bf16 *b_h /* [nb] */, const float *b /* [nb] */,
                          size_t nb);

/* big + small == src exactly, big TF32-exact, for na floats of a and nb of b
 * in one launch (nb may be 0, b and its outputs NULL). */
fn_status fn_cuda_split_tf32(fn_context *ctx, float *a_big /* [na] */, float *a_small /* [na] */,
                             const float *a /* [na] */, size_t na, float *b_big /* [nb] */,
                             float *b_small /* [nb] */, const float *b /* [nb] */, size_t nb);

/* out = src^T for a row-major src [rows, cols]; with out_small non-NULL, out
 * gets the TF32-exact part and out_small the remainder. */
fn_status fn_cuda_transpose(fn_context *ctx, float *out /* [cols, rows] */,
                            float *out_small /* [cols, rows] or NULL */,
                            const float *src /* [rows, cols] */, int rows, int cols);

/* Allocates a layer's scratch tensor on the GPU holding at least `floats`
 * floats (at least one), shaped so that no dimension overflows an int. */
fn_status fn_cuda_workspace_alloc(fn_tensor *t, size_t floats);

#ifdef __cplusplus
}
#endif
#endif
