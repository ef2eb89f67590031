/* test_gradcheck_reference.c — tier 1 of the gradient checks: central finite
 * differences on the float64 reference (tests/support/reference.c) against
 * its analytic gradients, for every layer kind (tests/support/kinds.c: x and
 * each parameter, at the descriptor's tier-1 shapes) and both losses (their
 * inputs). This proves the mathematics the backends are then compared with.
 * Step, error measure (<= 1e-6 relative, with a floor at 1 % of the largest
 * component) and the handling of kinks: tests/support/gradcheck_ref.c. The
 * CPU context only tells the driver each layer's parameter list. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "expect.h"
#include "fusenet/device.h"
#include "gradcheck.h"
#include "reference.h"
#include "test_main.h"

static void test_layers_fd(void **state)
{
    assert_true(gc_kinds_run(GC_REFERENCE_FD, *state, NULL,
                             "tier 1: finite differences on the float64 reference, %s", NULL));
}

/* sum_{c in g} dz = 0 for every sample and group: the normalisation removes
 * the group mean, so its gradient has none. Rounding in float64 over K terms
 * of size |dz|: bound K * eps64 * sum|dz| with a factor 4 to spare. */
static void test_block_dz_sums_to_zero(void **state)
{
    (void)state;
    ref_block_dims d = {.batch = 3, .in = 5, .out = 12, .groups = 3, .eps = 1e-5, .slope = 0.01};
    size_t nx = (size_t)d.batch * d.in, nw = (size_t)d.out * d.in, ny = (size_t)d.batch * d.out;
    double bound = 1.0 / sqrt(d.in);
    double *x = chk_alloc(nx), *w = chk_alloc(nw), *b = chk_alloc(d.out);
    double *gamma = chk_alloc(d.out), *beta = chk_alloc(d.out), *dy = chk_alloc(ny);
    double *dz = chk_alloc(ny);
    chk_rng rng = chk_rng_seed(7);
    chk_fill(x, nx, -1, 1, &rng);
    chk_fill(w, nw, -bound, bound, &rng);
    chk_fill(b, d.out, -bound, bound, &rng);
    chk_fill(gamma, d.out, 0.5, 1.5, &rng);
    chk_fill(beta, d.out, -0.5, 0.5, &rng);
    chk_fill(dy, ny, -1, 1, &rng);
    ref_block_params params = {w, b, gamma, beta};
    ref_block_backward(&d, &params, x, dy, &(ref_block_grads){.dz = dz});
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
    free(x), free(w), free(b), free(gamma), free(beta), free(dy), free(dz);
    assert_true(ok);
}

/* ---- the losses ---- */

typedef struct loss_problem {
    int rows, cols;
    double *pred, *target;
    int32_t *labels;
    double *unit;             /* [rows, cols] in [0, 1]: bce's targets */
    const double *pos_weight; /* [cols] or NULL: bce's */
} loss_problem;

static double mse_objective(void *ctx)
{
    loss_problem *p = ctx;
    return ref_mse((size_t)p->rows * p->cols, p->pred, p->target, NULL);
}

static double huber_objective(void *ctx)
{
    loss_problem *p = ctx;
    return ref_huber((size_t)p->rows * p->cols, p->pred, p->target, 1.0, NULL);
}

static const double smooth_w[5] = {0.5, 1, 1.5, 2, 0.25};

static double smoothed_objective(void *ctx)
{
    loss_problem *p = ctx;
    return ref_cross_entropy_smoothed(p->rows, p->cols, p->pred, p->labels, smooth_w, 0.1, NULL);
}

/* BCE's targets: p->target (in [-3, 3]) mapped onto [0, 1]. */
static double bce_objective(void *ctx)
{
    loss_problem *p = ctx;
    return ref_bce(p->rows, p->cols, p->pred, p->unit, p->pos_weight, NULL);
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
    gc_central_differences(p.pred, n, mse_objective, &p, fd);
    ok &= gc_compare_fd("mse (ref)", shape, "dpred", fd, an, n, p.cols, chk_max_abs(an, n));
    ref_huber(n, p.pred, p.target, 1.0, an);
    gc_central_differences(p.pred, n, huber_objective, &p, fd);
    ok &= gc_compare_fd("huber (ref)", shape, "dpred", fd, an, n, p.cols, chk_max_abs(an, n));
    ref_cross_entropy(p.rows, p.cols, p.pred, p.labels, an);
    gc_central_differences(p.pred, n, cross_entropy_objective, &p, fd);
    ok &= gc_compare_fd("xent (ref)", shape, "dlogits", fd, an, n, p.cols, chk_max_abs(an, n));
    ref_cross_entropy_smoothed(p.rows, p.cols, p.pred, p.labels, smooth_w, 0.1, an);
    gc_central_differences(p.pred, n, smoothed_objective, &p, fd);
    ok &= gc_compare_fd("xent w+ls (ref)", shape, "dlogits", fd, an, n, p.cols,
                        chk_max_abs(an, n));
    p.unit = chk_alloc(n);
    for (size_t i = 0; i < n; i++)
        p.unit[i] = i % 3 == 0 ? (p.target[i] > 0) : (p.target[i] + 3) / 6;
    for (int k = 0; k < 2; k++) {
        p.pos_weight = k ? smooth_w : NULL;
        ref_bce(p.rows, p.cols, p.pred, p.unit, p.pos_weight, an);
        gc_central_differences(p.pred, n, bce_objective, &p, fd);
        ok &= gc_compare_fd(k ? "bce pw (ref)" : "bce (ref)", shape, "dlogits", fd, an, n, p.cols,
                            chk_max_abs(an, n));
    }
    free(an), free(fd), free(p.pred), free(p.target), free(p.labels), free(p.unit);
    assert_true(ok);
}

/* The reference's stable form against the textbook one, -(p y log s(x) +
 * (1 - y) log(1 - s(x))), where the latter is accurate (|x| <= 8), and its
 * value at logits of +-1e3 finite (the textbook form's log(0) is -inf). */
static void test_bce_stable_form(void **state)
{
    (void)state;
    const double xs[] = {-8, -2.5, -0.1, 0, 0.3, 4, 8}, ys[] = {0, 0.25, 1};
    const double pw[] = {1, 3};
    for (size_t a = 0; a < sizeof xs / sizeof xs[0]; a++)
        for (size_t b = 0; b < sizeof ys / sizeof ys[0]; b++)
            for (size_t c = 0; c < 2; c++) {
                const double x = xs[a], y = ys[b], s = 1 / (1 + exp(-x));
                const double want = -(pw[c] * y * log(s) + (1 - y) * log(1 - s));
                const double got = ref_bce(1, 1, &x, &y, &pw[c], NULL);
                assert_true(fabs(got - want) <= 1e-12 * (1 + fabs(want)));
            }
    const double big[2] = {1e3, -1e3}, t[2] = {0, 1};
    double g[2];
    const double v = ref_bce(1, 2, big, t, NULL, g);
    assert_true(fabs(v - 1e3) <= 1e-9);
    assert_true(fabs(g[0] - 0.5) <= 1e-12 && fabs(g[1] + 0.5) <= 1e-12);
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

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_layers_fd),
          cmocka_unit_test(test_block_dz_sums_to_zero), cmocka_unit_test(test_losses_fd),
          cmocka_unit_test(test_cross_entropy_large_logits), cmocka_unit_test(test_bce_stable_form))
