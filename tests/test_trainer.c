/* test_trainer.c — the library's trainer (fusenet/trainer.h) driven in
 * process on the CPU, on a small set written here (label = inside the
 * circle x^2 + y^2 < 0.5 of [-1, 1]^2, which no linear model separates):
 *  - a run calls its callbacks in order (device, model, start, every step
 *    with its epoch and position, every epoch, done) with the right counts,
 *    the model's layers, parameters and memory as the sizes make them, its
 *    loss falls and its validation accuracy beats the majority class, and
 *    it writes weights.h5 and one metrics.csv line per epoch;
 *  - a stop asked for mid-epoch ends the run at that step with a
 *    checkpoint and no weights; resuming it reports where it continues,
 *    takes the remaining steps only, and ends with weights bit-identical
 *    to the uninterrupted run's and the same metrics;
 *  - a stop asked for before the first step writes nothing. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/schedule_kind.h"
#include "optim/schedules/cosine/cosine_schedule.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "sets.h"
#include "test_main.h"
#include "run/train_state.h"

enum {
    TRAIN_ROWS = 512,
    VALID_ROWS = 128,
    BATCH = 32,
    STEPS = TRAIN_ROWS / BATCH, /* per epoch */
    EPOCHS = 8,
    STOP_AFTER = 2 * STEPS + 5, /* steps: mid third epoch */
    PATH_CAP = 1024,
    EVENTS_CAP = 1024
};

typedef program_files fixture;

/* --- the data and the config ------------------------------------------------ */

/* Two inputs; class 1 inside the circle of radius sqrt(0.5). */
static int32_t label_of(const float *x)
{
    const double a = x[0], b = x[1];
    return a * a + b * b < 0.5;
}

static const set_shape shape = {.cols = 2, .label = label_of};

/* run.ini: the sets and the model, with `train` as its [train] section's
 * keys after batch_size, epochs and seed. */
static void write_ini(const fixture *f, const char *train)
{
    program_files_ini(f,
                      "[data]\ntrain = train.h5\nvalid = valid.h5\n"
                      "[model]\nlayers = block 16, block 16, linear 2\ngroups = 4\n"
                      "[train]\nbatch_size = %d\nepochs = %d\nseed = 3\n%s"
                      "[run]\ndevice = cpu\nlog_every = 0\n",
                      BATCH, EPOCHS, train);
}

static int setup(void **state)
{
    fixture *f = program_files_new("fn_trainer_");
    char path[PATH_CAP];
    write_set(program_files_path(f, "train.h5", path, sizeof path), TRAIN_ROWS, 2024, &shape);
    write_set(program_files_path(f, "valid.h5", path, sizeof path), VALID_ROWS, 7, &shape);
    write_ini(f, "lr = 0.05\nmomentum = 0.9\n");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

/* run.ini with its output in <dir>/<out>. */
static fn_config *load_config(const fixture *f, const char *out)
{
    fn_config *cfg = NULL;
    char set[PATH_CAP + 16];
    snprintf(set, sizeof set, "output.dir=%s/%s", f->dir, out);
    EXPECT_OK(fn_config_load(&cfg, f->ini));
    EXPECT_OK(fn_config_set(cfg, set));
    EXPECT_OK(fn_config_finish(cfg));
    return cfg;
}

static int exists(const fixture *f, const char *out, const char *name)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s/%s", f->dir, out, name);
    return access(path, F_OK) == 0;
}

static char *slurp(const fixture *f, const char *out, const char *name)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s/%s", f->dir, out, name);
    return program_slurp(path);
}

/* --- a recorder of the callbacks ------------------------------------------------ */

typedef struct recorder {
    char events[EVENTS_CAP]; /* D device, R resume, M model, S start, s step, E epoch, F done */
    int n_events;
    long long steps_seen;
    double last_step_loss; /* the last on_step's loss */
    long long stop_after; /* should_stop once this many steps were seen; -1: never */
    long long next_global; /* the global step the next on_step must report */
    fn_train_state resumed;
    fn_train_epoch epochs[EPOCHS];
    int n_epochs;
    fn_train_summary done;
    fn_train_model model; /* its layers not kept */
    fn_train_layer layers[3];
} recorder;

