/* sgd_backends.h (private) — SGD's two backends, optim/optimizers/sgd/sgd_cpu.c and
 * kernels/optim/optimizers/sgd/sgd_cuda.cu, as static const tables that optim/optimizers/sgd/sgd.c picks by
 * device: the optimiser once when it is created, fn_sgd_update per call. */
#ifndef FUSENET_OPTIM_SGD_BACKENDS_H
#define FUSENET_OPTIM_SGD_BACKENDS_H

#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "optim/optimizers/sgd/sgd_fused.h"
#include "optim/multi_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A step's scalars as the multi-tensor update reads them on the device. */
typedef struct fn_sgd_scalars {
    float lr;
    int first_step; /* the momentum buffers start as the gradients */
} fn_sgd_scalars;

typedef struct fn_sgd_backend {
    fn_device device;
    /* One tensor's update; optim/optimizers/sgd/sgd.c validated the arguments. */
    fn_status (*update)(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                        fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step);
    /* Optional: backward with the plain step (momentum and weight decay 0)
     * folded in, where that saves work: fn_sgd_fused_backward on the GPU.
     * NULL on the CPU, where the separate update costs no more. */
    fn_status (*backward_plain)(fn_net *net, const fn_tensor *dy, float lr);
    /* One tensor's step with momentum folded into backward (sgd.c), which
     * left buf = mu buf + g: buf += wd theta (wd > 0), theta -= lr buf;
     * no gradient read. */
    fn_status (*update_folded)(fn_context *ctx, fn_tensor *value, fn_tensor *momentum_buf,
                               const fn_sgd_config *cfg);
    /* Optional: every parameter of the table (value, grad, momentum buffer
     * as state1) in one launch, lr and first_step read from the table's
     * fn_sgd_scalars on the device, nothing done while *skip (device; NULL:
     * never) is non-zero; each element's arithmetic is update's, or
     * update_folded's when folded (the table's gradients then unread). The
     * GPU's. */
    fn_status (*update_all)(const fn_multi_tensor *mt, const fn_sgd_config *cfg, const int *skip,
                            int folded);
    /* Optional, both or neither (the GPU's): momentum buffers kept in
     * bfloat16 (momentum_bf16, sgd.h), n values on the context's stream:
     * out = in widened exactly; out = in rounded to the nearest bfloat16
     * (ties to even), as the table's kernels round a buffer they store. */
    fn_status (*widen_bf16)(fn_context *ctx, float *out, const void *in, size_t n);
    fn_status (*narrow_bf16)(fn_context *ctx, void *out, const float *in, size_t n);
} fn_sgd_backend;

extern const fn_sgd_backend fn_sgd_cpu_backend;  /* optim/optimizers/sgd/sgd_cpu.c */
extern const fn_sgd_backend fn_sgd_cuda_backend; /* kernels/optim/optimizers/sgd/sgd_cuda.cu */

#ifdef __cplusplus
}
#endif
#endif
