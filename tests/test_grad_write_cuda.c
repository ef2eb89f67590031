/* test_grad_write_cuda.c — test_grad_write.c's checks on the GPU in every
 * math mode (grad_beta 0 writes: NaN or garbage in a gradient never leaks
 * into the next one; grad_beta 1 accumulates exactly where the dW product
 * is one product, so not in tf32x3). Skips without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expect.h"
#include "grad_write.h"
#include "test_main.h"

enum { KINDS_WITH_PARAMS = 5 };

static const fn_math modes[] = {FN_MATH_FP32, FN_MATH_TF32, FN_MATH_TF32X3, FN_MATH_BF16};

static void check_modes(int accumulated)
{
    skip_without_gpu();
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        if (accumulated && modes[m] == FN_MATH_TF32X3)
            continue;
        fn_context *ctx = NULL;
        EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, modes[m]));
        const int kinds = accumulated ? gw_check_accumulated(ctx) : gw_check_written(ctx);
        assert_int_equal(kinds, KINDS_WITH_PARAMS);
        fn_context_destroy(ctx);
    }
}

static void test_gradients_are_written(void **state)
{
    (void)state;
    check_modes(0);
}

static void test_grad_beta_one_accumulates(void **state)
{
    (void)state;
    check_modes(1);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_gradients_are_written),
              cmocka_unit_test(test_grad_beta_one_accumulates))
