/* test_gradcheck_cuda.c — tiers 2 and 3 of the gradient checks on the CUDA
 * backend, in math modes fp32 and tf32: (a) the block, the linear layer and
 * both losses against the float64 reference at the shapes of
 * tests/support/gradcheck.c (among them one per kernel variant the block's
 * launch plan can pick, and y, dy misaligned for the scalar kernels), (b)
 * float32 finite differences through the CUDA layers, (c) GPU against CPU on
 * the same data, and (d) bit-identical results from two runs (DESIGN.md:
 * reductions are deterministic).
 *
 * Tolerances: the per-element error model of tests/support/estimate.h. In
 * tf32 mode the matrix products round each operand to TF32 (10 stored
 * mantissa bits, unit roundoff u_op = 2^-11 ~ 4.9e-4), so every product term
 * carries up to 2 u_op relative error and a dot product of terms t_k up to
 * 4 * 2 u_op sqrt(sum t_k^2) on top of the fp32 accumulation bound: about
 * 8000 times the fp32 allowance per term, which is why tf32 rows show
 * tolerances around 1e-2 of the values where fp32 rows show 1e-5..1e-4. The
 * non-matrix kernels (normalisation, losses) stay fp32 in both modes. GPU vs
 * CPU allows the sum of both sides' estimates. Tier-3 steps: h = 1e-2 in
 * fp32, 5e-2 in tf32, for the reason in tests/support/gradcheck.c.
 *
 * Every test skips (cmocka skip(), with the reason printed) when
 * fn_cuda_device_count() == 0. */
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
#include "fusenet/device.h"
#include "gradcheck.h"
#include "runner.h"

typedef struct cuda_state {
    fn_context *cpu;
    fn_context *gpu[2]; /* fp32, tf32; NULL without a GPU */
} cuda_state;

static const fn_math modes[2] = {FN_MATH_FP32, FN_MATH_TF32};

static int setup(void **state)
{
    cuda_state *s = calloc(1, sizeof *s);
    if (!s || fn_context_create(&s->cpu, FN_CPU, 0, FN_MATH_FP32) != FN_OK)
        return -1;
    if (fn_cuda_device_count() > 0)
        for (int m = 0; m < 2; m++)
            if (fn_context_create(&s->gpu[m], FN_CUDA, 0, modes[m]) != FN_OK) {
                printf("cuda context (%s): %s\n", fn_math_name(modes[m]), fn_last_error());
                return -1;
            }
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    cuda_state *s = *state;
    for (int m = 0; m < 2; m++)
        fn_context_destroy(s->gpu[m]);
    fn_context_destroy(s->cpu);
    free(s);
    return 0;
}

/* Every test starts here: no GPU, no test. */
static cuda_state *need_gpu(void **state)
{
    cuda_state *s = *state;
    if (!s->gpu[0]) {
        printf("skipped: fn_cuda_device_count() == 0, no CUDA device to test\n");
        skip();
    }
    return s;
}

static void test_block_vs_reference(void **state)
{
    cuda_state *s = need_gpu(state);
    int ok = 1;
    for (int m = 0; m < 2; m++) {
        char title[80];
        snprintf(title, sizeof title, "tier 2: CUDA block (%s) vs float64 reference",
                 fn_math_name(modes[m]));
        chk_table_header(title);
        ok &= gc_block_cases_vs_reference(s->gpu[m]);
    }
    assert_true(ok);
}

static void test_linear_and_losses_vs_reference(void **state)
{
    cuda_state *s = need_gpu(state);
    int ok = 1;
    for (int m = 0; m < 2; m++) {
        chk_table_header(m ? "tier 2: CUDA linear, losses (tf32)" : "tier 2: CUDA linear, losses (fp32)");
        ok &= gc_linear_vs_reference(s->gpu[m], 1, 7, 3, 31);
        ok &= gc_linear_vs_reference(s->gpu[m], 9, 33, 10, 32);
        ok &= gc_linear_vs_reference(s->gpu[m], 64, 128, 10, 33);
        ok &= gc_linear_vs_reference(s->gpu[m], 257, 515, 10, 37);
        ok &= gc_losses_vs_reference(s->gpu[m], 1, 2, 3, 34);
        ok &= gc_losses_vs_reference(s->gpu[m], 7, 10, 3, 35);
        ok &= gc_losses_vs_reference(s->gpu[m], 16, 5, 50, 36);
        ok &= gc_losses_vs_reference(s->gpu[m], 1025, 1000, 5, 38);
    }
    assert_true(ok);
}

static void test_block_fd(void **state)
{
    cuda_state *s = need_gpu(state);
    int ok = 1;
    for (int m = 0; m < 2; m++) {
        chk_table_header(m ? "tier 3: finite differences through the CUDA block (tf32)"
                           : "tier 3: finite differences through the CUDA block (fp32)");
        ok &= gc_block_cases_fd(s->gpu[m]);
    }
    assert_true(ok);
}

