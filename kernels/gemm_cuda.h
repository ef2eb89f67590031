/* gemm_cuda.h — the three matrix products of a layer on the GPU, in row-major
 * terms, through cuBLAS in the context's math mode (fp32, tf32, tf32x3).
 *
 * A layer maps x [n, in] to y [n, out] with weight w [out, in]:
 *   forward  y  = x w^T
 *   dweight  dw += dy^T x   (parameter gradients accumulate)
 *   dinput   dx = dy w
 * In tf32x3 mode each operand is split into a TF32-exact part and the
 * remainder, written into `ws` (device floats the caller allocated at layer
 * creation, fn_cuda_gemm_workspace_floats of them); the other modes ignore it.
 * Plain C can include this header (the tests call these directly). */
#ifndef FUSENET_KERNELS_GEMM_CUDA_H
#define FUSENET_KERNELS_GEMM_CUDA_H

#include <stddef.h>

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Floats of workspace the three products of an [max_batch, in] -> [max_batch,
 * out] layer need in `math` (0 unless tf32x3). */
size_t fn_cuda_gemm_workspace_floats(fn_math math, int max_batch, int in, int out);

fn_status fn_cuda_gemm_forward(fn_context *ctx, float *y /* [n, out] */,
                               const float *x /* [n, in] */, const float *w /* [out, in] */,
                               int n, int in, int out, float *ws /* [ws_floats] */,
                               size_t ws_floats);

fn_status fn_cuda_gemm_dweight(fn_context *ctx, float *dw /* [out, in], += */,
                               const float *dy /* [n, out] */, const float *x /* [n, in] */,
                               int n, int in, int out, float *ws /* [ws_floats] */,
                               size_t ws_floats);

fn_status fn_cuda_gemm_dinput(fn_context *ctx, float *dx /* [n, in] */,
                              const float *dy /* [n, out] */, const float *w /* [out, in] */,
                              int n, int in, int out, float *ws /* [ws_floats] */,
                              size_t ws_floats);

/* Allocates a layer's scratch tensor on the GPU holding at least `floats`
 * floats (at least one), shaped so that no dimension overflows an int. */
fn_status fn_cuda_workspace_alloc(fn_tensor *t, size_t floats);

#ifdef __cplusplus
}
#endif
#endif
