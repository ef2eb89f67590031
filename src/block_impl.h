/* block_impl.h (private) — the fused block's state, shared by its common code
 * (src/block.c), its CPU ops (src/block_cpu.c) and its CUDA ops
 * (kernels/block_cuda.cu). */
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
    fn_tensor z;       /* x W^T, without the bias: [max_batch, out] */
    fn_tensor mean;    /* per (sample, group) mean of z + b: [max_batch, groups] */
    fn_tensor rstd;    /* per (sample, group) 1/sqrt(var + eps): [max_batch, groups] */
    fn_tensor dz;      /* d loss / dz: [max_batch, out] */
    fn_tensor scratch; /* the backend's own workspace; unused on the CPU */
    int batch;         /* rows of the last forward; 0 before any */
} fn_block;

extern const fn_layer_ops fn_block_cpu_ops;
extern const fn_layer_ops fn_block_cuda_ops;

/* kernels/block_cuda.cu: sizes and allocates b->scratch at creation. */
fn_status fn_block_cuda_setup(fn_block *b);

/* Frees everything fn_block_create allocated, then the struct. */
void fn_block_release(fn_block *b);

#ifdef __cplusplus
}
#endif
#endif
