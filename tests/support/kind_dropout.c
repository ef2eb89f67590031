/* kind_dropout.c — dropout's gradient-check descriptor (kind.h), in a
 * training pass: y = x * mask / (1 - p) with the mask of ref_dropout_mask
 * (the generator written again from its definition), so every tier checks
 * the bits each backend draws as well as the scaling; linear in x, so no
 * kink. The case's slope field holds p; its seed is also the step. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fusenet/dropout.h"
#include "kind.h"
#include "reference.h"

/* The layer's keys: fn_dropout_create takes rng {seed 1, offset 0}. */
enum { SEED = 1, LAYER = 0 };

static fn_pass pass_of(const gc_case *c)
{
    return (fn_pass){.training = 1, .step = (long long)c->seed, .row0 = 0};
}

static fn_status dropout_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    fn_rng rng = {.seed = SEED, .offset = LAYER};
    FN_TRY(fn_dropout_create(l, ctx, c->in, (double)c->slope, c->batch, &rng, 0));
    const fn_pass pass = pass_of(c);
    return fn_layer_set_pass(*l, &pass);
}

static void dropout_fill(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng)
{
    (void)c, (void)a, (void)n, (void)rng;
    fprintf(stderr, "gradcheck: dropout has no parameter '%s'\n", param);
    abort();
}

/* out = in * mask / (1 - p) over the batch. */
static void masked(const gc_problem *p, const double *in, double *out)
{
    const gc_case *c = p->c;
    double *mask = chk_alloc(p->ny);
    ref_dropout_mask(c->batch, c->in, (double)c->slope, SEED, LAYER, c->seed, 0, mask);
    for (size_t i = 0; i < p->ny; i++)
        out[i] = in[i] * mask[i] / (1.0 - (double)c->slope);
    free(mask);
}

static void dropout_forward(const gc_problem *p, double *const *t, double *y) { masked(p, t[0], y); }

static void dropout_backward(const gc_problem *p, double *const *t, const double *dy,
                             double *const *g)
{
    (void)t;
    masked(p, dy, g[0]);
}

/* One product by the float32 scale (itself rounded once): 2 u32 relative. */
static void dropout_estimate(const gc_problem *p, double *const *t, const double *dy,
                             double u_op, double *ey, double *const *eg)
{
    (void)u_op;
    masked(p, t[0], ey);
    for (size_t i = 0; i < p->ny; i++)
        ey[i] = 2 * CHK_U32 * (ey[i] < 0 ? -ey[i] : ey[i]);
    if (dy) {
        masked(p, dy, eg[0]);
        for (size_t i = 0; i < p->ny; i++)
            eg[0][i] = 2 * CHK_U32 * (eg[0][i] < 0 ? -eg[0][i] : eg[0][i]);
    }
}

static void dropout_shape(char *buf, size_t size, const gc_case *c)
{
    snprintf(buf, size, "(%d,%d,p %g,step %llu)", c->batch, c->in, (double)c->slope,
             (unsigned long long)c->seed);
}

/* batch, in, out (= in), groups, slope (p), eps, xscale, wscale, boffset, seed (step), why */
static const gc_case ref_cases[] = {
    {3, 5, 5, 0, 0.5f, 0, 1, 1, 0, 401, "p 0.5"},
    {2, 7, 7, 0, 0.1f, 0, 1, 1, 0, 402, "p 0.1"},
};

static const gc_case cases[] = {
    {1, 7, 7, 0, 0.5f, 0, 1, 1, 0, 411, "batch 1"},
    {9, 33, 33, 0, 0.2f, 0, 1, 1, 0, 412, "odd widths, p 0.2"},
    {64, 128, 128, 0, 0.5f, 0, 1, 1, 0, 413, "larger"},
    {257, 515, 515, 0, 0.9f, 0, 100, 1, 0, 414, "odd sizes past one kernel grid, p 0.9, large x"},
    {5, 16, 16, 0, 0.0f, 0, 1, 1, 0, 415, "p 0: every element kept, scale 1"},
    {3, 10, 10, 0, 0.3f, 0, 1, 1, 0, 5000000000ull, "a step past 2^32"},
};

static const gc_case fd_cases[] = {
    {5, 9, 9, 0, 0.5f, 0, 1, 1, 0, 441, "typical"},
    {1, 16, 16, 0, 0.25f, 0, 1, 1, 0, 442, "batch 1"},
};

const gc_kind gc_dropout_kind = {
    .name = "dropout",
    .create = dropout_create,
    GC_HOOKS(dropout),
    GC_CASE_TABLES(ref_cases, cases, fd_cases),
};
