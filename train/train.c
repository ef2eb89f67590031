/* train.c — the `train` program: reads a config, builds the network, runs
 * SGD over the training set (its batches prepared ahead by fn_loader, on
 * the GPU while the steps before them compute), with per-epoch validation,
 * logs progress and a
 * CSV of metrics, writes checkpoints (every N epochs and on SIGINT/SIGTERM)
 * and exports weights.h5 to the output directory.
 *
 *   train config.ini [--set section.key=value ...] [--resume] [--help]
 *
 * Exit status: 0 done, 1 a config, data or run error, 2 a usage error,
 * 130/143 interrupted by SIGINT/SIGTERM after writing a checkpoint (or
 * during setup, before the first step, without one). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fusenet/checkpoint.h"
#include "fusenet/config.h"
#include "fusenet/data.h"
#include "fusenet/loader.h"
#include "fusenet/loss.h"
#include "fusenet/model.h"
#include "fusenet/net.h"
#include "fusenet/sgd_fused.h"
#include "fusenet/weights.h"

enum { EXIT_ERROR = 1, EXIT_USAGE = 2 };

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static const char usage[] =
    "usage: train config.ini [--set section.key=value ...] [--resume] [--help]\n"
    "\n"
    "Trains the network the config describes and writes weights.h5, metrics.csv\n"
    "and (every [train] checkpoint_every epochs, or when interrupted)\n"
    "checkpoint.h5 to its [output] dir.\n"
    "\n"
    "  --set section.key=value  override one config value (repeatable)\n"
    "  --resume                 continue from <output dir>/checkpoint.h5\n"
    "  --help                   this text\n";

typedef struct run {
    fn_config *cfg;
    fn_context *ctx;
    fn_data *train, *valid;
    fn_loader *loader; /* the training set's batches, prepared ahead on the GPU */
    fn_net *net;
    fn_sgd *opt;
    fn_tensor loss, dpred; /* [1, 1], [batch_size, out] on the device */
    int fused;             /* plain SGD on the GPU: the update is fused into backward */
    fn_train_state state;
    int checkpoint_ours;   /* checkpoint_path holds this run's state (resumed or written) */
    FILE *csv;
    char *checkpoint_path, *weights_path, *csv_path;
    int tty;
    double last_bar;       /* monotonic seconds of the last bar drawn */
    double epoch_started;  /* monotonic seconds */
    long long seen_before; /* state.seen when this epoch (or its resumed part) began */
} run;

typedef struct metrics {
    double loss;
    double acc; /* NaN when not classifying */
} metrics;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what)
{
    fflush(stdout); /* so a piped log shows the error after what came before */
    fprintf(stderr, "train: %s%s\n", what ? what : "", fn_last_error());
    return EXIT_ERROR;
}

/* --- arguments ------------------------------------------------------------ */

typedef struct args {
    const char *config;
    const char **sets; /* [n_sets], borrowed from argv */
    int n_sets;
    int resume, help;
} args;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "train: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return EXIT_USAGE;
}

/* 0 on success, else the exit status. */
static int parse_args(int argc, char **argv, args *a)
{
    a->sets = calloc((size_t)argc, sizeof *a->sets);
    if (!a->sets)
        return usage_error("%s", "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0)
            a->help = 1;
        else if (strcmp(s, "--resume") == 0)
            a->resume = 1;
        else if (strcmp(s, "--set") == 0 && i + 1 < argc)
            a->sets[a->n_sets++] = argv[++i];
        else if (strncmp(s, "--set=", 6) == 0)
            a->sets[a->n_sets++] = s + 6;
        else if (strcmp(s, "--set") == 0)
            return usage_error("%s needs section.key=value", s);
        else if (s[0] == '-' && s[1])
            return usage_error("unknown option '%s'", s);
        else if (a->config)
            return usage_error("one config file expected, got a second: '%s'", s);
        else
            a->config = s;
    }
    if (!a->config && !a->help)
        return usage_error("%s", "no config file given");
    return 0;
}

static int load_config(const args *a, fn_config **cfg)
{
    if (fn_config_load(cfg, a->config) != FN_OK)
        return fail(NULL);
    for (int i = 0; i < a->n_sets; i++)
        if (fn_config_set(*cfg, a->sets[i]) != FN_OK)
            return fail(NULL);
    if (fn_config_finish(*cfg) != FN_OK)
        return fail(NULL);
    return 0;
}

