/* sgd_backends.h (private) — SGD's two backends, optim/sgd_cpu.c and
 * kernels/sgd_cuda.cu, as static const tables that optim/sgd.c picks by
 * device: the optimiser once when it is created, fn_sgd_update per call. */
#ifndef FUSENET_OPTIM_SGD_BACKENDS_H
#define FUSENET_OPTIM_SGD_BACKENDS_H

#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "fusenet/sgd_fused.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_sgd_backend {
    fn_device device;
    /* One tensor's update; optim/sgd.c validated the arguments. */
    fn_status (*update)(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                        fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step);
    /* Optional: backward with the plain step (momentum and weight decay 0)
     * folded in, where that saves work: fn_sgd_fused_backward on the GPU.
     * NULL on the CPU, where the separate update costs no more. */
    fn_status (*backward_plain)(fn_net *net, const fn_tensor *dy, float lr);
} fn_sgd_backend;

extern const fn_sgd_backend fn_sgd_cpu_backend;  /* optim/sgd_cpu.c */
extern const fn_sgd_backend fn_sgd_cuda_backend; /* kernels/sgd_cuda.cu */

#ifdef __cplusplus
}
#endif
#endif
