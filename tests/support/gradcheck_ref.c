/* gradcheck_ref.c — tier 1 for any layer kind: central finite differences
 * on the kind's float64 reference against its analytic gradients, every
 * element of x and of each parameter. This proves the mathematics the
 * backends are then compared with. See gradcheck.h.
 *
 * Objective: L = sum_i y_i w_i with random weights w (so dy = w).
 *
 * Error measure, per tensor:
 *     max_i |fd_i - an_i| / max(|an_i|, 1e-2 * G),   G = max |an| over the
 * whole gradient of the case (all tensors). Components below 1 % of the
 * largest are measured relative to that 1 % level: for them the finite
 * difference's absolute rounding noise (below) is all there is to see, and a
 * pure relative error of a near-zero number would measure only that noise.
 * Required: <= 1e-6.
 *
 * Step h = 1e-5. The central difference's truncation error is
 * h^2/6 |L'''| ~ 2e-11 |L'''| and its rounding error is about
 * eps64 |L| / h ~ 1.1e-16 * |L| / 1e-5 ~ 1e-11 |L| (plus the sum's own
 * rounding, n eps64 sum|y w| / h, about the same); h = 1e-5 is near the
 * optimum (3 eps64 |L| / |L'''|)^(1/3) for |L|, |L'''| of order 1-100, which
 * gives total errors around 1e-9 relative: three orders below the 1e-6 bar,
 * so a formula error (which moves a gradient by O(1)) cannot hide.
 *
 * Kinks (kinds with a kink hook): the activation is not differentiable at
 * u = 0. Weights w are set to 0 where |u| < 1e-2 (those y do not enter L, so
 * their kinks cannot either), and every perturbed forward checks that no
 * weighted u changed sign; a crossing fails the test (the fixed seeds give
 * none). */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "problem.h"
#include "runner.h"

#define FD_STEP 1e-5
#define FD_REL_TOL 1e-6
#define KINK_MARGIN 1e-2

void gc_central_differences(double *theta, size_t n, gc_objective_fn f, void *arg, double *fd)
{
    for (size_t i = 0; i < n; i++) {
        double saved = theta[i];
        theta[i] = saved + FD_STEP;
        double plus = f(arg);
        theta[i] = saved - FD_STEP;
        double minus = f(arg);
        theta[i] = saved;
        fd[i] = (plus - minus) / (2 * FD_STEP);
    }
}

int gc_compare_fd(const char *layer, const char *shape, const char *tensor, const double *fd,
                  const double *an, size_t n, int cols, double scale)
{
    double floor_ = 1e-2 * scale, worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double den = fabs(an[i]) > floor_ ? fabs(an[i]) : floor_;
        double rel = den > 0 ? fabs(fd[i] - an[i]) / den : fabs(fd[i] - an[i]);
        if (!(rel <= worst)) {
            worst = rel;
            at = i;
        }
    }
    int ok = worst <= FD_REL_TOL;
    char where[48];
    snprintf(where, sizeof where, "[%zu,%zu]", at / (size_t)cols, at % (size_t)cols);
    chk_table_row(layer, shape, tensor, worst, where, "1e-6 rel (fd)", ok);
    if (!ok)
        printf("    %s %s: finite difference %.12g, analytic %.12g\n", tensor, where, fd[at],
               an[at]);
    return ok;
}

/* L at the problem's point, which the differences perturb in place. */
typedef struct ref_objective {
    const gc_problem *p;
    const double *w;  /* [batch, out] the weights of L = sum y w */
    const double *u0; /* [batch, out] the kink input unperturbed; NULL: smooth kind */
    double *y, *u;    /* scratch */
    int crossings;    /* perturbed evaluations where a weighted u changed sign */
} ref_objective;

static double objective(void *arg)
{
    ref_objective *o = arg;
    const gc_problem *p = o->p;
    p->kind->forward(p, p->t, o->y);
    double l = 0;
    for (size_t i = 0; i < p->ny; i++)
        l += o->y[i] * o->w[i];
    if (o->u0) {
        p->kind->kink_input(p, p->t, 0, o->u, NULL);
        for (size_t i = 0; i < p->ny; i++)
            if (o->w[i] != 0 && (o->u[i] > 0) != (o->u0[i] > 0))
                o->crossings++;
    }
    return l;
}

/* The weights are p's dy, zeroed where u0, u at p's point, is near its
 * kink: those y then do not enter L, so their kinks cannot either. */
static void mask_near_kinks(gc_problem *p, double *u0)
{
    p->kind->kink_input(p, p->t, 0, u0, NULL);
    for (size_t i = 0; i < p->ny; i++)
        if (fabs(u0[i]) < KINK_MARGIN)
            p->dy[i] = 0;
}

int gc_reference_fd(fn_context *ctx, const gc_kind *k, const gc_case *c)
{
    char layer[40], shape[64], tensor[20];
    snprintf(layer, sizeof layer, "%s (ref)", k->name);
    gc_problem p;
    if (!gc_problem_open(&p, k, c, ctx, layer))
        return 0;
    ref_objective o = {.p = &p, .w = p.dy, .y = chk_alloc(p.ny), .u = chk_alloc(p.ny)};
    double *u0 = NULL;
    if (k->kink_input) {
        u0 = chk_alloc(p.ny);
        mask_near_kinks(&p, u0);
        o.u0 = u0;
    }
    gc_out an, fd;
    gc_out_alloc(&an, &p), gc_out_alloc(&fd, &p);
    k->backward(&p, p.t, p.dy, an.g);
    double scale = 0;
    for (int t = 0; t < p.n; t++) {
        gc_central_differences(p.t[t], p.size[t], objective, &o, fd.g[t]);
        double m = chk_max_abs(an.g[t], p.size[t]);
        scale = m > scale ? m : scale;
    }
    gc_shape(shape, sizeof shape, &p);
    int ok = 1;
    for (int t = 0; t < p.n; t++) {
        snprintf(tensor, sizeof tensor, "d%s", p.names[t]);
        ok &= gc_compare_fd(layer, shape, tensor, fd.g[t], an.g[t], p.size[t], p.cols[t], scale);
    }
    if (o.crossings)
        printf("    %d perturbed evaluations moved a weighted u across the kink\n", o.crossings);
    ok &= o.crossings == 0;
    gc_out_free(&an), gc_out_free(&fd);
    free(o.y), free(o.u), free(u0);
    gc_problem_free(&p);
    return ok;
}