/* --- setting up ------------------------------------------------------------ */

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
            fn_status st = fn_fail(FN_ERR_IO, "%s: cannot create directory: %s", p, strerror(errno));
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

static fn_status open_context(run *r)
{
    const fn_config *c = r->cfg;
    fn_device device = c->device;
    int gpu = c->gpu;
    if (c->device_auto) {
        int gpus = fn_cuda_device_count();
        device = gpus > 0 ? FN_CUDA : FN_CPU;
        gpu = gpus > 0 ? 0 : -1;
        printf("device: %s (auto: %d GPU%s found)\n", gpus > 0 ? "cuda:0" : "cpu", gpus,
               gpus == 1 ? "" : "s");
    } else if (device == FN_CUDA) {
        printf("device: cuda:%d\n", gpu);
    } else {
        printf("device: cpu\n");
    }
    return fn_context_create(&r->ctx, device, gpu, c->math);
}

static fn_status open_sets(run *r)
{
    const fn_config *c = r->cfg;
    fn_data_options opt = {
        .inputs = c->inputs, .targets = c->targets, .loss = c->loss, .in_features = 0,
        .out_features = c->layers[c->n_layers - 1].width, .batch_size = c->batch_size,
        .memory_budget = (size_t)(c->memory_budget_mb * 1048576.0), .shuffle = 1, .seed = c->seed};
    FN_TRY(fn_data_open(&r->train, r->ctx, c->train, &opt));
    FN_TRY(fn_loader_create(&r->loader, r->ctx, r->train, NULL));
    if (!c->valid)
        return FN_OK;
    opt.in_features = fn_data_in_features(r->train);
    opt.shuffle = 0;
    return fn_data_open(&r->valid, r->ctx, c->valid, &opt);
}

static fn_status build(run *r)
{
    const fn_config *c = r->cfg;
    FN_TRY(fn_model_build(&r->net, r->ctx, c, fn_data_in_features(r->train)));
    if (c->init)
        FN_TRY(fn_weights_load(r->net, c->init));
    FN_TRY(fn_sgd_create(&r->opt, r->ctx, fn_net_params(r->net), fn_net_n_params(r->net),
                         &c->sgd));
    fn_device d = fn_context_device(r->ctx);
    /* Plain SGD needs no state, so on the GPU each block's update is folded
     * into its backward (the weight's into the dW product). The CPU keeps
     * the separate update: there it would save nothing. */
    r->fused = d == FN_CUDA && fn_sgd_is_plain(r->opt);
    FN_TRY(fn_tensor_alloc(&r->loss, 1, 1, d));
    return fn_tensor_alloc(&r->dpred, c->batch_size, fn_net_out_features(r->net), d);
}

static fn_status output_paths(run *r)
{
    const char *dir = r->cfg->out_dir;
    FN_TRY(make_dirs(dir));
    r->checkpoint_path = fn_path_join(dir, "checkpoint.h5");
    r->weights_path = fn_path_join(dir, "weights.h5");
    r->csv_path = fn_path_join(dir, "metrics.csv");
    if (!r->checkpoint_path || !r->weights_path || !r->csv_path)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    return FN_OK;
}

static fn_status resume(run *r)
{
    fn_train_state s = {0};
    FN_TRY(fn_checkpoint_load(r->checkpoint_path, r->net, r->opt, &s));
    const fn_config *c = r->cfg;
    if (s.seed != c->seed || s.batch_size != c->batch_size)
        return fn_fail(FN_ERR_INVALID,
                       "%s was written with seed %llu and batch_size %d; the config has seed %llu "
                       "and batch_size %d, so the run cannot continue the same way",
                       r->checkpoint_path, (unsigned long long)s.seed, s.batch_size,
                       (unsigned long long)c->seed, c->batch_size);
    /* The data order also depends on the set's rows and its slab size,
     * which [data] train and memory_budget_mb decide. */
    const long long rows = (long long)fn_data_rows(r->train),
                    slab = (long long)fn_data_slab_rows(r->train);
    if (s.rows != rows || s.slab_rows != slab)
        return fn_fail(FN_ERR_INVALID,
                       "%s was written for a training set of %lld rows read in slabs of %lld; "
                       "this run's set has %lld rows in slabs of %lld ([data] train and "
                       "memory_budget_mb), so the run cannot continue the same way",
                       r->checkpoint_path, s.rows, s.slab_rows, rows, slab);
    r->state = s;
    r->checkpoint_ours = 1;
    printf("resuming from %s: epoch %lld, step %lld\n", r->checkpoint_path, s.epoch + 1, s.step);
    return FN_OK;
}

