/* gradcheck_fd.c — tier 3 for any layer kind: float32 finite differences
 * of L = sum_i r_i y_i through the layer on a backend, along random
 * directions in x and the parameters of the layer's fn_param list, against
 * the layer's own analytic directional derivative (arithmetic and error
 * budget: fd.h). Kinks: r_i is set to 0 where u_i comes within 4 est(u_i)
 * of 0 at any of the five points or changes sign between them (the kind's
 * reference says where). See gradcheck.h. */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"
#include "fd.h"
#include "problem.h"
#include "runner.h"

/* One direction through the problem's tensors and the points along it. */
typedef struct fd_dir {
    double *dir[GC_MAX_TENSORS];    /* per tensor; 0 outside the chosen ones */
    double *pts[4][GC_MAX_TENSORS]; /* the points, fd_steps order */
    double *r;                      /* [batch, out] the objective weights, kinks masked */
} fd_dir;

/* Direction along tensor `which` alone, or all of them when which < 0;
 * each entry scaled by its tensor's largest value so that h is a relative
 * step. */
static void fd_dir_init(fd_dir *f, const gc_problem *p, int which, double h, double u_op,
                        chk_rng *rng)
{
    *f = (fd_dir){.r = chk_alloc(p->ny)};
    memcpy(f->r, p->dy, p->ny * sizeof *f->r);
    for (int t = 0; t < p->n; t++) {
        f->dir[t] = chk_alloc(p->size[t]);
        if (which < 0 || which == t)
            chk_fill(f->dir[t], p->size[t], -1, 1, rng);
        double scale = chk_max_abs(p->t[t], p->size[t]);
        for (size_t i = 0; i < p->size[t]; i++)
            f->dir[t][i] *= scale;
        for (int k = 0; k < 4; k++) {
            f->pts[k][t] = chk_alloc(p->size[t]);
            fd_perturb(f->pts[k][t], p->t[t], f->dir[t], fd_steps[k] * h, p->size[t]);
        }
    }
    gc_mask_kinks(p, u_op, f->pts, 4, f->r);
}

static void fd_dir_free(fd_dir *f)
{
    for (int t = 0; t < GC_MAX_TENSORS; t++) {
        free(f->dir[t]);
        for (int k = 0; k < 4; k++)
            free(f->pts[k][t]);
    }
    free(f->r);
}

/* L at the four points, then the gradient at p's point, all from one
 * layer on ctx; the error budget from p's estimates. */
static fn_status fd_sample_of(fn_context *ctx, const gc_problem *p, const fd_dir *f, double h,
                              fd_sample *s)
{
    double u_op = est_operand_roundoff(fn_context_math(ctx));
    gc_out g, est;
    gc_out_alloc(&g, p), gc_out_alloc(&est, p);
    *s = (fd_sample){0};
    fn_layer *l = NULL;
    fn_status st = gc_layer(&l, ctx, p);
    for (int k = 0; st == FN_OK && k < 4; k++)
        st = gc_objective(l, p, f->pts[k], f->r, &s->l[k]);
    if (st == FN_OK)
        st = gc_run(l, p, p->t, f->r, 0, &g);
    fn_layer_destroy(l);
    gc_estimates(p, f->r, u_op, &est);
    for (int t = 0; t < p->n; t++) {
        double *pts[4] = {f->pts[0][t], f->pts[1][t], f->pts[2][t], f->pts[3][t]};
        fd_accumulate(s, g.g[t], est.g[t], pts, p->size[t], h);
    }
    for (size_t i = 0; i < p->ny; i++)
        s->e_l += fabs(f->r[i]) * est.y[i];
    gc_out_free(&g), gc_out_free(&est);
    return st;
}

/* At least half of the objective must survive the kink mask, or the check
 * would test little. */
static int enough_weights(const double *r, size_t n)
{
    size_t live = 0;
    for (size_t i = 0; i < n; i++)
        live += r[i] != 0;
    if (2 * live < n)
        printf("    only %zu of %zu objective weights left after the kink mask\n", live, n);
    return 2 * live >= n;
}

int gc_fd(fn_context *ctx, const gc_kind *k, const gc_case *c)
{
    double u_op = est_operand_roundoff(fn_context_math(ctx)), h = fd_step(ctx);
    char layer[40], shape[64], what[32];
    snprintf(layer, sizeof layer, "%s %s fd", k->name, gc_backend_name(ctx));
    gc_problem p;
    if (!gc_problem_open(&p, k, c, ctx, layer))
        return 0;
    gc_shape(shape, sizeof shape, &p);
    chk_rng rng = chk_rng_seed(c->seed ^ 0xfdULL);
    int ok = 1;
    for (int which = 0; which <= p.n; which++) {
        fd_dir f;
        fd_dir_init(&f, &p, which < p.n ? which : -1, h, u_op, &rng);
        snprintf(what, sizeof what, "<g,d> %s", which < p.n ? p.names[which] : "all");
        fd_sample s;
        if (run_report(fd_sample_of(ctx, &p, &f, h, &s), layer) != FN_OK)
            ok = 0;
        else
            ok &= enough_weights(f.r, p.ny) & fd_verdict(layer, shape, what, h, &s);
        fd_dir_free(&f);
    }
    gc_problem_free(&p);
    return ok;
}

