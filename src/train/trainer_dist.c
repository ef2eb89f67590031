/* trainer_dist.c — data-parallel training over the ranks of an MPI world
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
 *   norm, all sums, then clipping and one step. The fused plain-SGD
 *   backward_step is never used here (on any number of ranks), since it
 *   would update before the sums;
 *   fn_comm_settle: a bounded wait for the sums, so a rank that stopped
 *   answering ends in an error, not a hang.
 * Rank 0 alone writes the output directory's files (fn_trainer_writes).
 * The ranks' parameters are compared bit for bit (a 64-bit FNV-1a hash of
 * every value) when the run starts and when it ends. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/test_hooks.h"
#include "train/trainer_impl.h"

fn_status fn_trainer_dist_setup(fn_trainer *t, fn_comm_scope scope)
{
    FN_TRY(fn_comm_create(&t->comm, t->ctx, scope));
    t->dist = !fn_comm_is_single(t->comm);
    return FN_OK;
}

int fn_trainer_writes(const fn_trainer *t) { return t->rank == 0; }

int fn_trainer_dist_rows(const fn_trainer *t)
{
    const int b = t->cfg->batch_size;
    return t->dist ? (b + t->ranks - 1) / t->ranks : b;
}

int fn_trainer_dist_gpu(const fn_trainer *t, int configured, int found)
{
    return t->ranks > 1 ? fn_world_local_rank() % found : configured;
}

int fn_trainer_failed_on_every_rank(const fn_trainer *t) { return t && t->failed_together; }

/* --- a step ------------------------------------------------------------------- */

/* Starts the sum of one layer's parameter gradients. */
static fn_status sum_layer(fn_trainer *t, fn_layer *l)
{
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

/* The gradients of the rank's rows (zero for an empty share), their sums
 * over the ranks started layer by layer: tickets 0..layers-1 in backward
 * order, last layer first. */
static fn_status backward_summed(fn_trainer *t, const fn_batch *b, fn_tensor *dy)
{
    FN_TRY(fn_net_zero_grad(t->net));
    const int layers = fn_net_n_layers(t->net);
    if (b->rows > 0) {
        /* rows / batch_rows rounded once; 1 exactly when the rank has the
         * whole batch (one rank), so that run equals a plain one. */
        if (b->rows != b->batch_rows)
            FN_TRY(fn_comm_scale(t->ctx, dy, (float)((double)b->rows / b->batch_rows)));
        FN_TRY(fn_net_backward_each(t->net, dy, backward_and_sum, t));
    } else {
        for (int i = layers - 1; i >= 0; i--)
            FN_TRY(sum_layer(t, fn_net_layer(t->net, i)));
    }
    return FN_OK;
}

/* The update once the sums are in. Layer by layer where the optimiser can
 * (step_params) and nothing needs every sum first: each layer's update
 * waits for its own sum only, so the last sums (the first layers') run
 * while the last layers update. Clipping needs the norm of every summed
 * gradient: then all sums, the clipping and one step. */
static fn_status update(fn_trainer *t)
{
    const int layers = fn_net_n_layers(t->net);
    if (t->clip || !t->opt->ops->step_params) {
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

fn_status fn_trainer_dist_step(fn_trainer *t, const fn_batch *b, float *loss)
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
    fn_optimizer_set_lr(t->opt, (float)fn_schedule_lr(&t->schedule, t->state.global_step));
    FN_TRY(backward_summed(t, b, &dy));
    FN_TRY(update(t));
    FN_TRY(fn_comm_settle(t->comm));
    const double batch_loss = sums[0] / b->batch_rows;
    *loss = (float)batch_loss;
    fn_train_state_add_step(&t->state, batch_loss, b->batch_rows, (long long)sums[1]);
    return FN_OK;
}

/* --- agreement ------------------------------------------------------------------ */

int fn_trainer_dist_stop(fn_trainer *t)
{
    if (!t->dist || t->stop_agreed)
        return t->stop;
    int flag = t->stop;
    /* MPI's errors end the job (comm_mpi.c): this one cannot fail here. */
    if (fn_comm_any(t->comm, &flag) != FN_OK)
        flag = 1;
    t->stop = t->stop_agreed = flag;
    return flag;
}

fn_status fn_trainer_dist_sum_metrics(fn_trainer *t, double *loss_sum, long long *correct,
                                      long long *seen)
{
    if (!t->dist)
        return FN_OK;
    double v[3] = {*loss_sum, (double)*correct, (double)*seen};
    FN_TRY(fn_comm_sum_doubles(t->comm, v, 3));
    *loss_sum = v[0];
    *correct = (long long)v[1];
    *seen = (long long)v[2];
    return FN_OK;
}

fn_status fn_trainer_dist_written(fn_trainer *t, fn_status st)
{
    if (!t->dist)
        return st;
    int failed = st != FN_OK;
    FN_TRY(fn_comm_any(t->comm, &failed));
    if (!failed)
        return FN_OK;
    t->failed_together = 1;
    return st != FN_OK ? st
                       : fn_fail(FN_ERR_IO, "rank 0 could not write %s (its message says why)",
                                 t->checkpoint_path);
}

/* --- the same weights on every rank ------------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* Every parameter value's bits, hashed in order. */
static fn_status hash_params(fn_trainer *t, uint64_t *hash)
{
    *hash = 0xcbf29ce484222325ULL;
    for (int i = 0; i < fn_net_n_params(t->net); i++) {
        const fn_tensor *v = &fn_net_param(t->net, i)->value;
        const size_t n = (size_t)v->rows * (size_t)v->cols;
        float *host = malloc(sizeof *host * n);
        if (!host)
            return fn_fail(FN_ERR_NOMEM, "out of host memory comparing the ranks' weights");
        fn_status st = fn_tensor_download(v, host, n);
        if (st == FN_OK)
            *hash = fnv1a(*hash, host, sizeof *host * n);
        free(host);
        FN_TRY(st);
    }
    return FN_OK;
}

/* FN_TEST_PERTURB_RANK: the lowest bit of the first value flipped. */
static fn_status perturb(fn_trainer *t)
{
    fn_tensor *v = &fn_net_param(t->net, 0)->value;
    const size_t n = (size_t)v->rows * (size_t)v->cols;
    float *host = malloc(sizeof *host * n);
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    fn_status st = fn_tensor_download(v, host, n);
    uint32_t bits;
    memcpy(&bits, &host[0], sizeof bits);
    bits ^= 1u;
    memcpy(&host[0], &bits, sizeof bits);
    if (st == FN_OK)
        st = fn_tensor_upload(v, host, n);
    free(host);
    return st;
}

fn_status fn_trainer_dist_check_same(fn_trainer *t, const char *when)
{
    if (!t->dist)
        return FN_OK;
    if (t->state.global_step == 0 && fn_test_rank_perturbed(t->rank))
        FN_TRY(perturb(t));
    uint64_t hash = 0;
    FN_TRY(hash_params(t, &hash));
    int same = 0;
    FN_TRY(fn_comm_same(t->comm, hash, &same));
    if (same)
        return FN_OK;
    t->failed_together = 1;
    return fn_fail(FN_ERR_NUMERIC,
                   "%s (step %lld) the parameters differ between the %d ranks (rank %d's hash "
                   "%016llx): the ranks must start from the same weights and sum the same "
                   "gradients",
                   when, t->state.global_step, fn_comm_size(t->comm), t->rank,
                   (unsigned long long)hash);
}
