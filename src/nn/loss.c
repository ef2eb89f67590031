/* loss.c — the losses' checked entry points: shapes, devices and buffers are
 * validated here, then the work goes to src/nn/loss_cpu.c or kernels/nn/loss_cuda.cu. */
#include "nn/loss_backends.h"
#include "fusenet/loss.h"

/* The context and the predictions: both present, on one device. */
static fn_status check_pred(fn_context *ctx, const fn_tensor *pred, const char *what)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "ctx is NULL");
    if (!pred || !pred->data)
        return fn_fail(FN_ERR_INVALID, "%s is NULL", what);
    return fn_tensor_check_on(pred, what, fn_context_device(ctx), pred->rows, pred->cols);
}

/* The value [1, 1] and the optional gradient (pred's shape), on pred's device. */
static fn_status check_outputs(const fn_tensor *pred, const fn_tensor *loss,
                               const fn_tensor *dpred, const char *dname)
{
    FN_TRY(fn_tensor_check_on(loss, "loss", pred->device, 1, 1));
    if (dpred)
        FN_TRY(fn_tensor_check_on(dpred, dname, pred->device, pred->rows, pred->cols));
    return FN_OK;
}

fn_status fn_loss_check_pointwise(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                                  const fn_tensor *loss, const fn_tensor *dpred)
{
    FN_TRY(check_pred(ctx, pred, "pred"));
    FN_TRY(fn_tensor_check_on(target, "target", pred->device, pred->rows, pred->cols));
    return check_outputs(pred, loss, dpred, "dpred");
}

/* Adds the loss's name in front of a failure's message. */
static fn_status named(fn_status st, const char *name)
{
    if (st != FN_OK)
        fn_error_prefix("%s: ", name);
    return st;
}

fn_status fn_loss_check_weights(const fn_tensor *pred, const float *weights, const char *name)
{
    if (weights && pred && pred->device == FN_CUDA)
        return fn_fail(FN_ERR_INVALID, "%s%sper-row sample weights (sample_weight) are "
                       "supported on the CPU only; train on device=\"cpu\" ([run] device = "
                       "cpu), or without them", name ? name : "", name ? ": " : "");
    return FN_OK;
}

fn_status fn_mse_loss_weighted(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                               const float *weights, fn_tensor *loss, fn_tensor *dpred)
{
    FN_TRY(named(fn_loss_check_pointwise(ctx, pred, target, loss, dpred), "mse loss"));
    FN_TRY(fn_loss_check_weights(pred, weights, "mse loss"));
    if (pred->device == FN_CUDA)
        return fn_cuda_mse_loss(ctx, pred, target, loss, dpred);
    return fn_cpu_mse_loss(pred, target, weights, loss, dpred);
}

fn_status fn_mse_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                      fn_tensor *loss, fn_tensor *dpred)
{
    return fn_mse_loss_weighted(ctx, pred, target, NULL, loss, dpred);
}

static fn_status check_cross_entropy(fn_context *ctx, const fn_tensor *logits,
                                     const int32_t *labels, const fn_tensor *loss,
                                     const fn_tensor *dlogits)
{
    FN_TRY(check_pred(ctx, logits, "logits"));
    if (!labels)
        return fn_fail(FN_ERR_INVALID, "labels is NULL");
    return check_outputs(logits, loss, dlogits, "dlogits");
}

fn_status fn_cross_entropy_loss(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                                fn_tensor *loss, fn_tensor *dlogits)
{
    FN_TRY(named(check_cross_entropy(ctx, logits, labels, loss, dlogits), "cross_entropy loss"));
    if (logits->device == FN_CUDA)
        return fn_cuda_cross_entropy_loss(ctx, logits, labels, loss, dlogits);
    return named(fn_cpu_cross_entropy_loss(logits, labels, loss, dlogits), "cross_entropy loss");
}

static fn_status check_count(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                             const int *correct)
{
    FN_TRY(check_pred(ctx, logits, "logits"));
    if (!labels)
        return fn_fail(FN_ERR_INVALID, "labels is NULL");
    if (!correct)
        return fn_fail(FN_ERR_INVALID, "correct is NULL");
    return FN_OK;
}

fn_status fn_count_correct(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                           int *correct)
{
    FN_TRY(named(check_count(ctx, logits, labels, correct), "fn_count_correct"));
    if (logits->device == FN_CUDA)
        return fn_cuda_count_correct(ctx, logits, labels, correct);
    return named(fn_cpu_count_correct(logits, labels, correct), "fn_count_correct");
}

fn_status fn_cross_entropy_loss_read(fn_context *ctx, const fn_tensor *logits,
                                     const int32_t *labels, fn_tensor *loss, fn_tensor *dlogits,
                                     float *value, int *correct)
{
    const char *name = "cross_entropy loss";
    FN_TRY(named(check_cross_entropy(ctx, logits, labels, loss, dlogits), name));
    if (!value || !correct)
        return fn_fail(FN_ERR_INVALID, "%s: %s is NULL", name, !value ? "value" : "correct");
    if (logits->device == FN_CUDA)
        return fn_cuda_cross_entropy_loss_read(ctx, logits, labels, loss, dlogits, value, correct);
    FN_TRY(named(fn_cpu_cross_entropy_loss(logits, labels, loss, dlogits), name));
    FN_TRY(named(fn_cpu_count_correct(logits, labels, correct), name));
    *value = loss->data[0];
    return FN_OK;
}
