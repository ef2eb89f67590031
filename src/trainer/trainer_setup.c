/* trainer_setup.c — a training run's set-up and end: the device, the sets
 * and their loader, the network and optimiser, the output files, resuming
 * from a checkpoint, the step strategy (step_choice.c). The epochs run in
 * trainer_loop.c; what a caller may read of the run is trainer.c's. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fusenet/checkpoint.h"
#include "fusenet/model.h"
#include "fusenet/optimizer_kind.h"
#include "fusenet/provenance.h"
#include "fusenet/target_norm.h"
#include "fusenet/version.h"
#include "fusenet/weights.h"
#include "optim/shard.h"
#include "trainer/trainer_impl.h"

/* [run] device, or with device = auto the first GPU when there is one. A
 * GPU asked for by name must be there before the device is reported. */
static fn_status open_context(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    fn_train_device d = {.device = c->device, .gpu = c->gpu, .automatic = c->device_auto,
                         .math = c->math};
    if (c->device_auto) {
        d.gpus_found = fn_cuda_device_count();
        d.device = d.gpus_found > 0 ? FN_CUDA : FN_CPU;
        d.gpu = d.gpus_found > 0 ? fn_trainer_dist_gpu(t, 0, d.gpus_found) : -1;
    } else if (c->device == FN_CUDA) {
        if (!fn_build_has_cuda())
            return fn_fail(FN_ERR_NODEV,
                           "%s: [run] device = cuda, but this build of fusenet has no CUDA "
                           "backend (configured with -DFN_CUDA=OFF or without a CUDA toolkit); "
                           "rebuild with -DFN_CUDA=ON, or use device = auto or device = cpu",
                           c->path);
        const int found = fn_cuda_device_count();
        if (c->gpu >= found)
            return fn_fail(FN_ERR_NODEV,
                           "%s: [run] device = cuda:%d, but %s; use device = auto (a GPU when "
                           "there is one, else the CPU) or device = cpu",
                           c->path, c->gpu,
                           found > 0 ? "this machine has fewer GPUs" : "no usable GPU was found");
        if (!c->gpu_pinned && found > 0)
            d.gpu = fn_trainer_dist_gpu(t, c->gpu, found);
    }
    /* The CPU's products are always strict fp32: a notice, not an error,
     * so one config runs on a GPU machine and on a laptop alike. */
    d.math_unused = d.device == FN_CPU && c->math != FN_MATH_FP32;
    if (t->cb.on_device)
        t->cb.on_device(t->user, &d);
    t->gpu = d.gpu;
    return fn_context_create(&t->ctx, d.device, d.gpu, c->math);
}

static fn_status open_sets(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    fn_data_options opt = {
        .inputs = c->inputs, .targets = c->targets, .target_kind = c->loss->targets,
        .unit_targets = c->loss->unit_targets, .loss = c->loss->name,
        .in_features = 0,
        .out_features = c->layers[c->n_layers - 1].width, .batch_size = c->batch_size,
        .memory_budget = (size_t)(c->memory_budget_mb * 1048576.0), .shuffle = 1, .seed = c->seed,
        .inputs_key = "[data] inputs", .targets_key = "[data] targets"};
    const fn_data_source train = {.path = c->train, .memory = c->train_set},
                         valid = {.path = c->valid, .memory = c->valid_set};
    FN_TRY(fn_data_open_source(&t->train, &train, &opt));
    if (!valid.path && !valid.memory)
        return FN_OK;
    opt.in_features = fn_data_in_features(t->train);
    opt.in_features_from = "the training set's columns";
    opt.shuffle = 0;
    return fn_data_open_source(&t->valid, &valid, &opt);
}

/* Sets with sample weights (fn_memory_set_weights) train on one CPU
 * process only: the losses' GPU kernels take no per-row weights, and the
 * data-parallel step scales each rank's gradient by its rows, not by its
 * weights. Refused here, before any step, naming the fix. */
static fn_status check_sample_weights(const fn_trainer *t)
{
    const fn_data *weighted = fn_data_has_weights(t->train)  ? t->train
                              : fn_data_has_weights(t->valid) ? t->valid
                                                              : NULL;
    if (!weighted)
        return FN_OK;
    if (fn_context_device(t->ctx) == FN_CUDA)
        return fn_fail(FN_ERR_INVALID, "%s has sample weights (sample_weight), which are "
                       "supported on the CPU only; train on device=\"cpu\" ([run] device = "
                       "cpu), or without them", fn_data_path(weighted));
    if (t->dist && t->ranks > 1)
        return fn_fail(FN_ERR_INVALID, "%s has sample weights (sample_weight), which are "
                       "supported in a single process only; train with one rank, or without "
                       "them", fn_data_path(weighted));
    return FN_OK;
}

