/* test_gradcheck_reference.c — tier 1 of the gradient checks: central finite
 * differences on the float64 reference (tests/support/reference.c) against
 * its analytic gradients, for the block (x, W, b, gamma, beta), the linear
 * layer (x, W, b) and both losses (their inputs). This proves the
 * mathematics the backends are then compared with.
 *
 * Objective: L = sum_i y_i w_i with random weights w (so dy = w), or the loss
 * itself for the losses.
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
 * Kinks: leaky_relu is not differentiable at u = 0. Weights w are set to 0
 * where |u| < 1e-2 (those y do not enter L, so their kinks cannot either),
 * and every perturbed forward checks that no weighted u changed sign; a
 * crossing fails the test (the fixed seeds give none). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "reference.h"

#define FD_STEP 1e-5
#define FD_REL_TOL 1e-6
#define KINK_MARGIN 1e-2

typedef double (*objective_fn)(void *ctx);

/* Central differences of f with respect to theta[0..n), which f reads. */
static void fd_gradient(double *theta, size_t n, objective_fn f, void *ctx, double *fd)
{
    for (size_t i = 0; i < n; i++) {
        double saved = theta[i];
        theta[i] = saved + FD_STEP;
        double plus = f(ctx);
        theta[i] = saved - FD_STEP;
        double minus = f(ctx);
        theta[i] = saved;
        fd[i] = (plus - minus) / (2 * FD_STEP);
    }
}

/* One table row for one tensor, with the error measure of the header. */
static int compare_fd(const char *layer, const char *shape, const char *tensor,
                      const double *fd, const double *an, size_t n, int cols, double scale)
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

/* ---- the block ---- */

typedef struct block_problem {
    ref_block_dims d;
    double *x, *w, *b, *gamma, *beta; /* the point, perturbed in place */
    double *weights;                  /* [batch, out] the w of L = sum y w */
    double *u0;                       /* [batch, out] u at the unperturbed point */
    double *y, *u;                    /* scratch */
    int crossings;                    /* perturbed evaluations where a weighted u changed sign */
} block_problem;

static double block_objective(void *ctx)
{
    block_problem *p = ctx;
    ref_block_params params = {p->w, p->b, p->gamma, p->beta};
    ref_block_forward(&p->d, &params, p->x, p->y, &(ref_block_cache){.u = p->u});
    double l = 0;
    size_t count = (size_t)p->d.batch * p->d.out;
    for (size_t i = 0; i < count; i++) {
        l += p->y[i] * p->weights[i];
        if (p->weights[i] != 0 && (p->u[i] > 0) != (p->u0[i] > 0))
            p->crossings++;
    }
    return l;
}

static void block_problem_init(block_problem *p, ref_block_dims d, uint64_t seed)
{
    size_t nx = (size_t)d.batch * d.in, ny = (size_t)d.batch * d.out;
    chk_rng rng = chk_rng_seed(seed);
    double bound = 1.0 / sqrt(d.in);
    *p = (block_problem){.d = d};
    p->x = chk_alloc(nx);
    p->w = chk_alloc((size_t)d.out * d.in);
    p->b = chk_alloc(d.out);
    p->gamma = chk_alloc(d.out);
    p->beta = chk_alloc(d.out);
    p->weights = chk_alloc(ny);
    p->u0 = chk_alloc(ny);
    p->y = chk_alloc(ny);
    p->u = chk_alloc(ny);
    chk_fill(p->x, nx, -1, 1, &rng);
    chk_fill(p->w, (size_t)d.out * d.in, -bound, bound, &rng);
    chk_fill(p->b, d.out, -bound, bound, &rng);
    chk_fill(p->gamma, d.out, 0.5, 1.5, &rng);
    chk_fill(p->beta, d.out, -0.5, 0.5, &rng);
    chk_fill(p->weights, ny, -1, 1, &rng);
    ref_block_params params = {p->w, p->b, p->gamma, p->beta};
    ref_block_forward(&d, &params, p->x, p->y, &(ref_block_cache){.u = p->u0});
    for (size_t i = 0; i < ny; i++)
        if (fabs(p->u0[i]) < KINK_MARGIN)
            p->weights[i] = 0;
}

static void block_problem_free(block_problem *p)
{
    free(p->x), free(p->w), free(p->b), free(p->gamma), free(p->beta);
    free(p->weights), free(p->u0), free(p->y), free(p->u);
}

