/* test_gradcheck_bf16_model.c — the bf16 error model (tests/support/
 * estimate.h, u_op = 2^-8 and the stored z and dz) against a host
 * emulation of what the GPU's bf16 block computes, on the CPU, so that the
 * tolerances of test_gradcheck_cuda's bf16 rows are known to cover the bf16
 * arithmetic before a GPU runs them. The emulation rounds to nearest
 * bfloat16 exactly where kernels/nn/layers/block/block_products_cuda.cu and block_cuda.cu
 * do — x and W before the forward product, z (without the bias) after it,
 * dz before the dx and dW products (db summed from the rounded dz, the
 * group path's reading, the worse of the two) — and to float32 where the
 * GPU stores float32 (y, the statistics, dx, dW, db, dgamma, dbeta); its
 * sums are float64, so only the roundings the model adds for bf16 are
 * exercised (the fp32 sums' share is the fp32 rows' business). The
 * emulation runs as a CPU layer (a CPU block with its forward and backward
 * replaced) on a CPU context in math mode bf16, through the very drivers
 * of test_gradcheck_cuda: tier 2 at the block's table (tests/support/
 * kind_block.c, aligned and unaligned rows), every value within est + 4
 * u32 |ref|; tier 3 at its finite-difference rows with bf16's step. Then
 * the same emulation rounding to 5 significant bits instead of 8 must
 * leave some value beyond its bound, so the check can fail
 * (test_coarser_rounding_is_caught says why not 7). */
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
#include "gradcheck.h"
#include "kind.h"
#include "nn/layers/block/block_impl.h"
#include "problem.h"
#include "runner.h"
#include "test_main.h"

/* Round to nearest bfloat16 (ties to even), through float32 as the GPU
 * has float32 values to round; `coarse` more bits dropped for the test of
 * the test. */
static int coarse;

static double bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        const int drop = 16 + coarse;
        const uint32_t half = (1u << (drop - 1)) - 1u + ((u >> drop) & 1u);
        u = (u + half) & ~((1u << drop) - 1u);
    }
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

static double f32(double v) { return (double)(float)v; }

/* sum_i a[i * sa] b[i * sb] over i = 0 .. n-1, in that order, in float64. */
static double strided_dot(const double *a, size_t sa, const double *b, size_t sb, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[(size_t)i * sa] * b[(size_t)i * sb];
    return s;
}

typedef struct emu {
    const ref_block_dims *d;
    const double *x, *w, *b, *g, *bt, *dy;
} emu;

/* y, and the gradients into out (problem order: x, weight, bias, gamma,
 * beta at the indices given). */