/* Keeps the header and the first `epochs` lines: those the checkpoint covers. */
static fn_status open_csv(run *r, long long epochs)
{
    char *kept = NULL;
    size_t kept_len = 0;
    FILE *old = epochs > 0 ? fopen(r->csv_path, "r") : NULL;
    if (old) {
        FILE *mem = open_memstream(&kept, &kept_len);
        int c, lines = 0;
        while (mem && (c = fgetc(old)) != EOF && lines <= epochs) {
            fputc(c, mem);
            lines += c == '\n';
        }
        fclose(old);
        if (mem)
            fclose(mem);
    }
    r->csv = fopen(r->csv_path, "w");
    if (!r->csv) {
        free(kept);
        return fn_fail(FN_ERR_IO, "%s: cannot write: %s", r->csv_path, strerror(errno));
    }
    if (kept && kept_len)
        fputs(kept, r->csv);
    else
        fputs("epoch,train_loss,train_acc,valid_loss,valid_acc,seconds\n", r->csv);
    free(kept);
    fflush(r->csv);
    return FN_OK;
}

/* --- progress ---------------------------------------------------------------- */

static void format_eta(double seconds, char *buf, size_t n)
{
    long s = seconds > 0 && seconds < 1e8 ? (long)seconds : 0;
    snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
}

static void show_progress(run *r, long long step, long long steps, double loss)
{
    const fn_config *c = r->cfg;
    double t = now(), elapsed = t - r->epoch_started;
    double rate = elapsed > 0 ? (double)(r->state.seen - r->seen_before) / elapsed : 0;
    if (r->tty) {
        if (t - r->last_bar < 0.1 && step < steps)
            return;
        r->last_bar = t;
        double rows_left = (double)fn_data_rows(r->train) *
                               (double)(c->epochs - r->state.epoch) -
                           (double)r->state.seen;
        char eta[32], bar[31];
        format_eta(rate > 0 ? rows_left / rate : 0, eta, sizeof eta);
        int filled = (int)(30 * step / steps);
        for (int i = 0; i < 30; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[30] = '\0';
        printf("\r epoch %lld/%d [%s] %lld/%lld loss %.4f %.0f samples/s, %s left ",
               r->state.epoch + 1, c->epochs, bar, step, steps, loss, rate, eta);
        fflush(stdout);
    } else if (c->log_every > 0 && step % c->log_every == 0 && step < steps) {
        printf("epoch %lld/%d step %lld/%lld loss %.4f %.0f samples/s\n", r->state.epoch + 1,
               c->epochs, step, steps, loss, rate);
        fflush(stdout);
    }
}

static void format_metric(char *buf, size_t n, double v, int percent)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, percent ? "%.2f%%" : "%.4f", percent ? 100 * v : v);
}

static void report_epoch(run *r, metrics train, metrics valid)
{
    char tl[32], ta[32], vl[32], va[32];
    format_metric(tl, sizeof tl, train.loss, 0);
    format_metric(ta, sizeof ta, train.acc, 1);
    format_metric(vl, sizeof vl, valid.loss, 0);
    format_metric(va, sizeof va, valid.acc, 1);
    printf("%sepoch %lld/%d: train loss %s acc %s, valid loss %s acc %s (%.1f s)\n",
           r->tty ? "\r\033[K" : "", r->state.epoch + 1, r->cfg->epochs, tl, ta, vl, va,
           r->state.seconds);
    fflush(stdout);
    fprintf(r->csv, "%lld,%.9g,%.9g,%.9g,%.9g,%.3f\n", r->state.epoch + 1, train.loss, train.acc,
            valid.loss, valid.acc, r->state.seconds);
    fflush(r->csv);
}

/* --- the loop ----------------------------------------------------------------- */

