/* runner.c — host float64 in, library layer or loss on any device, float64
 * out (see runner.h). Device tensors are allocated per call: the tests are
 * small and clarity beats reuse here. */
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/cuda_runtime.h"
#include "fusenet/linear.h"
#include "fusenet/loss.h"
#include "nn/losses/cross_entropy/cross_entropy_options.h"
#include "nn/losses/bce/bce.h"
#include "nn/losses/huber/huber.h"

fn_status run_report(fn_status st, const char *what)
{
    if (st != FN_OK)
        printf("    %s failed: %s: %s\n", what, fn_status_name(st), fn_last_error());
    return st;
}

fn_status run_block_create(fn_layer **l, fn_context *ctx, const ref_block_dims *d, int max_batch)
{
    fn_block_config cfg = fn_block_config_default(d->in, d->out, d->groups);
    cfg.eps = (float)d->eps;
    cfg.negative_slope = (float)d->slope;
    fn_rng rng = {.seed = 1, .offset = 0};
    return fn_block_create(l, ctx, &cfg, max_batch, &rng);
}

fn_status run_linear_create(fn_layer **l, fn_context *ctx, int in, int out, int max_batch)
{
    fn_rng rng = {.seed = 1, .offset = 0};
    return fn_linear_create(l, ctx, in, out, max_batch, &rng);
}

/* t's values from host values, as float32 (values NULL: left as they are). */
static fn_status upload(fn_tensor *t, const double *values)
{
    if (!values)
        return FN_OK;
    size_t n = fn_tensor_count(t);
    float *f = chk_alloc_float(n);
    chk_to_float(f, values, n);
    fn_status st = fn_tensor_upload(t, f, n);
    free(f);
    return st;
}

/* A tensor on `device` holding host values as float32. */
static fn_status upload_new(fn_tensor *t, int rows, int cols, fn_device device,
                            const double *values)
{
    FN_TRY(fn_tensor_alloc(t, rows, cols, device));
    fn_status st = upload(t, values);
    if (st != FN_OK)
        fn_tensor_free(t);
    return st;
}

/* *t: a [rows, cols] view `offset` floats into *base, which the caller
 * frees, holding host values as float32 (values NULL: left as allocated). */
static fn_status upload_at(fn_tensor *base, fn_tensor *t, int rows, int cols, int offset,
                           fn_device device, const double *values)
{
    if (offset == 0) {
        FN_TRY(upload_new(base, rows, cols, device, values));
        *t = *base;
        return FN_OK;
    }
    FN_TRY(fn_tensor_alloc(base, 1, rows * cols + offset, device));
    *t = fn_tensor_view(base->data + offset, rows, cols, device);
    return upload(t, values);
}

static fn_status download(const fn_tensor *t, double *out)
{
    size_t n = fn_tensor_count(t);
    float *f = chk_alloc_float(n);
    fn_status st = fn_tensor_download(t, f, n);
    if (st == FN_OK)
        chk_to_double(out, f, n);
    free(f);
    return st;
}

static fn_param *param_or_fail(fn_layer *l, const char *name, fn_status *st)
{
    fn_param *p = fn_layer_param(l, name);
    *st = p ? FN_OK : fn_fail(FN_ERR_INVALID, "layer has no parameter '%s'", name);
    return p;
}

fn_status run_set_param(fn_layer *l, const char *name, const double *values)
{
    fn_status st;
    fn_param *p = param_or_fail(l, name, &st);
    return p ? upload(&p->value, values) : st;
}

fn_status run_get_grad(fn_layer *l, const char *name, double *out)
{
    fn_status st;
    fn_param *p = param_or_fail(l, name, &st);
    return p ? download(&p->grad, out) : st;
}

fn_status run_set_params(fn_layer *l, double *const *values)
{
    for (int i = 0; i < l->n_params; i++)
        FN_TRY(upload(&l->params[i].value, values[i]));
    return FN_OK;
}

