/* sgd_fold.h — the check of SGD's momentum folded into backward
 * (fn_optimizer_fold, sgd.c), run by test_sgd_fold.c on the CPU and
 * test_sgd_fold_cuda.c on the GPU in every math mode. Include after
 * <cmocka.h>. */
#ifndef FN_TEST_SGD_FOLD_H
#define FN_TEST_SGD_FOLD_H

#include "fusenet/device.h"

/* For a block, a residual block, a linear and a relu layer, one SGD step
 * (momentum 0.9, weight decay 0.01 and 0) from the same values, buffers
 * and batch, as the first step of a run and as a later one: folded (backward
 * computing mu buf + g into the buffer, the update reading W and buf) and
 * unfolded (backward writing g, torch's update). Every new value and
 * buffer agrees within the error bound of the two (tests/support/
 * sgd_fold.c derives it), and the folded step taken again from the same
 * state, one parameter at a time (fn_optimizer_step_params: on the GPU
 * the one-tensor kernel, not the table's launch), gives the same bits.
 * Returns the layers checked. */
int fold_check(fn_context *ctx);

/* The same with the weights' momentum buffers in bfloat16 (momentum_bf16;
 * ctx a GPU context in bf16 math), for a block, a residual block and a
 * linear layer, against the float32 buffers' step from one state: the
 * bound in sgd_fold.c, the unfolded step's bits, the one-tensor path's
 * bits, and the float32-buffer parameters unchanged. Returns the layers
 * checked. */
int fold_check_bf16(fn_context *ctx);

#endif
