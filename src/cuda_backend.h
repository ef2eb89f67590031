/* cuda_backend.h (private) — every function of kernels/ that host C calls.
 * All are `extern "C"`, return fn_status, and report failures with the CUDA,
 * cuBLAS or cuRAND message and the file:line of the failing call. */
#ifndef FUSENET_SRC_CUDA_BACKEND_H
#define FUSENET_SRC_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/layer.h"
#include "fusenet/sgd.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kernels/context_cuda.cu */
int fn_cuda_count_devices(void);
fn_status fn_cuda_context_init(fn_context *ctx, int gpu);
void fn_cuda_context_release(fn_context *ctx);
fn_status fn_cuda_context_sync(fn_context *ctx);

/* kernels/memory_cuda.cu: plain device memory (cudaMalloc), synchronous copies */
fn_status fn_cuda_alloc(void **ptr, size_t bytes);
void fn_cuda_free(void *ptr);
fn_status fn_cuda_memset_zero(void *ptr, size_t bytes);
fn_status fn_cuda_copy(void *dst, fn_device dst_device, const void *src, fn_device src_device,
                       size_t bytes);

/* kernels/init_cuda.cu: Philox uniforms on the GPU, same numbers as the host API */
fn_status fn_cuda_init_uniform(float *out, size_t n, float lo, float hi, uint64_t seed,
                               uint64_t offset);
fn_status fn_cuda_fill(float *out, size_t n, float value);

/* kernels/loss_cuda.cu */
fn_status fn_cuda_mse_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                           fn_tensor *loss, fn_tensor *dpred);
fn_status fn_cuda_cross_entropy_loss(fn_context *ctx, const fn_tensor *logits,
                                     const int32_t *labels, fn_tensor *loss, fn_tensor *dlogits);
fn_status fn_cuda_count_correct(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                                int *correct);

/* kernels/sgd_cuda.cu */
fn_status fn_cuda_sgd_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                             fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step);

#ifdef __cplusplus
}
#endif
#endif
