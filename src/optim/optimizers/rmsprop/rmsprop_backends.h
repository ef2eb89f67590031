/* rmsprop_backends.h (private) — RMSprop's two backends,
 * optim/optimizers/rmsprop/rmsprop_cpu.c and kernels/optim/optimizers/rmsprop/rmsprop_cuda.cu, as static const tables
 * that optim/optimizers/rmsprop/rmsprop.c picks by device, and the scalars of one step that
 * rmsprop.c computes for both, so they do the same float arithmetic. */
#ifndef FUSENET_OPTIM_RMSPROP_BACKENDS_H
#define FUSENET_OPTIM_RMSPROP_BACKENDS_H

#include "fusenet/rmsprop.h"
#include "optim/multi_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A step's scalars, each rounded to float once from double. */
typedef struct fn_rmsprop_step {
    float l2;              /* weight_decay added to the gradient; 0: none */
    float alpha;
    float one_minus_alpha; /* v's weight of g * g, and a = lerp(a, g, one_minus_alpha) */
    float eps;
    float momentum;        /* used when has_momentum */
    float neg_lr;          /* -lr */
    int has_momentum;      /* momentum > 0: the momentum_buffer is kept */
    int centered;          /* the grad_avg is kept */
} fn_rmsprop_step;

typedef struct fn_rmsprop_backend {
    fn_device device;
    /* One tensor's update in one pass; optim/optimizers/rmsprop/rmsprop.c validated the
     * arguments (momentum_buffer, grad_avg NULL unless the step keeps them). */
    fn_status (*update)(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                        fn_tensor *square_avg, fn_tensor *momentum_buffer, fn_tensor *grad_avg,
                        const fn_rmsprop_step *s);
    /* Optional (the GPU's): every parameter in one launch: mt holds value,
     * grad, square_avg as state1 and momentum_buffer as state2 (or NULL),
     * and the step's fn_rmsprop_step on the device; averages (NULL unless
     * centered) holds grad_avg as state1, entry for entry. Nothing done
     * while *skip (device; NULL: never) is non-zero; each element's
     * arithmetic is update's. */
    fn_status (*update_all)(const fn_multi_tensor *mt, const fn_multi_tensor *averages,
                            const int *skip);
} fn_rmsprop_backend;

extern const fn_rmsprop_backend fn_rmsprop_cpu_backend;  /* optim/optimizers/rmsprop/rmsprop_cpu.c */
extern const fn_rmsprop_backend fn_rmsprop_cuda_backend; /* kernels/optim/optimizers/rmsprop/rmsprop_cuda.cu */

#ifdef __cplusplus
}
#endif
#endif
