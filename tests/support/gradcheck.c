/* gradcheck.c — tier 2 for any layer kind: the layer on a backend against
 * its float64 reference, and one backend against another, y and every
 * gradient within per-element error estimates (estimate.h) plus
 * RTOL |reference| for the final roundings. See gradcheck.h. */
#include "gradcheck.h"

#include <stdio.h>

#include "check.h"
#include "estimate.h"
#include "problem.h"
#include "runner.h"

#define RTOL (4 * CHK_U32)

const char *gc_backend_name(fn_context *ctx)
{
    static char names[2][4][24]; /* [device][fn_math] */
    int d = fn_context_device(ctx) == FN_CUDA, m = (int)fn_context_math(ctx);
    snprintf(names[d][m], sizeof names[d][m], "%s %s", fn_device_name(fn_context_device(ctx)),
             fn_math_name(fn_context_math(ctx)));
    return names[d][m];
}

static int failed(fn_status st, const char *what)
{
    return run_report(st, what) != FN_OK;
}

/* Compares y and every gradient ("dx", "dweight", ...), est as the
 * per-element atol. */
static int compare(const char *layer, const gc_problem *p, const gc_out *got,
                   const gc_out *want, const gc_out *est)
{
    char shape[64], tensor[20];
    gc_shape(shape, sizeof shape, p);
    int ok = chk_compare(layer, shape, "y", got->y, want->y, p->c->batch, p->c->out,
                         (chk_tol){.atol = 1, .rtol = RTOL, .scale = est->y});
    for (int i = 0; i < p->n; i++) {
        snprintf(tensor, sizeof tensor, "d%s", p->names[i]);
        ok &= chk_compare(layer, shape, tensor, got->g[i], want->g[i], p->rows[i], p->cols[i],
                          (chk_tol){.atol = 1, .rtol = RTOL, .scale = est->g[i]});
    }
    return ok;
}

int gc_vs_reference(fn_context *ctx, const gc_kind *k, const gc_case *c, int offset)
{
    double u_op = est_operand_roundoff(fn_context_math(ctx));
    char layer[40];
    snprintf(layer, sizeof layer, "%s %s", k->name, gc_backend_name(ctx));
    gc_problem p;
    if (failed(gc_problem_init(&p, k, c, ctx), layer)) {
        gc_problem_free(&p);
        return 0;
    }
    gc_mask_kinks(&p, u_op, NULL, 0, p.dy);
    gc_out got, want, est;
    gc_out_alloc(&got, &p), gc_out_alloc(&want, &p), gc_out_alloc(&est, &p);
    int ok = !failed(gc_problem_run(ctx, &p, p.dy, offset, &got), layer);
    if (ok) {
        gc_reference(&p, p.dy, &want);
        gc_estimates(&p, p.dy, u_op, &est);
        ok = compare(layer, &p, &got, &want, &est);
    }
    gc_out_free(&got), gc_out_free(&want), gc_out_free(&est);
    gc_problem_free(&p);
    return ok;
}

int gc_vs_reference_cases(fn_context *ctx, const gc_kind *k)
{
    int ok = 1;
    for (size_t i = 0; i < k->n_cases; i++) {
        printf("-- %s\n", k->cases[i].why);
        ok &= gc_vs_reference(ctx, k, &k->cases[i], 0);
    }
    for (size_t i = 0; i < k->n_unaligned_cases; i++) {
        printf("-- %s\n", k->unaligned_cases[i].why);
        ok &= gc_vs_reference(ctx, k, &k->unaligned_cases[i], 1);
    }
    return ok;
}

/* est += other, element by element, over y and every gradient. */
static void add_estimates(gc_out *est, const gc_out *other, const gc_problem *p)
{
    for (size_t i = 0; i < p->ny; i++)
        est->y[i] += other->y[i];
    for (int t = 0; t < p->n; t++)
        for (size_t i = 0; i < p->size[t]; i++)
            est->g[t][i] += other->g[t][i];
}

int gc_cross(fn_context *ctx, fn_context *base, const gc_kind *k, const gc_case *c)
{
    double u_ctx = est_operand_roundoff(fn_context_math(ctx));
    double u_base = est_operand_roundoff(fn_context_math(base));
    char layer[40];
    snprintf(layer, sizeof layer, "%s %s/%s", k->name, fn_device_name(fn_context_device(ctx)),
             gc_backend_name(base));
    gc_problem p;
    if (failed(gc_problem_init(&p, k, c, ctx), layer)) {
        gc_problem_free(&p);
        return 0;
    }
    gc_mask_kinks(&p, u_ctx > u_base ? u_ctx : u_base, NULL, 0, p.dy);
    gc_out got, want, est, est_base;
    gc_out_alloc(&got, &p), gc_out_alloc(&want, &p);
    gc_out_alloc(&est, &p), gc_out_alloc(&est_base, &p);
    int ok = !failed(gc_problem_run(ctx, &p, p.dy, 0, &got), layer) &&
             !failed(gc_problem_run(base, &p, p.dy, 0, &want), layer);
    if (ok) {
        /* Both sides carry their own error: the bound is the sum. */
        gc_estimates(&p, p.dy, u_ctx, &est);
        gc_estimates(&p, p.dy, u_base, &est_base);
        add_estimates(&est, &est_base, &p);
        ok = compare(layer, &p, &got, &want, &est);
    }
    gc_out_free(&got), gc_out_free(&want);
    gc_out_free(&est), gc_out_free(&est_base);
    gc_problem_free(&p);
    return ok;
}

int gc_cross_cases(fn_context *ctx, fn_context *base, const gc_kind *k)
{
    int ok = 1;
    for (size_t i = 0; i < k->n_cases; i++) {
        printf("-- %s\n", k->cases[i].why);
        ok &= gc_cross(ctx, base, k, &k->cases[i]);
    }
    return ok;
}
