/* cuda_absent_linear.c — the linear layer's calls into
 * kernels/nn/layers/linear/ in a build without CUDA (core/cuda_absent.h):
 * answered only for completeness (no context is a GPU's in such a build);
 * each fails naming the build option. */
#include "core/cuda_absent.h"
#include "nn/cuda_absent_layer.h"
#include "nn/layers/linear/linear_impl.h"

/* What the host half allocated is freed as on the CPU. */
static void destroy_linear(fn_layer *l) { fn_linear_cpu_ops.destroy(l); }

const fn_layer_ops fn_linear_cuda_ops = {
    .kind = "linear", .forward = fn_layer_absent_forward,
    .backward = fn_layer_absent_backward,
    .destroy = destroy_linear,
};

fn_status fn_linear_cuda_setup(fn_linear *l)
{
    (void)l;
    return fn_cuda_absent("a linear layer on the GPU");
}