static fn_status make_loaders(fn_trainer *t)
{
    /* Over several ranks each takes its share of every batch (step_dist.c). */
    fn_loader_options share = {.part = t->dist ? t->rank : 0, .parts = t->dist ? t->ranks : 1};
    /* The training set's rows on the GPU ([run] data_on_device). */
    const int on_device = t->cfg->data_on_device;
    fn_loader_options train = share;
    train.gather = on_device < 0 ? FN_GATHER_AUTO : on_device ? FN_GATHER_DEVICE : FN_GATHER_HOST;
    FN_TRY(fn_loader_create(&t->loader, t->ctx, t->train, &train));
    if (!t->valid)
        return FN_OK;
    /* Validation runs between epochs, with nothing to overlap. */
    const fn_loader_options sync = {.mode = FN_LOADER_SYNC, .part = share.part,
                                    .parts = share.parts};
    return fn_loader_create(&t->valid_loader, t->ctx, t->valid, &sync);
}

/* The schedule spans the run's epochs: T = epochs * batches per epoch. */
static fn_status make_schedule(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    t->schedule = (fn_schedule){.kind = c->schedule, .lr = c->lr,
                                .warmup_steps = c->warmup_steps,
                                .total_steps = (long long)c->epochs * fn_data_batches(t->train),
                                .options = c->schedule_options};
    return fn_schedule_check(&t->schedule);
}

/* Over the ranks of a world with [run] shard = optimizer, each rank's part
 * of the optimiser (optim/shard.h); otherwise the whole. */
static fn_status make_optimizer(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    fn_param *const *params = fn_net_params(t->net);
    const int n = fn_net_n_params(t->net);
    if (t->dist && c->shard)
        return fn_shard_optimizer_create(&t->opt, t->comm, c->optimizer, t->ctx, params, n, c->lr,
                                         c->optimizer_options);
    return c->optimizer->create(&t->opt, t->ctx, params, n, c->lr, c->optimizer_options);
}

/* [train] clip_grad_norm: over the whole gradients, or, sharded, over the
 * rank's parts with the norm taken over every rank's (optim/shard.h). */
static fn_status make_clip(fn_trainer *t)
{
    const float max_norm = t->cfg->clip_grad_norm;
    if (!(max_norm > 0))
        return FN_OK;
    if (fn_optimizer_sums_own(t->opt))
        return fn_shard_clip_create(&t->clip, t->opt, max_norm);
    return fn_clip_create(&t->clip, t->ctx, fn_net_params(t->net), fn_net_n_params(t->net),
                          max_norm);
}

static fn_status build(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    /* Over several ranks, a rank's share of a batch at most (trainer_dist.c). */
    fn_config sized = *c;
    sized.batch_size = fn_trainer_dist_rows(t);
    FN_TRY(fn_model_build(&t->net, t->ctx, &sized, fn_data_in_features(t->train)));
    if (c->init)
        FN_TRY(fn_weights_load(t->net, c->init));
    FN_TRY(make_optimizer(t));
    FN_TRY(make_schedule(t));
    FN_TRY(make_clip(t));
    fn_device d = fn_context_device(t->ctx);
    FN_TRY(fn_tensor_alloc(&t->loss, 1, 1, d));
    return fn_tensor_alloc(&t->dpred, sized.batch_size, fn_net_out_features(t->net), d);
}

/* --- resuming ------------------------------------------------------------------ */

/* Appends a difference, fmt with its two values, to the list in buf. */
static void add_difference(char *buf, size_t cap, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void add_difference(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 2 < cap)
        snprintf(buf + len, cap - len, "%s", len ? "; " : "");
    len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* The checkpoint must continue this config's run: its data order depends
 * on the seed, the batch size, and the set's rows and slab size ([data]
 * train and memory_budget_mb); its layers were checked by the load. */
