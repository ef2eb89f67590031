/* kind_dense.c — the dense layers' gradient-check descriptors (kind.h):
 * y = f(x W^T + b) with f = ReLU (a kink at z = 0, so a kink hook) or
 * exact GELU (smooth), against ref_dense_*; z's offsets (boffset) move
 * the shapes into GELU's tails, where 1 + erf cancels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"
#include "fusenet/dense.h"
#include "kind.h"
#include "reference.h"

static fn_status create_as(fn_layer **l, fn_context *ctx, const gc_case *c, fn_activation act)
{
    fn_rng rng = {.seed = 1, .offset = 0};
    return fn_dense_create(l, ctx, act, c->in, c->out, c->batch, &rng, 0);
}

static fn_status relu_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    return create_as(l, ctx, c, FN_ACTIVATION_RELU);
}

static fn_status gelu_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    return create_as(l, ctx, c, FN_ACTIVATION_GELU);
}

static void dense_fill(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng)
{
    if (!gc_fill_affine(c, param, a, n, rng))
        gc_no_distribution("dense", param);
}

static int act_of(const gc_problem *p) { return strcmp(p->kind->name, "relu") == 0 ? REF_RELU : REF_GELU; }

static void dense_forward(const gc_problem *p, double *const *t, double *y)
{
    const gc_case *c = p->c;
    ref_dense_forward(c->batch, c->in, c->out, act_of(p), gc_named(p, t, "weight"),
                      gc_named(p, t, "bias"), t[0], y, NULL);
}

static void dense_backward(const gc_problem *p, double *const *t, const double *dy,
                           double *const *g)
{
    const gc_case *c = p->c;
    ref_dense_backward(c->batch, c->in, c->out, act_of(p), gc_named(p, t, "weight"),
                       gc_named(p, t, "bias"), t[0], dy, g[0], gc_named(p, g, "weight"),
                       gc_named(p, g, "bias"));
}

static void dense_estimate(const gc_problem *p, double *const *t, const double *dy, double u_op,
                           double *ey, double *const *eg)
{
    const gc_case *c = p->c;
    est_dense_errors(c->batch, c->in, c->out, act_of(p), gc_named(p, t, "weight"),
                     gc_named(p, t, "bias"), t[0], dy, u_op, NULL, ey, eg[0],
                     gc_named(p, eg, "weight"), gc_named(p, eg, "bias"));
}

/* ReLU's input z = x W^T + b and its error. */
static void relu_kink_input(const gc_problem *p, double *const *t, double u_op, double *u,
                            double *eu)
{
    const gc_case *c = p->c;
    ref_linear_forward(c->batch, c->in, c->out, gc_named(p, t, "weight"), gc_named(p, t, "bias"),
                       t[0], u);
    if (eu)
        est_dense_errors(c->batch, c->in, c->out, REF_RELU, gc_named(p, t, "weight"),
                         gc_named(p, t, "bias"), t[0], NULL, u_op, eu, NULL, NULL, NULL, NULL);
}

static void dense_shape(char *buf, size_t size, const gc_case *c)
{
    chk_shape(buf, size, c->batch, c->in, c->out, 0, -1);
}

/* batch, in, out, groups, slope, eps, xscale, wscale, boffset, seed, why */
static const gc_case ref_cases[] = {
    {3, 7, 5, 0, 0, 0, 1, 1, 0, 211, "typical"},
    {2, 4, 6, 0, 0, 0, 1, 1, 1.5, 212, "z mostly positive"},
    {2, 5, 4, 0, 0, 0, 1, 1, -2, 213, "z mostly negative: GELU's left tail"},
};

static const gc_case cases[] = {
    {1, 7, 3, 0, 0, 0, 1, 1, 0, 231, "batch 1"},
    {9, 33, 10, 0, 0, 0, 1, 1, 0, 232, "odd widths"},
    {64, 128, 96, 0, 0, 0, 1, 1, 0, 233, "larger: BLAS blocking"},
    {257, 515, 37, 0, 0, 0, 1, 1, 0, 234, "odd sizes past one GEMM tile, one kernel grid"},
    {5, 16, 24, 0, 0, 0, 1, 3, -4, 235, "z around -4: GELU's tail, 1 + erf cancels"},
    {5, 16, 24, 0, 0, 0, 100, 1, 0, 236, "large inputs, |z| up to 1e2"},
};

static const gc_case fd_cases[] = {
    {5, 9, 4, 0, 0, 0, 1, 1, 0, 241, "typical"},
    {1, 16, 10, 0, 0, 0, 1, 1, 0.5, 242, "batch 1, z shifted"},
};

#define DENSE_KIND(kind_name, create_fn, kink)       \
    {                                                \
        .name = kind_name,                           \
        .create = create_fn,                         \
        .fill = dense_fill,                          \
        .forward = dense_forward,                    \
        .backward = dense_backward,                  \
        .estimate = dense_estimate,                  \
        .kink_input = kink,                          \
        .shape = dense_shape,                        \
        GC_CASE_TABLES(ref_cases, cases, fd_cases),  \
    }

const gc_kind gc_relu_kind = DENSE_KIND("relu", relu_create, relu_kink_input);
const gc_kind gc_gelu_kind = DENSE_KIND("gelu", gelu_create, NULL);
