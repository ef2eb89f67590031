/* test_gradcheck_cuda.c — tiers 2 and 3 of the gradient checks on the CUDA
 * backend, in math modes fp32, tf32 and bf16, parallel to test_gradcheck_cpu.c:
 * (a) every layer kind (tests/support/kinds.c) and both losses against the
 * float64 reference at the shapes of their descriptors (among the block's
 * one per kernel variant its launch plan can pick, and y, dy misaligned for
 * the scalar kernels), (b) float32 finite differences through the CUDA
 * layers and losses, (c) GPU against CPU on the same data, and (d)
 * bit-identical block results from two runs (DESIGN.md: reductions are
 * deterministic).
 *
 * Tolerances: the per-element error model of tests/support/estimate.h. In
 * tf32 mode the matrix products round each operand to TF32 (10 stored
 * mantissa bits, unit roundoff u_op = 2^-11 ~ 4.9e-4), so every product term
 * carries up to 2 u_op relative error and a dot product of terms t_k up to
 * 4 * 2 u_op sqrt(sum t_k^2) on top of the fp32 accumulation bound: about
 * 8000 times the fp32 allowance per term, which is why tf32 rows show
 * tolerances around 1e-2 of the values where fp32 rows show 1e-5..1e-4. The
 * non-matrix kernels (normalisation, losses) stay fp32 in every mode. In
 * bf16 mode the operands are rounded to nearest bfloat16 (u_op = 2^-8, 8
 * times TF32's 2^-11 by rounding, 4 times its 2^-10 allowance for
 * truncation): every product term carries up to 2^-7 + 2^-16 relative
 * error, so bf16 rows show tolerances about 4 times the tf32 ones, a few
 * 1e-2 of the values. GPU vs CPU allows the sum of both sides' estimates.
 * Tier-3 steps: h = 1e-2 in fp32, 5e-2 in tf32, 1e-1 in bf16, for the
 * reason in tests/support/fd.h (which also says why bf16's tier-3 rows are
 * weak: tier 2 carries its accuracy). test_gradcheck_bf16_model runs the
 * bf16 rows' drivers and tolerances on a host emulation of the bf16 block,
 * so they are known to hold for the bf16 arithmetic itself.
 *
 * Every test skips (cmocka skip(), with the reason printed) when
 * fn_cuda_device_count() == 0, and the program then exits 77, which ctest
 * shows as skipped. */
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
#include "expect.h"
#include "fusenet/device.h"
#include "gradcheck.h"
#include "runner.h"
#include "test_main.h"

enum { N_MODES = 3 };

typedef struct cuda_state {
    fn_context *cpu;
    fn_context *gpu[N_MODES]; /* one per modes[]; NULL without a GPU */
} cuda_state;

static const fn_math modes[N_MODES] = {FN_MATH_FP32, FN_MATH_TF32, FN_MATH_BF16};

static int setup(void **state)
{
    cuda_state *s = calloc(1, sizeof *s);
    if (!s || fn_context_create(&s->cpu, FN_CPU, 0, FN_MATH_FP32) != FN_OK)
        return -1;
    if (fn_cuda_device_count() > 0)
        for (int m = 0; m < N_MODES; m++)
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
    for (int m = 0; m < N_MODES; m++)
        fn_context_destroy(s->gpu[m]);
    fn_context_destroy(s->cpu);
    free(s);
    return 0;
}

/* Every test starts here: no GPU, no test. */
static cuda_state *need_gpu(void **state)
{
    cuda_state *s = *state;
    if (!s->gpu[0])
        skip_without_gpu(); /* setup made the contexts whenever there is a GPU */
    assert_non_null(s->gpu[0]);
    return s;
}

/* "tier 2: CUDA block (tf32) vs float64 reference" and the like. */
static const gc_tier_row tiers[] = {
    {GC_VS_REFERENCE, "tier 2: CUDA %s (%s) vs float64 reference"},
    {GC_LOSSES_VS_REFERENCE, "tier 2: CUDA %s (%s) vs float64 reference"},
    {GC_FD, "tier 3: finite differences through the CUDA %s (%s)"},
    {GC_LOSSES_FD, "tier 3: finite differences through the CUDA %s (%s)"},
    {GC_CROSS, "CUDA %s (%s) vs the CPU one"},
};

