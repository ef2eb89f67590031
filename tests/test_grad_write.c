/* test_grad_write.c — how backward stores parameter gradients on the CPU
 * (param.h's grad_beta), for every layer kind with parameters: written by
 * default, so NaN or garbage in a gradient never leaks into the next one
 * and a step needs no zeroing; accumulated with grad_beta 1
 * (tests/support/grad_write.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expect.h"
#include "grad_write.h"
#include "test_main.h"

/* block, linear, relu, gelu, residual: every kind but dropout. */
enum { KINDS_WITH_PARAMS = 5 };

static void test_gradients_are_written(void **state)
{
    assert_int_equal(gw_check_written(*state), KINDS_WITH_PARAMS);
}

static void test_grad_beta_one_accumulates(void **state)
{
    assert_int_equal(gw_check_accumulated(*state), KINDS_WITH_PARAMS);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_gradients_are_written),
          cmocka_unit_test(test_grad_beta_one_accumulates))
