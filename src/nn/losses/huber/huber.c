/* huber.c — the Huber loss's checked entry point (huber.h): shapes,
 * devices and delta are validated here, then the work goes to
 * huber_cpu.c or kernels/nn/losses/huber/huber_cuda.cu. */
#include <math.h>

#include "nn/losses/huber/huber.h"
#include "nn/loss_backends.h"

static fn_status check_huber(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                             float delta, const fn_tensor *loss, const fn_tensor *dpred)
{
    FN_TRY(fn_loss_check_pointwise(ctx, pred, target, loss, dpred));
    if (!(delta > 0.0f) || !isfinite(delta))
        return fn_fail(FN_ERR_INVALID, "delta %g: expected a finite number > 0", (double)delta);
    return FN_OK;
}

fn_status fn_huber_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                        float delta, const float *weights, fn_tensor *loss, fn_tensor *dpred)
{
    fn_status st = check_huber(ctx, pred, target, delta, loss, dpred);
    if (st == FN_OK)
        st = fn_loss_check_weights(pred, weights, NULL);
    if (st != FN_OK) {
        fn_error_prefix("huber loss: ");
        return st;
    }
    if (pred->device == FN_CUDA)
        return fn_cuda_huber_loss(ctx, pred, target, delta, loss, dpred);
    return fn_cpu_huber_loss(pred, target, delta, weights, loss, dpred);
}
