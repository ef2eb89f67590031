/* cuda_absent_block.c — the block's (and the residual block's) calls into
 * kernels/nn/layers/block/ in a build without CUDA (core/cuda_absent.h). A
 * layer takes its device from its context, which cannot be a GPU's in such a
 * build, so these answer only for completeness; each fails naming the build
 * option, and what the host half allocated is freed as on the CPU. */
#include "core/cuda_absent.h"
#include "nn/cuda_absent_layer.h"
#include "nn/layers/block/block_impl.h"
#include "nn/layers/block/block_products_cuda.h"

static void destroy_block(fn_layer *l) { fn_block_cpu_ops.destroy(l); }

const fn_layer_ops fn_block_cuda_ops = {
    .kind = "block", .forward = fn_layer_absent_forward,
    .backward = fn_layer_absent_backward,
    .destroy = destroy_block,
};
const fn_layer_ops fn_residual_cuda_ops = {
    .kind = "residual", .forward = fn_layer_absent_forward,
    .backward = fn_layer_absent_backward,
    .destroy = destroy_block,
};

size_t fn_block_ws_layout(const fn_block *b, float *base, fn_block_ws *ws)
{
    (void)b, (void)base;
    *ws = (fn_block_ws){0};
    return 0;
}

fn_status fn_block_cuda_clear_tickets(fn_block *b)
{
    (void)b;
    return fn_cuda_absent("a block on the GPU");
}

fn_status fn_block_cuda_setup(fn_block *b)
{
    (void)b;
    return fn_cuda_absent("a block on the GPU");
}

size_t fn_block_ws_weight_floats(const fn_block *b)
{
    (void)b;
    return 0;
}