static void emulate(const emu *e, double *y, double *dx, double *dw, double *db, double *dg,
                    double *dbt)
{
    const int N = e->d->batch, in = e->d->in, C = e->d->out, G = e->d->groups, K = C / G;
    const double slope = e->d->slope, eps = e->d->eps;
    double *xh = chk_alloc((size_t)N * in), *wh = chk_alloc((size_t)C * in);
    double *z = chk_alloc((size_t)N * C), *zh = chk_alloc((size_t)N * C);
    double *dz = chk_alloc((size_t)N * C), *u = chk_alloc((size_t)N * C);
    double *mu = chk_alloc((size_t)N * G), *rs = chk_alloc((size_t)N * G);
    for (size_t i = 0; i < (size_t)N * in; i++)
        xh[i] = bf16(e->x[i]);
    for (size_t i = 0; i < (size_t)C * in; i++)
        wh[i] = bf16(e->w[i]);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int k = 0; k < in; k++)
                s += xh[(size_t)n * in + k] * wh[(size_t)c * in + k];
            /* The normalisation adds the bias in float32 to the stored z
             * (with K = 1, zhat = 0 exactly only so, as on the GPU). */
            z[(size_t)n * C + c] = f32(bf16(s) + (double)(float)e->b[c]);
        }
    for (int n = 0; n < N; n++)
        for (int g = 0; g < G; g++) {
            const double *zg = z + (size_t)n * C + (size_t)g * K;
            double m = 0, v = 0;
            for (int j = 0; j < K; j++)
                m += zg[j] / K;
            m = f32(m);
            for (int j = 0; j < K; j++)
                v += (zg[j] - m) * (zg[j] - m) / K;
            mu[(size_t)n * G + g] = m;
            rs[(size_t)n * G + g] = f32(1 / sqrt(v + eps));
        }
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            const size_t i = (size_t)n * C + c, s = (size_t)n * G + c / K;
            zh[i] = (z[i] - mu[s]) * rs[s];
            u[i] = e->g[c] * zh[i] + e->bt[c];
            y[i] = f32(2 * (u[i] > 0 ? u[i] : slope * u[i]));
        }
    /* Backward: dz in float64, stored rounded; db from the rounded dz. */
    for (int n = 0; n < N; n++)
        for (int g = 0; g < G; g++) {
            double m1 = 0, m2 = 0;
            for (int j = 0; j < K; j++) {
                const size_t i = (size_t)n * C + (size_t)g * K + j;
                const double du = 2 * e->dy[i] * (u[i] > 0 ? 1 : slope);
                m1 += du * e->g[g * K + j] / K;
                m2 += du * e->g[g * K + j] * zh[i] / K;
            }
            const double r = rs[(size_t)n * G + g];
            for (int j = 0; j < K; j++) {
                const size_t i = (size_t)n * C + (size_t)g * K + j;
                const double du = 2 * e->dy[i] * (u[i] > 0 ? 1 : slope);
                dz[i] = bf16(r * (du * e->g[g * K + j] - m1 - zh[i] * m2));
            }
        }
    for (int c = 0; c < C; c++) {
        double sb = 0, sg = 0, sbt = 0;
        for (int n = 0; n < N; n++) {
            const size_t i = (size_t)n * C + c;
            const double du = 2 * e->dy[i] * (u[i] > 0 ? 1 : slope);
            sb += dz[i];
            sg += du * zh[i];
            sbt += du;
        }
        db[c] = f32(sb), dg[c] = f32(sg), dbt[c] = f32(sbt);
    }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < in; k++)
            dx[(size_t)n * in + k] = f32(strided_dot(dz + (size_t)n * C, 1, wh + k, in, C));
    for (int c = 0; c < C; c++)
        for (int k = 0; k < in; k++)
            dw[(size_t)c * in + k] = f32(strided_dot(dz + c, C, xh + k, in, N));
    free(xh), free(wh), free(z), free(zh), free(dz), free(u), free(mu), free(rs);
}

/* ---- the emulation as a layer, for the gradient-check drivers ----
 *
 * A CPU block whose forward and backward are the emulation above (its
 * parameters, caches and destroy are the CPU block's), created on a CPU
 * context in math mode bf16: the drivers then take bf16's u_op and tier-3
 * step from the context, exactly as for the GPU's bf16 rows. */

static double *to_doubles(const fn_tensor *t, size_t n)
{
    double *d = chk_alloc(n);
    chk_to_double(d, t->data, n);
    return d;
}

/* The emulation on the layer's parameters at input x (batch rows) and, when
 * dy is given, the gradients: dx assigned, parameter gradients added. */
