/* step_deferred.c — the deferred step, one of the trainer's step
 * strategies (trainer_impl.h; step_graph.c replays it as CUDA graphs): the
 * training step without a host round trip: on the GPU (with an optimiser that
 * has a split step, optimizer.h) a step is queued and never waited for. The
 * loss, the correct count and the epoch's sums stay on the device in a loss
 * tally (loss_tally.h); the optimiser's update reads its learning rate from
 * the device and is skipped there once a loss went non-finite, so the
 * parameters and the optimiser's state stay those of the last good step,
 * except a state folded into backward (fn_optimizer_fold: SGD's momentum
 * buffer), which the backward of every step after the bad one still moves;
 * the run never goes on from there: a bad step is found at the latest at the
 * epoch's end, before any checkpoint or weights are written, and stops the
 * run (stop_late). The host reads the tally late: a copy after every 4th
 * step, taken when it has arrived (never waiting; at most 4 *
 * FN_LOSS_TALLY_RING steps ahead), and a synchronous read at the end of an
 * epoch's steps, before validation and before any checkpoint or weights are
 * written.
 *
 * A non-finite loss found late rolls the run back to the step where it
 * first went non-finite: the trainer's counts are set back to that step's
 * start (the optimiser's step count too), its batch is taken again from
 * the loader (the data order is a function of epoch and step) and the
 * usual diagnosis (step_common.c) names the step and the first
 * non-finite value, as an eager run would have.
 *
 * Not deferred (step_choice.c says which strategy a run takes): data-parallel runs (step_dist.c); plain SGD on the GPU without clipping (momentum and weight
 * decay 0), whose update is folded into the backward pass (sgd_fused.h):
 * it changes the weights before the loss is known, with its lr as a launch
 * argument. What differs from the eager step: the loss handed to the
 * progress callback is the newest the host has seen (a few steps old; the
 * run's first step waits for its own). Everything else, the sums included,
 * is bit for bit the eager step's. Test builds can defer on the CPU too,
 * with copies that arrive late on purpose (FN_TEST_DEFER_LAG). */
#include <math.h>

#include "trainer/trainer_impl.h"

/* A copy of the sums after every 4th step (by global step): each copy is
 * a transfer the stream waits for between two steps, and a late one is
 * as good. So the host runs at most 4 * FN_LOSS_TALLY_RING steps ahead. */
enum { POST_EVERY = 4 };

/* --- the strategy ---------------------------------------------------------- */

fn_status fn_trainer_defer_begin(fn_trainer *t)
{
    const fn_train_state *s = &t->state;
    t->tally_mean = s->seen ? s->loss_sum / (double)s->seen : NAN;
    return fn_loss_tally_set(t->tally, s->loss_sum, s->correct, s->seen, s->global_step);
}

void fn_trainer_defer_release(fn_trainer *t)
{
    fn_loss_tally_destroy(t->tally);
    t->tally = NULL;
}

/* --- a step ---------------------------------------------------------------- */

/* The run back at the first non-finite step v->bad_step (in this epoch:
 * every epoch's steps end with a read), that step's batch taken again and
 * diagnosed. */
static fn_status stop_late(fn_trainer *t, const fn_loss_tally_value *v)
{
    fn_train_state *s = &t->state;
    const long long back = s->global_step - v->bad_step; /* the bad step and those after it */
    s->global_step = v->bad_step;
    s->step -= back;
    s->loss_sum = v->loss_sum;
    s->correct = v->correct;
    s->seen = v->seen;
    fn_optimizer_set_steps(t->opt, fn_optimizer_steps(t->opt) - back);
    FN_TRY(fn_loader_start(t->loader, s->epoch, s->step));
    fn_batch b;
    FN_TRY(fn_loader_next(t->loader, &b));
    if (!b.rows)
        return fn_fail(FN_ERR_NUMERIC, "step %lld: loss is not finite, and its batch is gone",
                       s->global_step + 1);
    return fn_trainer_recheck(t, &b, v->bad_loss);
}

fn_status fn_trainer_defer_step(fn_trainer *t, const fn_batch *b, float *loss,
                                fn_status (*queue)(fn_trainer *t, const fn_batch *b))
{
    FN_TRY(fn_optimizer_prepare(t->opt));
    FN_TRY(queue(t, b));
    if (t->state.global_step % POST_EVERY == POST_EVERY - 1)
        FN_TRY(fn_loss_tally_post(t->tally));
    /* The sums come from the tally when it is read; the rows are known. */
    fn_train_state_add_step(&t->state, 0.0, b->rows, 0);
    fn_loss_tally_value v;
    int fresh = 0;
    FN_TRY(fn_loss_tally_poll(t->tally, &v, &fresh));
    if (!fresh && isnan(t->tally_mean)) {
        /* The epoch's (or the run's) first step: no sums of it to show
         * yet, so wait for this one (once an epoch; later steps show the
         * newest that have arrived). */
        FN_TRY(fn_loss_tally_read(t->tally, &v));
        fresh = 1;
    }
    if (fresh && v.bad)
        return stop_late(t, &v);
    if (fresh && v.steps > 0)
        t->last_loss = v.last_loss;
    if (fresh && v.seen > 0)
        t->tally_mean = v.loss_sum / (double)v.seen;
    *loss = t->last_loss;
    return FN_OK;
}

fn_status fn_trainer_defer_drain(fn_trainer *t)
{
    fn_loss_tally_value v;
    FN_TRY(fn_loss_tally_read(t->tally, &v));
    if (v.bad)
        return stop_late(t, &v);
    fn_train_state *s = &t->state;
    if (v.seen != s->seen)
        return fn_fail(FN_ERR_NUMERIC, "the device counted %lld rows this epoch, the host %lld",
                       v.seen, s->seen);
    s->loss_sum = v.loss_sum;
    s->correct = v.correct;
    if (v.steps > 0)
        t->last_loss = v.last_loss;
    t->tally_mean = s->seen ? s->loss_sum / (double)s->seen : NAN;
    return FN_OK;
}

static fn_status deferred_step(fn_trainer *t, const fn_batch *b, float *loss)
{
    return fn_trainer_defer_step(t, b, loss, fn_trainer_queue_step);
}

const fn_step_ops fn_step_deferred = {
    .name = "deferred",
    .begin = fn_trainer_defer_begin,
    .step = deferred_step,
    .drain = fn_trainer_defer_drain,
    .release = fn_trainer_defer_release,
};