static void event(recorder *r, char c)
{
    assert_true(r->n_events < EVENTS_CAP - 1);
    r->events[r->n_events++] = c;
}

static void on_device(void *user, const fn_train_device *d)
{
    assert_int_equal(d->device, FN_CPU);
    assert_false(d->automatic);
    event(user, 'D');
}

static void on_resume(void *user, const char *checkpoint, const fn_train_state *s)
{
    recorder *r = user;
    assert_non_null(strstr(checkpoint, "checkpoint.h5"));
    r->resumed = *s;
    r->next_global = s->global_step;
    event(r, 'R');
}

static void on_model(void *user, const fn_train_model *m)
{
    recorder *r = user;
    assert_int_equal(m->n_layers, 3);
    r->model = *m;
    r->model.layers = NULL;
    memcpy(r->layers, m->layers, sizeof r->layers);
    event(r, 'M');
}

static void on_start(void *user, const fn_train_plan *p)
{
    assert_int_equal(p->rows, TRAIN_ROWS);
    assert_int_equal(p->batches, STEPS);
    assert_int_equal(p->batch_size, BATCH);
    assert_int_equal(p->epochs, EPOCHS);
    assert_int_equal(p->layers, 3);
    /* One process: one rank on one device of one node. */
    assert_int_equal(p->ranks, 1);
    assert_int_equal(p->devices, 1);
    assert_int_equal(p->nodes, 1);
    event(user, 'S');
}

/* Every step in order: epoch and step follow from the global step. */
static void on_step(void *user, const fn_train_progress *p)
{
    recorder *r = user;
    const long long g = r->next_global++;
    assert_int_equal(p->epoch, g / STEPS);
    assert_int_equal(p->step, g % STEPS + 1);
    assert_int_equal(p->steps, STEPS);
    assert_int_equal(p->rows_left, (long long)TRAIN_ROWS * EPOCHS - (g + 1) * BATCH);
    assert_true(isfinite(p->loss) && isfinite(p->batch_loss) && p->samples_per_s >= 0);
    r->last_step_loss = p->loss;
    r->steps_seen++;
    event(r, 's');
}

static void on_epoch(void *user, const fn_train_epoch *e)
{
    recorder *r = user;
    assert_true(r->n_epochs < EPOCHS);
    /* The progress's loss is the epoch's running mean: at its last step,
     * the epoch's training loss. */
    if (r->steps_seen > 0 && e->train.loss != r->last_step_loss)
        fail_msg("epoch %lld: the last step reported loss %.9g, the epoch's mean is %.9g",
                 e->epoch + 1, r->last_step_loss, e->train.loss);
    r->epochs[r->n_epochs++] = *e;
    event(r, 'E');
}

static void on_done(void *user, const fn_train_summary *s)
{
    recorder *r = user;
    r->done = *s;
    event(r, 'F');
}

static int should_stop(void *user)
{
    const recorder *r = user;
    return r->stop_after >= 0 && r->steps_seen >= r->stop_after;
}

static const fn_trainer_callbacks callbacks = {
    .on_device = on_device,
    .on_resume = on_resume,
    .on_model = on_model,
    .on_start = on_start,
    .on_step = on_step,
    .on_epoch = on_epoch,
    .on_done = on_done,
    .should_stop = should_stop,
};

/* What a run (or its part) should have reported: "D", then "R" when
 * resuming, "M", "S", the steps from global step `from` to `to` with an "E"
 * after each epoch's last, and "F" when it ran to the end. */
static void expected_events(char *buf, int resumed, long long from, long long to, int done)
{
    int n = 0;
    buf[n++] = 'D';
    if (resumed)
        buf[n++] = 'R';
    buf[n++] = 'M';
    buf[n++] = 'S';
    for (long long g = from; g < to; g++) {
        buf[n++] = 's';
        if ((g + 1) % STEPS == 0)
            buf[n++] = 'E';
    }
    if (done)
        buf[n++] = 'F';
    buf[n] = '\0';
}

