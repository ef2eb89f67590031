/* dropout_cpu.c — dropout on the CPU: each element's keep bit drawn from
 * its counter (dropout_impl.h), in training; the identity otherwise.
 * Backward draws the forward's bits again from the pass it kept. */
#include <stdlib.h>
#include <string.h>

#include "nn/layers/dropout/dropout_impl.h"

/* out = keep ? in * scale : 0 over the batch's rows, keyed by pass. */
static void apply_mask(const fn_dropout *d, const fn_pass *pass, float *out /* [n] */,
                       const float *in /* [n] */, size_t n)
{
    const uint64_t e0 = (uint64_t)pass->row0 * (uint64_t)d->base.in_features;
    for (size_t i = 0; i < n; i++)
        out[i] = fn_dropout_keeps(d->seed, d->key, (uint64_t)pass->step, e0 + i, d->threshold)
                     ? in[i] * d->scale
                     : 0.0f;
}

static fn_status dropout_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_dropout *d = (fn_dropout *)l;
    const size_t n = fn_tensor_count(x);
    d->masked = l->pass.training;
    d->drawn = l->pass;
    if (d->masked)
        apply_mask(d, &d->drawn, y->data, x->data, n);
    else
        memcpy(y->data, x->data, n * sizeof(float));
    return FN_OK;
}

static fn_status dropout_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_dropout *d = (fn_dropout *)l;
    if (!dx)
        return FN_OK; /* no parameters: nothing else to compute */
    const size_t n = fn_tensor_count(dy);
    if (d->masked)
        apply_mask(d, &d->drawn, dx->data, dy->data, n);
    else
        memcpy(dx->data, dy->data, n * sizeof(float));
    return FN_OK;
}

static void dropout_destroy(fn_layer *l)
{
    fn_dropout *d = (fn_dropout *)l;
    fn_tensor_free(&d->pass_dev);
    free(d);
}

const fn_layer_ops fn_dropout_cpu_ops = {
    .kind = "dropout",
    .forward = dropout_forward,
    .backward = dropout_backward,
    .destroy = dropout_destroy,
};
