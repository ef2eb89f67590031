/* grad_write.h — the checks of how backward stores parameter gradients
 * (param.h, grad_beta), run by test_grad_write.c on the CPU and
 * test_grad_write_cuda.c on the GPU in every math mode, over every layer
 * kind of the registry that has parameters. Include after <cmocka.h>. */
#ifndef FN_TEST_GRAD_WRITE_H
#define FN_TEST_GRAD_WRITE_H

#include "fusenet/device.h"

/* grad_beta 0 (the default) writes: backward into gradients filled with
 * NaN, and into gradients filled with large finite garbage, gives the same
 * bits as backward into zeroed gradients, every parameter and dx alike.
 * Returns the kinds checked (those with parameters). */
int gw_check_written(fn_context *ctx);

/* grad_beta 1 accumulates: from zeroed gradients, two backwards of the
 * same batch leave exactly twice what one leaves (x + x is exact in
 * float). Not for tf32x3, whose dW is three chained products, each adding
 * to the gradient with its own rounding. Returns the kinds checked. */
int gw_check_accumulated(fn_context *ctx);

#endif
