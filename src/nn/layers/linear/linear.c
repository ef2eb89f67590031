/* linear.c — the affine layer's device-independent code: creation
 * (parameters initialised as nn.Linear) and release. The arithmetic lives in
 * src/nn/layers/linear/linear_cpu.c and kernels/nn/layers/linear/linear_cuda.cu. */
#include <math.h>
#include <stdlib.h>

#include "nn/layers/linear/linear_impl.h"

static fn_status setup(fn_linear *l, fn_rng *rng)
{
    const fn_device dev = l->base.device;
    const int in = l->base.in_features, out = l->base.out_features;
    fn_param *w = &l->params[FN_LINEAR_WEIGHT], *b = &l->params[FN_LINEAR_BIAS];
    w->name = "weight";
    b->name = "bias";
    w->grad_beta = b->grad_beta = 0.0f; /* backward writes the gradients (param.h) */
    FN_TRY(fn_tensor_alloc(&w->value, out, in, dev));
    FN_TRY(fn_tensor_alloc(&b->value, 1, out, dev));
    if (!l->base.forward_only) {
        FN_TRY(fn_tensor_alloc(&w->grad, out, in, dev));
        FN_TRY(fn_tensor_alloc(&b->grad, 1, out, dev));
    }
    if (dev == FN_CUDA)
        FN_TRY(fn_linear_cuda_setup(l));
    /* nn.Linear's reset_parameters: U(-1/sqrt(in), 1/sqrt(in)), weight first. */
    const float bound = (float)(1.0 / sqrt((double)in));
    FN_TRY(fn_init_uniform(&w->value, -bound, bound, rng));
    return fn_init_uniform(&b->value, -bound, bound, rng);
}

static fn_status check_args(fn_context *ctx, int in_features, int out_features, int max_batch,
                            const fn_rng *rng)
{
    if (!ctx || !rng)
        return fn_fail(FN_ERR_INVALID, "fn_linear_create: %s is NULL", !ctx ? "ctx" : "rng");
    if (in_features < 1 || out_features < 1)
        return fn_fail(FN_ERR_INVALID, "linear: sizes in %d, out %d must be at least 1",
                       in_features, out_features);
    if (max_batch < 1)
        return fn_fail(FN_ERR_INVALID, "linear: max_batch %d must be at least 1", max_batch);
    return FN_OK;
}

fn_status fn_linear_create(fn_layer **layer, fn_context *ctx, int in_features, int out_features,
                           int max_batch, fn_rng *rng)
{
    return fn_linear_create_as(layer, ctx, in_features, out_features, max_batch, rng, 0);
}

fn_status fn_linear_create_as(fn_layer **layer, fn_context *ctx, int in_features,
                              int out_features, int max_batch, fn_rng *rng, int forward_only)
{
    if (!layer)
        return fn_fail(FN_ERR_INVALID, "fn_linear_create: layer is NULL");
    *layer = NULL;
    FN_TRY(check_args(ctx, in_features, out_features, max_batch, rng));
    fn_linear *l = calloc(1, sizeof *l);
    if (!l)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a linear layer");
    const fn_device dev = fn_context_device(ctx);
    l->base = (fn_layer){
        .ops = dev == FN_CUDA ? &fn_linear_cuda_ops : &fn_linear_cpu_ops,
        .ctx = ctx,
        .device = dev,
        .in_features = in_features,
        .out_features = out_features,
        .max_batch = max_batch,
        .forward_only = forward_only != 0,
        .params = l->params,
        .n_params = FN_LINEAR_N_PARAMS,
    };
    fn_status st = setup(l, rng);
    if (st != FN_OK) {
        fn_error_prefix("linear [%d -> %d]: ", in_features, out_features);
        fn_linear_release(l);
        return st;
    }
    *layer = &l->base;
    return FN_OK;
}

/* The backend's workspace (scratch, sized by fn_linear_cuda_setup; empty
 * on the CPU): the layer caches nothing else. */
size_t fn_linear_buffer_bytes(const fn_layer *l)
{
    if (!l || (l->ops != &fn_linear_cpu_ops && l->ops != &fn_linear_cuda_ops))
        return 0;
    return fn_tensor_count(&((const fn_linear *)l)->scratch) * sizeof(float);
}

void fn_linear_release(fn_linear *l)
{
    if (!l)
        return;
    for (int i = 0; i < FN_LINEAR_N_PARAMS; i++) {
        fn_tensor_free(&l->params[i].value);
        fn_tensor_free(&l->params[i].grad);
    }
    fn_tensor_free(&l->scratch);
    free(l);
}