/* Runs run.ini into <dir>/<out>; the trainer is left for the caller. */
static fn_trainer *run(const fixture *f, const char *out, int resume, recorder *r,
                       fn_config **cfg)
{
    *cfg = load_config(f, out);
    const fn_trainer_options options = {.resume = resume, .callbacks = &callbacks, .user = r};
    fn_trainer *t = NULL;
    EXPECT_OK(fn_trainer_create(&t, *cfg, &options));
    EXPECT_OK(fn_trainer_run(t));
    return t;
}

/* The summary of run.ini's network (block 16, block 16, linear 2; groups 4;
 * 2 inputs; batches of 32; momentum) and its memory, counted by hand. */
static void expect_model(const recorder *r)
{
    static const struct { const char *kind; int in, out, groups; long long params; } want[3] = {
        {"block", 2, 16, 4, 2 * 16 + 3 * 16},   /* weight, bias, gamma, beta */
        {"block", 16, 16, 4, 16 * 16 + 3 * 16},
        {"linear", 16, 2, 0, 16 * 2 + 2},
    };
    long long params = 0;
    for (int i = 0; i < 3; i++) {
        const fn_train_layer *l = &r->layers[i];
        assert_string_equal(l->kind, want[i].kind);
        assert_int_equal(l->in, want[i].in);
        assert_int_equal(l->out, want[i].out);
        assert_int_equal(l->groups, want[i].groups);
        assert_int_equal(l->params, want[i].params);
        params += want[i].params;
    }
    const fn_train_model *m = &r->model;
    assert_int_equal(m->params, params);
    assert_int_equal(m->device, FN_CPU);
    const fn_train_memory *b = &m->memory;
    const size_t f = sizeof(float);
    assert_int_equal(b->weights, params * f);
    /* momentum 0.9: one buffer a parameter, folded into backward as the
     * gradient (counted once, as the optimiser's state): the parameters'
     * own gradients are freed */
    assert_int_equal(b->gradients, 0);
    assert_int_equal(b->optimizer, params * f);
    /* Each block caches z and dz [32, 16], mean and rstd [32, 4]; the net
     * holds the outputs [32, 16], [32, 16], [32, 2] and the gradients
     * between the layers [32, 16] twice; the trainer the loss [1, 1] and
     * its gradient [32, 2]. The CPU needs no workspace. */
    const size_t acts = 2 * (2 * 32 * 16 + 2 * 32 * 4) + (32 * 16 * 2 + 32 * 2) + 2 * 32 * 16 +
                        (1 + 32 * 2);
    assert_int_equal(b->activations, acts * f);
    assert_int_equal(b->batches, 0);
    assert_int_equal(b->device, 2 * params * f + acts * f);
    /* Each set whole in one slab: inputs [rows, 2], int32 labels and two
     * int64 orders (one slab); each loader slot a batch of inputs, labels
     * and row indices. */
    const size_t sets = (TRAIN_ROWS + VALID_ROWS) * (2 * f + 4 + 8) + 2 * 8;
    const size_t slot = 32 * (2 * f + 4 + 8);
    assert_true(b->data >= sets + 2 * slot);
    assert_int_equal((b->data - sets) % slot, 0);
    assert_true((b->data - sets) / slot <= FN_LOADER_SLOTS + 1);
}

/* --- the tests -------------------------------------------------------------------- */

