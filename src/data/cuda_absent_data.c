/* cuda_absent_data.c — the data room's call into kernels/ in a
 * build without CUDA (core/cuda_absent.h): input standardisation on the GPU,
 * which needs a GPU's context first; it fails naming the build option. */
#include "core/cuda_absent.h"
#include "data/input_norm_impl.h"

fn_status fn_input_norm_apply_cuda(fn_context *ctx, float *x, const float *mean,
                                   const float *std, int rows, int cols)
{
    (void)ctx, (void)x, (void)mean, (void)std, (void)rows, (void)cols;
    return fn_cuda_absent("input standardisation on the GPU");
}
