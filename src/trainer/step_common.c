/* step_common.c — what the trainer's step strategies (trainer_impl.h:
 * eager, deferred, graphed, data-parallel) share, below all of them: the
 * batch's loss read at once, the step's gradients, the device work of a
 * queued step, and the diagnosis that names the first non-finite value
 * when a loss, or a parameter about to be saved, is not finite. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/side_stream.h"
#include "fusenet/input_norm.h"
#include "trainer/trainer_impl.h"

fn_status fn_trainer_batch_loss(fn_trainer *t, const fn_batch *b, const fn_tensor *y, fn_tensor *dy,
                                float *loss, int *correct)
{
    /* Read at once: every step of an eager step (the CPU; plain SGD's
     * fused step on the GPU; data-parallel steps, step_dist.c), with one
     * copy of the loss and the correct count beside it that waits for the
     * step's kernels, so a non-finite loss stops the run at its step,
     * before the update; and in evaluation. Deferred steps
     * (step_deferred.c) count the loss on the device instead. */
    const fn_loss_targets targets = {.labels = b->labels, .values = &b->target,
                                     .weights = b->host_weights};
    return t->cfg->loss->read(t->ctx, t->cfg->loss_options, y, &targets, &t->loss, dy, loss,
                              correct);
}

double fn_trainer_metric(const fn_trainer *t, long long correct, long long rows)
{
    const fn_loss_kind *kind = t->cfg->loss;
    if (!kind->metric || rows <= 0)
        return NAN;
    return kind->metric(correct, rows, fn_net_out_features(t->net));
}

/* --- non-finite values ------------------------------------------------------ */