static fn_status emu_run(fn_block *b, const fn_tensor *x, float *y, const float *dy, float *dx)
{
    const int N = x->rows, in = b->cfg.in_features, C = b->cfg.out_features;
    const ref_block_dims d = {.batch = N, .in = in, .out = C, .groups = b->cfg.groups,
                              .eps = b->cfg.eps, .slope = b->cfg.negative_slope};
    double *xd = to_doubles(x, (size_t)N * in);
    double *pd[FN_BLOCK_N_PARAMS];
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++)
        pd[i] = to_doubles(&b->params[i].value, fn_tensor_count(&b->params[i].value));
    double *dyd = chk_alloc((size_t)N * C), *yd = chk_alloc((size_t)N * C);
    if (dy)
        chk_to_double(dyd, dy, (size_t)N * C);
    double *dxd = chk_alloc((size_t)N * in), *gd[FN_BLOCK_N_PARAMS];
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++)
        gd[i] = chk_alloc(fn_tensor_count(&b->params[i].value));
    const emu e = {&d, xd, pd[FN_BLOCK_WEIGHT], pd[FN_BLOCK_BIAS], pd[FN_BLOCK_GAMMA],
                   pd[FN_BLOCK_BETA], dyd};
    emulate(&e, yd, dxd, gd[FN_BLOCK_WEIGHT], gd[FN_BLOCK_BIAS], gd[FN_BLOCK_GAMMA],
            gd[FN_BLOCK_BETA]);
    if (y)
        chk_to_float(y, yd, (size_t)N * C);
    if (dy && dx)
        chk_to_float(dx, dxd, (size_t)N * in);
    for (int i = 0; dy && i < FN_BLOCK_N_PARAMS; i++) {
        float *g = b->params[i].grad.data;
        for (size_t k = 0; k < fn_tensor_count(&b->params[i].grad); k++)
            g[k] = (float)((double)g[k] + gd[i][k]);
    }
    free(xd), free(dyd), free(yd), free(dxd);
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++)
        free(pd[i]), free(gd[i]);
    return FN_OK;
}

static fn_status emu_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_block *b = (fn_block *)l;
    b->x = *x;
    return emu_run(b, x, y->data, NULL, NULL);
}

static fn_status emu_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_block *b = (fn_block *)l;
    return emu_run(b, &b->x, NULL, dy->data, dx ? dx->data : NULL);
}

static void emu_destroy(fn_layer *l) { fn_block_cpu_ops.destroy(l); }

static const fn_layer_ops emu_ops = {
    .kind = "block",
    .forward = emu_forward,
    .backward = emu_backward,
    .destroy = emu_destroy,
};

static fn_status emu_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    const ref_block_dims d = {.batch = c->batch, .in = c->in, .out = c->out,
                              .groups = c->groups, .eps = c->eps, .slope = c->slope};
    FN_TRY(run_block_create(l, ctx, &d, c->batch));
    (*l)->ops = &emu_ops;
    return FN_OK;
}

/* The block's descriptor with the emulated layer. */
static gc_kind emu_kind(void)
{
    gc_kind k = gc_block_kind;
    k.name = "block bf16 emulated";
    k.create = emu_create;
    return k;
}

static fn_context *bf16_cpu_context(void)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, 0, FN_MATH_BF16));
    return ctx;
}

/* The emulation at case c against the reference within the bf16 estimate:
 * 1 when every value holds, each comparison a table row; *worst: the
 * largest error over its bound. */
