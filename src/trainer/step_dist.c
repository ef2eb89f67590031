/* step_dist.c — the data-parallel step (one of the trainer's step
 * strategies, trainer_impl.h) over the ranks of an MPI world
 * (docs/many-processes.md, fusenet/comm.h). Every rank holds the whole network
 * and takes its contiguous share of each global batch (the loader's
 * part/parts, loader.h), so the data order does not depend on the number
 * of ranks N. A step:
 *   forward and loss on the rank's rows; the loss gradient scaled by its
 *   rows over the global batch's, so the ranks' gradients sum to the
 *   one-process gradient of the batch's mean loss;
 *   one small host sum of (loss x rows, correct, non-finite) over the ranks:
 *   the whole batch's loss and accuracy on every rank, and a non-finite
 *   loss stops every rank at the same step;
 *   backward layer by layer (fn_net_backward_each), each layer's gradient
 *   sum started as soon as its backward is done, on the communicator's
 *   stream, while earlier layers' backward runs;
 *   each layer's update waits for its own sum only (the optimiser's
 *   step_params), so the first layers' sums, the last to start, run while
 *   the last layers update; with clipping, which needs every sum for its
 *   norm, all sums, then clipping and one step. A sharded optimiser
 *   ([run] shard = optimizer, optim/shard.h) makes the sums itself: a
 *   reduce-scatter a layer in their place, and after each layer's update
 *   of the rank's parts the all-gather of its values; its clipper holds
 *   the rank's parts and takes the norm over every rank's (one host sum
 *   of a double). The fused plain-SGD
 *   backward_step is never used here (on any number of ranks), since it
 *   would update before the sums;
 *   fn_comm_settle: a bounded wait for the sums (and gathers), so a rank that stopped
 *   answering ends in an error, not a hang.
 * The rest of data parallelism is trainer_dist.c's. */
#include <math.h>

#include "core/test_hooks.h"
#include "trainer/trainer_impl.h"

/* Layer l's first parameter in the net's list (the layers' are in order). */
static int first_param(const fn_net *net, const fn_layer *l)
{
    int first = 0;
    for (int k = 0; k < fn_net_n_layers(net) && fn_net_layer(net, k) != l; k++)
        first += fn_net_layer(net, k)->n_params;
    return first;
}

/* Starts the sum of one layer's parameter gradients: an all-reduce, or
 * the sums a sharded optimiser's update reads (its reduce-scatter). */
static fn_status sum_layer(fn_trainer *t, fn_layer *l)
{
    if (fn_optimizer_sums_own(t->opt))
        return fn_optimizer_sum_start(t->opt, first_param(t->net, l), l->n_params);
    enum { MAX_PARAMS = 16 };
    fn_tensor *grads[MAX_PARAMS];
    if (l->n_params > MAX_PARAMS)
        return fn_fail(FN_ERR_INVALID, "a layer of %d parameters (at most %d)", l->n_params,
                       MAX_PARAMS);
    for (int i = 0; i < l->n_params; i++)
        grads[i] = &l->params[i].grad;
    int ticket = 0;
    return fn_comm_sum_start(t->comm, grads, l->n_params, &ticket);
}

/* fn_net_backward_each's part for a layer: its backward, then its sum. */
static fn_status backward_and_sum(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, void *arg)
{
    FN_TRY(fn_layer_backward(l, dy, dx));
    return sum_layer(arg, l);
}

/* The gradients of the rank's rows (backward writes them, param.h; zero
 * for an empty share), their sums over the ranks started layer by layer:
 * tickets 0..layers-1 in backward order, last layer first. */
static fn_status backward_summed(fn_trainer *t, const fn_batch *b, fn_tensor *dy)
{
    const int layers = fn_net_n_layers(t->net);
    if (b->rows > 0) {
        /* rows / batch_rows rounded once; 1 exactly when the rank has the
         * whole batch (one rank), so that run equals a plain one. */
        if (b->rows != b->batch_rows)
            FN_TRY(fn_comm_scale(t->ctx, dy, (float)((double)b->rows / b->batch_rows)));
        FN_TRY(fn_net_backward_each(t->net, dy, backward_and_sum, t));
    } else {
        FN_TRY(fn_net_zero_grad(t->net)); /* no backward writes them */
        for (int i = layers - 1; i >= 0; i--)
            FN_TRY(sum_layer(t, fn_net_layer(t->net, i)));
    }
    return FN_OK;
}

