/* loss_tally.c — a loss tally (loss_tally.h): the checked entry points, the
 * CPU's sums in host memory, and the ring of late copies both devices
 * share. A step's loss comes from its kind's descriptor (loss_kind.h): on
 * the CPU its read, on the GPU its partial sums, which the loss's own
 * kernel finishes into the device's sums where it can (in its last
 * block), else kernels/nn/loss_tally_cuda.cu's finish kernel. */
#include <math.h>
#include <stdlib.h>

#include "nn/loss_backends.h"
#include "nn/loss_tally_cuda.h"
#include "nn/loss_tally.h"

struct fn_loss_tally {
    fn_context *ctx;     /* borrowed */
    fn_cuda_tally *cuda; /* the GPU's sums and copies; NULL on the CPU */
    fn_loss_tally_value host;                     /* the CPU's sums */
    fn_loss_tally_value ring[FN_LOSS_TALLY_RING]; /* the CPU's copies */
    int lag;          /* the CPU's: copy i arrives once posted >= i + lag */
    long long posted; /* copies queued */
    long long taken;  /* copies before this one are taken or passed over */
};

static fn_loss_tally_value fresh_sums(long long step)
{
    return (fn_loss_tally_value){.base_step = step, .bad_step = -1, .last_loss = NAN};
}

fn_status fn_loss_tally_create(fn_loss_tally **out, fn_context *ctx, int lag)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_loss_tally_create: out is NULL");
    *out = NULL;
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "fn_loss_tally_create: ctx is NULL");
    const int cuda = fn_context_device(ctx) == FN_CUDA;
    if (lag < 0 || lag > FN_LOSS_TALLY_RING || (cuda && lag > 1))
        return fn_fail(FN_ERR_INVALID,
                       "fn_loss_tally_create: lag %d (0 or 1; up to %d only on the CPU)", lag,
                       FN_LOSS_TALLY_RING);
    fn_loss_tally *t = calloc(1, sizeof *t);
    if (!t)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a loss tally");
    t->ctx = ctx;
    t->lag = lag < 1 ? 1 : lag;
    t->host = fresh_sums(0);
    if (cuda) {
        fn_status st = fn_cuda_tally_create(&t->cuda, ctx);
        if (st == FN_OK)
            st = fn_cuda_tally_set(t->cuda, &t->host);
        if (st != FN_OK) {
            fn_loss_tally_destroy(t);
            return st;
        }
    }
    *out = t;
    return FN_OK;
}

void fn_loss_tally_destroy(fn_loss_tally *t)
{
    if (!t)
        return;
    fn_cuda_tally_destroy(t->cuda);
    free(t);
}

fn_status fn_loss_tally_set(fn_loss_tally *t, double loss_sum, long long correct,
                            long long seen, long long step)
{
    fn_loss_tally_value v = fresh_sums(step);
    v.loss_sum = loss_sum;
    v.correct = correct;
    v.seen = seen;
    if (t->cuda)
        return fn_cuda_tally_set(t->cuda, &v);
    t->host = v;
    return FN_OK;
}

/* The CPU's count of a step's loss: tally_finish_kernel's rule. */
static void count_step(fn_loss_tally_value *s, float value, int rows, long long correct)
{
    if (s->bad)
        return;
    if (!isfinite(value)) {
        s->bad = 1;
        s->bad_step = s->base_step + s->steps;
        s->bad_loss = value;
        return;
    }
    s->loss_sum += (double)value * rows;
    s->correct += correct;
    s->seen += rows;
    s->steps++;
    s->last_loss = value;
}

fn_status fn_loss_tally_step(fn_loss_tally *t, const fn_loss_kind *kind, const void *options,
                             const fn_tensor *pred, const fn_loss_targets *targets,
                             fn_tensor *loss, fn_tensor *dpred)
{
    return fn_loss_tally_step_biased(t, kind, options, pred, NULL, targets, loss, dpred);
}

/* pred += bias on the host, row by row, as the layers' CPU forward adds it. */
static void add_host_bias(const fn_tensor *pred, const float *bias)
{
    for (int n = 0; n < pred->rows; n++)
        for (int c = 0; c < pred->cols; c++)
            pred->data[(size_t)n * pred->cols + c] += bias[c];
}

