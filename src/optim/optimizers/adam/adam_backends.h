/* adam_backends.h (private) — Adam's two backends, optim/optimizers/adam/adam_cpu.c and
 * kernels/optim/optimizers/adam/adam_cuda.cu, as static const tables that optim/optimizers/adam/adam.c picks by
 * device, and the scalars of one step that adam.c computes for both, so
 * they do the same float arithmetic. */
#ifndef FUSENET_OPTIM_ADAM_BACKENDS_H
#define FUSENET_OPTIM_ADAM_BACKENDS_H

#include "fusenet/adam.h"
#include "optim/multi_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A step's scalars, each rounded to float once from double. */
typedef struct fn_adam_step {
    float decay;         /* AdamW: 1 - lr * weight_decay; 1: none */
    float l2;            /* Adam: weight_decay added to the gradient; 0: none */
    float lerp_weight;   /* 1 - beta1: m = lerp(m, g, lerp_weight) as torch's lerp_ */
    float beta2;
    float one_minus_beta2;
    float step_size;     /* lr / (1 - beta1^t) */
    float bc2_sqrt;      /* sqrt(1 - beta2^t) */
    float eps;
} fn_adam_step;

typedef struct fn_adam_backend {
    fn_device device;
    /* One tensor's update in one pass; optim/optimizers/adam/adam.c validated the arguments. */
    fn_status (*update)(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                        fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_step *s);
    /* Optional (the GPU's): every parameter of the table (value, grad,
     * exp_avg as state1, exp_avg_sq as state2) in one launch, the step's
     * fn_adam_step read from the table's scalars on the device, nothing
     * done while *skip (device; NULL: never) is non-zero; each element's
     * arithmetic is update's. */
    fn_status (*update_all)(const fn_multi_tensor *mt, const int *skip);
} fn_adam_backend;

extern const fn_adam_backend fn_adam_cpu_backend;  /* optim/optimizers/adam/adam_cpu.c */
extern const fn_adam_backend fn_adam_cuda_backend; /* kernels/optim/optimizers/adam/adam_cuda.cu */

#ifdef __cplusplus
}
#endif
#endif