/* The update once the sums are in. Layer by layer where the optimiser can
 * (step_params) and nothing needs every sum first: each layer's update
 * waits for its own sum only, so the last sums (the first layers') run
 * while the last layers update. Clipping needs the norm of every summed
 * gradient: then all sums, the clipping and one step (sharded: the
 * clipper over the rank's parts, its norm summed over the ranks, then the
 * step updates the parts and gathers the values). */
static fn_status update(fn_trainer *t)
{
    const int layers = fn_net_n_layers(t->net);
    if (t->clip || !fn_optimizer_can_step_params(t->opt)) {
        for (int k = 0; k < layers; k++)
            FN_TRY(fn_comm_sum_wait(t->comm, k));
        if (t->clip)
            FN_TRY(fn_clip_apply(t->clip));
        return fn_optimizer_step(t->opt);
    }
    int end = fn_net_n_params(t->net); /* the layers' parameters are in layer order */
    for (int k = 0; k < layers; k++) {
        const fn_layer *l = fn_net_layer(t->net, layers - 1 - k);
        FN_TRY(fn_comm_sum_wait(t->comm, k));
        end -= l->n_params;
        FN_TRY(fn_optimizer_step_params(t->opt, end, l->n_params));
    }
    fn_optimizer_step_done(t->opt);
    return FN_OK;
}

/* Every rank stops at a step where any rank's loss is not finite: that
 * rank names the first non-finite value (fn_trainer_stop_nonfinite), the
 * others point to it. */
static fn_status stop_together(fn_trainer *t, const fn_batch *b, fn_tensor *dy, float mine)
{
    t->failed_together = 1;
    if (b->rows > 0 && !isfinite(mine))
        return fn_trainer_stop_nonfinite(t, b, dy, mine);
    const fn_train_state *s = &t->state;
    return fn_fail(FN_ERR_NUMERIC,
                   "step %lld (epoch %lld, batch %lld): the loss is not finite on another rank, "
                   "whose message names the first non-finite value; rank %d stopped with it",
                   s->global_step + 1, s->epoch + 1, s->step + 1, t->rank);
}

static fn_status dist_step(fn_trainer *t, const fn_batch *b, float *loss)
{
    float mine = 0;
    int correct = 0;
    fn_tensor dy = {0};
    if (b->rows > 0) {
        fn_tensor y;
        FN_TRY(fn_net_forward(t->net, &b->x, &y));
        dy = fn_tensor_rows(&t->dpred, 0, b->rows);
        FN_TRY(fn_trainer_batch_loss(t, b, &y, &dy, &mine, &correct)); /* the rank's rows */
    }
    fn_test_rank_stall(t->rank, t->state.global_step + 1);
    if (fn_test_rank_fails(t->rank, t->state.global_step + 1))
        return fn_fail(FN_ERR_IO, "test hook: rank %d fails at step %lld (FN_TEST_FAIL_RANK)",
                       t->rank, t->state.global_step + 1);
    const int bad = b->rows > 0 && !isfinite(mine);
    double sums[3] = {bad ? 0 : (double)mine * b->rows, correct, bad};
    FN_TRY(fn_comm_sum_doubles(t->comm, sums, 3));
    if (sums[2] > 0)
        return stop_together(t, b, &dy, mine);
    FN_TRY(backward_summed(t, b, &dy));
    FN_TRY(update(t));
    FN_TRY(fn_comm_settle(t->comm));
    const double batch_loss = sums[0] / b->batch_rows;
    *loss = (float)batch_loss;
    fn_train_state_add_step(&t->state, batch_loss, b->batch_rows, (long long)sums[1]);
    return FN_OK;
}

static fn_status dist_begin(fn_trainer *t)
{
    (void)t;
    return FN_OK;
}

static fn_status dist_drain(fn_trainer *t)
{
    (void)t;
    return FN_OK;
}

static void dist_release(fn_trainer *t) { (void)t; }

const fn_step_ops fn_step_dist = {
    .name = "data-parallel",
    .begin = dist_begin,
    .step = dist_step,
    .drain = dist_drain,
    .release = dist_release,
};