static void test_trains_and_reports(void **state)
{
    fixture *f = *state;
    recorder r = {.stop_after = -1};
    fn_config *cfg = NULL;
    fn_trainer *t = run(f, "full", 0, &r, &cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    char want[EVENTS_CAP];
    expected_events(want, 0, 0, (long long)EPOCHS * STEPS, 1);
    assert_string_equal(r.events, want);
    assert_int_equal(r.done.steps, (long long)EPOCHS * STEPS);
    assert_int_equal(r.done.epochs, EPOCHS);
    assert_int_equal(fn_trainer_state(t)->global_step, (long long)EPOCHS * STEPS);
    expect_model(&r);

    const fn_train_epoch *first = &r.epochs[0], *last = &r.epochs[EPOCHS - 1];
    printf("    train loss %.4f -> %.4f, valid accuracy %.1f%% -> %.1f%%\n", first->train.loss,
           last->train.loss, 100 * first->valid.acc, 100 * last->valid.acc);
    for (int e = 0; e < EPOCHS; e++) {
        assert_int_equal(r.epochs[e].epoch, e);
        assert_true(isfinite(r.epochs[e].valid.loss));
        assert_true(r.epochs[e].samples_per_s > 0);
        assert_false(r.epochs[e].improved); /* neither keep_best nor patience */
    }
    assert_true(r.done.samples_per_s > 0);
    assert_false(r.done.stopped_early);
    assert_null(r.done.best_path);
    /* ln 2 ~ 0.69 is chance; about 61 % of the points are outside. */
    assert_true(last->train.loss < 0.5 * first->train.loss);
    assert_true(last->valid.acc > 0.85);

    assert_true(exists(f, "full", "weights.h5"));
    /* The end's checkpoint, which --resume with more epochs continues. */
    assert_true(exists(f, "full", "checkpoint.h5"));
    char *csv = slurp(f, "full", "metrics.csv");
    int lines = 0;
    for (const char *c = csv; *c; c++)
        lines += *c == '\n';
    free(csv);
    assert_int_equal(lines, 1 + EPOCHS);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
}

/* Each parameter of a equals b's, bit for bit. */
static void expect_same_weights(const fn_net *a, const fn_net *b)
{
    assert_int_equal(fn_net_n_params(a), fn_net_n_params(b));
    for (int i = 0; i < fn_net_n_params(a); i++) {
        const fn_tensor *p = &fn_net_param(a, i)->value, *q = &fn_net_param(b, i)->value;
        assert_int_equal(fn_tensor_count(p), fn_tensor_count(q));
        if (memcmp(p->data, q->data, fn_tensor_count(p) * sizeof(float)) != 0)
            fail_msg("parameter %d (%s) differs from the uninterrupted run's", i,
                     fn_net_param(a, i)->name);
    }
}

/* Whether column `col` of the header line is one that times the run. */
static int timing_column(const char *header, int col)
{
    static const char *const timing[] = {"seconds", "samples_per_s"};
    for (int i = 0; i < col && header; i++)
        header = strchr(header, ',') ? strchr(header, ',') + 1 : NULL;
    if (!header)
        return 0;
    const size_t len = strcspn(header, ",\n");
    for (size_t i = 0; i < sizeof timing / sizeof timing[0]; i++)
        if (len == strlen(timing[i]) && strncmp(header, timing[i], len) == 0)
            return 1;
    return 0;
}

/* metrics.csv without the columns that time the run, which differ run to
 * run. */
static char *metrics_without_time(const fixture *f, const char *out)
{
    char *csv = slurp(f, out, "metrics.csv");
    char *header = strdup(csv), *w = csv;
    assert_non_null(header);
    for (const char *c = csv; *c;) {
        int col = 0;
        while (*c && *c != '\n') {
            const size_t len = strcspn(c, ",\n");
            if (!timing_column(header, col)) {
                memmove(w, c, len);
                w += len;
                *w++ = ',';
            }
            c += len + (c[len] == ',');
            col++;
        }
        if (w > csv && w[-1] == ',')
            w--;
        *w++ = '\n';
        c += *c == '\n';
    }
    *w = '\0';
    free(header);
    return csv;
}

/* A run stopped mid-epoch and resumed ends as the uninterrupted one: the
 * same weights bit for bit, the same metrics.csv but for the times. */
static void check_stop_and_resume(fixture *f)
{
    recorder ref = {.stop_after = -1};
    fn_config *ref_cfg = NULL;
    fn_trainer *whole = run(f, "ref", 0, &ref, &ref_cfg);

    recorder a = {.stop_after = STOP_AFTER};
    fn_config *cfg = NULL;
    fn_trainer *t = run(f, "resumed", 0, &a, &cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_STOPPED);
    char want[EVENTS_CAP];
    expected_events(want, 0, 0, STOP_AFTER, 0);
    assert_string_equal(a.events, want);
    const fn_train_state *s = fn_trainer_state(t);
    assert_int_equal(s->global_step, STOP_AFTER);
    assert_int_equal(s->epoch, STOP_AFTER / STEPS);
    assert_int_equal(s->step, STOP_AFTER % STEPS);
    assert_true(exists(f, "resumed", "checkpoint.h5"));
    assert_false(exists(f, "resumed", "weights.h5"));
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);

    recorder b = {.stop_after = -1};
    t = run(f, "resumed", 1, &b, &cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    expected_events(want, 1, STOP_AFTER, (long long)EPOCHS * STEPS, 1);
    assert_string_equal(b.events, want);
    assert_int_equal(b.resumed.global_step, STOP_AFTER);
    assert_int_equal(b.resumed.step, STOP_AFTER % STEPS);
    assert_int_equal(fn_optimizer_steps(fn_trainer_optimizer(t)), (long long)EPOCHS * STEPS);
    expect_same_weights(fn_trainer_net(t), fn_trainer_net(whole));
    /* The epoch cut in two reports the sums of both parts. */
    char *got = metrics_without_time(f, "resumed"), *expected = metrics_without_time(f, "ref");
    assert_string_equal(got, expected);
    free(got);
    free(expected);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    fn_trainer_destroy(whole);
    fn_config_destroy(ref_cfg);
}

static void test_stop_and_resume(void **state) { check_stop_and_resume(*state); }

static const char adam_train[] = "optimizer = adam\nlr = 0.01\nweight_decay = 1e-3\n"
                                 "schedule = cosine\nwarmup_steps = 20\nmin_lr = 1e-4\n"
                                 "clip_grad_norm = 0.5\n";

/* Adam with L2 decay, warm-up and cosine, clipping: resumed bit-exact
 * (exp_avg, exp_avg_sq and the step count in the checkpoint); the
 * optimiser's step count is restored; metrics.csv's lr is the schedule's
 * at each epoch's last step and its grad_norm finite. */
static void test_adam_stop_and_resume(void **state)
{
    fixture *f = *state;
    write_ini(f, adam_train);
    check_stop_and_resume(f);
    recorder r = {.stop_after = -1};
    fn_config *cfg = NULL;
    fn_trainer *t = run(f, "adam_full", 0, &r, &cfg);
    assert_string_equal(fn_optimizer_name(fn_trainer_optimizer(t)), "adam");
    char *csv = slurp(f, "adam_full", "metrics.csv");
    assert_non_null(strstr(csv, ",seconds,samples_per_s,lr,grad_norm\n"));
    const char *line = strchr(csv, '\n') + 1;
    /* The config's float32 values, as the trainer takes them. */
    const fn_schedule_kind *cosine = NULL;
    assert_int_equal(fn_schedule_kind_find("cosine", &cosine), FN_OK);
    const fn_cosine_schedule_options o = {.min_lr = 1e-4f};
    const fn_schedule s = {.kind = cosine, .lr = 0.01f, .warmup_steps = 20, .options = &o,
                           .total_steps = (long long)EPOCHS * STEPS};
    for (int e = 1; e <= EPOCHS; e++) {
        double v[9]; /* ..., seconds, samples_per_s, lr, grad_norm */
        assert_int_equal(sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2],
                                &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]),
                         9);
        const double lr = (float)fn_schedule_lr(&s, (long long)e * STEPS - 1);
        if (fabs(v[7] - lr) > 1e-8 * lr) /* printed with 9 digits */
            fail_msg("epoch %d: lr %.9g in metrics.csv, the schedule's %.9g", e, v[7], lr);
        assert_true(isfinite(v[8]) && v[8] > 0);
        line = strchr(line, '\n') + 1;
    }
    free(csv);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
}

