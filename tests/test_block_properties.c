/* test_block_properties.c — properties that the known wrong versions of the
 * fused block break, checked through the public API on the CPU and (when a
 * GPU is present, skipped otherwise) on CUDA:
 *  - statistics are per sample: changing one sample's input leaves every
 *    other sample's output unchanged, bit for bit (batch statistics fail);
 *  - gamma and beta are per channel: with values that differ inside a group
 *    the output matches the reference, and the per-group reading of them
 *    would be far outside the tolerance (checked too, so the test can fail);
 *  - sum_{c in g} dz = 0 per sample and group: with batch 1, db == dz, so
 *    the bias gradient must sum to zero over each group; and dW = db x^T.
 * On CUDA each property is checked in fp32 and again in bf16 mode (whose
 * products round their operands to bfloat16: the same properties must hold,
 * within the bf16 error model).
 * Tolerances: tests/support/estimate.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"
#include "expect.h"
#include "fusenet/device.h"
#include "reference.h"
#include "runner.h"
#include "test_main.h"

static const ref_block_dims dims = {
    .batch = 5, .in = 7, .out = 12, .groups = 3, .eps = (double)1e-5f, .slope = (double)0.01f};

typedef struct problem {
    ref_block_dims d;
    double *x, *w, *b, *gamma, *beta, *dy;
} problem;

static void problem_init(problem *p, ref_block_dims d, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    double bound = 1 / sqrt(d.in);
    *p = (problem){.d = d};
    p->x = chk_alloc((size_t)d.batch * d.in);
    p->w = chk_alloc((size_t)d.out * d.in);
    p->b = chk_alloc(d.out);
    p->gamma = chk_alloc(d.out);
    p->beta = chk_alloc(d.out);
    p->dy = chk_alloc((size_t)d.batch * d.out);
    chk_fill(p->x, (size_t)d.batch * d.in, -1, 1, &rng);
    chk_fill(p->w, (size_t)d.out * d.in, -bound, bound, &rng);
    chk_fill(p->b, d.out, -bound, bound, &rng);
    chk_fill(p->gamma, d.out, 0.5, 1.5, &rng);
    chk_fill(p->beta, d.out, -0.5, 0.5, &rng);
    chk_fill(p->dy, (size_t)d.batch * d.out, -1, 1, &rng);
}

static void problem_free(problem *p)
{
    free(p->x), free(p->w), free(p->b), free(p->gamma), free(p->beta), free(p->dy);
}

/* A context on device in math mode (CUDA: skipped without a GPU). */
static fn_context *context_in(fn_device device, fn_math math)
{
    if (device == FN_CPU || math == FN_MATH_FP32)
        return context_or_skip(device);
    skip_without_gpu();
    fn_context *ctx = NULL;
    if (fn_context_create(&ctx, device, 0, math) != FN_OK)
        fail_msg("context: %s", fn_last_error());
    return ctx;
}

/* "block cpu", "block cuda", "block cuda bf16". */
static const char *layer_name(fn_context *ctx)
{
    if (fn_context_device(ctx) == FN_CPU)
        return "block cpu";
    return fn_context_math(ctx) == FN_MATH_BF16 ? "block cuda bf16" : "block cuda";
}

static fn_status problem_layer(fn_context *ctx, const problem *p, fn_layer **l)
{
    FN_TRY(run_block_create(l, ctx, &p->d, p->d.batch));
    FN_TRY(run_set_param(*l, "weight", p->w));
    FN_TRY(run_set_param(*l, "bias", p->b));
    FN_TRY(run_set_param(*l, "gamma", p->gamma));
    return run_set_param(*l, "beta", p->beta);
}

/* ---- statistics per sample ---- */

static void check_per_sample(fn_device device, fn_math math)
{
    fn_context *ctx = context_in(device, math);
    problem p;
    problem_init(&p, dims, 1);
    size_t ny = (size_t)p.d.batch * p.d.out;
    double *y0 = chk_alloc(ny), *y1 = chk_alloc(ny);
    fn_layer *l = NULL;
    assert_int_equal(run_report(problem_layer(ctx, &p, &l), "block"), FN_OK);
    assert_int_equal(run_report(run_forward(l, p.d.batch, p.x, y0), "forward"), FN_OK);
    /* Sample 2 becomes 100 times larger and shifted: batch statistics would
     * move every sample's mean and variance. */
    const int changed = 2;
    for (int k = 0; k < p.d.in; k++)
        p.x[changed * p.d.in + k] = (double)(float)(100 * p.x[changed * p.d.in + k] + 3);
    assert_int_equal(run_report(run_forward(l, p.d.batch, p.x, y1), "forward"), FN_OK);
    int others_same = 1, own_moved = 0;
    for (int n = 0; n < p.d.batch; n++)
        for (int c = 0; c < p.d.out; c++) {
            size_t i = (size_t)n * p.d.out + c;
            int same = memcmp(&y0[i], &y1[i], sizeof y0[i]) == 0;
            if (n != changed && !same) {
                printf("    sample %d channel %d changed: %.9g -> %.9g\n", n, c, y0[i], y1[i]);
                others_same = 0;
            }
            own_moved |= n == changed && !same;
        }
    char shape[64];
    chk_shape(shape, sizeof shape, p.d.batch, p.d.in, p.d.out, p.d.groups, p.d.slope);
    chk_table_row(layer_name(ctx), shape, "y other rows", 0, "-", "bitwise", others_same);
    fn_layer_destroy(l);
    free(y0), free(y1);
    problem_free(&p);
    fn_context_destroy(ctx);
    assert_true(own_moved); /* the change reached the layer at all */
    assert_true(others_same);
}

