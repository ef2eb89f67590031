/* test_infer_product.c — inference on the CPU does not depend on the
 * batch (core/infer_product.h): the product a network built for inference
 * uses against the float64 reference at many shapes, its rows the same
 * bits in any batch and at any place in it, on one thread or several; and
 * fn_infer of a network of every layer kind, from its weights file, the
 * same bits per row in batches of 1, 7, 64 and 300 and with its rows
 * shuffled (BLAS's sgemm, which this replaced there, gave rows that
 * differed by up to 1 ulp between batch sizes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "core/infer_product.h"
#include "expect.h"
#include "invariance.h"
#include "test_main.h"

/* On the context's threads (arg: the context), or the caller's alone
 * (arg NULL). */
static void cpu_product(void *arg, float *y, const float *x, const float *w, const float *bias,
                        int n, int in, int out)
{
    fn_infer_product(arg, y, x, w, bias, n, in, out);
}

static void test_product_matches_reference(void **state)
{
    inv_expect_reference("infer product", cpu_product, *state, 0.0);
}

static void test_product_rows_invariant(void **state)
{
    inv_expect_rows_invariant("infer product", cpu_product, *state);
    inv_expect_rows_invariant("infer product, one thread", cpu_product, NULL);
}

/* The context's threads split rows and outputs, never k: one thread and
 * several give the same bits on a product large enough to be split. */
static void test_product_threads_invariant(void **state)
{
    enum { N = 256, IN = 200, OUT = 300 };
    float *x = chk_alloc_float((size_t)N * IN), *w = chk_alloc_float((size_t)OUT * IN);
    float *b = chk_alloc_float(OUT), *one = chk_alloc_float((size_t)N * OUT),
          *many = chk_alloc_float((size_t)N * OUT);
    chk_rng rng = chk_rng_seed(9);
    chk_fill_float(x, (size_t)N * IN, -1, 1, &rng);
    chk_fill_float(w, (size_t)OUT * IN, -1, 1, &rng);
    chk_fill_float(b, OUT, -1, 1, &rng);
    fn_infer_product(NULL, one, x, w, b, N, IN, OUT);
    fn_infer_product(*state, many, x, w, b, N, IN, OUT);
    assert_memory_equal(one, many, sizeof(float) * (size_t)N * OUT);
    free(x);
    free(w);
    free(b);
    free(one);
    free(many);
}

static void test_infer_batch_invariant(void **state) { inv_expect_infer_invariant(*state); }

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_product_matches_reference),
          cmocka_unit_test(test_product_rows_invariant),
          cmocka_unit_test(test_product_threads_invariant),
          cmocka_unit_test(test_infer_batch_invariant))