/* Sets a checkpoint back to format version 1: without the attributes
 * version 2 added (what the SGD-only build wrote). */
static void make_version_1(const fixture *f, const char *out)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s/checkpoint.h5", f->dir, out);
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    assert_true(H5Adelete(file, "optimizer") >= 0);
    assert_true(H5Adelete(file, "optimizer_steps") >= 0);
    assert_true(H5Adelete(file, "grad_norm") >= 0);
    hid_t attr = H5Aopen(file, "format_version", H5P_DEFAULT);
    assert_true(attr >= 0);
    const int one = 1;
    assert_true(H5Awrite(attr, H5T_NATIVE_INT, &one) >= 0);
    H5Aclose(attr);
    H5Fclose(file);
}

/* A version-1 checkpoint (SGD) still resumes, to the uninterrupted run's
 * weights; one written by SGD does not resume an Adam config. */
/* RMSprop with every kind of state (square_avg, momentum_buffer, grad_avg)
 * and L2 decay: a run stopped mid-epoch and resumed ends with the weights
 * and metrics of the run that never stopped, bit for bit. */
static void test_rmsprop_stop_and_resume(void **state)
{
    fixture *f = *state;
    write_ini(f, "optimizer = rmsprop\nlr = 0.003\nalpha = 0.9\nmomentum = 0.5\n"
                 "centered = true\nweight_decay = 1e-3\n");
    check_stop_and_resume(f);
}

