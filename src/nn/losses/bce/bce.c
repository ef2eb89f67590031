/* bce.c — binary cross-entropy on logits, its checked entry point
 * (bce.h): shapes, devices and the weights are validated here, then the
 * work goes to bce_cpu.c or kernels/nn/losses/bce/bce_cuda.cu. */
#include <math.h>

#include "nn/losses/bce/bce.h"
#include "nn/loss_backends.h"

static fn_status check_weights(const float *w, int cols)
{
    if (w && cols > FN_BCE_MAX_WEIGHTS)
        return fn_fail(FN_ERR_INVALID, "pos_weight: %d labels; at most %d take weights", cols,
                       FN_BCE_MAX_WEIGHTS);
    for (int c = 0; w && c < cols; c++)
        if (!(w[c] >= 0.0f) || !isfinite(w[c]))
            return fn_fail(FN_ERR_INVALID, "pos_weight %d is %g: expected a finite number >= 0",
                           c, (double)w[c]);
    return FN_OK;
}

static fn_status check_bce(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                           const float *pos_weight, const fn_tensor *loss, const fn_tensor *dpred)
{
    FN_TRY(fn_loss_check_pointwise(ctx, pred, target, loss, dpred));
    return check_weights(pos_weight, pred->cols);
}

fn_status fn_bce_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                      const float *pos_weight, const float *weights, fn_tensor *loss,
                      fn_tensor *dpred, int *correct)
{
    fn_status st = check_bce(ctx, pred, target, pos_weight, loss, dpred);
    if (st == FN_OK)
        st = fn_loss_check_weights(pred, weights, NULL);
    if (st != FN_OK) {
        fn_error_prefix("bce_with_logits loss: ");
        return st;
    }
    if (pred->device == FN_CUDA)
        return fn_cuda_bce_loss(ctx, pred, target, pos_weight, loss, dpred, correct);
    return fn_cpu_bce_loss(pred, target, pos_weight, weights, loss, dpred, correct);
}

double fn_bce_label_accuracy(long long correct, long long rows, int outputs)
{
    return (double)correct / ((double)rows * (double)outputs);
}
