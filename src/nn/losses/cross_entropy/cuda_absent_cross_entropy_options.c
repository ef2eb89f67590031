/* cuda_absent_cross_entropy_options.c — the weighted and smoothed
 * cross-entropy's calls into kernels/nn/losses/cross_entropy/cross_entropy_options_cuda.cu in a
 * build without CUDA (core/cuda_absent.h): each fails naming the build
 * option. */
#include "core/cuda_absent.h"
#include "nn/losses/cross_entropy/cross_entropy_options.h"

fn_status fn_cuda_cross_entropy_smoothed(fn_context *ctx, const fn_tensor *logits,
                                         const int32_t *labels, const fn_ce_smoothing *s,
                                         fn_tensor *loss, fn_tensor *dlogits)
{
    (void)ctx, (void)logits, (void)labels, (void)s, (void)loss, (void)dlogits;
    return fn_cuda_absent("the cross-entropy's class weights on the GPU");
}

fn_status fn_cuda_cross_entropy_smoothed_partials(fn_context *ctx, const fn_tensor *logits,
                                                  const int32_t *labels, const fn_ce_smoothing *s,
                                                  fn_tensor *dlogits, fn_loss_partials *p)
{
    (void)ctx, (void)logits, (void)labels, (void)s, (void)dlogits, (void)p;
    return fn_cuda_absent("the cross-entropy's class weights on the GPU");
}