/* Every tier in every math mode. */
static void test_tiers(void **state)
{
    const cuda_state *s = need_gpu(state);
    int ok = 1;
    for (int m = 0; m < N_MODES; m++)
        ok &= gc_tiers_run(tiers, sizeof tiers / sizeof tiers[0], s->gpu[m], s->cpu,
                           fn_math_name(modes[m]));
    assert_true(ok);
}

/* The values of two runs that differ bit for bit (y, then every gradient
 * in the problem's order, as one flat sequence); *first: the first such. */
static size_t count_differences(const gc_problem *p, const gc_out *a, const gc_out *b,
                                size_t *first, double *diff)
{
    size_t differ = 0, at = 0;
    for (int t = -1; t < p->n; t++) {
        const double *x = t < 0 ? a->y : a->g[t], *y = t < 0 ? b->y : b->g[t];
        size_t n = t < 0 ? p->ny : p->size[t];
        for (size_t i = 0; i < n; i++, at++)
            if (memcmp(&x[i], &y[i], sizeof x[i]) != 0 && differ++ == 0) {
                *first = at;
                *diff = fabs(x[i] - y[i]);
            }
    }
    return differ;
}

/* One kind's case, run twice on a GPU context: every value bit for bit. */
static int two_runs_same(fn_context *gpu, const gc_kind *kind, const gc_case *c)
{
    char layer[40], shape[64], at[48];
    snprintf(layer, sizeof layer, "%s %s", kind->name, gc_backend_name(gpu));
    gc_problem p;
    if (!gc_problem_open(&p, kind, c, gpu, layer))
        return 0;
    gc_out a, b;
    gc_out_alloc(&a, &p), gc_out_alloc(&b, &p);
    int ran = run_report(gc_problem_run(gpu, &p, p.dy, 0, &a), "first run") == FN_OK;
    ran &= run_report(gc_problem_run(gpu, &p, p.dy, 0, &b), "second run") == FN_OK;
    size_t first = 0, total = p.ny;
    for (int t = 0; t < p.n; t++)
        total += p.size[t];
    double diff = 0;
    size_t differ = ran ? count_differences(&p, &a, &b, &first, &diff) : 0;
    gc_shape(shape, sizeof shape, &p);
    snprintf(at, sizeof at, "%zu", first);
    chk_table_row(layer, shape, "y and every d", diff, differ ? at : "-", "bitwise",
                  ran && !differ);
    if (differ)
        printf("    %zu of %zu values differ between two runs\n", differ, total);
    gc_out_free(&a), gc_out_free(&b);
    gc_problem_free(&p);
    return ran && !differ;
}

/* DESIGN.md: no float atomics, a fixed reduction order, so one input gives
 * one output, bit for bit, run after run: the block, and the residual
 * block, whose dx the product adds onto dy. */
static void test_block_deterministic(void **state)
{
    cuda_state *s = need_gpu(state);
    static const gc_case big = {.batch = 257, .in = 300, .out = 1024, .groups = 64,
                                .slope = 0.01, .eps = 1e-5, .xscale = 1, .wscale = 1,
                                .seed = 77, .why = "K = 16, 257 rows: several row chunks"};
    static const gc_case square = {.batch = 257, .in = 1024, .out = 1024, .groups = 64,
                                   .slope = 0.01, .eps = 1e-5, .xscale = 1, .wscale = 1,
                                   .seed = 78, .why = "K = 16, 257 rows, in = out"};
    chk_table_header("CUDA block and residual: two runs, bit for bit");
    int ok = 1;
    for (int m = 0; m < N_MODES; m++) {
        ok &= two_runs_same(s->gpu[m], &gc_block_kind, &big);
        ok &= two_runs_same(s->gpu[m], &gc_residual_kind, &square);
    }
    assert_true(ok);
}

GPU_TEST_MAIN(setup, teardown, cmocka_unit_test(test_tiers),
              cmocka_unit_test(test_block_deterministic))