static void test_per_sample_cpu(void **state)
{
    (void)state;
    check_per_sample(FN_CPU, FN_MATH_FP32);
}

static void test_per_sample_cuda(void **state)
{
    (void)state;
    check_per_sample(FN_CUDA, FN_MATH_FP32);
}

static void test_per_sample_cuda_bf16(void **state)
{
    (void)state;
    check_per_sample(FN_CUDA, FN_MATH_BF16);
}

/* ---- gamma and beta per channel ---- */

/* The per-group misreading: every channel of group g uses the gamma and
 * beta of the group's first channel. */
static void per_group_params(const problem *p, double *gamma, double *beta)
{
    int k = p->d.out / p->d.groups;
    for (int c = 0; c < p->d.out; c++) {
        gamma[c] = p->gamma[c / k * k];
        beta[c] = p->beta[c / k * k];
    }
}

static void check_per_channel(fn_device device, fn_math math)
{
    fn_context *ctx = context_in(device, math);
    problem p;
    problem_init(&p, dims, 2);
    for (int c = 0; c < p.d.out; c++) { /* distinct inside every group */
        p.gamma[c] = 0.5 + 0.125 * c;
        p.beta[c] = -0.75 + 0.125 * c;
    }
    size_t ny = (size_t)p.d.batch * p.d.out;
    double *y = chk_alloc(ny), *want = chk_alloc(ny), *wrong = chk_alloc(ny), *est = chk_alloc(ny);
    double *g2 = chk_alloc(p.d.out), *b2 = chk_alloc(p.d.out);
    fn_layer *l = NULL;
    assert_int_equal(run_report(problem_layer(ctx, &p, &l), "block"), FN_OK);
    assert_int_equal(run_report(run_forward(l, p.d.batch, p.x, y), "forward"), FN_OK);
    ref_block_params rp = {p.w, p.b, p.gamma, p.beta};
    ref_block_forward(&p.d, &rp, p.x, want, NULL);
    est_block_errors(&p.d, &rp, p.x, NULL, est_operand_roundoff(math), &(est_block){.y = est});
    per_group_params(&p, g2, b2);
    ref_block_forward(&p.d, &(ref_block_params){p.w, p.b, g2, b2}, p.x, wrong, NULL);
    char shape[64];
    chk_shape(shape, sizeof shape, p.d.batch, p.d.in, p.d.out, p.d.groups, p.d.slope);
    chk_tol tol = {.atol = 1, .rtol = 4 * CHK_U32, .scale = est};
    const char *layer = layer_name(ctx);
    int ok = chk_compare(layer, shape, "y (per chan)", y, want, p.d.batch, p.d.out, tol);
    /* The discriminating power: per-group parameters must fail this rule. */
    chk_result r = chk_measure(wrong, want, ny, tol);
    printf("    per-group gamma/beta would be off by %.3g (%.3g x the tolerance)\n", r.max_err,
           r.worst);
    fn_layer_destroy(l);
    free(y), free(want), free(wrong), free(est), free(g2), free(b2);
    problem_free(&p);
    fn_context_destroy(ctx);
    assert_false(r.ok);
    assert_true(ok);
}

static void test_per_channel_cpu(void **state)
{
    (void)state;
    check_per_channel(FN_CPU, FN_MATH_FP32);
}

static void test_per_channel_cuda(void **state)
{
    (void)state;
    check_per_channel(FN_CUDA, FN_MATH_FP32);
}

static void test_per_channel_cuda_bf16(void **state)
{
    (void)state;
    check_per_channel(FN_CUDA, FN_MATH_BF16);
}

/* ---- sum_{c in g} dz = 0, observed through db (batch 1: db == dz) ---- */

/* |sum_{c in g} db_c| <= sum_{c in g} est(db_c) + 4 sqrt(K) u32 sum|db_c|:
 * the errors of the K computed values plus the rounding of this sum. Also
 * dW = db x^T with batch 1, within est(dW) + est(db)|x| + u32 |db x|. */