/* The lr column of <out>/metrics.csv, one value an epoch. */
static void metrics_lr(const fixture *f, const char *out, double lr[EPOCHS])
{
    char *csv = slurp(f, out, "metrics.csv");
    const char *line = strchr(csv, '\n') + 1;
    for (int e = 0; e < EPOCHS; e++) {
        double v[8];
        assert_int_equal(sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2],
                                &v[3], &v[4], &v[5], &v[6], &v[7]),
                         8);
        lr[e] = v[7];
        line = strchr(line, '\n') + 1;
    }
    free(csv);
}

/* schedule = plateau on the validation loss, asking for it to halve every
 * epoch: the rate falls at epoch ends, so a run stopped mid-epoch after
 * reductions resumes only with the schedule's state from the checkpoint;
 * it ends with the weights and metrics (the lr column too) of the run
 * that never stopped, bit for bit. */
static void test_plateau_stop_and_resume(void **state)
{
    fixture *f = *state;
    write_ini(f, "lr = 0.05\nmomentum = 0.9\nschedule = plateau\nfactor = 0.5\n"
                 "plateau_patience = 0\nthreshold = 0.5\n");
    check_stop_and_resume(f);
    double lr[EPOCHS];
    metrics_lr(f, "ref", lr);
    assert_true(fabs(lr[0] - 0.05) < 1e-8); /* printed with 9 digits */
    int reduced = 0;
    for (int e = 1; e < EPOCHS; e++) {
        assert_true(lr[e] <= lr[e - 1]);
        reduced += lr[e] < lr[e - 1];
    }
    assert_true(lr[STOP_AFTER / STEPS] < lr[0]); /* reduced before the stop */
    assert_true(reduced >= 2);
}

static void test_version_1_checkpoint(void **state)
{
    fixture *f = *state;
    recorder ref = {.stop_after = -1}, a = {.stop_after = STOP_AFTER}, b = {.stop_after = -1};
    fn_config *ref_cfg = NULL, *cfg = NULL;
    fn_trainer *whole = run(f, "v1_ref", 0, &ref, &ref_cfg);
    fn_trainer *t = run(f, "v1", 0, &a, &cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_STOPPED);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    make_version_1(f, "v1");
    t = run(f, "v1", 1, &b, &cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    expect_same_weights(fn_trainer_net(t), fn_trainer_net(whole));
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);

    /* A checkpoint SGD wrote, resumed with the config turned to Adam. */
    recorder c = {.stop_after = STOP_AFTER};
    t = run(f, "v2", 0, &c, &cfg);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    write_ini(f, adam_train);
    cfg = load_config(f, "v2");
    const fn_trainer_options resume = {.resume = 1};
    assert_int_equal(fn_trainer_create(&t, cfg, &resume), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "was written by optimizer sgd; the config has "
                                            "optimizer adam"));
    fn_config_destroy(cfg);
    fn_trainer_destroy(whole);
    fn_config_destroy(ref_cfg);
}

