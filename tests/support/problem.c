/* problem.c — a gradient-check case's tensors, laid out after the layer's
 * fn_param list, and the runs over them (see problem.h). */
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kind.h"
#include "runner.h"

/* Names, shapes and order of p's tensors: x, then l's parameters. */
static fn_status describe(gc_problem *p, const fn_layer *l)
{
    const gc_case *c = p->c;
    if (l->n_params + 1 > GC_MAX_TENSORS)
        return fn_fail(FN_ERR_INVALID, "%s: %d parameters, the checks hold %d", p->kind->name,
                       l->n_params, GC_MAX_TENSORS - 1);
    p->n = 1 + l->n_params;
    snprintf(p->names[0], sizeof p->names[0], "x");
    p->rows[0] = c->batch, p->cols[0] = c->in;
    for (int i = 1; i < p->n; i++) {
        const fn_param *q = &l->params[i - 1];
        if (strlen(q->name) >= sizeof p->names[i])
            return fn_fail(FN_ERR_INVALID, "%s: parameter name '%s' too long for the checks",
                           p->kind->name, q->name);
        snprintf(p->names[i], sizeof p->names[i], "%s", q->name);
        p->rows[i] = q->value.rows, p->cols[i] = q->value.cols;
    }
    for (int i = 0; i < p->n; i++)
        p->size[i] = (size_t)p->rows[i] * (size_t)p->cols[i];
    return FN_OK;
}

fn_status gc_problem_init(gc_problem *p, const gc_kind *k, const gc_case *c, fn_context *ctx)
{
    *p = (gc_problem){.kind = k, .c = c, .ny = (size_t)c->batch * c->out};
    fn_layer *l = NULL;
    FN_TRY(k->create(&l, ctx, c));
    fn_status st = describe(p, l);
    fn_layer_destroy(l);
    if (st != FN_OK)
        return st;
    chk_rng rng = chk_rng_seed(c->seed);
    for (int i = 0; i < p->n; i++)
        p->t[i] = chk_alloc(p->size[i]);
    p->dy = chk_alloc(p->ny);
    chk_fill(p->t[0], p->size[0], -c->xscale, c->xscale, &rng);
    for (int i = 1; i < p->n; i++)
        k->fill(c, p->names[i], p->t[i], p->size[i], &rng);
    chk_fill(p->dy, p->ny, -1, 1, &rng);
    return FN_OK;
}

int gc_problem_open(gc_problem *p, const gc_kind *k, const gc_case *c, fn_context *ctx,
                    const char *layer)
{
    if (run_report(gc_problem_init(p, k, c, ctx), layer) == FN_OK)
        return 1;
    gc_problem_free(p);
    return 0;
}

void gc_problem_free(gc_problem *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->t[i]);
    free(p->dy);
}

int gc_index(const gc_problem *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->names[i], name) == 0)
            return i;
    fprintf(stderr, "gradcheck: %s has no tensor '%s'\n", p->kind->name, name);
    abort();
}

double *gc_named(const gc_problem *p, double *const *t, const char *name)
{
    return t[gc_index(p, name)];
}

void gc_out_alloc(gc_out *o, const gc_problem *p)
{
    *o = (gc_out){.y = chk_alloc(p->ny)};
    for (int i = 0; i < p->n; i++)
        o->g[i] = chk_alloc(p->size[i]);
}

void gc_out_free(gc_out *o)
{
    free(o->y);
    for (int i = 0; i < GC_MAX_TENSORS; i++)
        free(o->g[i]);
}

/* The layer must publish the parameters p was laid out after: the same
 * kind on another device, or a later layer of it, could differ. */
static fn_status check_params(const fn_layer *l, const gc_problem *p)
{
    if (l->n_params != p->n - 1)
        return fn_fail(FN_ERR_INVALID, "%s: the layer has %d parameters, the problem %d",
                       p->kind->name, l->n_params, p->n - 1);
    for (int i = 1; i < p->n; i++) {
        const fn_param *q = &l->params[i - 1];
        if (strcmp(q->name, p->names[i]) != 0 || q->value.rows != p->rows[i] ||
            q->value.cols != p->cols[i])
            return fn_fail(FN_ERR_INVALID,
                           "%s: parameter %d is '%s' [%d, %d], expected '%s' [%d, %d]",
                           p->kind->name, i - 1, q->name, q->value.rows, q->value.cols,
                           p->names[i], p->rows[i], p->cols[i]);
    }
    return FN_OK;
}

fn_status gc_layer(fn_layer **l, fn_context *ctx, const gc_problem *p)
{
    FN_TRY(p->kind->create(l, ctx, p->c));
    fn_status st = check_params(*l, p);
    if (st != FN_OK) {
        fn_layer_destroy(*l);
        *l = NULL;
    }
    return st;
}

fn_status gc_run(fn_layer *l, const gc_problem *p, double *const *t, const double *dy,
                 int offset, gc_out *o)
{
    FN_TRY(run_set_params(l, t + 1));
    FN_TRY(run_forward_backward_at(l, p->c->batch, t[0], dy, o->y, o->g[0], offset));
    return run_get_grads(l, o->g + 1);
}

fn_status gc_problem_run(fn_context *ctx, const gc_problem *p, const double *dy, int offset,
                         gc_out *o)
{
    fn_layer *l = NULL;
    fn_status st = gc_layer(&l, ctx, p);
    if (st == FN_OK)
        st = gc_run(l, p, p->t, dy, offset, o);
    fn_layer_destroy(l);
    return st;
}

fn_status gc_objective(fn_layer *l, const gc_problem *p, double *const *t, const double *r,
                       double *value)
{
    double *y = chk_alloc(p->ny);
    fn_status st = run_set_params(l, t + 1);
    if (st == FN_OK)
        st = run_forward(l, p->c->batch, t[0], y);
    double s = 0;
    for (size_t i = 0; i < p->ny; i++)
        s += y[i] * r[i];
    *value = s;
    free(y);
    return st;
}

void gc_reference(const gc_problem *p, const double *dy, gc_out *o)
{
    p->kind->forward(p, p->t, o->y);
    p->kind->backward(p, p->t, dy, o->g);
}

void gc_estimates(const gc_problem *p, const double *dy, double u_op, gc_out *e)
{
    p->kind->estimate(p, p->t, dy, u_op, e->y, e->g);
}

void gc_mask_kinks(const gc_problem *p, double u_op, double *(*points)[GC_MAX_TENSORS],
                   int n_points, double *r)
{
    if (!p->kind->kink_input)
        return;
    double *u0 = chk_alloc(p->ny), *u = chk_alloc(p->ny), *eu = chk_alloc(p->ny);
    p->kind->kink_input(p, p->t, u_op, u0, eu);
    for (size_t i = 0; i < p->ny; i++)
        if (fabs(u0[i]) <= 4 * eu[i])
            r[i] = 0;
    for (int k = 0; k < n_points; k++) {
        p->kind->kink_input(p, points[k], u_op, u, NULL);
        for (size_t i = 0; i < p->ny; i++)
            if ((u[i] > 0) != (u0[i] > 0) || fabs(u[i]) <= 4 * eu[i])
                r[i] = 0;
    }
    free(u0), free(u), free(eu);
}

void gc_shape(char *buf, size_t size, const gc_problem *p)
{
    p->kind->shape(buf, size, p->c);
}
