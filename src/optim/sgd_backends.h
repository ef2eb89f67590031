/* sgd_backends.h (private) — one tensor's SGD update, in optim/sgd_cpu.c and
 * kernels/sgd_cuda.cu, that optim/sgd.c dispatches to once it has validated
 * the arguments. */
#ifndef FUSENET_OPTIM_SGD_BACKENDS_H
#define FUSENET_OPTIM_SGD_BACKENDS_H

#include "fusenet/sgd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* optim/sgd_cpu.c */
fn_status fn_cpu_sgd_update(fn_tensor *value, const fn_tensor *grad, fn_tensor *momentum_buf,
                            const fn_sgd_config *cfg, int first_step);


/* kernels/sgd_cuda.cu */
fn_status fn_cuda_sgd_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step);

#ifdef __cplusplus
}
#endif
#endif
