/* cuda_absent_huber.c — the Huber loss's calls into kernels/nn/losses/huber/huber_cuda.cu
 * in a build without CUDA (core/cuda_absent.h): each fails naming the
 * build option. */
#include "core/cuda_absent.h"
#include "nn/losses/huber/huber.h"

fn_status fn_cuda_huber_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                             float delta, fn_tensor *loss, fn_tensor *dpred)
{
    (void)ctx, (void)pred, (void)target, (void)delta, (void)loss, (void)dpred;
    return fn_cuda_absent("the huber loss on the GPU");
}

fn_status fn_cuda_huber_partials(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                                 float delta, fn_tensor *dpred, fn_loss_partials *p)
{
    (void)ctx, (void)pred, (void)target, (void)delta, (void)dpred, (void)p;
    return fn_cuda_absent("the huber loss on the GPU");
}
