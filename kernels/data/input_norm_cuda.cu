/* input_norm_cuda.cu — input standardisation on the GPU (input_norm.h):
 * x = (x - mean[j]) / std[j], elementwise over a batch in place. The
 * subtraction and the division are each rounded on their own (__fsub_rn,
 * __fdiv_rn: IEEE, never fused or approximated), as the CPU path of
 * data/input_norm.c and PyTorch compute them, so all three give the same
 * bits. */
#include "core/cuda_check.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"
#include "data/input_norm_impl.h"

static constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
input_norm_kernel(float *x /* [rows, cols] */, const float *mean /* [cols] */,
                  const float *std /* [cols] */, size_t n, int cols)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int j = (int)(i % (size_t)cols);
        x[i] = __fdiv_rn(__fsub_rn(x[i], mean[j]), std[j]);
    }
}

extern "C" fn_status fn_input_norm_apply_cuda(fn_context *ctx, float *x, const float *mean,
                                              const float *std, int rows, int cols)
{
    const size_t n = (size_t)rows * (size_t)cols;
    if (n == 0)
        return FN_OK;
    const size_t blocks = fn_stride_blocks(ctx, n, kThreads);
    fn_launch(ctx, input_norm_kernel, (unsigned)blocks, kThreads, 0, fn_ctx_stream(ctx), x, mean,
              std, n, cols);
    FN_CUDA_CHECK_LAUNCH(input_norm_kernel);
    return FN_OK;
}
