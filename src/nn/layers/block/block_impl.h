/* block_impl.h (private) — the fused block's state, shared by its common code
 * (src/nn/layers/block/block.c), its CPU ops (src/nn/layers/block/block_cpu.c) and its CUDA ops
 * (kernels/nn/layers/block/block_cuda.cu). */
#ifndef FUSENET_SRC_BLOCK_IMPL_H
#define FUSENET_SRC_BLOCK_IMPL_H

#include "fusenet/block.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FN_BLOCK_WEIGHT, FN_BLOCK_BIAS, FN_BLOCK_GAMMA, FN_BLOCK_BETA, FN_BLOCK_N_PARAMS };

typedef struct fn_block {
    fn_layer base;                      /* first member */
    fn_block_config cfg;
    fn_param params[FN_BLOCK_N_PARAMS]; /* weight [out, in], bias, gamma, beta [1, out] */
    fn_tensor x;       /* the last forward's input, borrowed: [batch, in] */
    fn_tensor z;       /* x W^T, without the bias: [max_batch, out]; empty in bf16
                        * mode on the GPU (bfloat16 in scratch instead) */
    fn_tensor mean;    /* per (sample, group) mean of z + b: [max_batch, groups] */
    fn_tensor rstd;    /* per (sample, group) 1/sqrt(var + eps): [max_batch, groups] */
    fn_tensor dz;      /* d loss / dz: [max_batch, out]; as z in bf16 mode */
    fn_tensor scratch; /* the backend's own workspace; unused on the CPU */
} fn_block;

extern const fn_layer_ops fn_block_cpu_ops;
extern const fn_layer_ops fn_block_cuda_ops;
/* The same functions under the kind "residual" (cfg.residual set). */
extern const fn_layer_ops fn_residual_cpu_ops;
extern const fn_layer_ops fn_residual_cuda_ops;

/* Whether l is a block, with or without its skip, on either device. */
int fn_is_block(const fn_layer *l);

/* kernels/nn/layers/block/block_cuda.cu: sizes and allocates b->scratch at creation (in
 * tf32x3 it also holds the TF32 splits of x and w that forward makes and
 * backward reuses, so backward uses the weight of the forward). */
fn_status fn_block_cuda_setup(fn_block *b);

/* kernels/nn/layers/block/block_cuda.cu: the fused kernels alone, as forward and backward
 * run them (bench times them). normalize_forward: y [n, out] from b->z
 * (x W^T without bias), writing b->mean and b->rstd. normalize_backward:
 * b->dz from dy [n, out] and the caches of the last forward, with dgamma,
 * dbeta and dbias added to the gradients. */
fn_status fn_block_cuda_normalize_forward(fn_block *b, float *y, int n);
fn_status fn_block_cuda_normalize_backward(fn_block *b, const float *dy, int n);

/* The block's backward_sgd hook (layer.h), called on a block alone (bench,
 * tests): fn_layer_backward_sgd once l is known to be a block on the GPU.
 * The weight's update is the dW product itself (W += -lr dz^T x, cuBLAS
 * beta = 1), which saves writing dW and the update's pass over W, dW;
 * bias, gamma, beta get bit for bit what backward from zeroed gradients and
 * fn_sgd_update give, the weight the same up to rounding (one fused
 * accumulation instead of a product and a subtraction). FN_ERR_INVALID on
 * the CPU, for a layer that is not a block, before a forward, or for bad
 * shapes or lr. */
fn_status fn_block_backward_sgd(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, float lr);

/* The block kind's hooks (block_kind.c, layer_kind.h), which the residual
 * kind (residual_kind.c) shares: its attributes groups, eps and
 * negative_slope, their reading and writing, the check of groups against
 * the width, the floats a layer takes, and the block configuration of an
 * item. */
enum { FN_BLOCK_KIND_N_ATTRS = 3 };
extern const fn_layer_attr fn_block_kind_attrs[FN_BLOCK_KIND_N_ATTRS];
fn_status fn_block_kind_check(const fn_layer_spec *spec, const fn_layer_hparams *hp);
fn_status fn_block_kind_get_attrs(const fn_layer *l, fn_layer_attr_value *values);
fn_status fn_block_kind_set_attrs(const fn_layer_attr_value *values, int in_features,
                                  int out_features, fn_layer_hparams *hp);
double fn_block_kind_param_floats(int in_features, const fn_layer_spec *spec);
/* weight, bias, gamma, beta: the block's parameters (block.c), for the
 * kinds' param_names. */
extern const char *const fn_block_kind_param_names[];
double fn_block_kind_row_floats(const fn_layer_spec *spec, const fn_layer_hparams *hp);
fn_block_config fn_block_kind_config(int in_features, const fn_layer_spec *spec,
                                     const fn_layer_hparams *hp);

/* Frees everything fn_block_create allocated, then the struct. */
void fn_block_release(fn_block *b);

#ifdef __cplusplus
}
#endif
#endif
