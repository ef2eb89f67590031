/* invariance.h — the checks that inference does not depend on the batch,
 * shared by the CPU's and the GPU's tests (test_infer_product.c,
 * test_infer_product_cuda.c):
 *  - a product y = x W^T (+ b) against the float64 reference at many
 *    shapes (one row, one column, one input, odd sizes), within the
 *    estimate of estimate.h for its operand rounding;
 *  - the same product's rows the same bits computed alone, in any slice
 *    of the batch, and at any place in it;
 *  - a network of every layer kind built from its weights file (a
 *    forward-only network, as predict and the Python package build it)
 *    predicting a set through fn_infer in batches of 1, 7 and 300 rows and
 *    with its rows shuffled: every row's outputs the same bits.
 * Include after <cmocka.h>. */
#ifndef FN_TEST_INVARIANCE_H
#define FN_TEST_INVARIANCE_H

#include "fusenet/device.h"

/* A product under test on host arrays: y [n, out] = x [n, in] w^T [in, out]
 * (+ bias [out] when bias is not NULL). */
typedef void (*inv_product)(void *arg, float *y, const float *x, const float *w,
                            const float *bias, int n, int in, int out);

/* Fails the test unless the product is within the float64 reference's
 * bound at every shape; u_op: est_operand_roundoff of its math mode. */
void inv_expect_reference(const char *name, inv_product product, void *arg, double u_op);

/* Fails the test unless every row of the product is the same bits alone
 * (n = 1), in slices of 7 rows starting anywhere, and in the whole batch. */
void inv_expect_rows_invariant(const char *name, inv_product product, void *arg);

/* Fails the test unless fn_infer of a forward-only network on ctx gives
 * every row the same bits in batches of 1, 7 and 300 and shuffled. */
void inv_expect_infer_invariant(fn_context *ctx);

#endif
