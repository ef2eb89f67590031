/* trainer.c — a training run's set-up and end: the device, the sets and
 * their loader, the network and optimiser, the output files, resuming from
 * a checkpoint; and what a caller may read of the run. The epochs run in
 * trainer_loop.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fusenet/checkpoint.h"
#include "fusenet/model.h"
#include "fusenet/weights.h"
#include "train/optimizers.h"
#include "train/trainer_impl.h"

static fn_status make_dirs(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            fn_status st =
                fn_fail(FN_ERR_IO, "%s: cannot create directory: %s", p, strerror(errno));
            free(p);
            return st;
        }
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return FN_OK;
}

/* [run] device, or with device = auto the first GPU when there is one. */
static fn_status open_context(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    fn_train_device d = {.device = c->device, .gpu = c->gpu, .automatic = c->device_auto};
    if (c->device_auto) {
        d.gpus_found = fn_cuda_device_count();
        d.device = d.gpus_found > 0 ? FN_CUDA : FN_CPU;
        d.gpu = d.gpus_found > 0 ? 0 : -1;
    }
    if (t->cb.on_device)
        t->cb.on_device(t->user, &d);
    return fn_context_create(&t->ctx, d.device, d.gpu, c->math);
}

static fn_status open_sets(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    fn_data_options opt = {
        .inputs = c->inputs, .targets = c->targets, .loss = c->loss, .in_features = 0,
        .out_features = c->layers[c->n_layers - 1].width, .batch_size = c->batch_size,
        .memory_budget = (size_t)(c->memory_budget_mb * 1048576.0), .shuffle = 1, .seed = c->seed};
    FN_TRY(fn_data_open(&t->train, c->train, &opt));
    FN_TRY(fn_loader_create(&t->loader, t->ctx, t->train, NULL));
    if (!c->valid)
        return FN_OK;
    opt.in_features = fn_data_in_features(t->train);
    opt.shuffle = 0;
    FN_TRY(fn_data_open(&t->valid, c->valid, &opt));
    /* Validation runs between epochs, with nothing to overlap. */
    const fn_loader_options sync = {.mode = FN_LOADER_SYNC};
    return fn_loader_create(&t->valid_loader, t->ctx, t->valid, &sync);
}

/* The schedule spans the run's epochs: T = epochs * batches per epoch. */
static fn_status make_schedule(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    t->schedule = (fn_schedule){.kind = c->schedule, .lr = c->sgd.lr,
                                .warmup_steps = c->warmup_steps, .step_size = c->step_size,
                                .gamma = c->gamma, .min_lr = c->min_lr,
                                .total_steps = (long long)c->epochs * fn_data_batches(t->train)};
    return fn_schedule_check(&t->schedule);
}

static fn_status build(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    FN_TRY(fn_model_build(&t->net, t->ctx, c, fn_data_in_features(t->train)));
    if (c->init)
        FN_TRY(fn_weights_load(t->net, c->init));
    FN_TRY(fn_optimizer_from_config(&t->opt, c->optimizer, t->net, c));
    FN_TRY(make_schedule(t));
    if (c->clip_grad_norm > 0)
        FN_TRY(fn_clip_create(&t->clip, t->ctx, fn_net_params(t->net), fn_net_n_params(t->net),
                              c->clip_grad_norm));
    fn_device d = fn_context_device(t->ctx);
    FN_TRY(fn_tensor_alloc(&t->loss, 1, 1, d));
    return fn_tensor_alloc(&t->dpred, c->batch_size, fn_net_out_features(t->net), d);
}

static fn_status output_paths(fn_trainer *t)
{
    const char *dir = t->cfg->out_dir;
    FN_TRY(make_dirs(dir));
    /* Before any file is opened: a second run on this directory stops
     * here, before it could truncate the first's temporaries. */
    FN_TRY(fn_dir_lock_take(&t->lock, dir));
    t->checkpoint_path = fn_path_join(dir, "checkpoint.h5");
    t->weights_path = fn_path_join(dir, "weights.h5");
    t->csv_path = fn_path_join(dir, "metrics.csv");
    if (!t->checkpoint_path || !t->weights_path || !t->csv_path)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    return FN_OK;
}

/* The checkpoint must continue this config's data order. */
static fn_status check_resumable(const fn_trainer *t, const fn_train_state *s)
{
    const fn_config *c = t->cfg;
    if (s->seed != c->seed || s->batch_size != c->batch_size)
        return fn_fail(FN_ERR_INVALID,
                       "%s was written with seed %llu and batch_size %d; the config has seed %llu "
                       "and batch_size %d, so the run cannot continue the same way",
                       t->checkpoint_path, (unsigned long long)s->seed, s->batch_size,
                       (unsigned long long)c->seed, c->batch_size);
    /* The data order also depends on the set's rows and its slab size,
     * which [data] train and memory_budget_mb decide. */
    const long long rows = (long long)fn_data_rows(t->train),
                    slab = (long long)fn_data_slab_rows(t->train);
    if (s->rows != rows || s->slab_rows != slab)
        return fn_fail(FN_ERR_INVALID,
                       "%s was written for a training set of %lld rows read in slabs of %lld; "
                       "this run's set has %lld rows in slabs of %lld ([data] train and "
                       "memory_budget_mb), so the run cannot continue the same way",
                       t->checkpoint_path, s->rows, s->slab_rows, rows, slab);
    return FN_OK;
}

