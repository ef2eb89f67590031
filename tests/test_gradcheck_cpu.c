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

/* One table per layer kind and tier: a new kind's descriptor in gc_kinds
 * is all it takes. */
static const gc_tier_row tiers[] = {
    {GC_VS_REFERENCE, "tier 2: CPU %s vs float64 reference"},
    {GC_LOSSES_VS_REFERENCE, "tier 2: CPU %s vs float64 reference"},
    {GC_FD, "tier 3: float32 finite differences through the CPU %s"},
    {GC_LOSSES_FD, "tier 3: float32 finite differences through the CPU %s"},
};

static void test_tiers(void **state)
{
    assert_true(gc_tiers_run(tiers, sizeof tiers / sizeof tiers[0], *state, NULL, NULL));
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_tiers))
