/* cuda_absent_bce.c — binary cross-entropy's calls into
 * kernels/nn/losses/bce/bce_cuda.cu in a build without CUDA (core/cuda_absent.h): each
 * fails naming the build option. */
#include "core/cuda_absent.h"
#include "nn/losses/bce/bce.h"

fn_status fn_cuda_bce_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                           const float *pos_weight, fn_tensor *loss, fn_tensor *dpred,
                           int *correct)
{
    (void)ctx, (void)pred, (void)target, (void)pos_weight, (void)loss, (void)dpred, (void)correct;
    return fn_cuda_absent("the bce_with_logits loss on the GPU");
}

fn_status fn_cuda_bce_partials(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                               const float *pos_weight, fn_tensor *dpred, fn_loss_partials *p)
{
    (void)ctx, (void)pred, (void)target, (void)pos_weight, (void)dpred, (void)p;
    return fn_cuda_absent("the bce_with_logits loss on the GPU");
}
