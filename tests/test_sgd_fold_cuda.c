/* test_sgd_fold_cuda.c — test_sgd_fold.c's step check on the GPU in every
 * math mode: SGD's momentum folded into backward (the dW product with
 * cuBLAS's beta = mu on the buffer, the column sums' finish fusing
 * mu buf + s, the multi-tensor update reading W and buf only) against the
 * unfolded step within their error bound, bit-identical when repeated
 * one parameter at a time (the one-tensor kernel against the table's).
 * Skips without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expect.h"
#include "sgd_fold.h"
#include "test_main.h"

static void test_folded_step_agrees_with_unfolded(void **state)
{
    (void)state;
    skip_without_gpu();
    static const fn_math modes[] = {FN_MATH_FP32, FN_MATH_TF32, FN_MATH_TF32X3, FN_MATH_BF16};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        fn_context *ctx = NULL;
        EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, modes[m]));
        assert_int_equal(fold_check(ctx), 4);
        fn_context_destroy(ctx);
    }
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_folded_step_agrees_with_unfolded))