fn_status run_get_grads(fn_layer *l, double *const *grads)
{
    for (int i = 0; i < l->n_params; i++)
        FN_TRY(download(&l->params[i].grad, grads[i]));
    return FN_OK;
}

fn_status run_forward(fn_layer *l, int batch, const double *x, double *y)
{
    fn_tensor tx = {0}, ty = {0};
    fn_status st = upload_new(&tx, batch, l->in_features, l->device, x);
    if (st == FN_OK)
        st = upload_new(&ty, batch, l->out_features, l->device, NULL);
    if (st == FN_OK)
        st = fn_layer_forward(l, &tx, &ty);
    if (st == FN_OK)
        st = download(&ty, y);
    fn_tensor_free(&tx);
    fn_tensor_free(&ty);
    return st;
}

fn_status run_forward_backward(fn_layer *l, int batch, const double *x, const double *dy,
                               double *y, double *dx)
{
    return run_forward_backward_at(l, batch, x, dy, y, dx, 0);
}

fn_status run_forward_backward_at(fn_layer *l, int batch, const double *x, const double *dy,
                                  double *y, double *dx, int offset)
{
    fn_tensor tx = {0}, ybase = {0}, ty = {0}, dybase = {0}, tdy = {0}, tdx = {0};
    fn_status st = fn_layer_zero_grad(l);
    if (st == FN_OK)
        st = upload_new(&tx, batch, l->in_features, l->device, x);
    if (st == FN_OK)
        st = upload_at(&ybase, &ty, batch, l->out_features, offset, l->device, NULL);
    if (st == FN_OK)
        st = upload_at(&dybase, &tdy, batch, l->out_features, offset, l->device, dy);
    if (st == FN_OK && dx)
        st = upload_new(&tdx, batch, l->in_features, l->device, NULL);
    if (st == FN_OK)
        st = fn_layer_forward(l, &tx, &ty);
    if (st == FN_OK)
        st = fn_layer_backward(l, &tdy, dx ? &tdx : NULL);
    if (st == FN_OK && y)
        st = download(&ty, y);
    if (st == FN_OK && dx)
        st = download(&tdx, dx);
    fn_tensor_free(&tx);
    fn_tensor_free(&ybase);
    fn_tensor_free(&dybase);
    fn_tensor_free(&tdx);
    return st;
}

/* A float-target loss's arguments: mse when delta is 0 and bce is 0, huber
 * with delta > 0, binary cross-entropy with bce (pos_weight, correct). */
typedef struct values_loss {
    double delta;
    int bce;
    const float *pos_weight;
    int *correct;
} values_loss;

static fn_status values_loss_on(fn_context *ctx, const values_loss *v, const fn_tensor *tp,
                                const fn_tensor *tt, fn_tensor *tl, fn_tensor *d)
{
    if (v->bce)
        return fn_bce_loss(ctx, tp, tt, v->pos_weight, NULL, tl, d, v->correct);
    return v->delta > 0 ? fn_huber_loss(ctx, tp, tt, (float)v->delta, NULL, tl, d)
                        : fn_mse_loss(ctx, tp, tt, tl, d);
}

static fn_status run_values_loss(fn_context *ctx, int rows, int cols, const double *pred,
                                 const double *target, const values_loss *v, double *loss,
                                 double *dpred)
{
    fn_device dev = fn_context_device(ctx);
    fn_tensor tp = {0}, tt = {0}, tl = {0}, td = {0};
    fn_status st = upload_new(&tp, rows, cols, dev, pred);
    if (st == FN_OK)
        st = upload_new(&tt, rows, cols, dev, target);
    if (st == FN_OK)
        st = upload_new(&tl, 1, 1, dev, NULL);
    if (st == FN_OK && dpred)
        st = upload_new(&td, rows, cols, dev, NULL);
    fn_tensor *d = dpred ? &td : NULL;
    if (st == FN_OK)
        st = values_loss_on(ctx, v, &tp, &tt, &tl, d);
    if (st == FN_OK)
        st = download(&tl, loss);
    if (st == FN_OK && dpred)
        st = download(&td, dpred);
    fn_tensor_free(&tp);
    fn_tensor_free(&tt);
    fn_tensor_free(&tl);
    fn_tensor_free(&td);
    return st;
}

