/* linear_impl.h (private) — the linear layer's state, shared by src/nn/layers/linear/linear.c,
 * src/nn/layers/linear/linear_cpu.c and kernels/nn/layers/linear/linear_cuda.cu. */
#ifndef FUSENET_SRC_LINEAR_IMPL_H
#define FUSENET_SRC_LINEAR_IMPL_H

#include "fusenet/linear.h"
#include "nn/layer_parts.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FN_LINEAR_WEIGHT, FN_LINEAR_BIAS, FN_LINEAR_N_PARAMS };

typedef struct fn_linear {
    fn_layer base;                       /* first member */
    fn_param params[FN_LINEAR_N_PARAMS]; /* weight [out, in], bias [1, out] */
    fn_tensor x;       /* the last forward's input, borrowed: [batch, in] */
    fn_tensor scratch; /* the backend's own workspace; unused on the CPU */
} fn_linear;

extern const fn_layer_ops fn_linear_cpu_ops;
extern const fn_layer_ops fn_linear_cuda_ops;

fn_status fn_linear_cuda_setup(fn_linear *l);
void fn_linear_release(fn_linear *l);

#ifdef __cplusplus
}
#endif
#endif