/* Finite differences for all five tensors of one block shape. */
static int check_block_case(ref_block_dims d, uint64_t seed)
{
    block_problem p;
    block_problem_init(&p, d, seed);
    size_t sizes[5] = {(size_t)d.batch * d.in, (size_t)d.out * d.in, d.out, d.out, d.out};
    int cols[5] = {d.in, d.in, d.out, d.out, d.out};
    double *theta[5] = {p.x, p.w, p.b, p.gamma, p.beta};
    const char *names[5] = {"dx", "dW", "db", "dgamma", "dbeta"};
    double *an[5], *fd[5];
    for (int t = 0; t < 5; t++)
        an[t] = chk_alloc(sizes[t]), fd[t] = chk_alloc(sizes[t]);
    ref_block_params params = {p.w, p.b, p.gamma, p.beta};
    ref_block_backward(&d, &params, p.x, p.weights,
                       &(ref_block_grads){.dx = an[0], .dweight = an[1], .dbias = an[2],
                                          .dgamma = an[3], .dbeta = an[4]});
    double scale = 0;
    for (int t = 0; t < 5; t++) {
        fd_gradient(theta[t], sizes[t], block_objective, &p, fd[t]);
        double m = chk_max_abs(an[t], sizes[t]);
        scale = m > scale ? m : scale;
    }
    char shape[64];
    chk_shape(shape, sizeof shape, d.batch, d.in, d.out, d.groups, d.slope);
    int ok = 1;
    for (int t = 0; t < 5; t++)
        ok &= compare_fd("block (ref)", shape, names[t], fd[t], an[t], sizes[t], cols[t], scale);
    if (p.crossings)
        printf("    %d perturbed evaluations moved a weighted u across the kink\n", p.crossings);
    ok &= p.crossings == 0;
    for (int t = 0; t < 5; t++)
        free(an[t]), free(fd[t]);
    block_problem_free(&p);
    return ok;
}

static void test_block_fd(void **state)
{
    (void)state;
    static const ref_block_dims cases[] = {
        {.batch = 3, .in = 5, .out = 6, .groups = 2, .eps = 1e-5, .slope = 0.01},
        {.batch = 1, .in = 7, .out = 9, .groups = 3, .eps = 1e-5, .slope = 0.2},
        {.batch = 4, .in = 3, .out = 8, .groups = 1, .eps = 1e-5, .slope = 0.01},
        {.batch = 2, .in = 4, .out = 5, .groups = 5, .eps = 1e-5, .slope = 0.01}, /* K = 1 */
        {.batch = 3, .in = 6, .out = 16, .groups = 1, .eps = 1e-5, .slope = 0},   /* K = 16 */
        {.batch = 2, .in = 5, .out = 12, .groups = 3, .eps = 1e-5, .slope = 1},
        {.batch = 2, .in = 4, .out = 6, .groups = 2, .eps = 0.5, .slope = 0.01}, /* eps matters */
    };
    chk_table_header("tier 1: finite differences on the float64 reference, block");
    int ok = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ok &= check_block_case(cases[i], 100 + i);
    assert_true(ok);
}

/* sum_{c in g} dz = 0 for every sample and group: the normalisation removes
 * the group mean, so its gradient has none. Rounding in float64 over K terms
 * of size |dz|: bound K * eps64 * sum|dz| with a factor 4 to spare. */
static void test_block_dz_sums_to_zero(void **state)
{
    (void)state;
    ref_block_dims d = {.batch = 3, .in = 5, .out = 12, .groups = 3, .eps = 1e-5, .slope = 0.01};
    block_problem p;
    block_problem_init(&p, d, 7);
    double *dz = chk_alloc((size_t)d.batch * d.out);
    ref_block_params params = {p.w, p.b, p.gamma, p.beta};
    ref_block_backward(&d, &params, p.x, p.weights, &(ref_block_grads){.dz = dz});
    int k = d.out / d.groups, ok = 1;
    double worst = 0;
    for (int n = 0; n < d.batch; n++)
        for (int g = 0; g < d.groups; g++) {
            double s = 0, a = 0;
            for (int j = 0; j < k; j++)
                s += dz[(size_t)n * d.out + g * k + j], a += fabs(dz[(size_t)n * d.out + g * k + j]);
            worst = fabs(s) > worst ? fabs(s) : worst;
            ok &= fabs(s) <= 4 * k * 0x1p-53 * a;
        }
    char shape[64];
    chk_shape(shape, sizeof shape, d.batch, d.in, d.out, d.groups, d.slope);
    chk_table_row("block (ref)", shape, "sum_g dz", worst, "-", "4 K eps64 sum|dz|", ok);
    free(dz);
    block_problem_free(&p);
    assert_true(ok);
}

/* ---- the linear layer ---- */

typedef struct linear_problem {
    int batch, in, out;
    double *x, *w, *b, *weights, *y;
} linear_problem;

static double linear_objective(void *ctx)
{
    linear_problem *p = ctx;
    ref_linear_forward(p->batch, p->in, p->out, p->w, p->b, p->x, p->y);
    double l = 0;
    for (size_t i = 0; i < (size_t)p->batch * p->out; i++)
        l += p->y[i] * p->weights[i];
    return l;
}

