/* test_gradcheck_cpu.c — tiers 2 and 3 of the gradient checks on the CPU
 * backend: (a) every layer kind (tests/support/kinds.c) and both losses
 * against the float64 reference at the shapes of their descriptors, (b)
 * float32 finite differences through the CPU layers and losses along random
 * directions.
 *
 * Tolerances are per element, from the float32 error model of
 * tests/support/estimate.h: a sum of n terms is allowed
 * 4 sqrt(n) u32 sum|terms| (u32 = 2^-24 ~ 6e-8; e.g. z = x W^T + b over
 * in = 33 terms: 4 * 5.7 * 6e-8 ~ 1.4e-6 of sum|x w|), propagated through
 * GroupNorm (which multiplies errors of z by rstd) and the backward formulas,
 * plus 4 u32 |r| for the final roundings. The table's tolerance column shows
 * the largest per-element allowance. Tier 3's budget is in
 * tests/support/fd.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "check.h"
#include "expect.h"
#include "fusenet/device.h"
#include "gradcheck.h"
#include "test_main.h"

/* One table per kind: a new kind's descriptor in gc_kinds is all it takes. */
static void test_layers_vs_reference(void **state)
{
    int ok = 1;
    for (size_t i = 0; i < gc_n_kinds; i++) {
        char title[80];
        snprintf(title, sizeof title, "tier 2: CPU %s vs float64 reference", gc_kinds[i]->name);
        chk_table_header(title);
        ok &= gc_vs_reference_cases(*state, gc_kinds[i]);
    }
    assert_true(ok);
}

static void test_losses_vs_reference(void **state)
{
    chk_table_header("tier 2: CPU losses vs float64 reference");
    assert_true(gc_losses_vs_reference_cases(*state));
}

static void test_layers_fd(void **state)
{
    int ok = 1;
    for (size_t i = 0; i < gc_n_kinds; i++) {
        char title[80];
        snprintf(title, sizeof title, "tier 3: float32 finite differences through the CPU %s",
                 gc_kinds[i]->name);
        chk_table_header(title);
        ok &= gc_fd_cases(*state, gc_kinds[i]);
    }
    assert_true(ok);
}

static void test_losses_fd(void **state)
{
    chk_table_header("tier 3: float32 finite differences through the CPU losses");
    assert_true(gc_losses_fd_cases(*state));
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_layers_vs_reference),
          cmocka_unit_test(test_losses_vs_reference), cmocka_unit_test(test_layers_fd),
          cmocka_unit_test(test_losses_fd))
