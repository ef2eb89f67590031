/* clip.c — clipping by the global gradient norm (clip.h): the checks, the
 * parameter list, and the backend of the context's device, picked once;
 * over the ranks of a communicator, the sum of the ranks' sums of squares
 * and the factor between the backend's two halves. */
#include <math.h>
#include <stdlib.h>

#include "optim/clip_backends.h"

static fn_status check_params(fn_context *ctx, fn_param *const *params, int n_params)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "fn_clip_create: ctx is NULL");
    if (!params || n_params < 1)
        return fn_fail(FN_ERR_INVALID, "fn_clip_create: no parameters to clip");
    const fn_device dev = fn_context_device(ctx);
    for (int i = 0; i < n_params; i++) {
        const fn_param *p = params[i];
        if (!p)
            return fn_fail(FN_ERR_INVALID, "fn_clip_create: parameter %d is NULL", i);
        fn_status st = fn_tensor_check_on(&p->grad, "grad", dev, p->value.rows, p->value.cols);
        if (st != FN_OK) {
            fn_error_prefix("fn_clip_create: parameter %d (%s): ", i,
                            p->name ? p->name : "(unnamed)");
            return st;
        }
    }
    return FN_OK;
}

fn_status fn_clip_create(fn_clip **out, fn_context *ctx, fn_param *const *params, int n_params,
                         float max_norm)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_clip_create: out is NULL");
    *out = NULL;
    if (!(max_norm > 0.0f) || !isfinite(max_norm))
        return fn_fail(FN_ERR_INVALID, "fn_clip_create: max_norm %g must be positive and finite",
                       (double)max_norm);
    FN_TRY(check_params(ctx, params, n_params));
    fn_clip *c = calloc(1, sizeof *c);
    if (!c || !(c->params = malloc((size_t)n_params * sizeof *c->params))) {
        free(c);
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a gradient clipper");
    }
    for (int i = 0; i < n_params; i++)
        c->params[i] = params[i];
    c->n_params = n_params;
    c->ctx = ctx;
    c->max_norm = max_norm;
    c->norm = NAN;
    c->backend = fn_context_device(ctx) == FN_CUDA ? &fn_clip_cuda_backend : &fn_clip_cpu_backend;
    fn_status st = c->backend->create ? c->backend->create(c) : FN_OK;
    if (st != FN_OK) {
        fn_clip_destroy(c);
        return st;
    }
    *out = c;
    return FN_OK;
}

fn_status fn_clip_set_comm(fn_clip *clip, fn_comm *comm)
{
    if (!clip)
        return fn_fail(FN_ERR_INVALID, "fn_clip_set_comm: clipper is NULL");
    clip->comm = comm;
    return FN_OK;
}

/* Over the ranks: the rank's sum of squares, the ranks' sums added in rank
 * order (the same bits on every rank), its root and torch's factor, as the
 * backends' apply computes them on one process. */
static fn_status apply_over_ranks(fn_clip *clip)
{
    double total = 0;
    FN_TRY(clip->backend->sum_squares(clip, &total));
    FN_TRY(fn_comm_sum_doubles(clip->comm, &total, 1));
    clip->norm = sqrt(total);
    const double coef = clip->max_norm / (clip->norm + FN_CLIP_EPS);
    return coef < 1.0 ? clip->backend->scale(clip, coef) : FN_OK;
}

fn_status fn_clip_apply(fn_clip *clip)
{
    if (!clip)
        return fn_fail(FN_ERR_INVALID, "fn_clip_apply: clipper is NULL");
    FN_TRY(clip->comm ? apply_over_ranks(clip) : clip->backend->apply(clip));
    clip->applied = 1;
    return FN_OK;
}

fn_status fn_clip_last_norm(fn_clip *clip, double *norm)
{
    if (!clip || !norm)
        return fn_fail(FN_ERR_INVALID, "fn_clip_last_norm: clipper or norm is NULL");
    if (!clip->applied) {
        *norm = NAN;
        return FN_OK;
    }
    if (clip->comm) { /* on the host already */
        *norm = clip->norm;
        return FN_OK;
    }
    return clip->backend->last_norm(clip, norm);
}

int fn_clip_applied(const fn_clip *clip) { return clip && clip->applied; }

void fn_clip_destroy(fn_clip *clip)
{
    if (!clip)
        return;
    if (clip->backend && clip->backend->release)
        clip->backend->release(clip);
    free(clip->params);
    free(clip);
}

fn_status fn_clip_grad_norm(fn_context *ctx, fn_param *const *params, int n_params,
                            float max_norm, double *norm)
{
    fn_clip *clip = NULL;
    FN_TRY(fn_clip_create(&clip, ctx, params, n_params, max_norm));
    fn_status st = fn_clip_apply(clip);
    if (st == FN_OK && norm)
        st = fn_clip_last_norm(clip, norm);
    fn_clip_destroy(clip);
    return st;
}
