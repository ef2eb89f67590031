/* dense_impl.h (private) — the dense layer's state (dense.h), shared by
 * src/nn/layers/dense/dense.c (creation and the passes), src/nn/layers/dense/dense_cpu.c and
 * kernels/nn/layers/dense/dense_cuda.cu (the activation and its derivative). */
#ifndef FUSENET_SRC_DENSE_IMPL_H
#define FUSENET_SRC_DENSE_IMPL_H

#include "fusenet/dense.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_dense {
    fn_layer base;    /* first member; its params are the linear layer's */
    fn_activation act;
    fn_layer *linear; /* z = x W^T + b, a linear layer (linear.h) of the same sizes */
    fn_tensor z;      /* [max_batch, out]: the activation's input; empty forward only */
    fn_tensor dz;     /* [max_batch, out]: d loss / dz; empty forward only */
} fn_dense;

/* The element-wise halves, one per device (dense_cpu.c, dense_cuda.cu):
 * y = f(z) (y may be z), and dz = dy f'(z), over n values. */
typedef struct fn_dense_backend {
    fn_status (*activate)(fn_context *ctx, fn_activation act, float *y, const float *z, size_t n);
    fn_status (*derive)(fn_context *ctx, fn_activation act, float *dz, const float *dy,
                        const float *z, size_t n);
} fn_dense_backend;

extern const fn_dense_backend fn_dense_cpu_backend;
extern const fn_dense_backend fn_dense_cuda_backend;

/* The ops tables, [act], one per kind and device (dense.c). */
extern const fn_layer_ops fn_dense_cpu_ops[FN_ACTIVATION_COUNT];
extern const fn_layer_ops fn_dense_cuda_ops[FN_ACTIVATION_COUNT];

#ifdef __cplusplus
}
#endif
#endif
