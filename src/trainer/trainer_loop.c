/* trainer_loop.c — fn_trainer_run: the epochs left, each its steps over the
 * batches the loader prepares, then validation, best.h5 when it improved
 * ([train] keep_best), metrics.csv and, every [train] checkpoint_every
 * epochs, a checkpoint; a stop the caller asks for ends the run after a
 * step with a checkpoint; the last epoch, or [train] patience epochs
 * without improvement, with a checkpoint (so --resume with more epochs
 * extends a finished run) and weights.h5. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "fusenet/weights.h"
#include "trainer/trainer_impl.h"

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
    return fn_trainer_dist_stop(t); /* over the ranks, each stops at the same step */
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
                                .layers = fn_net_n_layers(t->net),
                                .ranks = t->dist ? t->ranks : 1,
                                .devices = t->devices,
                                .nodes = t->nodes,
                                .device = fn_context_device(t->ctx),
                                .grad_sum = fn_comm_sum_of(t->comm)};
    t->cb.on_start(t->user, &plan);
}

/* The epoch's mean loss so far: the state's sums, or a deferred step's
 * newest sums read from the device. */
static double running_loss(const fn_trainer *t)
{
    const fn_train_state *s = &t->state;
    if (t->tally)
        return t->tally_mean;
    return s->seen ? s->loss_sum / (double)s->seen : NAN;
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
        .loss = running_loss(t),
        .batch_loss = loss,
        .samples_per_s = elapsed > 0 ? (double)(s->seen - t->seen_before) / elapsed : 0,
        .rows_left = (long long)fn_data_rows(t->train) * (t->cfg->epochs - s->epoch) - s->seen};
    t->cb.on_step(t->user, &p);
}

/* The epoch's line, and metrics.csv's: opened with the first line, so a run
 * that ends before any epoch does leaves no header-only file; a resumed
 * run keeps the lines of the epochs before this one. */
static fn_status report_epoch(fn_trainer *t, fn_train_metrics train, fn_train_metrics valid,
                              int improved)
{
    const fn_train_state *s = &t->state;
    const int watching = t->cfg->keep_best || t->cfg->patience > 0;
    const fn_train_epoch e = {.epoch = s->epoch, .epochs = t->cfg->epochs, .train = train,
                              .valid = valid, .seconds = s->seconds,
                              .samples_per_s = t->epoch_rate, .improved = watching && improved,
                              .since_best = watching ? s->since_best : 0,
                              .epoch_seconds = t->epoch_seconds};
    if (t->cb.on_epoch)
        t->cb.on_epoch(t->user, &e);
    if (!fn_trainer_writes(t))
        return FN_OK;
    if (!t->csv) {
        FN_TRY(fn_trainer_prepare_output(t));
        FN_TRY(fn_metrics_csv_open(&t->csv, t->csv_path, s->epoch));
    }
    const double lr = fn_schedule_lr(&t->schedule, s->global_step > 0 ? s->global_step - 1 : 0);
    fn_metrics_csv_add(t->csv, s->epoch + 1, train.loss, train.acc, valid.loss, valid.acc,
                       s->seconds, t->epoch_rate, (double)(float)lr, s->grad_norm);
    return FN_OK;
}

static void report_done(const fn_trainer *t)
{
    if (!t->cb.on_done)
        return;
    const fn_train_state *s = &t->state;
    const fn_train_summary summary = {
        .loader = fn_loader_get_stats(t->loader),
        .epochs = (int)s->epoch,
        .steps = s->global_step,
        .seconds = s->seconds,
        .weights_path = t->weights_path,
        .samples_per_s = t->run_seconds > 0 ? (double)t->run_rows / t->run_seconds : 0,
        .stopped_early = t->stopped_early,
        .best_epoch = s->best_epoch,
        .best = s->best,
        .monitor = fn_monitor_name(t->cfg->monitor),
        .best_path = t->cfg->keep_best ? t->best_path : NULL};
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
        if (!b.batch_rows)
            break;
        /* The step's learning rate from the schedule, set once here for
         * every strategy. */
        fn_optimizer_set_lr(t->opt, (float)fn_schedule_lr(&t->schedule, t->state.global_step));
        FN_TRY(fn_trainer_set_pass(t, &b, 1));
        float loss = 0;
        FN_TRY(t->step->step(t, &b, &loss));
        report_step(t, loss);
    }
    return t->step->drain(t); /* deferred steps: the sums, a late stop */
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
    fn_status st = t->step->begin(t);
    if (st == FN_OK)
        st = run_steps(t);
    fn_status halted = fn_loader_halt(t->loader);
    FN_TRY(st);
    FN_TRY(halted);
    const double seconds = now() - t->epoch_started;
    const long long rows = s->seen - t->seen_before;
    t->epoch_rate = seconds > 0 ? (double)rows / seconds : 0;
    t->epoch_seconds = seconds;
    t->run_rows += rows;
    t->run_seconds += seconds;
    m->loss = s->seen ? s->loss_sum / (double)s->seen : NAN;
    m->acc = fn_trainer_metric(t, s->correct, s->seen);
    return FN_OK;
}

/* keep_best and patience: whether the metric [train] monitor names
 * improved by more than [train] min_delta (trainer_monitor.c); best.h5
 * when it did and keep_best. */