static void test_stop_at_start(void **state)
{
    fixture *f = *state;
    recorder r = {.stop_after = 0};
    fn_config *cfg = NULL;
    fn_trainer *t = run(f, "early", 0, &r, &cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_STOPPED_AT_START);
    assert_string_equal(r.events, "D");
    assert_false(exists(f, "early", "checkpoint.h5"));
    assert_false(exists(f, "early", "weights.h5"));
    assert_int_equal(fn_trainer_run(t), FN_ERR_INVALID);
    fn_trainer_destroy(t);
    /* Not even the directory once the run has ended: the lock made it for
     * the run's life and, nothing written, removes it (dir_lock.h). */
    char dir[PATH_CAP];
    snprintf(dir, sizeof dir, "%s/early", f->dir);
    assert_int_not_equal(access(dir, F_OK), 0);
    fn_config_destroy(cfg);
}

/* The best-so-far rule of keep_best and patience: strictly better only,
 * higher accuracy or lower loss; the first epoch is always the best. */
static void test_best_rule(void **state)
{
    (void)state;
    fn_train_state s = fn_train_state_start(1, 8, 100, 100);
    static const double acc[] = {0.5, 0.7, 0.7, 0.6, 0.8};
    static const int better[] = {1, 1, 0, 0, 1}, since[] = {0, 0, 1, 2, 0};
    for (int e = 0; e < 5; e++) {
        s.epoch = e;
        assert_int_equal(fn_train_state_best(&s, acc[e], 0, 0), better[e]);
        assert_int_equal(s.since_best, since[e]);
    }
    assert_int_equal(s.best_epoch, 5);
    assert_float_equal(s.best, 0.8, 0);
    fn_train_state m = fn_train_state_start(1, 8, 100, 100);
    static const double loss[] = {2.0, 1.0, 1.5, 0.5};
    static const int lower[] = {1, 1, 0, 1};
    for (int e = 0; e < 4; e++) {
        m.epoch = e;
        assert_int_equal(fn_train_state_best(&m, loss[e], 1, 0), lower[e]);
    }
    assert_int_equal(m.best_epoch, 4);
    fn_train_state_next_epoch(&m); /* as a checkpoint holds it: epoch 4 to continue */
    assert_int_equal(fn_train_state_check(&m, "here"), FN_OK);
    m.best_epoch = m.epoch + 1; /* a best after the epochs done: a broken file */
    assert_int_equal(fn_train_state_check(&m, "here"), FN_ERR_FORMAT);
}

/* [train] min_delta: an improvement by min_delta or less counts as none,
 * for a loss (lower) and an accuracy (higher) alike. */
static void test_best_rule_min_delta(void **state)
{
    (void)state;
    fn_train_state m = fn_train_state_start(1, 8, 100, 100);
    static const double loss[] = {1.0, 0.95, 0.89, 0.85, 0.5};
    static const int lower[] = {1, 0, 1, 0, 1}, since[] = {0, 1, 0, 1, 0};
    for (int e = 0; e < 5; e++) {
        m.epoch = e;
        assert_int_equal(fn_train_state_best(&m, loss[e], 1, 0.1), lower[e]);
        assert_int_equal(m.since_best, since[e]);
    }
    assert_float_equal(m.best, 0.5, 0);
    fn_train_state a = fn_train_state_start(1, 8, 100, 100);
    static const double acc[] = {0.5, 0.52, 0.56, 0.9};
    static const int higher[] = {1, 0, 1, 1};
    for (int e = 0; e < 4; e++) {
        a.epoch = e;
        assert_int_equal(fn_train_state_best(&a, acc[e], 0, 0.05), higher[e]);
    }
    assert_int_equal(a.best_epoch, 4);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_trains_and_reports, setup, teardown),
          cmocka_unit_test(test_best_rule_min_delta),
          cmocka_unit_test_setup_teardown(test_stop_and_resume, setup, teardown),
          cmocka_unit_test_setup_teardown(test_stop_at_start, setup, teardown),
          cmocka_unit_test_setup_teardown(test_adam_stop_and_resume, setup, teardown),
          cmocka_unit_test_setup_teardown(test_rmsprop_stop_and_resume, setup, teardown),
          cmocka_unit_test_setup_teardown(test_plateau_stop_and_resume, setup, teardown),
          cmocka_unit_test_setup_teardown(test_version_1_checkpoint, setup, teardown),
          cmocka_unit_test(test_best_rule))
