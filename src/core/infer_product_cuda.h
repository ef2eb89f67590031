/* infer_product_cuda.h (private) — the GPU's batch-invariant product for a
 * network built for inference (fn_layer.forward_only), the counterpart of
 * infer_product.h (kernels/core/infer_product_cuda.cu):
 *
 *   y[n][o] = (sum_k x[n][k] w[o][k]) + b[o]
 *
 * Each output element is one thread's: one float32 accumulator, the terms
 * k = 0, 1, ..., in - 1 added in that order by fused multiply-add, then the
 * bias. Tiles in shared memory, one launch shape for every product, no
 * split of k and no choice by shape, so a row's outputs are the same bits
 * in any batch and at any place in it (cuBLAS picks its algorithm by the
 * shape, and a batch of 1 and one of 300 get different ones). The
 * context's math mode rounds the operands as its products do, each value
 * once as it is read: fp32 keeps them; tf32 rounds each to the nearest
 * TF32 (ties away, as tf32x3's split rounds); tf32x3 splits each into its
 * TF32 part and the remainder rounded to TF32 and adds the cross terms'
 * sum (one accumulator, in k order) to the TF32 parts' product; bf16
 * rounds each to the nearest bfloat16 (ties to even). A product of two
 * rounded operands is exact in float32, so each term is rounded once, as
 * on the tensor cores. Plain C can include this header. */
#ifndef FUSENET_CORE_INFER_PRODUCT_CUDA_H
#define FUSENET_CORE_INFER_PRODUCT_CUDA_H

#include "fusenet/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = x w^T (+ bias when bias is not NULL) on ctx's stream in its math
 * mode. x is float, or bfloat16 (x_bf16: the layer before wrote it so,
 * layer.h's bf16_input); y is float, or bfloat16 (y_bf16: the float result
 * rounded once). */
fn_status fn_cuda_infer_product(fn_context *ctx, void *y /* [n, out] */, int y_bf16,
                                const void *x /* [n, in] */, int x_bf16,
                                const float *w /* [out, in] */,
                                const float *bias /* [out] or NULL */, int n, int in, int out);

#ifdef __cplusplus
}
#endif
#endif
