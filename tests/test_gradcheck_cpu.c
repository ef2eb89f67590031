/* test_gradcheck_cpu.c — tiers 2 and 3 of the gradient checks on the CPU
 * backend: (a) the block, the linear layer and both losses against the
 * float64 reference at many shapes, (b) float32 finite differences through
 * the CPU layers along random directions.
 *
 * Tolerances are per element, from the float32 error model of
 * tests/support/estimate.h: a sum of n terms is allowed
 * 4 sqrt(n) u32 sum|terms| (u32 = 2^-24 ~ 6e-8; e.g. z = x W^T + b over
 * in = 33 terms: 4 * 5.7 * 6e-8 ~ 1.4e-6 of sum|x w|), propagated through
 * GroupNorm (which multiplies errors of z by rstd) and the backward formulas,
 * plus 4 u32 |r| for the final roundings. The table's tolerance column shows
 * the largest per-element allowance. Tier 3's budget is in
 * tests/support/gradcheck.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "check.h"
#include "fusenet/device.h"
#include "gradcheck.h"

static int setup_cpu(void **state)
{
    fn_context *ctx = NULL;
    if (fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32) != FN_OK) {
        printf("cpu context: %s\n", fn_last_error());
        return -1;
    }
    *state = ctx;
    return 0;
}

static int teardown_cpu(void **state)
{
    fn_context_destroy(*state);
    return 0;
}

static void test_block_vs_reference(void **state)
{
    chk_table_header("tier 2: CPU block vs float64 reference");
    assert_true(gc_block_cases_vs_reference(*state));
}

static void test_linear_and_losses_vs_reference(void **state)
{
    chk_table_header("tier 2: CPU linear layer and losses vs float64 reference");
    int ok = gc_linear_vs_reference(*state, 1, 7, 3, 31);
    ok &= gc_linear_vs_reference(*state, 9, 33, 10, 32);
    ok &= gc_linear_vs_reference(*state, 64, 128, 10, 33);
    ok &= gc_losses_vs_reference(*state, 1, 2, 3, 34);
    ok &= gc_losses_vs_reference(*state, 7, 10, 3, 35);
    /* Logits of 50: exp would overflow float32 without the max shift. */
    ok &= gc_losses_vs_reference(*state, 16, 5, 50, 36);
    assert_true(ok);
}

static void test_block_fd(void **state)
{
    chk_table_header("tier 3: float32 finite differences through the CPU block");
    assert_true(gc_block_cases_fd(*state));
}

static void test_linear_and_losses_fd(void **state)
{
    chk_table_header("tier 3: float32 finite differences through the CPU linear layer, losses");
    int ok = gc_linear_fd(*state, 5, 9, 4, 41);
    ok &= gc_linear_fd(*state, 1, 16, 10, 42);
    ok &= gc_losses_fd(*state, 6, 5, 43);
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_vs_reference),
        cmocka_unit_test(test_linear_and_losses_vs_reference),
        cmocka_unit_test(test_block_fd),
        cmocka_unit_test(test_linear_and_losses_fd),
    };
    return cmocka_run_group_tests(tests, setup_cpu, teardown_cpu);
}