fn_status run_mse(fn_context *ctx, int rows, int cols, const double *pred,
                  const double *target, double *loss, double *dpred)
{
    const values_loss v = {0};
    return run_values_loss(ctx, rows, cols, pred, target, &v, loss, dpred);
}

fn_status run_huber(fn_context *ctx, int rows, int cols, const double *pred, const double *target,
                    double delta, double *loss, double *dpred)
{
    const values_loss v = {.delta = delta};
    return run_values_loss(ctx, rows, cols, pred, target, &v, loss, dpred);
}

fn_status run_bce(fn_context *ctx, int rows, int cols, const double *pred, const double *target,
                  const float *pos_weight, double *loss, double *dpred, int *correct)
{
    const values_loss v = {.bce = 1, .pos_weight = pos_weight, .correct = correct};
    return run_values_loss(ctx, rows, cols, pred, target, &v, loss, dpred);
}

/* The labels where the loss wants them: on the logits' device. */
static fn_status labels_on(fn_device dev, const int32_t *labels, int rows, int32_t **out)
{
    size_t bytes = (size_t)rows * sizeof *labels;
    if (dev == FN_CPU) {
        *out = (int32_t *)labels;
        return FN_OK;
    }
    void *d = NULL;
    FN_TRY(fn_cuda_alloc(&d, bytes));
    fn_status st = fn_cuda_copy(d, FN_CUDA, labels, FN_CPU, bytes);
    if (st != FN_OK) {
        fn_cuda_free(d);
        return st;
    }
    *out = d;
    return FN_OK;
}

/* The cross-entropy, plain (s NULL) or weighted and smoothed. */
static fn_status run_labels_loss(fn_context *ctx, int rows, int cols, const double *logits,
                                 const int32_t *labels, const fn_ce_smoothing *s, double *loss,
                                 double *dlogits)
{
    fn_device dev = fn_context_device(ctx);
    fn_tensor tp = {0}, tl = {0}, td = {0};
    int32_t *dev_labels = NULL;
    fn_status st = labels_on(dev, labels, rows, &dev_labels);
    if (st == FN_OK)
        st = upload_new(&tp, rows, cols, dev, logits);
    if (st == FN_OK)
        st = upload_new(&tl, 1, 1, dev, NULL);
    if (st == FN_OK && dlogits)
        st = upload_new(&td, rows, cols, dev, NULL);
    fn_tensor *d = dlogits ? &td : NULL;
    if (st == FN_OK)
        st = s ? fn_cross_entropy_smoothed_loss(ctx, &tp, dev_labels, s, &tl, d)
               : fn_cross_entropy_loss(ctx, &tp, dev_labels, &tl, d);
    if (st == FN_OK)
        st = download(&tl, loss);
    if (st == FN_OK && dlogits)
        st = download(&td, dlogits);
    if (dev == FN_CUDA)
        fn_cuda_free(dev_labels);
    fn_tensor_free(&tp);
    fn_tensor_free(&tl);
    fn_tensor_free(&td);
    return st;
}

fn_status run_cross_entropy(fn_context *ctx, int rows, int cols, const double *logits,
                            const int32_t *labels, double *loss, double *dlogits)
{
    return run_labels_loss(ctx, rows, cols, logits, labels, NULL, loss, dlogits);
}

fn_status run_cross_entropy_smoothed(fn_context *ctx, int rows, int cols, const double *logits,
                                     const int32_t *labels, const float *weights, double eps,
                                     double *loss, double *dlogits)
{
    const fn_ce_smoothing s = {weights, (float)eps, NULL};
    return run_labels_loss(ctx, rows, cols, logits, labels, &s, loss, dlogits);
}
