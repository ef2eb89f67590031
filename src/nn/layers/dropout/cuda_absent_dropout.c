/* cuda_absent_dropout.c — the dropout layer's calls into
 * kernels/nn/layers/dropout/ in a build without CUDA (core/cuda_absent.h):
 * answered only for completeness (no context is a GPU's in such a build);
 * each fails naming the build option. */
#include "core/cuda_absent.h"
#include "nn/layers/dropout/dropout_impl.h"

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
static void destroy_dropout(fn_layer *l) { fn_dropout_cpu_ops.destroy(l); }

const fn_layer_ops fn_dropout_cuda_ops = {
    .kind = "dropout", .forward = absent_forward, .backward = absent_backward,
    .destroy = destroy_dropout,
};