static fn_status watch_best(fn_trainer *t, fn_train_metrics train, fn_train_metrics valid,
                            int *improved)
{
    const fn_config *c = t->cfg;
    *improved = 0;
    if (!c->keep_best && c->patience <= 0)
        return FN_OK;
    *improved = fn_train_state_best(&t->state, fn_trainer_monitored(t, train, valid),
                                    fn_trainer_monitor_lower_better(t), c->min_delta);
    if (!*improved || !c->keep_best || !fn_trainer_writes(t))
        return FN_OK;
    FN_TRY(fn_trainer_prepare_output(t));
    const fn_provenance *prov = NULL;
    FN_TRY(fn_trainer_provenance(t, &prov));
    const fn_weights_save_options with = {.norm = t->norm, .target = t->target_norm,
                                          .provenance = prov, .config_text = c->text};
    return fn_weights_save(t->best_path, t->net, &with);
}

/* The metric a schedule that reacts to the run (reduce on plateau) follows,
 * lower is better: [train] monitor's when it is a loss and there is a
 * validation set, the validation loss when it watches an accuracy (whose
 * relative threshold would not mirror), else the epoch's training loss. */
static double schedule_metric(const fn_trainer *t, fn_train_metrics train,
                              fn_train_metrics valid)
{
    if (!t->valid_loader)
        return train.loss;
    return fn_trainer_monitor_lower_better(t) ? fn_trainer_monitored(t, train, valid) : valid.loss;
}

/* A validation loss that is undefined (every row weighs 0, 0/0:
 * trainer_evaluate.c) where keep_best, patience or a schedule that
 * follows the run would compare it: refused, naming what watches it,
 * rather than compared as a NaN (never better, so patience would run
 * out and best.h5 stay at its first epoch). */
static fn_status check_watched(const fn_trainer *t, fn_train_metrics train,
                               fn_train_metrics valid)
{
    const fn_config *c = t->cfg;
    char who[128];
    const char *fix = NULL;
    if ((c->keep_best || c->patience > 0) && isnan(fn_trainer_monitored(t, train, valid)))
        snprintf(who, sizeof who, "[train] %s watches it ([train] monitor = valid_loss)",
                 c->keep_best ? "keep_best" : "patience"),
            fix = "monitor = valid_accuracy";
    else if (c->schedule->epoch_end && isnan(schedule_metric(t, train, valid)))
        snprintf(who, sizeof who, "[train] schedule = %s follows it", c->schedule->name),
            fix = "monitor = train_loss";
    if (!fix)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID, "epoch %lld: the validation loss is undefined (every row of "
                   "%s weighs 0 in the mean of loss = %s as configured: 0/0), and %s; give "
                   "rows of the validation set a weight above 0, or set [train] %s",
                   t->state.epoch + 1, fn_data_path(t->valid), c->loss->name, who, fix);
}

static fn_status end_epoch(fn_trainer *t, fn_train_metrics train)
{
    fn_train_metrics valid = {NAN, NAN};
    FN_TRY(fn_trainer_sync_grad_norm(t));
    if (t->valid_loader) {
        FN_TRY(fn_trainer_evaluate(t, t->valid_loader, &valid));
        FN_TRY(check_watched(t, train, valid));
    }
    int improved = 0;
    FN_TRY(watch_best(t, train, valid, &improved));
    FN_TRY(report_epoch(t, train, valid, improved));
    /* After the report: its lr is the one the epoch's last step took. */
    fn_schedule_epoch_end(&t->schedule, schedule_metric(t, train, valid));
    const int patience = t->cfg->patience;
    t->stopped_early = patience > 0 && t->state.since_best >= patience &&
                       t->state.epoch + 1 < t->cfg->epochs;
    fn_train_state_next_epoch(&t->state);
    const int every = t->cfg->checkpoint_every;
    if (every > 0 && t->state.epoch % every == 0 && !stop_requested(t))
        FN_TRY(fn_trainer_save_checkpoint(t));
    return FN_OK;
}

static fn_status train_loop(fn_trainer *t)
{
    fn_train_state *s = &t->state;
    while (s->epoch < t->cfg->epochs && !t->stopped_early) {
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
    fn_trainer_report_model(t);
    report_start(t);
    FN_TRY(fn_trainer_dist_check_same(t, "at the start"));
    FN_TRY(train_loop(t));
    FN_TRY(fn_trainer_dist_check_same(t, "at the end"));
    if (stop_requested(t)) {
        t->outcome = FN_TRAIN_STOPPED;
        return fn_trainer_dist_written(t, fn_trainer_save_checkpoint(t));
    }
    if (fn_trainer_writes(t)) {
        FN_TRY(fn_trainer_prepare_output(t));
        const fn_provenance *prov = NULL;
        FN_TRY(fn_trainer_provenance(t, &prov));
        const fn_weights_save_options with = {.norm = t->norm, .target = t->target_norm,
                                              .provenance = prov, .config_text = t->cfg->text};
        FN_TRY(fn_weights_save(t->weights_path, t->net, &with));
    }
    /* Then the end's checkpoint, unless the last epoch's is it already:
     * what --resume with a larger [train] epochs continues. The weights,
     * the run's product, come first. */
    if (!fn_trainer_checkpoint_current(t))
        FN_TRY(fn_trainer_save_checkpoint(t));
    t->outcome = FN_TRAIN_DONE;
    report_done(t);
    return FN_OK;
}