static fn_status batch_loss(run *r, const fn_batch *b, const fn_tensor *y, fn_tensor *dy,
                            float *loss, int *correct)
{
    /* Read every step, also on the GPU (one copy of the loss, with the
     * correct count beside it, that waits for the step's kernels), so a
     * non-finite loss stops the run at its step, before the update. */
    *correct = 0;
    if (r->cfg->loss == FN_LOSS_CROSS_ENTROPY)
        return fn_cross_entropy_loss_read(r->ctx, y, b->labels, &r->loss, dy, loss, correct);
    FN_TRY(fn_mse_loss(r->ctx, y, &b->target, &r->loss, dy));
    return fn_tensor_download(&r->loss, loss, 1);
}

/* --- non-finite values ---------------------------------------------------------- */

static const char *number_name(float v) { return isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

/* "layer 1 (block) output, row 0 column 3: nan" or why there is no answer. */
static void describe_nonfinite(fn_status st, const fn_nonfinite *nf, char *buf, size_t n)
{
    if (st != FN_OK)
        snprintf(buf, n, "unknown (the search failed: %s)", fn_last_error());
    else if (nf->layer < 0)
        snprintf(buf, n, "none in the parameters, outputs or gradients (the loss overflowed)");
    else
        snprintf(buf, n, "layer %d (%s) %s%s%s, row %d column %d: %s", nf->layer, nf->kind,
                 nf->what, nf->param ? " " : "", nf->param ? nf->param : "", nf->row, nf->col,
                 number_name(nf->value));
}

/* What the stop leaves behind: weights.h5 is never written over. A
 * checkpoint.h5 in the directory is named only when it is this run's (it
 * resumed from it or wrote it), not one an earlier run left there. */
static void describe_kept(const run *r, char *buf, size_t n)
{
    if (r->checkpoint_ours)
        snprintf(buf, n, "%s (the last good state) is kept; lower [train] lr and --resume",
                 r->checkpoint_path);
    else
        snprintf(buf, n, "no weights written; try a smaller [train] lr");
}

/* After a non-finite training loss: a backward of the batch, then the first
 * non-finite value in the order the step computes them. */
static fn_status stop_nonfinite(run *r, const fn_tensor *dy, float loss)
{
    fn_nonfinite nf;
    fn_status st = fn_net_zero_grad(r->net);
    if (st == FN_OK)
        st = fn_net_backward(r->net, dy);
    if (st == FN_OK)
        st = fn_net_find_nonfinite(r->net, 1, &nf);
    char first[256], kept[512];
    describe_nonfinite(st, &nf, first, sizeof first);
    describe_kept(r, kept, sizeof kept);
    const fn_train_state *s = &r->state;
    return fn_fail(FN_ERR_NUMERIC,
                   "step %lld (epoch %lld, batch %lld): loss is %s; first non-finite: %s; "
                   "stopped: %s",
                   s->global_step + 1, s->epoch + 1, s->step + 1, number_name(loss), first, kept);
}

static fn_status train_step(run *r, const fn_batch *b, float *loss)
{
    fn_tensor y;
    FN_TRY(fn_net_forward(r->net, &b->x, &y));
    fn_tensor dy = fn_tensor_rows(&r->dpred, 0, b->rows);
    int correct = 0;
    FN_TRY(batch_loss(r, b, &y, &dy, loss, &correct));
    if (!isfinite(*loss))
        return stop_nonfinite(r, &dy, *loss);
    if (r->fused) {
        FN_TRY(fn_sgd_fused_backward(r->net, &dy, fn_sgd_get_config(r->opt)->lr));
        FN_TRY(fn_sgd_count_step(r->opt));
    } else {
        FN_TRY(fn_net_zero_grad(r->net));
        FN_TRY(fn_net_backward(r->net, &dy));
        FN_TRY(fn_sgd_step(r->opt));
    }
    fn_train_state *s = &r->state;
    s->loss_sum += (double)*loss * b->rows;
    s->correct += correct;
    s->seen += b->rows;
    s->step++;
    s->global_step++;
    return FN_OK;
}

static fn_status evaluate_batches(run *r, fn_loader *loader, metrics *m)
{
    double loss_sum = 0;
    long long correct = 0, seen = 0;
    FN_TRY(fn_loader_start(loader, 0, 0));
    for (;;) {
        fn_batch b;
        FN_TRY(fn_loader_next(loader, &b));
        if (!b.rows)
            break;
        fn_tensor y;
        FN_TRY(fn_net_forward(r->net, &b.x, &y));
        float loss = 0;
        int ok = 0;
        FN_TRY(batch_loss(r, &b, &y, NULL, &loss, &ok));
        if (!isfinite(loss)) {
            fn_nonfinite nf;
            char first[256];
            describe_nonfinite(fn_net_find_nonfinite(r->net, 0, &nf), &nf, first, sizeof first);
            return fn_fail(FN_ERR_NUMERIC,
                           "epoch %lld: validation loss is %s at row %lld; first non-finite: %s",
                           r->state.epoch + 1, number_name(loss), (long long)b.index[0], first);
        }
        loss_sum += (double)loss * b.rows;
        correct += ok;
        seen += b.rows;
    }
    m->loss = loss_sum / (double)seen;
    m->acc = r->cfg->loss == FN_LOSS_CROSS_ENTROPY ? (double)correct / (double)seen : NAN;
    return FN_OK;
}

/* The set's batches in file order, each read and copied to the device on
 * this thread (a synchronous loader), between two epochs of training. */
static fn_status evaluate(run *r, fn_data *set, metrics *m)
{
    const fn_loader_options sync = {.mode = FN_LOADER_SYNC};
    fn_loader *loader = NULL;
    FN_TRY(fn_loader_create(&loader, r->ctx, set, &sync));
    fn_status st = evaluate_batches(r, loader, m);
    fn_loader_destroy(loader);
    return st;
}

/* The library refuses to write a non-finite value (FN_ERR_NUMERIC): the
 * parameters went bad at the last step, whose loss was still finite. */
static fn_status save_checkpoint(run *r)
{
    fn_status st = fn_checkpoint_save(r->checkpoint_path, r->net, r->opt, &r->state, r->cfg->text);
    if (st == FN_OK)
        r->checkpoint_ours = 1;
    if (st != FN_ERR_NUMERIC)
        return st;
    fn_nonfinite nf;
    char first[256], kept[512];
    describe_nonfinite(fn_net_find_nonfinite(r->net, 0, &nf), &nf, first, sizeof first);
    describe_kept(r, kept, sizeof kept);
    return fn_fail(FN_ERR_NUMERIC,
                   "after step %lld the parameters are non-finite; first non-finite: %s; "
                   "checkpoint not written: %s",
                   r->state.global_step, first, kept);
}

/* The epoch's steps from the state's step, until its end or a signal. */
static fn_status run_steps(run *r)
{
    fn_train_state *s = &r->state;
    long long steps = fn_data_batches(r->train);
    while (!stop_signal) {
        fn_batch b;
        FN_TRY(fn_loader_next(r->loader, &b));
        if (!b.rows)
            break;
        float loss = 0;
        FN_TRY(train_step(r, &b, &loss));
        show_progress(r, s->step, steps, loss);
    }
    return FN_OK;
}

/* One epoch from the state's step; returns early, with FN_OK, on a signal.
 * The loader is halted on every way out, so the checkpoint, the validation
 * set and the weights (HDF5, the main thread's) never meet its thread. */
static fn_status train_epoch(run *r, metrics *m)
{
    fn_train_state *s = &r->state;
    r->epoch_started = now();
    r->seen_before = s->seen;
    FN_TRY(fn_loader_start(r->loader, s->epoch, s->step));
    fn_status st = run_steps(r);
    fn_status halted = fn_loader_halt(r->loader);
    FN_TRY(st);
    FN_TRY(halted);
    m->loss = s->seen ? s->loss_sum / (double)s->seen : NAN;
    m->acc = r->cfg->loss == FN_LOSS_CROSS_ENTROPY && s->seen ? (double)s->correct / (double)s->seen
                                                               : NAN;
    return FN_OK;
}

static fn_status end_epoch(run *r, metrics train)
{
    metrics valid = {NAN, NAN};
    if (r->valid)
        FN_TRY(evaluate(r, r->valid, &valid));
    report_epoch(r, train, valid);
    fn_train_state *s = &r->state;
    s->epoch++;
    s->step = 0;
    s->loss_sum = 0;
    s->correct = s->seen = 0;
    int every = r->cfg->checkpoint_every;
    if (every > 0 && s->epoch % every == 0 && !stop_signal)
        FN_TRY(save_checkpoint(r));
    return FN_OK;
}

static fn_status train_loop(run *r)
{
    fn_train_state *s = &r->state;
    while (s->epoch < r->cfg->epochs) {
        double t0 = now();
        metrics train;
        FN_TRY(train_epoch(r, &train));
        s->seconds += now() - t0;
        if (stop_signal)
            break;
        t0 = now();
        FN_TRY(end_epoch(r, train));
        s->seconds += now() - t0;
        if (stop_signal)
            break;
    }
    return FN_OK;
}

/* --- the run ------------------------------------------------------------------ */

static fn_status setup(run *r, int resuming)
{
    FN_TRY(open_context(r));
    FN_TRY(open_sets(r));
    FN_TRY(build(r));
    FN_TRY(output_paths(r));
    r->state = (fn_train_state){.seed = r->cfg->seed,
                                .batch_size = r->cfg->batch_size,
                                .rows = (long long)fn_data_rows(r->train),
                                .slab_rows = (long long)fn_data_slab_rows(r->train)};
    if (resuming)
        FN_TRY(resume(r));
    return open_csv(r, r->state.epoch);
}

static void summary(const run *r)
{
    fn_loader_stats ls = fn_loader_get_stats(r->loader);
    if (ls.threads && ls.batches)
        printf("loader: %lld batches, %.3f ms each to prepare on %d thread%s; steps waited "
               "%.3f ms each for their batch\n",
               ls.batches, 1e3 * ls.prepare_seconds / (double)ls.batches, ls.threads,
               ls.threads == 1 ? "" : "s", 1e3 * ls.wait_seconds / (double)ls.batches);
    printf("done: %d epochs, %lld steps, %.1f s; weights written to %s\n", r->cfg->epochs,
           r->state.global_step, r->state.seconds, r->weights_path);
}

static int interrupted(run *r)
{
    if (r->tty)
        printf("\n");
    int sig = (int)stop_signal;
    if (save_checkpoint(r) != FN_OK)
        return fail("interrupted, and the checkpoint failed: ");
    printf("interrupted by %s at epoch %lld, step %lld; checkpoint written to %s "
           "(continue with --resume)\n",
           sig == SIGTERM ? "SIGTERM" : "SIGINT", r->state.epoch + 1, r->state.step,
           r->checkpoint_path);
    return 128 + sig;
}

static void release(run *r)
{
    if (r->csv)
        fclose(r->csv);
    fn_tensor_free(&r->loss);
    fn_tensor_free(&r->dpred);
    fn_sgd_destroy(r->opt);
    fn_net_destroy(r->net);
    fn_loader_destroy(r->loader);
    fn_data_close(r->train);
    fn_data_close(r->valid);
    fn_context_destroy(r->ctx);
    free(r->checkpoint_path);
    free(r->weights_path);
    free(r->csv_path);
}

static int execute(run *r, int resuming)
{
    if (setup(r, resuming) != FN_OK)
        return fail(NULL);
    if (stop_signal) {
        int sig = (int)stop_signal;
        printf("interrupted by %s before the first step; no checkpoint written\n",
               sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return 128 + sig;
    }
    printf("training: %lld rows, %lld batches of up to %d per epoch, %d epochs, %d layers\n",
           (long long)fn_data_rows(r->train), fn_data_batches(r->train), r->cfg->batch_size,
           r->cfg->epochs, fn_net_n_layers(r->net));
    if (train_loop(r) != FN_OK)
        return fail(NULL);
    if (stop_signal)
        return interrupted(r);
    if (fn_weights_save(r->net, r->weights_path, r->cfg->text) != FN_OK)
        return fail(NULL);
    summary(r);
    return 0;
}

/* The first SIGINT or SIGTERM asks the run to stop after its step (and,
 * during setup, before the first); SA_RESETHAND restores the default
 * action, so a second one ends the program at once, in a long set-up
 * (every slab of a set is read when it is opened) or a slow write alike.
 * Files are written to a temporary and renamed, so that leaves no broken
 * file. */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int main(int argc, char **argv)
{
    args a = {0};
    int status = parse_args(argc, argv, &a);
    if (status == 0 && a.help)
        fputs(usage, stdout);
    run r = {0};
    if (status == 0 && !a.help)
        status = load_config(&a, &r.cfg);
    free(a.sets);
    if (status != 0 || a.help) {
        fn_config_destroy(r.cfg);
        return status;
    }
    r.tty = isatty(STDOUT_FILENO);
    r.last_bar = now();
    install_handlers();
    status = execute(&r, a.resume);
    release(&r);
    fn_config_destroy(r.cfg);
    return status;
}
