/* block_products_cuda.h (private) — the fused block's GPU workspace and its
 * three products (kernels/nn/layers/block/block_products_cuda.cu), for the layer's ops in
 * kernels/nn/layers/block/block_cuda.cu. */
#ifndef FUSENET_KERNELS_BLOCK_PRODUCTS_CUDA_H
#define FUSENET_KERNELS_BLOCK_PRODUCTS_CUDA_H

#include <stddef.h>

#include "core/gemm_cuda.h"
#include "nn/layers/block/block_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the parts of b->scratch live; a part a math mode does not use is
 * NULL. The TF32 splits of x and w that forward makes are kept for backward
 * (the dx product reuses w's), so tf32x3 splits w once a step. In the TF32
 * modes the dW product takes x^T and dz^T: Hopper's TF32 tensor-core
 * instructions read operands with the reduced dimension contiguous, which x
 * and dz as stored do not have for dW (their rows are the batch); with both
 * transposed dW has the forward product's layout (DESIGN.md: the default
 * layout reaches 0.57 ms where the forward shape takes 0.33 ms). */
/* In bf16 mode forward rounds x to bfloat16 (x_h) and reads w's bfloat16
 * copy w_h, the weight's fn_param.value_bf16 (param.h): rounded there by
 * the weight's writers while an owner keeps it, else by forward itself;
 * backward reuses both (dW reads x_h, dx reads w_h, the weight of the
 * forward as in tf32x3); no transposes: Hopper's bf16 tensor-core
 * instructions read either layout. The block's caches are bfloat16 too, in
 * place of b->z and b->dz (not allocated then): the forward product writes
 * z_h (its fp32 accumulator rounded once), which the normalisation reads in
 * forward and backward alike, so both see one z; the normalisation's
 * backward writes dz_h, rounded once from its fp32 value, which is what
 * the dx and dW products take as their operand anyway. Statistics (mean,
 * rstd) and the column sums stay fp32, and the team path sums db from the
 * fp32 dz before rounding. Halving these caches halves the traffic of the
 * normalisation kernels and the block's activation memory (z and dz: 4
 * bytes a value each in fp32, 2 here; x_h adds 2 bytes per input value). */
typedef struct fn_block_ws {
    float *partials;          /* [chunks, 3, out]: column partial sums (block_cuda.cu) */
    int *tickets;             /* [out]: the column tiles' arrival counts, 0 between launches
                               * (reduce_cuda.cuh, block_arrived_last) */
    float *dzt, *dzt_small;   /* [out, max_batch]: dz^T (tf32, tf32x3), its remainder (tf32x3) */
    float *xt, *xt_small;     /* [in, max_batch]: x^T (tf32, tf32x3), its remainder (tf32x3) */
    float *x_big, *x_small;   /* [max_batch, in] (tf32x3) */
    float *w_big, *w_small;   /* [out, in] (tf32x3) */
    float *dz_big, *dz_small; /* [max_batch, out] (tf32x3) */
    fn_bf16 *x_h;             /* [max_batch, in] (bf16) */
    fn_bf16 *w_h;             /* [out, in] (bf16) */
    fn_bf16 *z_h;             /* [max_batch, out] (bf16): x W^T without bias */
    fn_bf16 *dz_h;            /* [max_batch, out] (bf16) */
} fn_block_ws;

/* Fills ws from base (NULL: sizes only) and returns the floats it spans. */
size_t fn_block_ws_layout(const fn_block *b, float *base, fn_block_ws *ws);
/* The floats of that span holding w_h, padding included (0 but in bf16). */
size_t fn_block_ws_weight_floats(const fn_block *b);

/* Sets the column tiles' tickets of the workspace to 0, on the context's
 * stream: a workspace the block did not allocate (block_memory.h) holds
 * whatever its owner left there. */
fn_status fn_block_cuda_clear_tickets(fn_block *b);

/* b->z [N, out] = x W^T, without the bias (a forward-only block: the
 * batch-invariant product of core/infer_product_cuda.h, w rounded as it is
 * read; else in tf32x3 after splitting x and w into the workspace, in
 * bf16 after rounding x there and, unless its copy is kept, w; backward
 * finds them; in bf16 into z_h instead of b->z).
 * In bf16, x without data: x_h holds the input already (layer.h,
 * bf16_input), x gives only its rows. */
fn_status fn_block_cuda_forward_product(fn_block *b, const fn_tensor *x /* [N, in] */);

/* The products of backward after the normalisation's, from b->dz (dz_h in
 * bf16) and the last forward's x (x_h): dx = dz W (when dx is given), then
 * dw_out = beta dw_out + alpha dz^T x (the weight's gradient with alpha 1
 * and its grad_beta, param.h; or the weight itself with alpha = -lr and
 * beta 1, after dx has read it). beta 0 never reads dw_out. dw_out is
 * float, or bfloat16 when dw_bf16 (bf16 mode only: the weight's
 * grad_bf16, param.h; C and D of the product in bfloat16, the sum in fp32
 * rounded once). */
fn_status fn_block_cuda_backward_products(fn_block *b, fn_tensor *dx /* [N, in] or NULL */,
                                          void *dw_out /* [out, in] */, int dw_bf16, float alpha,
                                          float beta);

#ifdef __cplusplus
}
#endif
#endif
