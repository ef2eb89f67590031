/* cuda_absent_dist.c — the data-parallel room's call into kernels/ in a
 * build without CUDA (core/cuda_absent.h): the loss gradient's scaling on
 * the GPU, which needs a GPU's context first; it fails naming the build
 * option. */
#include "core/cuda_absent.h"
#include "dist/comm_impl.h"

fn_status fn_comm_scale_cuda(fn_context *ctx, fn_tensor *t, float factor)
{
    (void)ctx, (void)t, (void)factor;
    return fn_cuda_absent("a GPU gradient's scaling");
}
