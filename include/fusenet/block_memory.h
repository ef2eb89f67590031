/* block_memory.h — the fused block (block.h) run on memory its caller owns:
 * the input, the parameters, the output, the caches forward leaves for
 * backward and the gradients are the caller's arrays (a binding's tensors),
 * and no layer is made: nothing is allocated and nothing is copied. The
 * arithmetic is the block layer's own (its backend's forward and backward),
 * so the values are those of a block of the same parameters.
 *
 * Only the CPU backend is reached this way: a context on a GPU is refused
 * with FN_ERR_INVALID naming the call. */
#ifndef FUSENET_BLOCK_MEMORY_H
#define FUSENET_BLOCK_MEMORY_H

#include "fusenet/block.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The arrays of one batch of `rows` rows, row-major float32 on the
 * context's device. x, weight, bias, gamma and beta are read only. */
typedef struct fn_block_memory {
    const float *x;      /* [rows, in] */
    const float *weight; /* [out, in] */
    const float *bias;   /* [out] */
    const float *gamma;  /* [out] */
    const float *beta;   /* [out] */
    float *z;            /* [rows, out]: x W^T without the bias; forward writes it */
    float *mean;         /* [rows, groups]: of z + b; forward writes it */
    float *rstd;         /* [rows, groups]: 1/sqrt(var + eps); forward writes it */
} fn_block_memory;

/* y [rows, out] = 2 leaky_relu(group_norm(x W^T + b)), leaving z, mean and
 * rstd for backward. cfg->forward_only is ignored. */
fn_status fn_block_memory_forward(fn_context *ctx, const fn_block_config *cfg, int rows,
                                  const fn_block_memory *m, float *y);

/* From dy [rows, out] and what forward left in m (unchanged since):
 * dz [rows, out] (the caller's workspace, overwritten), dx [rows, in]
 * assigned (NULL: not computed), and the parameter gradients dweight
 * [out, in], dbias, dgamma, dbeta [out] ACCUMULATED (+=), as a layer's
 * backward does (layer.h). */
fn_status fn_block_memory_backward(fn_context *ctx, const fn_block_config *cfg, int rows,
                                   const fn_block_memory *m, const float *dy, float *dz, float *dx,
                                   float *dweight, float *dbias, float *dgamma, float *dbeta);

#ifdef __cplusplus
}
#endif
#endif