const char *fn_trainer_number_name(float v) { return isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

/* "layer 1 (block) output, row 0 column 3: nan" or why there is no answer. */
void fn_trainer_describe_nonfinite(fn_status st, const fn_nonfinite *nf, char *buf, size_t n)
{
    if (st != FN_OK)
        snprintf(buf, n, "unknown (the search failed: %s)", fn_last_error());
    else if (nf->layer < 0)
        snprintf(buf, n, "none in the parameters, outputs or gradients (the loss overflowed)");
    else
        snprintf(buf, n, "layer %d (%s) %s%s%s, row %d column %d: %s", nf->layer, nf->kind,
                 nf->what, nf->param ? " " : "", nf->param ? nf->param : "", nf->row, nf->col,
                 fn_trainer_number_name(nf->value));
}

/* What the stop leaves behind: weights.h5 is never written over. A
 * checkpoint.h5 in the directory is named only when it is this run's (it
 * resumed from it or wrote it), not one an earlier run left there. Before
 * the run's first update the learning rate cannot be the cause. */
void fn_trainer_describe_kept(const fn_trainer *t, char *buf, size_t n)
{
    if (t->state.global_step == 0)
        snprintf(buf, n, "no update has run yet, so the learning rate is not the cause: the "
                 "initial weights give a non-finite value on this batch (the magnitude of its "
                 "inputs or targets: see [data] standardize); no weights written");
    else if (t->checkpoint_ours)
        snprintf(buf, n, "%s (the last good state) is kept; lower [train] lr and --resume",
                 t->checkpoint_path);
    else
        snprintf(buf, n, "no weights written; try a smaller [train] lr");
}

/* The first non-finite value of the batch's inputs as the network gets
 * them (standardised), in *row (the file's) and *col; 0 when none. */
static fn_status find_bad_input(const fn_batch *b, int64_t *row, int *col, float *value,
                                int *found)
{
    const size_t n = (size_t)b->x.rows * (size_t)b->x.cols;
    float *x = malloc(n * sizeof *x);
    *found = 0;
    if (!x)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    fn_status st = fn_tensor_download(&b->x, x, n);
    for (size_t i = 0; st == FN_OK && i < n && !*found; i++)
        if (!isfinite(x[i])) {
            *found = 1;
            *row = b->index[i / (size_t)b->x.cols];
            *col = (int)(i % (size_t)b->x.cols);
            *value = x[i];
        }
    free(x);
    return st;
}

/* A non-finite input of the batch: only standardisation can make one (a
 * set's values are checked finite when it is opened). */
static fn_status stop_bad_input(const fn_trainer *t, int64_t row, int col, float value)
{
    const fn_train_state *s = &t->state;
    char why[256] = "";
    if (t->norm)
        snprintf(why, sizeof why,
                 ": [data] standardize's (x - mean %g) / std %g overflows float32 for that "
                 "value; rescale the column, or train without standardize",
                 (double)fn_input_norm_mean(t->norm)[col], (double)fn_input_norm_std(t->norm)[col]);
    char kept[512] = "no weights written";
    if (t->checkpoint_ours)
        snprintf(kept, sizeof kept, "no weights written; %s is kept", t->checkpoint_path);
    return fn_fail(FN_ERR_NUMERIC,
                   "step %lld (epoch %lld, batch %lld): loss is not finite; first non-finite: "
                   "the input %s row %lld column %d, %s as the network gets it%s; %s",
                   s->global_step + 1, s->epoch + 1, s->step + 1, fn_data_path(t->train),
                   (long long)row, col, fn_trainer_number_name(value), why, kept);
}

/* After a non-finite training loss on batch b: its inputs, then a
 * backward of the batch and the first non-finite value in the order the
 * step computes them. */
fn_status fn_trainer_stop_nonfinite(fn_trainer *t, const fn_batch *b, const fn_tensor *dy,
                                    float loss)
{
    int64_t row = 0;
    int col = 0, bad = 0;
    float value = 0;
    fn_status st = find_bad_input(b, &row, &col, &value, &bad);
    if (st == FN_OK && bad)
        return stop_bad_input(t, row, col, value);
    const fn_loss_kind *kind = t->cfg->loss;
    char why[512], kept[512];
    if (st == FN_OK && kind->explain_nonfinite &&
        kind->explain_nonfinite(t->cfg->loss_options, b->host_labels, b->rows, why, sizeof why)) {
        /* Neither the learning rate nor the initial weights, which
         * fn_trainer_describe_kept's advice would blame. */
        snprintf(kept, sizeof kept, "no weights written%s%s%s",
                 t->checkpoint_ours ? "; " : "", t->checkpoint_ours ? t->checkpoint_path : "",
                 t->checkpoint_ours ? " is kept" : "");
        const fn_train_state *s = &t->state;
        return fn_fail(FN_ERR_NUMERIC, "step %lld (epoch %lld, batch %lld): loss is %s: %s; "
                       "stopped: %s", s->global_step + 1, s->epoch + 1, s->step + 1,
                       fn_trainer_number_name(loss), why, kept);
    }
    fn_nonfinite nf;
    /* Backward writes the gradients (param.h): no zeroing first. Where the
     * optimiser folded its state into backward (step_choice.c) the .grad
     * tensors are its buffers, which the deferred steps after this one
     * may have moved already: grad_beta 0 writes the batch's plain
     * gradient over them, so the search finds what an unfolded step
     * would (grad_bf16 NULL: into .grad in float32, where a bfloat16
     * buffer was the gradient). The run stops here, so that state is
     * never used again. */
    for (int i = 0; i < fn_net_n_params(t->net); i++) {
        fn_net_param(t->net, i)->grad_beta = 0.0f;
        fn_net_param(t->net, i)->grad_bf16 = NULL;
    }
    if (st == FN_OK)
        st = fn_net_backward(t->net, dy);
    if (st == FN_OK)
        st = fn_net_find_nonfinite(t->net, 1, &nf);
    char first[256];
    fn_trainer_describe_nonfinite(st, &nf, first, sizeof first);
    fn_trainer_describe_kept(t, kept, sizeof kept);
    const fn_train_state *s = &t->state;
    return fn_fail(FN_ERR_NUMERIC,
                   "step %lld (epoch %lld, batch %lld): loss is %s; first non-finite: %s; "
                   "stopped: %s",
                   s->global_step + 1, s->epoch + 1, s->step + 1, fn_trainer_number_name(loss), first, kept);
}

fn_status fn_trainer_set_pass(fn_trainer *t, const fn_batch *b, int training)
{
    /* The loader's share (trainer_setup.c): rows [batch * part / parts, ...). */
    const long long part = t->dist ? t->rank : 0, parts = t->dist ? t->ranks : 1;
    const fn_pass pass = {
        .training = training,
        .step = t->state.global_step,
        .row0 = b ? (long long)b->batch_rows * part / parts : 0,
    };
    return fn_net_set_pass(t->net, &pass);
}

fn_status fn_trainer_gradients(fn_trainer *t, const fn_tensor *dy)
{
    /* No zeroing: backward writes each gradient (param.h, grad_beta 0). */
    FN_TRY(fn_net_backward(t->net, dy));
    return t->clip ? fn_clip_apply(t->clip) : FN_OK;
}

/* fn_net_backward_each's walk with each layer's update beside it: layers
 * come last first, part k being layer k's parameters (step_choice.c). */
typedef struct layer_walk {
    fn_trainer *t;
    const int *skip;
    int part; /* the next layer's */
} layer_walk;

/* A layer's backward, then its update on the side stream: queued after
 * everything of the layer's backward (its dx product read W, its dW
 * product wrote the gradient, both joined before the backward returned),
 * and beside the backward of the layers before it, none of which reads
 * this layer's parameters, gradients or optimiser state. */
static fn_status backward_then_update(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, void *arg)
{
    layer_walk *w = arg;
    const int part = w->part--;
    FN_TRY(fn_layer_backward(l, dy, dx));
    if (l->n_params == 0)
        return FN_OK;
    FN_TRY(fn_context_side_begin(w->t->ctx));
    const fn_status st = fn_optimizer_apply_part(w->t->opt, part, w->skip);
    fn_context_side_end(w->t->ctx);
    return st;
}

fn_status fn_trainer_backward_update(fn_trainer *t, const fn_tensor *dy, const int *skip)
{
    if (!t->layer_updates) {
        FN_TRY(fn_trainer_gradients(t, dy));
        return fn_optimizer_apply(t->opt, skip);
    }
    layer_walk w = {.t = t, .skip = skip, .part = fn_net_n_layers(t->net) - 1};
    const fn_status st = fn_net_backward_each(t->net, dy, backward_then_update, &w);
    /* Joined on failure too: a capture must not end with the side stream
     * forked. After it the next step's forward sees every update. */
    const fn_status joined = fn_context_join(t->ctx);
    return st != FN_OK ? st : joined;
}

fn_status fn_trainer_recheck(fn_trainer *t, const fn_batch *b, float device_loss)
{
    fn_tensor y;
    FN_TRY(fn_trainer_set_pass(t, b, 1));
    FN_TRY(fn_net_forward(t->net, &b->x, &y));
    fn_tensor dy = fn_tensor_rows(&t->dpred, 0, b->rows);
    float loss = 0;
    int correct = 0;
    FN_TRY(fn_trainer_batch_loss(t, b, &y, &dy, &loss, &correct));
    if (!isfinite(loss))
        return fn_trainer_stop_nonfinite(t, b, &dy, loss);
    const fn_train_state *s = &t->state;
    return fn_fail(FN_ERR_NUMERIC,
                   "step %lld (epoch %lld, batch %lld): loss was %s on the device, but %g when "
                   "taken again (not reproducible)",
                   s->global_step + 1, s->epoch + 1, s->step + 1, fn_trainer_number_name(device_loss),
                   (double)loss);
}

fn_status fn_trainer_queue_step(fn_trainer *t, const fn_batch *b)
{
    /* The head's bias is added by the loss's kernel where it can
     * (fn_loss_tally_step_biased): one launch fewer a step. */
    fn_tensor y;
    const float *head_bias = NULL;
    FN_TRY(fn_net_forward_unbiased(t->net, &b->x, &y, &head_bias));
    fn_tensor dy = fn_tensor_rows(&t->dpred, 0, b->rows);
    const fn_loss_targets targets = {.labels = b->labels, .values = &b->target,
                                     .weights = b->host_weights};
    FN_TRY(fn_loss_tally_step_biased(t->tally, t->cfg->loss, t->cfg->loss_options, &y, head_bias,
                                     &targets, &t->loss, &dy));
    return fn_trainer_backward_update(t, &dy, fn_loss_tally_bad_flag(t->tally));
}