static int check_dz_sums(fn_context *ctx, ref_block_dims d, uint64_t seed)
{
    problem p;
    problem_init(&p, d, seed);
    double *db = chk_alloc(d.out), *dw = chk_alloc((size_t)d.out * d.in);
    double *edb = chk_alloc(d.out), *edw = chk_alloc((size_t)d.out * d.in);
    double *y = chk_alloc((size_t)d.batch * d.out);
    fn_layer *l = NULL;
    fn_status st = problem_layer(ctx, &p, &l);
    if (st == FN_OK)
        st = run_forward_backward(l, d.batch, p.x, p.dy, y, NULL);
    if (st == FN_OK)
        st = run_get_grad(l, "bias", db);
    if (st == FN_OK)
        st = run_get_grad(l, "weight", dw);
    fn_layer_destroy(l);
    int ok = run_report(st, "block") == FN_OK;
    ref_block_params rp = {p.w, p.b, p.gamma, p.beta};
    est_block_errors(&d, &rp, p.x, p.dy, est_operand_roundoff(fn_context_math(ctx)),
                     &(est_block){.dbias = edb, .dweight = edw});
    int k = d.out / d.groups;
    double worst = 0, worst_ratio = 0;
    for (int g = 0; ok && g < d.groups; g++) {
        double s = 0, abs_sum = 0, allowed = 0;
        for (int j = 0; j < k; j++) {
            s += db[g * k + j];
            abs_sum += fabs(db[g * k + j]);
            allowed += edb[g * k + j];
        }
        allowed += EST_LAMBDA * sqrt(k) * CHK_U32 * abs_sum;
        worst = fabs(s) > worst ? fabs(s) : worst;
        worst_ratio = fabs(s) / allowed > worst_ratio ? fabs(s) / allowed : worst_ratio;
        if (!(fabs(s) <= allowed)) {
            printf("    group %d: sum db = %.3g > %.3g\n", g, s, allowed);
            ok = 0;
        }
    }
    char shape[64], tol[48];
    chk_shape(shape, sizeof shape, d.batch, d.in, d.out, d.groups, d.slope);
    snprintf(tol, sizeof tol, "est (worst %.2g of it)", worst_ratio);
    const char *layer = layer_name(ctx);
    chk_table_row(layer, shape, "sum_g db", worst, "-", tol, ok);
    if (d.batch == 1 && ok) {
        double *outer = chk_alloc((size_t)d.out * d.in), *scale = chk_alloc((size_t)d.out * d.in);
        for (int c = 0; c < d.out; c++)
            for (int kk = 0; kk < d.in; kk++) {
                size_t i = (size_t)c * d.in + kk;
                outer[i] = db[c] * p.x[kk];
                scale[i] = edw[i] + edb[c] * fabs(p.x[kk]) + 2 * CHK_U32 * fabs(outer[i]);
            }
        ok &= chk_compare(layer, shape, "dW vs db x^T", dw, outer, d.out, d.in,
                          (chk_tol){.atol = 1, .rtol = 0, .scale = scale});
        free(outer), free(scale);
    }
    free(db), free(dw), free(edb), free(edw), free(y);
    problem_free(&p);
    return ok;
}

static void check_dz_zero_mean(fn_device device, fn_math math)
{
    fn_context *ctx = context_in(device, math);
    ref_block_dims one = dims, many = dims, single = dims;
    one.batch = 1;
    single.batch = 1, single.out = 32, single.groups = 1, single.in = 9;
    int ok = check_dz_sums(ctx, one, 3);
    ok &= check_dz_sums(ctx, single, 4);
    ok &= check_dz_sums(ctx, many, 5); /* db = sum_n dz sums to zero too */
    fn_context_destroy(ctx);
    assert_true(ok);
}

static void test_dz_zero_mean_cpu(void **state)
{
    (void)state;
    check_dz_zero_mean(FN_CPU, FN_MATH_FP32);
}

static void test_dz_zero_mean_cuda(void **state)
{
    (void)state;
    check_dz_zero_mean(FN_CUDA, FN_MATH_FP32);
}

static void test_dz_zero_mean_cuda_bf16(void **state)
{
    (void)state;
    check_dz_zero_mean(FN_CUDA, FN_MATH_BF16);
}

static int print_header(void **state)
{
    (void)state;
    chk_table_header("block properties");
    return 0;
}

TEST_MAIN(print_header, NULL, cmocka_unit_test(test_per_sample_cpu),
          cmocka_unit_test(test_per_sample_cuda), cmocka_unit_test(test_per_sample_cuda_bf16),
          cmocka_unit_test(test_per_channel_cpu), cmocka_unit_test(test_per_channel_cuda),
          cmocka_unit_test(test_per_channel_cuda_bf16), cmocka_unit_test(test_dz_zero_mean_cpu),
          cmocka_unit_test(test_dz_zero_mean_cuda), cmocka_unit_test(test_dz_zero_mean_cuda_bf16))
