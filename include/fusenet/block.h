/* block.h — the fused block y = 2 * leaky_relu(group_norm(x W^T + b)).
 *
 * Per sample n and group g of K = out/groups contiguous channels:
 *   z = x W^T + b;  mu, var over the K channels of g (biased);
 *   zhat = (z - mu) / sqrt(var + eps);  u = gamma_c zhat + beta_c;
 *   y = 2 * (u > 0 ? u : slope * u).
 * Parameters, as PyTorch names them: weight [out, in], bias, gamma, beta [out].
 * With residual set (in == out), the input is added to the output:
 *   y = x + 2 * leaky_relu(group_norm(x W^T + b)),  dx = dy + dz W,
 * the skip folded into the same kernels (forward adds x as it writes y;
 * backward's normalisation pass copies dy into dx, onto which the dx
 * product adds).
 * CPU code: src/nn/layers/block/block_cpu.c; CUDA code: kernels/nn/layers/block/block_cuda.cu. As layer
 * kinds, "block N" and "residual N": a block of width N with [model]
 * groups, eps and negative_slope, which its weights-file group records. */
#ifndef FUSENET_BLOCK_H
#define FUSENET_BLOCK_H

#include "fusenet/api.h"

#include "fusenet/init.h"
#include "fusenet/layer.h"
#include "fusenet/layer_kind.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_block_config {
    int in_features, out_features;
    int groups;           /* divides out_features */
    float eps;            /* > 0; PyTorch's default 1e-5 */
    float negative_slope; /* >= 0; PyTorch's default 0.01 */
    int forward_only;     /* 1: no gradients and no dz cache; backward is an error */
    int residual;         /* 1: y = x + block(x); in_features must equal out_features */
} fn_block_config;

/* [model] groups = auto: the largest number of groups up to 8 that
 * divides `width` and leaves each group at least 2 channels (8 for 64, 6
 * for 30, 5 for 100, 4 for 8, 3 for 6, 1 for 7 or another prime); 1
 * when none does. */
FN_API int fn_block_auto_groups(int width);

/* PyTorch's defaults for the given sizes. */
FN_API fn_block_config fn_block_config_default(int in_features, int out_features, int groups);

/* Creates a block for batches of up to max_batch rows, initialised as
 * PyTorch does: weight, bias ~ U(-1/sqrt(in), 1/sqrt(in)) drawn from rng
 * (weight first, then bias), gamma = 1, beta = 0. */
FN_API fn_status fn_block_create(fn_layer **layer, fn_context *ctx, const fn_block_config *cfg,
                                 int max_batch, fn_rng *rng);

/* The configuration of a block layer; FN_ERR_INVALID if l is not a block. */
FN_API fn_status fn_block_get_config(const fn_layer *l, fn_block_config *cfg);

/* The bytes a block allocated besides its parameters and gradients: its
 * caches at max_batch and its backend's workspace, less the bfloat16 copy
 * of its weight in bf16 mode (fn_block_weight_copy_bytes); 0 for another
 * layer. */
FN_API size_t fn_block_buffer_bytes(const fn_layer *l);
/* The bytes of that copy (bf16 mode on the GPU; else 0). */
FN_API size_t fn_block_weight_copy_bytes(const fn_layer *l);

/* Their entries in the registry of layer kinds: the block, and the block
 * with its identity skip (residual_kind.c). */
FN_API extern const fn_layer_kind fn_block_kind;
FN_API extern const fn_layer_kind fn_residual_kind;

#ifdef __cplusplus
}
#endif
#endif
