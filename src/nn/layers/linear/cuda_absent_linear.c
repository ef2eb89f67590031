/* cuda_absent_linear.c — the linear layer's calls into
 * kernels/nn/layers/linear/ in a build without CUDA (core/cuda_absent.h):
 * answered only for completeness (no context is a GPU's in such a build);
 * each fails naming the build option. */
#include "core/cuda_absent.h"
#include "nn/layers/linear/linear_impl.h"

static fn_status absent_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    (void)l, (void)x, (void)y;
    return fn_cuda_absent("a layer's forward on the GPU");
}

static fn_status absent_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    (void)l, (void)dy, (void)dx;
    return fn_cuda_absent("a layer's backward on the GPU");
}

/* What the host half allocated is freed as on the CPU. */
static void destroy_linear(fn_layer *l) { fn_linear_cpu_ops.destroy(l); }

const fn_layer_ops fn_linear_cuda_ops = {
    .kind = "linear", .forward = absent_forward, .backward = absent_backward,
    .destroy = destroy_linear,
};

fn_status fn_linear_cuda_setup(fn_linear *l)
{
    (void)l;
    return fn_cuda_absent("a linear layer on the GPU");
}
