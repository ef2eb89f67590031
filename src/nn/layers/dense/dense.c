/* dense.c — the dense layer's device-independent code (dense.h): creation
 * (a linear layer inside, whose parameters are the layer's), the forward
 * and backward passes around it, and release. The element-wise activation
 * and its derivative are the device's (dense_cpu.c, kernels/nn/layers/dense/dense_cuda.cu). */
#include <stdlib.h>

#include "nn/layer_parts.h"
#include "nn/layers/dense/dense_impl.h"

static const char *const names[FN_ACTIVATION_COUNT] = {
    [FN_ACTIVATION_RELU] = "relu",
    [FN_ACTIVATION_GELU] = "gelu",
};

static const fn_dense_backend *backend_of(const fn_layer *l)
{
    return l->device == FN_CUDA ? &fn_dense_cuda_backend : &fn_dense_cpu_backend;
}

/* The first rows of t [max_batch, cols]. */
static fn_tensor rows_of(const fn_tensor *t, int rows)
{
    return (fn_tensor){.data = t->data, .rows = rows, .cols = t->cols, .device = t->device};
}

/* z = x W^T + b, then y = f(z); forward only, z is y itself. */
static fn_status dense_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_dense *d = (fn_dense *)l;
    fn_tensor z = l->forward_only ? *y : rows_of(&d->z, x->rows);
    FN_TRY(fn_layer_forward(d->linear, x, &z));
    return backend_of(l)->activate(l->ctx, d->act, y->data, z.data,
                                   (size_t)x->rows * (size_t)l->out_features);
}

/* dz = dy f'(z), then the linear layer's backward from dz. */
static fn_status dense_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_dense *d = (fn_dense *)l;
    fn_tensor dz = rows_of(&d->dz, l->batch);
    FN_TRY(backend_of(l)->derive(l->ctx, d->act, dz.data, dy->data, d->z.data,
                                 (size_t)l->batch * (size_t)l->out_features));
    return fn_layer_backward(d->linear, &dz, dx);
}

static void release(fn_dense *d)
{
    if (!d)
        return;
    fn_layer_destroy(d->linear);
    fn_tensor_free(&d->z);
    fn_tensor_free(&d->dz);
    free(d);
}

static void dense_destroy(fn_layer *l) { release((fn_dense *)l); }

#define DENSE_OPS(act)                                                                     \
    [act] = {.kind = names[act], .forward = dense_forward, .backward = dense_backward, \
             .destroy = dense_destroy}

const fn_layer_ops fn_dense_cpu_ops[FN_ACTIVATION_COUNT] = {
    DENSE_OPS(FN_ACTIVATION_RELU),
    DENSE_OPS(FN_ACTIVATION_GELU),
};
const fn_layer_ops fn_dense_cuda_ops[FN_ACTIVATION_COUNT] = {
    DENSE_OPS(FN_ACTIVATION_RELU),
    DENSE_OPS(FN_ACTIVATION_GELU),
};

static int is_dense(const fn_layer *l)
{
    for (int a = 0; l && a < FN_ACTIVATION_COUNT; a++)
        if (l->ops == &fn_dense_cpu_ops[a] || l->ops == &fn_dense_cuda_ops[a])
            return 1;
    return 0;
}

static fn_status setup(fn_dense *d, int max_batch, fn_rng *rng)
{
    fn_layer *l = &d->base;
    FN_TRY(fn_linear_create_as(&d->linear, l->ctx, l->in_features, l->out_features, max_batch, rng,
                               l->forward_only));
    l->params = d->linear->params;
    l->n_params = d->linear->n_params;
    if (l->forward_only)
        return FN_OK;
    FN_TRY(fn_tensor_alloc(&d->z, max_batch, l->out_features, l->device));
    return fn_tensor_alloc(&d->dz, max_batch, l->out_features, l->device);
}

fn_status fn_dense_create(fn_layer **layer, fn_context *ctx, fn_activation act, int in_features,
                          int out_features, int max_batch, fn_rng *rng, int forward_only)
{
    if (!layer)
        return fn_fail(FN_ERR_INVALID, "fn_dense_create: layer is NULL");
    *layer = NULL;
    if (!ctx || !rng)
        return fn_fail(FN_ERR_INVALID, "fn_dense_create: %s is NULL", !ctx ? "ctx" : "rng");
    if ((int)act < 0 || act >= FN_ACTIVATION_COUNT)
        return fn_fail(FN_ERR_INVALID, "fn_dense_create: activation %d is not one of the %d",
                       (int)act, FN_ACTIVATION_COUNT);
    fn_dense *d = calloc(1, sizeof *d);
    if (!d)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a %s layer", names[act]);
    const fn_device dev = fn_context_device(ctx);
    d->act = act;
    d->base = (fn_layer){
        .ops = dev == FN_CUDA ? &fn_dense_cuda_ops[act] : &fn_dense_cpu_ops[act],
        .ctx = ctx,
        .device = dev,
        .in_features = in_features,
        .out_features = out_features,
        .max_batch = max_batch,
        .forward_only = forward_only != 0,
    };
    fn_status st = setup(d, max_batch, rng);
    if (st != FN_OK) {
        fn_error_prefix("%s [%d -> %d]: ", names[act], in_features, out_features);
        release(d);
        return st;
    }
    *layer = &d->base;
    return FN_OK;
}

size_t fn_dense_buffer_bytes(const fn_layer *l)
{
    if (!is_dense(l))
        return 0;
    const fn_dense *d = (const fn_dense *)l;
    return (fn_tensor_count(&d->z) + fn_tensor_count(&d->dz)) * sizeof(float) +
           fn_linear_buffer_bytes(d->linear);
}