fn_status fn_loss_tally_step_biased(fn_loss_tally *t, const fn_loss_kind *kind,
                                    const void *options, const fn_tensor *pred,
                                    const float *pred_bias, const fn_loss_targets *targets,
                                    fn_tensor *loss, fn_tensor *dpred)
{
    if (!t || !kind || !targets || !pred)
        return fn_fail(FN_ERR_INVALID, "fn_loss_tally_step: %s is NULL",
                       !t ? "tally" : !kind ? "kind" : !targets ? "targets" : "pred");
    if (!t->cuda) {
        if (pred_bias)
            add_host_bias(pred, pred_bias);
        float value = 0;
        int correct = 0;
        FN_TRY(kind->read(t->ctx, options, pred, targets, loss, dpred, &value, &correct));
        count_step(&t->host, value, pred->rows, correct);
        return FN_OK;
    }
    /* loss.c's checks of the predictions and outputs; the kind checks its
     * targets. */
    const char *dname = kind->targets == FN_DATA_LABELS ? "dlogits" : "dpred";
    FN_TRY(fn_tensor_check_on(pred, kind->targets == FN_DATA_LABELS ? "logits" : "pred", FN_CUDA,
                              pred->rows, pred->cols));
    FN_TRY(fn_tensor_check_on(loss, "loss", FN_CUDA, 1, 1));
    if (dpred)
        FN_TRY(fn_tensor_check_on(dpred, dname, FN_CUDA, pred->rows, pred->cols));
    FN_TRY(fn_loss_check_weights(pred, targets->weights, kind->name));
    if (pred_bias && !(kind->takes_bias && kind->takes_bias(options))) {
        FN_TRY(fn_cuda_add_pred_bias(t->ctx, pred, pred_bias));
        pred_bias = NULL;
    }
    fn_loss_tally_into into;
    fn_cuda_tally_into(t->cuda, loss, pred->rows, &into);
    fn_loss_partials p = {0};
    FN_TRY(kind->partials(t->ctx, options, pred, pred_bias, targets, dpred, &into, &p));
    return p.finished ? FN_OK : fn_cuda_tally_finish(t->cuda, loss, &p, pred->rows);
}

const int *fn_loss_tally_bad_flag(const fn_loss_tally *t)
{
    if (!t)
        return NULL;
    return t->cuda ? &fn_cuda_tally_sums(t->cuda)->bad : &t->host.bad;
}

fn_status fn_loss_tally_post(fn_loss_tally *t)
{
    const int slot = (int)(t->posted % FN_LOSS_TALLY_RING);
    if (t->cuda)
        FN_TRY(fn_cuda_tally_post(t->cuda, slot));
    else
        t->ring[slot] = t->host;
    t->posted++;
    return FN_OK;
}

/* Whether copy i has arrived, and it in *v when it has. */
static fn_status arrived(fn_loss_tally *t, long long i, int *yes, fn_loss_tally_value *v)
{
    const int slot = (int)(i % FN_LOSS_TALLY_RING);
    if (t->cuda)
        return fn_cuda_tally_arrived(t->cuda, slot, yes, v);
    *yes = t->posted >= i + t->lag;
    if (*yes)
        *v = t->ring[slot];
    return FN_OK;
}

fn_status fn_loss_tally_poll(fn_loss_tally *t, fn_loss_tally_value *value, int *fresh)
{
    *fresh = 0;
    /* Copies arrive in order (one stream), so the oldest not taken is asked
     * first: while the device is behind, one question a poll. Only the
     * last FN_LOSS_TALLY_RING copies still sit in their slots. */
    long long i = t->posted - FN_LOSS_TALLY_RING;
    if (i < t->taken)
        i = t->taken;
    for (; i < t->posted; i++) {
        int yes = 0;
        fn_loss_tally_value v;
        FN_TRY(arrived(t, i, &yes, &v));
        if (!yes)
            break;
        *value = v;
        *fresh = 1;
        t->taken = i + 1;
    }
    return FN_OK;
}

fn_status fn_loss_tally_read(fn_loss_tally *t, fn_loss_tally_value *value)
{
    t->taken = t->posted;
    if (t->cuda)
        return fn_cuda_tally_read(t->cuda, value);
    *value = t->host;
    return FN_OK;
}