static void test_linear_fd(void **state)
{
    (void)state;
    linear_problem p = {.batch = 3, .in = 7, .out = 5};
    size_t sizes[3] = {(size_t)p.batch * p.in, (size_t)p.out * p.in, p.out};
    int cols[3] = {p.in, p.in, p.out};
    chk_rng rng = chk_rng_seed(11);
    p.x = chk_alloc(sizes[0]), p.w = chk_alloc(sizes[1]), p.b = chk_alloc(sizes[2]);
    p.weights = chk_alloc((size_t)p.batch * p.out), p.y = chk_alloc((size_t)p.batch * p.out);
    chk_fill(p.x, sizes[0], -1, 1, &rng);
    chk_fill(p.w, sizes[1], -0.4, 0.4, &rng);
    chk_fill(p.b, sizes[2], -0.4, 0.4, &rng);
    chk_fill(p.weights, (size_t)p.batch * p.out, -1, 1, &rng);
    double *theta[3] = {p.x, p.w, p.b}, *an[3], *fd[3];
    const char *names[3] = {"dx", "dW", "db"};
    for (int t = 0; t < 3; t++)
        an[t] = chk_alloc(sizes[t]), fd[t] = chk_alloc(sizes[t]);
    ref_linear_backward(p.batch, p.in, p.out, p.w, p.x, p.weights, an[0], an[1], an[2]);
    double scale = 0;
    for (int t = 0; t < 3; t++) {
        fd_gradient(theta[t], sizes[t], linear_objective, &p, fd[t]);
        double m = chk_max_abs(an[t], sizes[t]);
        scale = m > scale ? m : scale;
    }
    char shape[64];
    chk_shape(shape, sizeof shape, p.batch, p.in, p.out, 0, -1);
    chk_table_header("tier 1: finite differences on the float64 reference, linear");
    int ok = 1;
    for (int t = 0; t < 3; t++) {
        ok &= compare_fd("linear (ref)", shape, names[t], fd[t], an[t], sizes[t], cols[t], scale);
        free(an[t]), free(fd[t]);
    }
    free(p.x), free(p.w), free(p.b), free(p.weights), free(p.y);
    assert_true(ok);
}

/* ---- the losses ---- */

typedef struct loss_problem {
    int rows, cols;
    double *pred, *target;
    int32_t *labels;
} loss_problem;

static double mse_objective(void *ctx)
{
    loss_problem *p = ctx;
    return ref_mse((size_t)p->rows * p->cols, p->pred, p->target, NULL);
}

static double cross_entropy_objective(void *ctx)
{
    loss_problem *p = ctx;
    return ref_cross_entropy(p->rows, p->cols, p->pred, p->labels, NULL);
}

static void test_losses_fd(void **state)
{
    (void)state;
    loss_problem p = {.rows = 4, .cols = 5};
    size_t n = (size_t)p.rows * p.cols;
    chk_rng rng = chk_rng_seed(13);
    p.pred = chk_alloc(n), p.target = chk_alloc(n);
    p.labels = calloc((size_t)p.rows, sizeof *p.labels);
    assert_non_null(p.labels);
    chk_fill(p.pred, n, -3, 3, &rng);
    chk_fill(p.target, n, -3, 3, &rng);
    for (int i = 0; i < p.rows; i++)
        p.labels[i] = (int32_t)(chk_rng_next(&rng) % (uint64_t)p.cols);
    double *an = chk_alloc(n), *fd = chk_alloc(n);
    char shape[64];
    chk_shape(shape, sizeof shape, p.rows, p.cols, p.cols, 0, -1);
    chk_table_header("tier 1: finite differences on the float64 reference, losses");
    int ok = 1;
    ref_mse(n, p.pred, p.target, an);
    fd_gradient(p.pred, n, mse_objective, &p, fd);
    ok &= compare_fd("mse (ref)", shape, "dpred", fd, an, n, p.cols, chk_max_abs(an, n));
    ref_cross_entropy(p.rows, p.cols, p.pred, p.labels, an);
    fd_gradient(p.pred, n, cross_entropy_objective, &p, fd);
    ok &= compare_fd("xent (ref)", shape, "dlogits", fd, an, n, p.cols, chk_max_abs(an, n));
    free(an), free(fd), free(p.pred), free(p.target), free(p.labels);
    assert_true(ok);
}

/* Stability of the reference itself: logits of 1e3 must not overflow exp. */
static void test_cross_entropy_large_logits(void **state)
{
    (void)state;
    double logits[3] = {1000, 999, 998};
    int32_t label = 0;
    double l = ref_cross_entropy(1, 3, logits, &label, NULL);
    double expected = log(1 + exp(-1.0) + exp(-2.0));
    assert_true(isfinite(l));
    assert_true(fabs(l - expected) <= 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_fd),
        cmocka_unit_test(test_block_dz_sums_to_zero),
        cmocka_unit_test(test_linear_fd),
        cmocka_unit_test(test_losses_fd),
        cmocka_unit_test(test_cross_entropy_large_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