static fn_status check_resumable(const fn_trainer *t, const fn_train_state *s)
{
    const fn_config *c = t->cfg;
    const long long rows = (long long)fn_data_rows(t->train),
                    slab = (long long)fn_data_slab_rows(t->train);
    char diff[512] = "";
    if (s->seed != c->seed)
        add_difference(diff, sizeof diff, "seed %lld (the config: %lld)", (long long)s->seed,
                       (long long)c->seed);
    if (s->batch_size != c->batch_size)
        add_difference(diff, sizeof diff, "batch_size %d (the config: %d)", s->batch_size,
                       c->batch_size);
    if (s->rows != rows)
        add_difference(diff, sizeof diff, "a training set of %lld rows (this one: %lld)", s->rows,
                       rows);
    else if (s->slab_rows != slab)
        add_difference(diff, sizeof diff,
                       "the set read in slabs of %lld rows (memory_budget_mb makes %lld)",
                       s->slab_rows, slab);
    /* Its outputs were trained in standardised units or in the targets'. */
    if (s->standardize_targets >= 0 && s->standardize_targets != c->standardize_targets)
        add_difference(diff, sizeof diff, "[data] standardize_targets = %s (the config: %s)",
                       s->standardize_targets ? "true" : "false",
                       c->standardize_targets ? "true" : "false");
    if (!diff[0])
        return FN_OK;
    return fn_fail(FN_ERR_INVALID,
                   "%s was written by another run: %s; --resume continues only the same run "
                   "(--overwrite starts afresh)",
                   t->checkpoint_path, diff);
}

/* The optimiser's own [train] keys whose values differ between the run
 * that wrote the checkpoint (its provenance's resolved config) and this
 * config, as "centered = false (the config: true)" into buf; "" when none
 * differs or the checkpoint does not record them. */
static void optimizer_differences(const fn_trainer *t, char *buf, size_t cap)
{
    buf[0] = '\0';
    fn_provenance *theirs = NULL, *ours = NULL;
    char *text = NULL;
    if (fn_provenance_read(&theirs, t->checkpoint_path) != FN_OK ||
        fn_provenance_create(&ours) != FN_OK ||
        fn_config_resolved_text(t->cfg, 0, &text) != FN_OK ||
        fn_provenance_set(ours, "config", text) != FN_OK)
        goto done;
    const fn_optimizer_kind *kind = t->cfg->optimizer;
    for (int i = 0; i < kind->n_options; i++) {
        const char *key = kind->options[i].name;
        char was[128], is[128];
        if (fn_provenance_setting(theirs, "train", key, was, sizeof was) &&
            fn_provenance_setting(ours, "train", key, is, sizeof is) && strcmp(was, is) != 0)
            add_difference(buf, cap, "[train] %s = %s (the config: %s)", key, was, is);
    }
done:
    free(text);
    fn_provenance_destroy(ours);
    fn_provenance_destroy(theirs);
}