static int check_case(fn_context *cpu, const gc_case *c, int print, double *worst)
{
    const double u_op = est_operand_roundoff(FN_MATH_BF16);
    gc_problem p;
    if (gc_problem_init(&p, &gc_block_kind, c, cpu) != FN_OK)
        fail_msg("problem: %s", fn_last_error());
    gc_mask_kinks(&p, u_op, NULL, 0, p.dy);
    gc_out got, want, est;
    gc_out_alloc(&got, &p), gc_out_alloc(&want, &p), gc_out_alloc(&est, &p);
    gc_reference(&p, p.dy, &want);
    gc_estimates(&p, p.dy, u_op, &est);
    const ref_block_dims d = {.batch = c->batch, .in = c->in, .out = c->out,
                              .groups = c->groups, .eps = c->eps, .slope = c->slope};
    const int iw = gc_index(&p, "weight"), ib = gc_index(&p, "bias"),
              ig = gc_index(&p, "gamma"), ibt = gc_index(&p, "beta");
    const emu e = {&d, p.t[0], p.t[iw], p.t[ib], p.t[ig], p.t[ibt], p.dy};
    emulate(&e, got.y, got.g[0], got.g[iw], got.g[ib], got.g[ig], got.g[ibt]);
    char shape[64];
    gc_shape(shape, sizeof shape, &p);
    int ok = 1;
    for (int i = -1; i < p.n; i++) {
        const double *a = i < 0 ? got.y : got.g[i], *r = i < 0 ? want.y : want.g[i];
        const chk_tol tol = {.atol = 1, .rtol = 4 * CHK_U32, .scale = i < 0 ? est.y : est.g[i]};
        const chk_result m = chk_measure(a, r, i < 0 ? p.ny : p.size[i], tol);
        *worst = fmax(*worst, isnan(m.worst) ? INFINITY : m.worst);
        if (print) {
            char tensor[20];
            snprintf(tensor, sizeof tensor, "%s%s", i < 0 ? "y" : "d", i < 0 ? "" : p.names[i]);
            ok &= chk_compare("block bf16 emulated", shape, tensor, a, r,
                              i < 0 ? c->batch : p.rows[i], i < 0 ? c->out : p.cols[i], tol);
        } else {
            ok &= m.ok;
        }
    }
    gc_out_free(&got), gc_out_free(&want), gc_out_free(&est);
    gc_problem_free(&p);
    return ok;
}

/* Tier 2 as test_gradcheck_cuda runs it (every case of the block's table,
 * then the unaligned ones), on the emulation; and the largest error over
 * its bound, printed. */
static void test_model_covers_emulation(void **state)
{
    fn_context *cpu = *state, *ctx = bf16_cpu_context();
    const gc_kind k = emu_kind();
    chk_table_header("tier 2: bf16 error model vs a host emulation of the bf16 block");
    coarse = 0;
    const int ok = gc_kind_cases(GC_VS_REFERENCE, ctx, NULL, &k);
    double worst = 0;
    for (size_t i = 0; i < gc_block_kind.n_cases; i++)
        check_case(cpu, &gc_block_kind.cases[i], 0, &worst);
    printf("largest error over its bound: %.3g\n", worst);
    fn_context_destroy(ctx);
    assert_true(ok);
}

/* Tier 3 as test_gradcheck_cuda runs it in bf16 (h = 1e-1, fd.h), through
 * the emulation: finite differences of bf16-rounded evaluations against
 * the emulation's own gradients. */
static void test_fd_through_emulation(void **state)
{
    (void)state;
    fn_context *ctx = bf16_cpu_context();
    const gc_kind k = emu_kind();
    chk_table_header("tier 3: finite differences through a host emulation of the bf16 block");
    const int ok = gc_kind_cases(GC_FD, ctx, NULL, &k);
    fn_context_destroy(ctx);
    assert_true(ok);
}

/* The check can fail: the model is a worst-case bound (each term's
 * rounding counted in full), measured here to leave a bf16 emulation at
 * 0.28 of it, 7-bit rounding at 0.81, 6-bit at 1.2 and 5-bit at 2.1; so a
 * rounding three bits coarser than bf16's (5 significant bits, u = 2^-5)
 * must leave some value beyond its bound. */
static void test_coarser_rounding_is_caught(void **state)
{
    fn_context *cpu = *state;
    double worst = 0;
    coarse = 3;
    for (size_t i = 0; i < gc_block_kind.n_cases; i++)
        check_case(cpu, &gc_block_kind.cases[i], 0, &worst);
    coarse = 0;
    printf("5 significant bits: largest error over its bf16 bound %.3g (must be > 1)\n", worst);
    assert_true(worst > 1);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_model_covers_emulation),
          cmocka_unit_test(test_fd_through_emulation),
          cmocka_unit_test(test_coarser_rounding_is_caught))
