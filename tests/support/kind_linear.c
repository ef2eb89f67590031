/* kind_linear.c — the linear layer's gradient-check descriptor (kind.h):
 * y = x W^T + b, smooth, so no kink hook. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"
#include "kind.h"
#include "reference.h"
#include "runner.h"

static fn_status linear_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    return run_linear_create(l, ctx, c->in, c->out, c->batch);
}

static void linear_fill(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng)
{
    if (!gc_fill_affine(c, param, a, n, rng))
        gc_no_distribution("linear", param);
}

static void linear_forward(const gc_problem *p, double *const *t, double *y)
{
    const gc_case *c = p->c;
    ref_linear_forward(c->batch, c->in, c->out, gc_named(p, t, "weight"), gc_named(p, t, "bias"),
                       t[0], y);
}

static void linear_backward(const gc_problem *p, double *const *t, const double *dy,
                            double *const *g)
{
    const gc_case *c = p->c;
    ref_linear_backward(c->batch, c->in, c->out, gc_named(p, t, "weight"), t[0], dy, g[0],
                        gc_named(p, g, "weight"), gc_named(p, g, "bias"));
}

static void linear_estimate(const gc_problem *p, double *const *t, const double *dy,
                            double u_op, double *ey, double *const *eg)
{
    const gc_case *c = p->c;
    est_linear_errors(c->batch, c->in, c->out, gc_named(p, t, "weight"), gc_named(p, t, "bias"),
                      t[0], dy, u_op, ey, eg[0], gc_named(p, eg, "weight"),
                      gc_named(p, eg, "bias"));
}

static void linear_shape(char *buf, size_t size, const gc_case *c)
{
    chk_shape(buf, size, c->batch, c->in, c->out, 0, -1);
}

static const gc_case ref_cases[] = {
    {.batch = 3, .in = 7, .out = 5, .xscale = 1, .wscale = 1, .seed = 11,
     .why = "typical"},
};

static const gc_case cases[] = {
    {.batch = 1, .in = 7, .out = 3, .xscale = 1, .wscale = 1, .seed = 31,
     .why = "batch 1"},
    {.batch = 9, .in = 33, .out = 10, .xscale = 1, .wscale = 1, .seed = 32,
     .why = "odd widths"},
    {.batch = 64, .in = 128, .out = 10, .xscale = 1, .wscale = 1, .seed = 33,
     .why = "larger: BLAS blocking"},
    {.batch = 257, .in = 515, .out = 10, .xscale = 1, .wscale = 1, .seed = 37,
     .why = "odd sizes past one GEMM tile"},
};

static const gc_case fd_cases[] = {
    {.batch = 5, .in = 9, .out = 4, .xscale = 1, .wscale = 1, .seed = 41,
     .why = "typical"},
    {.batch = 1, .in = 16, .out = 10, .xscale = 1, .wscale = 1, .seed = 42,
     .why = "batch 1"},
};

const gc_kind gc_linear_kind = {
    .name = "linear",
    .create = linear_create,
    GC_HOOKS(linear),
    GC_CASE_TABLES(ref_cases, cases, fd_cases),
};
