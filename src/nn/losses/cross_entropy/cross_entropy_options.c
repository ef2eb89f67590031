/* cross_entropy_options.c — the weighted and smoothed cross-entropy's
 * checked entry point (cross_entropy_options.h): shapes, devices, labels
 * and the smoothing are validated here, then the work goes to
 * cross_entropy_options_cpu.c or kernels/nn/losses/cross_entropy/cross_entropy_options_cuda.cu. */
#include "nn/losses/cross_entropy/cross_entropy_options.h"
#include "nn/loss_backends.h"

static fn_status check_smoothed(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                                const fn_ce_smoothing *s, const fn_tensor *loss,
                                const fn_tensor *dlogits)
{
    if (!ctx || !logits || !logits->data || !labels || !s)
        return fn_fail(FN_ERR_INVALID, "%s is NULL",
                       !ctx ? "ctx" : !logits || !logits->data ? "logits" : !labels ? "labels" : "s");
    FN_TRY(fn_tensor_check_on(logits, "logits", fn_context_device(ctx), logits->rows,
                              logits->cols));
    FN_TRY(fn_tensor_check_on(loss, "loss", logits->device, 1, 1));
    if (dlogits)
        FN_TRY(fn_tensor_check_on(dlogits, "dlogits", logits->device, logits->rows,
                                  logits->cols));
    FN_TRY(fn_loss_check_weights(logits, s->row_weights, NULL));
    if (!(s->eps >= 0.0f && s->eps <= 1.0f))
        return fn_fail(FN_ERR_INVALID, "label_smoothing %g: expected 0 to 1", (double)s->eps);
    return FN_OK;
}

fn_status fn_cross_entropy_smoothed_loss(fn_context *ctx, const fn_tensor *logits,
                                         const int32_t *labels, const fn_ce_smoothing *s,
                                         fn_tensor *loss, fn_tensor *dlogits)
{
    fn_status st = check_smoothed(ctx, logits, labels, s, loss, dlogits);
    if (st == FN_OK)
        st = logits->device == FN_CUDA
                 ? fn_cuda_cross_entropy_smoothed(ctx, logits, labels, s, loss, dlogits)
                 : fn_cpu_cross_entropy_smoothed(logits, labels, s, loss, dlogits);
    if (st != FN_OK)
        fn_error_prefix("cross_entropy loss: ");
    return st;
}