static fn_status resume(fn_trainer *t)
{
    fn_train_state s = {0};
    FN_TRY(fn_checkpoint_load(t->checkpoint_path, t->net, t->opt, &s));
    FN_TRY(check_resumable(t, &s));
    t->state = s;
    t->checkpoint_ours = 1;
    if (t->cb.on_resume)
        t->cb.on_resume(t->user, t->checkpoint_path, &t->state);
    return FN_OK;
}

/* The notice of constant columns under [data] standardize. */
static void notice_constant(fn_trainer *t, int count, const int *list, int listed)
{
    char text[512];
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "[data] standardize: %d of %d input columns are constant in the "
                                  "training set and get std 1 (column%s ",
                                  count, fn_data_in_features(t->train), count > 1 ? "s" : "");
    for (int i = 0; i < listed && len < sizeof text; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%d", i ? ", " : "", list[i]);
    if (len < sizeof text)
        snprintf(text + len, sizeof text - len, "%s)", count > listed ? ", ..." : "");
    if (t->cb.on_notice)
        t->cb.on_notice(t->user, text);
}

/* The input standardisation: a checkpoint's when resuming, an init file's
 * when it has one, else the training set's statistics; each must agree
 * with [data] standardize. Both loaders apply it. */
static fn_status setup_norm(fn_trainer *t, int resuming)
{
    const fn_config *c = t->cfg;
    const int in = fn_data_in_features(t->train);
    const char *from = resuming ? t->checkpoint_path : c->init;
    if (from) {
        FN_TRY(fn_input_norm_load(&t->norm, t->ctx, from, in));
        if (t->norm && !c->standardize)
            return fn_fail(FN_ERR_INVALID, "%s holds input standardisation (/input_norm): set "
                           "[data] standardize = true to %s it", from,
                           resuming ? "resume" : "start from");
        if (!t->norm && c->standardize && resuming)
            return fn_fail(FN_ERR_INVALID, "%s was written without input standardisation; the "
                           "config has [data] standardize = true", from);
    }
    if (c->standardize && !t->norm) {
        enum { LIST = 8 };
        int count = 0, list[LIST];
        FN_TRY(fn_input_norm_from_data(&t->norm, t->ctx, t->train, &count, list, LIST));
        if (count > 0)
            notice_constant(t, count, list, count < LIST ? count : LIST);
    }
    FN_TRY(fn_loader_set_norm(t->loader, t->norm));
    return t->valid_loader ? fn_loader_set_norm(t->valid_loader, t->norm) : FN_OK;
}

static fn_status setup(fn_trainer *t, int resuming)
{
    FN_TRY(output_paths(t));
    FN_TRY(open_context(t));
    FN_TRY(open_sets(t));
    FN_TRY(build(t));
    FN_TRY(setup_norm(t, resuming));
    t->state = fn_train_state_start(t->cfg->seed, t->cfg->batch_size,
                                    (long long)fn_data_rows(t->train),
                                    (long long)fn_data_slab_rows(t->train));
    if (resuming)
        FN_TRY(resume(t));
    return fn_metrics_csv_open(&t->csv, t->csv_path, t->state.epoch);
}

fn_status fn_trainer_create(fn_trainer **out, const fn_config *cfg,
                            const fn_trainer_options *options)
{
    if (!out || !cfg)
        return fn_fail(FN_ERR_INVALID, "fn_trainer_create: trainer or config is NULL");
    *out = NULL;
    fn_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the trainer");
    t->cfg = cfg;
    if (options) {
        t->user = options->user;
        if (options->callbacks)
            t->cb = *options->callbacks;
    }
    fn_status st = setup(t, options && options->resume);
    if (st != FN_OK) {
        /* Tearing down may leave messages of its own: the caller gets the
         * failure's. */
        char message[1024];
        snprintf(message, sizeof message, "%s", fn_last_error());
        fn_trainer_destroy(t);
        return fn_fail(st, "%s", message);
    }
    *out = t;
    return FN_OK;
}

void fn_trainer_destroy(fn_trainer *t)
{
    if (!t)
        return;
    fn_metrics_csv_close(t->csv);
    fn_tensor_free(&t->loss);
    fn_tensor_free(&t->dpred);
    fn_clip_destroy(t->clip);
    fn_optimizer_destroy(t->opt);
    fn_net_destroy(t->net);
    fn_loader_destroy(t->loader);
    fn_loader_destroy(t->valid_loader);
    fn_input_norm_destroy(t->norm);
    fn_data_close(t->train);
    fn_data_close(t->valid);
    fn_context_destroy(t->ctx);
    free(t->checkpoint_path);
    free(t->weights_path);
    free(t->csv_path);
    fn_dir_lock_release(t->lock); /* last: every file of the run is closed */
    free(t);
}

fn_train_outcome fn_trainer_outcome(const fn_trainer *t)
{
    return t ? t->outcome : FN_TRAIN_UNFINISHED;
}

const fn_train_state *fn_trainer_state(const fn_trainer *t) { return t ? &t->state : NULL; }

const char *fn_trainer_checkpoint_path(const fn_trainer *t)
{
    return t ? t->checkpoint_path : NULL;
}

const char *fn_trainer_weights_path(const fn_trainer *t) { return t ? t->weights_path : NULL; }

fn_net *fn_trainer_net(const fn_trainer *t) { return t ? t->net : NULL; }

fn_optimizer *fn_trainer_optimizer(const fn_trainer *t) { return t ? t->opt : NULL; }
