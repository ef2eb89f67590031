/* dropout.c — the dropout layer's device-independent code (dropout.h):
 * creation (its probability, scale and threshold, the keys of its masks)
 * and release. The masks are drawn in src/nn/layers/dropout/dropout_cpu.c and
 * kernels/nn/layers/dropout/dropout_cuda.cu. */
#include <math.h>
#include <stdlib.h>

#include "nn/layers/dropout/dropout_impl.h"

static int is_dropout(const fn_layer *l)
{
    return l && (l->ops == &fn_dropout_cpu_ops || l->ops == &fn_dropout_cuda_ops);
}

static fn_status check_args(fn_context *ctx, int features, double p, int max_batch,
                            const fn_rng *rng)
{
    if (!ctx || !rng)
        return fn_fail(FN_ERR_INVALID, "fn_dropout_create: %s is NULL", !ctx ? "ctx" : "rng");
    if (!(p >= 0.0 && p < 1.0))
        return fn_fail(FN_ERR_INVALID, "dropout: probability %g is not in [0, 1)", p);
    if (features < 1 || max_batch < 1)
        return fn_fail(FN_ERR_INVALID, "dropout: features %d and max_batch %d must be at least 1",
                       features, max_batch);
    return FN_OK;
}

fn_status fn_dropout_create(fn_layer **layer, fn_context *ctx, int features, double p,
                            int max_batch, fn_rng *rng, int forward_only)
{
    if (!layer)
        return fn_fail(FN_ERR_INVALID, "fn_dropout_create: layer is NULL");
    *layer = NULL;
    FN_TRY(check_args(ctx, features, p, max_batch, rng));
    fn_dropout *d = calloc(1, sizeof *d);
    if (!d)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a dropout layer");
    const fn_device dev = fn_context_device(ctx);
    d->base = (fn_layer){
        .ops = dev == FN_CUDA ? &fn_dropout_cuda_ops : &fn_dropout_cpu_ops,
        .ctx = ctx,
        .device = dev,
        .in_features = features,
        .out_features = features,
        .max_batch = max_batch,
        .forward_only = forward_only != 0,
    };
    d->p = p;
    d->scale = (float)(1.0 / (1.0 - p));
    d->threshold = (uint32_t)floor(p * 4294967296.0); /* < 2^32 as p < 1 */
    d->seed = rng->seed;
    d->key = rng->offset++;
    if (dev == FN_CUDA) {
        fn_status st = fn_tensor_alloc(&d->pass_dev, 1, 4, dev); /* 16 bytes */
        if (st != FN_OK) {
            fn_error_prefix("dropout [%d]: ", features);
            free(d);
            return st;
        }
    }
    *layer = &d->base;
    return FN_OK;
}

fn_status fn_dropout_get_p(const fn_layer *l, double *p)
{
    if (!is_dropout(l) || !p)
        return fn_fail(FN_ERR_INVALID, "fn_dropout_get_p: %s",
                       !p ? "p is NULL" : "the layer is not a dropout layer");
    *p = ((const fn_dropout *)l)->p;
    return FN_OK;
}

size_t fn_dropout_buffer_bytes(const fn_layer *l)
{
    return is_dropout(l) ? fn_tensor_count(&((const fn_dropout *)l)->pass_dev) * sizeof(float) : 0;
}
