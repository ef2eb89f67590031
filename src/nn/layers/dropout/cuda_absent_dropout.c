/* cuda_absent_dropout.c — the dropout layer's calls into
 * kernels/nn/layers/dropout/ in a build without CUDA (core/cuda_absent.h):
 * answered only for completeness (no context is a GPU's in such a build);
 * each fails naming the build option. */
#include "nn/cuda_absent_layer.h"
#include "nn/layers/dropout/dropout_impl.h"

/* What the host half allocated is freed as on the CPU. */
static void destroy_dropout(fn_layer *l) { fn_dropout_cpu_ops.destroy(l); }

const fn_layer_ops fn_dropout_cuda_ops = {
    .kind = "dropout", .forward = fn_layer_absent_forward,
    .backward = fn_layer_absent_backward,
    .destroy = destroy_dropout,
};