static fn_status resume(fn_trainer *t)
{
    fn_train_state s = {0};
    /* A checkpoint of other layers fails here, naming the first that
     * differs ("group 'layer0': out_features is 32, the model has 64"). */
    /* A sharded optimiser takes its part of the whole state (shard.h). */
    FN_TRY(fn_optimizer_whole_begin(t->opt, FN_WHOLE_READ));
    fn_status st = fn_checkpoint_load(t->checkpoint_path, t->net, t->opt, &s);
    fn_optimizer_whole_end(t->opt);
    if (st != FN_OK) {
        /* State that options of this optimiser make (rmsprop's centered,
         * momentum) is missing, or the checkpoint holds state these
         * options drop (momentum turned off): name the options rather
         * than the dataset. */
        char diff[512], why[1024];
        const int lacks = st == FN_ERR_FORMAT && strstr(fn_last_error(), " is missing");
        const int drops = st == FN_ERR_INVALID && strstr(fn_last_error(), " does not keep");
        if (lacks || drops) {
            snprintf(why, sizeof why, "%s", fn_last_error());
            optimizer_differences(t, diff, sizeof diff);
            if (diff[0])
                return fn_fail(FN_ERR_INVALID, "--resume: %s was written with other %s options, "
                               "%s, so %s (%s); resume with the checkpoint's values, or "
                               "--overwrite to start afresh", t->checkpoint_path,
                               t->cfg->optimizer->name, diff,
                               lacks ? "it lacks the optimiser state this config needs"
                                     : "this config would drop the optimiser state it holds",
                               why);
        }
        fn_error_prefix("--resume: ");
        return st;
    }
    FN_TRY(check_resumable(t, &s));
    t->state = s;
    memcpy(t->schedule.state, s.schedule, sizeof t->schedule.state);
    t->checkpoint_ours = 1;
    t->checkpoint_step = s.global_step;
    t->checkpoint_epoch = s.epoch;
    /* A run that stopped early stays stopped unless patience grew: it
     * ends at once, writing the same weights. */
    const int patience = t->cfg->patience;
    t->stopped_early = patience > 0 && s.step == 0 && s.since_best >= patience;
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
static fn_status setup_norm(fn_trainer *t)
{
    const fn_config *c = t->cfg;
    const int in = fn_data_in_features(t->train);
    const char *from = t->resuming ? t->checkpoint_path : c->init;
    if (from) {
        FN_TRY(fn_weights_input_norm(&t->norm, t->ctx, from, in));
        if (t->norm && !c->standardize)
            return fn_fail(FN_ERR_INVALID, "%s holds input standardisation (/input_norm): set "
                           "[data] standardize = true to %s it", from,
                           t->resuming ? "resume" : "start from");
        if (!t->norm && c->standardize && t->resuming)
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
    if (t->norm)
        FN_TRY(fn_input_norm_check_data(t->norm, t->train, from));
    FN_TRY(fn_loader_set_norm(t->loader, t->norm));
    return t->valid_loader ? fn_loader_set_norm(t->valid_loader, t->norm) : FN_OK;
}

/* [data] standardize_targets: the training set's target statistics, on
 * every start (a resumed run's training set is the one it began with, so
 * they are the same), applied to both loaders' targets. */
static fn_status setup_target_norm(fn_trainer *t)
{
    if (!t->cfg->standardize_targets)
        return FN_OK;
    FN_TRY(fn_target_norm_from_data(&t->target_norm, t->ctx, t->train));
    FN_TRY(fn_loader_set_target_norm(t->loader, t->target_norm));
    return t->valid_loader ? fn_loader_set_target_norm(t->valid_loader, t->target_norm) : FN_OK;
}

/* Nothing is written here. The output directory is locked first, before
 * any file in it is read or written (made for it when missing: the lock
 * removes it again if the run writes nothing). Over several ranks, they
 * agree on their config and data (trainer_agree.c) before anything else
 * goes between them. */
static fn_status setup(fn_trainer *t, fn_comm_scope scope)
{
    t->rank = scope == FN_COMM_WORLD ? fn_world_rank() : 0;
    t->ranks = scope == FN_COMM_WORLD ? fn_world_size() : 1;
    FN_TRY(fn_trainer_output_paths(t));
    if (fn_trainer_writes(t)) {
        FN_TRY(fn_dir_lock_take(&t->lock, t->cfg->out_dir));
        FN_TRY(fn_trainer_check_inputs_kept(t));
        FN_TRY(fn_trainer_check_output(t));
    }
    FN_TRY(open_context(t));
    FN_TRY(open_sets(t));
    if (scope == FN_COMM_WORLD) {
        FN_TRY(fn_trainer_agree(t));
        FN_TRY(fn_trainer_count_devices(t));
    } else {
        t->devices = t->nodes = 1;
    }
    FN_TRY(fn_trainer_dist_setup(t, scope));
    FN_TRY(check_sample_weights(t));
    FN_TRY(make_loaders(t));
    FN_TRY(build(t));
    FN_TRY(setup_norm(t));
    FN_TRY(setup_target_norm(t));
    FN_TRY(fn_trainer_notices(t));
    t->state = fn_train_state_start(t->cfg->seed, t->cfg->batch_size,
                                    (long long)fn_data_rows(t->train),
                                    (long long)fn_data_slab_rows(t->train));
    if (t->resuming)
        FN_TRY(resume(t));
    t->state.standardize_targets = t->cfg->standardize_targets;
    FN_TRY(fn_trainer_make_provenance(t));
    return fn_trainer_choose_step(t);
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
    t->started = time(NULL);
    if (options) {
        t->user = options->user;
        t->resuming = options->resume != 0;
        t->overwrite = options->overwrite != 0;
        if (options->callbacks)
            t->cb = *options->callbacks;
    }
    fn_status st = setup(t, options ? options->comm : FN_COMM_WORLD);
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
    if (t->step)
        t->step->release(t);
    fn_tensor_free(&t->loss);
    fn_tensor_free(&t->dpred);
    fn_clip_destroy(t->clip);
    fn_optimizer_destroy(t->opt);
    fn_net_destroy(t->net);
    fn_loader_destroy(t->loader);
    fn_loader_destroy(t->valid_loader);
    fn_input_norm_destroy(t->norm);
    fn_input_norm_destroy(t->target_norm);
    fn_data_close(t->train);
    fn_data_close(t->valid);
    fn_comm_destroy(t->comm);
    fn_context_destroy(t->ctx);
    fn_provenance_destroy(t->provenance);
    free(t->checkpoint_path);
    free(t->weights_path);
    free(t->csv_path);
    free(t->best_path);
    fn_dir_lock_release(t->lock); /* last: every file of the run is closed */
    free(t);
}

