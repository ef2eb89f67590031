/* block_memory.h — the fused block (block.h) run on memory its caller owns:
 * the input, the parameters, the output, the caches forward leaves for
 * backward and the gradients are the caller's arrays (a binding's tensors),
 * and no layer is made: nothing is allocated and nothing is copied. The
 * arithmetic is the block layer's own (its backend's forward and backward),
 * so the values are those of a block of the same parameters.
 *
 * On a GPU context every array is device memory of the context's GPU and
 * the work is queued on the context's stream (fn_context_use_stream puts it
 * on a caller's, e.g. PyTorch's current stream); forward also leaves in
 * `scratch` what the math mode keeps for backward (bf16 copies of x, W, z;
 * tf32's transposes), sized by fn_block_memory_scratch_floats. In bf16 z
 * and dz live there, as bfloat16, and the float z and dz are not used. */
#ifndef FUSENET_BLOCK_MEMORY_H
#define FUSENET_BLOCK_MEMORY_H

#include "fusenet/api.h"

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
    /* GPU: [fn_block_memory_scratch_floats] the backend's workspace, which
     * forward writes and backward reads; unused (may be NULL) on the CPU. */
    float *scratch;
} fn_block_memory;

/* The floats of fn_block_memory.scratch for `rows` rows on ctx (0 on the
 * CPU); 0 with a message for bad sizes. */
FN_API size_t fn_block_memory_scratch_floats(fn_context *ctx, const fn_block_config *cfg, int rows);

/* y [rows, out] = 2 leaky_relu(group_norm(x W^T + b)), leaving z, mean and
 * rstd for backward. cfg->forward_only is ignored. */
FN_API fn_status fn_block_memory_forward(fn_context *ctx, const fn_block_config *cfg, int rows,
                                         const fn_block_memory *m, float *y);

/* From dy [rows, out] and what forward left in m (unchanged since):
 * dz [rows, out] (the caller's workspace, overwritten), dx [rows, in]
 * assigned (NULL: not computed), and the parameter gradients dweight
 * [out, in], dbias, dgamma, dbeta [out] assigned too, as a layer's
 * backward assigns a gradient whose grad_beta is 0 (param.h): their old
 * contents are never read, so they need no zeroing. */
FN_API fn_status fn_block_memory_backward(fn_context *ctx, const fn_block_config *cfg, int rows,
                                          const fn_block_memory *m, const float *dy, float *dz, float *dx,
                                          float *dweight, float *dbias, float *dgamma, float *dbeta);

#ifdef __cplusplus
}
#endif
#endif
