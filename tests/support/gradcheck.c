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

/* One case of a layer kind's tier. */
static int one_case(gc_tier tier, fn_context *ctx, fn_context *base, const gc_kind *k,
                    const gc_case *c, int offset)
{
    printf("-- %s\n", c->why);
    switch (tier) {
    case GC_REFERENCE_FD: return gc_reference_fd(ctx, k, c);
    case GC_VS_REFERENCE: return gc_vs_reference(ctx, k, c, offset);
    case GC_FD: return gc_fd(ctx, k, c);
    case GC_CROSS: return gc_cross(ctx, base, k, c);
    default: return 0;
    }
}

int gc_kind_cases(gc_tier tier, fn_context *ctx, fn_context *base, const gc_kind *k)
{
    if (tier == GC_LOSSES_VS_REFERENCE)
        return gc_losses_vs_reference_cases(ctx);
    if (tier == GC_LOSSES_FD)
        return gc_losses_fd_cases(ctx);
    const gc_case *cases = tier == GC_REFERENCE_FD ? k->ref_cases
                           : tier == GC_FD         ? k->fd_cases
                                                   : k->cases;
    const size_t n = tier == GC_REFERENCE_FD ? k->n_ref_cases
                     : tier == GC_FD         ? k->n_fd_cases
                                             : k->n_cases;
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= one_case(tier, ctx, base, k, &cases[i], 0);
    for (size_t i = 0; tier == GC_VS_REFERENCE && i < k->n_unaligned_cases; i++)
        ok &= one_case(tier, ctx, base, k, &k->unaligned_cases[i], 1);
    return ok;
}

int gc_kinds_run(gc_tier tier, fn_context *ctx, fn_context *base, const char *fmt,
                 const char *mode)
{
    const int losses = tier == GC_LOSSES_VS_REFERENCE || tier == GC_LOSSES_FD;
    const size_t n = losses ? 1 : gc_n_kinds;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        char title[128];
        snprintf(title, sizeof title, fmt, losses ? "losses" : gc_kinds[i]->name, mode);
        chk_table_header(title);
        ok &= gc_kind_cases(tier, ctx, base, losses ? NULL : gc_kinds[i]);
    }
    return ok;
}

int gc_tiers_run(const gc_tier_row *rows, size_t n, fn_context *ctx, fn_context *base,
                 const char *mode)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        if (!gc_kinds_run(rows[i].tier, ctx, base, rows[i].title, mode)) {
            printf("failed: %s\n", rows[i].title);
            ok = 0;
        }
    return ok;
}
