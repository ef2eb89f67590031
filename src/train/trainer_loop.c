/* trainer_loop.c — fn_trainer_run: the epochs left, each its steps over the
 * batches the loader prepares, then validation, metrics.csv and, every
 * [train] checkpoint_every epochs, a checkpoint; a stop the caller asks for
 * ends the run after a step with a checkpoint; the last epoch with
 * weights.h5. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <time.h>

#include "fusenet/weights.h"
#include "train/trainer_impl.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Asks the caller until it says stop once. */
static int stop_requested(fn_trainer *t)
{
    if (!t->stop && t->cb.should_stop)
        t->stop = t->cb.should_stop(t->user) != 0;
    return t->stop;
}

/* --- reports ------------------------------------------------------------------ */

static void report_start(const fn_trainer *t)
{
    if (!t->cb.on_start)
        return;
    const fn_train_plan plan = {.rows = (long long)fn_data_rows(t->train),
                                .batches = fn_data_batches(t->train),
                                .batch_size = t->cfg->batch_size,
                                .epochs = t->cfg->epochs,
                                .layers = fn_net_n_layers(t->net)};
    t->cb.on_start(t->user, &plan);
}

static void report_step(const fn_trainer *t, float loss)
{
    if (!t->cb.on_step)
        return;
    const fn_train_state *s = &t->state;
    const double elapsed = now() - t->epoch_started;
    const fn_train_progress p = {
        .epoch = s->epoch,
        .epochs = t->cfg->epochs,
        .step = s->step,
        .steps = fn_data_batches(t->train),
        .loss = loss,
        .samples_per_s = elapsed > 0 ? (double)(s->seen - t->seen_before) / elapsed : 0,
        .rows_left = (long long)fn_data_rows(t->train) * (t->cfg->epochs - s->epoch) - s->seen};
    t->cb.on_step(t->user, &p);
}

static void report_epoch(fn_trainer *t, fn_train_metrics train, fn_train_metrics valid)
{
    const fn_train_state *s = &t->state;
    const fn_train_epoch e = {.epoch = s->epoch, .epochs = t->cfg->epochs, .train = train,
                              .valid = valid, .seconds = s->seconds};
    if (t->cb.on_epoch)
        t->cb.on_epoch(t->user, &e);
    const double lr = fn_schedule_lr(&t->schedule, s->global_step > 0 ? s->global_step - 1 : 0);
    fn_metrics_csv_add(t->csv, s->epoch + 1, train.loss, train.acc, valid.loss, valid.acc,
                       s->seconds, (double)(float)lr, s->grad_norm);
}

static void report_done(const fn_trainer *t)
{
    if (!t->cb.on_done)
        return;
    const fn_train_summary summary = {.loader = fn_loader_get_stats(t->loader),
                                      .epochs = t->cfg->epochs,
                                      .steps = t->state.global_step,
                                      .seconds = t->state.seconds,
                                      .weights_path = t->weights_path};
    t->cb.on_done(t->user, &summary);
}

/* --- the loop ------------------------------------------------------------------ */

/* The training set's next batch, prepared ahead by the loader. */
static fn_status next_train_batch(fn_trainer *t, fn_batch *b)
{
    return fn_loader_next(t->loader, b);
}

/* The epoch's steps from the state's step, until its end or a stop. */
static fn_status run_steps(fn_trainer *t)
{
    while (!stop_requested(t)) {
        fn_batch b;
        FN_TRY(next_train_batch(t, &b));
        if (!b.rows)
            break;
        float loss = 0;
        FN_TRY(fn_trainer_step(t, &b, &loss));
        report_step(t, loss);
    }
    return FN_OK;
}

/* One epoch from the state's step; returns early, with FN_OK, on a stop.
 * The loader is halted on every way out, so the checkpoint, the validation
 * set and the weights (HDF5, the caller's thread) never meet its thread. */
static fn_status train_epoch(fn_trainer *t, fn_train_metrics *m)
{
    fn_train_state *s = &t->state;
    t->epoch_started = now();
    t->seen_before = s->seen;
    FN_TRY(fn_loader_start(t->loader, s->epoch, s->step));
    fn_status st = run_steps(t);
    fn_status halted = fn_loader_halt(t->loader);
    FN_TRY(st);
    FN_TRY(halted);
    m->loss = s->seen ? s->loss_sum / (double)s->seen : NAN;
    m->acc = t->cfg->loss == FN_LOSS_CROSS_ENTROPY && s->seen ? (double)s->correct / (double)s->seen
                                                               : NAN;
    return FN_OK;
}

static fn_status end_epoch(fn_trainer *t, fn_train_metrics train)
{
    fn_train_metrics valid = {NAN, NAN};
    FN_TRY(fn_trainer_sync_grad_norm(t));
    if (t->valid_loader)
        FN_TRY(fn_trainer_evaluate(t, t->valid_loader, &valid));
    report_epoch(t, train, valid);
    fn_train_state_next_epoch(&t->state);
    const int every = t->cfg->checkpoint_every;
    if (every > 0 && t->state.epoch % every == 0 && !stop_requested(t))
        FN_TRY(fn_trainer_save_checkpoint(t));
    return FN_OK;
}

static fn_status train_loop(fn_trainer *t)
{
    fn_train_state *s = &t->state;
    while (s->epoch < t->cfg->epochs) {
        double t0 = now();
        fn_train_metrics train;
        FN_TRY(train_epoch(t, &train));
        s->seconds += now() - t0;
        if (stop_requested(t))
            break;
        t0 = now();
        FN_TRY(end_epoch(t, train));
        s->seconds += now() - t0;
        if (stop_requested(t))
            break;
    }
    return FN_OK;
}

fn_status fn_trainer_run(fn_trainer *t)
{
    if (!t)
        return fn_fail(FN_ERR_INVALID, "fn_trainer_run: trainer is NULL");
    if (t->ran)
        return fn_fail(FN_ERR_INVALID, "fn_trainer_run: this trainer has run already");
    t->ran = 1;
    if (stop_requested(t)) {
        t->outcome = FN_TRAIN_STOPPED_AT_START;
        return FN_OK;
    }
    report_start(t);
    FN_TRY(train_loop(t));
    if (stop_requested(t)) {
        t->outcome = FN_TRAIN_STOPPED;
        return fn_trainer_save_checkpoint(t);
    }
    FN_TRY(fn_weights_save_norm(t->net, t->norm, t->weights_path, t->cfg->text));
    t->outcome = FN_TRAIN_DONE;
    report_done(t);
    return FN_OK;
}