static void test_linear_and_losses_fd(void **state)
{
    cuda_state *s = need_gpu(state);
    int ok = 1;
    for (int m = 0; m < 2; m++) {
        chk_table_header(m ? "tier 3: CUDA linear, losses (tf32)" : "tier 3: CUDA linear, losses (fp32)");
        ok &= gc_linear_fd(s->gpu[m], 5, 9, 4, 41);
        ok &= gc_linear_fd(s->gpu[m], 1, 16, 10, 42);
        ok &= gc_losses_fd(s->gpu[m], 6, 5, 43);
    }
    assert_true(ok);
}

static void test_block_gpu_vs_cpu(void **state)
{
    cuda_state *s = need_gpu(state);
    int ok = 1;
    for (int m = 0; m < 2; m++) {
        chk_table_header(m ? "CUDA (tf32) block vs CPU block" : "CUDA (fp32) block vs CPU block");
        for (size_t i = 0; i < gc_n_block_cases; i++)
            ok &= gc_block_cross(s->gpu[m], s->cpu, &gc_block_cases[i]);
    }
    assert_true(ok);
}

/* y, dx and the four parameter gradients of one run, as floats. */
static fn_status run_once(fn_context *ctx, const ref_block_dims *d, double *const *t,
                          const double *dy, double *out)
{
    static const char *const names[4] = {"weight", "bias", "gamma", "beta"};
    size_t ny = (size_t)d->batch * d->out, nx = (size_t)d->batch * d->in;
    size_t sizes[4] = {(size_t)d->out * d->in, d->out, d->out, d->out};
    fn_layer *l = NULL;
    fn_status st = run_block_create(&l, ctx, d, d->batch);
    for (int i = 0; st == FN_OK && i < 4; i++)
        st = run_set_param(l, names[i], t[i + 1]);
    if (st == FN_OK)
        st = run_forward_backward(l, d->batch, t[0], dy, out, out + ny);
    double *g = out + ny + nx;
    for (int i = 0; st == FN_OK && i < 4; i++) {
        st = run_get_grad(l, names[i], g);
        g += sizes[i];
    }
    fn_layer_destroy(l);
    return st;
}

/* DESIGN.md: no float atomics, a fixed reduction order, so one input gives
 * one output, bit for bit, run after run. */
static void test_block_deterministic(void **state)
{
    cuda_state *s = need_gpu(state);
    ref_block_dims d = {.batch = 257, .in = 300, .out = 1024, .groups = 64,
                        .eps = (double)1e-5f, .slope = (double)0.01f};
    size_t sizes[5] = {(size_t)d.batch * d.in, (size_t)d.out * d.in, d.out, d.out, d.out};
    size_t total = (size_t)d.batch * d.out + sizes[0] + sizes[1] + 3 * (size_t)d.out;
    chk_rng rng = chk_rng_seed(77);
    double *t[5], *dy = chk_alloc((size_t)d.batch * d.out);
    for (int i = 0; i < 5; i++) {
        t[i] = chk_alloc(sizes[i]);
        chk_fill(t[i], sizes[i], i == 3 ? 0.5 : -0.1, i == 3 ? 1.5 : 0.1, &rng);
    }
    chk_fill(dy, (size_t)d.batch * d.out, -1, 1, &rng);
    chk_table_header("CUDA block: two runs, bit for bit");
    int ok = 1;
    for (int m = 0; m < 2; m++) {
        double *a = chk_alloc(total), *b = chk_alloc(total);
        ok &= run_report(run_once(s->gpu[m], &d, t, dy, a), "first run") == FN_OK;
        ok &= run_report(run_once(s->gpu[m], &d, t, dy, b), "second run") == FN_OK;
        size_t differ = 0, first = 0;
        for (size_t i = 0; i < total; i++)
            if (memcmp(&a[i], &b[i], sizeof a[i]) != 0 && differ++ == 0)
                first = i;
        char shape[64], at[48];
        chk_shape(shape, sizeof shape, d.batch, d.in, d.out, d.groups, d.slope);
        snprintf(at, sizeof at, "%zu", first);
        chk_table_row(m ? "block cuda tf32" : "block cuda fp32", shape, "y,dx,dW,db,dg,db",
                      differ ? fabs(a[first] - b[first]) : 0, differ ? at : "-", "bitwise", !differ);
        if (differ)
            printf("    %zu of %zu values differ between two runs\n", differ, total);
        ok &= !differ;
        free(a), free(b);
    }
    for (int i = 0; i < 5; i++)
        free(t[i]);
    free(dy);
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_vs_reference),
        cmocka_unit_test(test_linear_and_losses_vs_reference),
        cmocka_unit_test(test_block_fd),
        cmocka_unit_test(test_linear_and_losses_fd),
        cmocka_unit_test(test_block_gpu_vs_cpu),
        cmocka_unit_test(test_block_deterministic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
