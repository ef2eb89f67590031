/* train.c — the `train` program: reads a config (with --set overrides) and
 * runs it with the library's trainer (fusenet/trainer.h), which trains,
 * validates, writes metrics.csv, checkpoints and weights.h5 to the output
 * directory; this program draws its reports (a progress bar on a
 * terminal, else plain lines) and turns SIGINT/SIGTERM/SIGHUP into a stop
 * after the current step, with a checkpoint. SIGPIPE is ignored: when its
 * stdout closes (`train ... | head -1`) the run carries on, unprinted.
 *
 *   train config.ini [--set section.key=value ...] [--resume | --overwrite] [--help]
 *   train config.ini [--set ...] --print-config
 *   train --version
 *
 * Exit status: 0 done, 1 a config, data or run error, 2 a usage error,
 * 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP after writing a
 * checkpoint (or during setup, before the first step, without one). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fusenet/world.h"
#include "fusenet/config.h"
#include "fusenet/trainer.h"
#include "fusenet/version.h"

enum { EXIT_ERROR = 1, EXIT_USAGE = 2 };

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static const char usage[] =
    "usage: train config.ini [--set section.key=value ...] [--resume | --overwrite] [--help]\n"
    "\n"
    "Trains the network the config describes and writes weights.h5, metrics.csv\n"
    "and (every [train] checkpoint_every epochs, or when interrupted)\n"
    "checkpoint.h5 to its [output] dir (default runs/<config name> beside the\n"
    "config); with [train] keep_best also best.h5.\n"
    "\n"
    "  --set section.key=value  override one config value (repeatable); a path\n"
    "                           given here is relative to the current directory\n"
    "  --resume                 continue from <output dir>/checkpoint.h5\n"
    "  --overwrite              replace another run's files in the output dir\n"
    "  --print-config           print the resolved configuration, each value with\n"
    "                           its source (default, file:line or --set), and exit\n"
    "  --help                   this text\n"
    "  --version                the version, commit, backends and GPU architectures\n"
    "\n"
    "Under mpirun or srun, the processes train one network together, each on its\n"
    "share of every batch ([train] batch_size is the global batch; docs/many-processes.md).\n";

static void print_version(void)
{
    printf("train (fusenet) %s\ncommit: %s\nbackends: %s\nGPU architectures: %s\n", fn_version(),
           fn_version_commit(), fn_build_backends(), fn_build_cuda_archs());
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what)
{
    fflush(stdout); /* so a piped log shows the error after what came before */
    if (fn_world_size() > 1)
        fprintf(stderr, "train: rank %d of %d: %s%s\n", fn_world_rank(), fn_world_size(),
                what ? what : "", fn_last_error());
    else
        fprintf(stderr, "train: %s%s\n", what ? what : "", fn_last_error());
    fflush(stderr);
    return EXIT_ERROR;
}

/* --- arguments ------------------------------------------------------------ */

typedef struct args {
    const char *config;
    const char **sets; /* [n_sets], borrowed from argv */
    int n_sets;
    int resume, overwrite, help, version;
    int print_config; /* print the resolved configuration with its sources, run nothing */
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
        else if (strcmp(s, "--version") == 0)
            a->version = 1;
        else if (strcmp(s, "--resume") == 0)
            a->resume = 1;
        else if (strcmp(s, "--overwrite") == 0)
            a->overwrite = 1;
        else if (strcmp(s, "--print-config") == 0)
            a->print_config = 1;
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
    /* An override without "section.key=" is a usage error, as a bare
     * --set is; its value is the config's to check. */
    for (int i = 0; i < a->n_sets; i++) {
        const char *eq = strchr(a->sets[i], '=');
        if (!eq || !memchr(a->sets[i], '.', (size_t)(eq - a->sets[i])))
            return usage_error("--set %s: expected section.key=value", a->sets[i]);
    }
    if (a->resume && a->overwrite)
        return usage_error("%s", "--resume continues the run in the output dir, --overwrite "
                                 "replaces it: give one of them");
    if (!a->config && !a->help && !a->version)
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
    for (int i = 0; fn_world_rank() == 0 && fn_config_notice(*cfg, i); i++)
        printf("notice: %s\n", fn_config_notice(*cfg, i));
    return 0;
}

/* --- what the trainer reports ------------------------------------------------ */

typedef struct display {
    int tty;
    int log_every;   /* [run] log_every */
    double last_bar; /* monotonic seconds of the last bar drawn */
} display;

static void on_device(void *user, const fn_train_device *d)
{
    (void)user;
    if (d->automatic)
        printf("device: %s (auto: %d GPU%s found)\n", d->device == FN_CUDA ? "cuda:0" : "cpu",
               d->gpus_found, d->gpus_found == 1 ? "" : "s");
    else if (d->device == FN_CUDA)
        printf("device: cuda:%d\n", d->gpu);
    else
        printf("device: cpu\n");
    if (d->math_unused)
        printf("note: [run] math = %s has no effect on the CPU, whose products are always "
               "fp32\n",
               fn_math_name(d->math));
}

/* "1.5 MiB": binary units, as the allocations are. */
static void format_bytes(size_t bytes, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* A table like Keras' model.summary(). */
static void print_layers(const fn_train_model *m)
{
    printf("%-6s %-8s %17s %7s %12s\n", "layer", "kind", "in -> out", "groups", "parameters");
    for (int i = 0; i < m->n_layers; i++) {
        const fn_train_layer *l = &m->layers[i];
        char shape[48], groups[16];
        snprintf(shape, sizeof shape, "%d -> %d", l->in, l->out);
        snprintf(groups, sizeof groups, l->groups ? "%d" : "-", l->groups);
        printf("%-6d %-8s %17s %7s %12lld\n", i, l->kind, shape, groups, l->params);
    }
    printf("total: %lld parameters\n", m->params);
}

static void print_memory(const fn_train_model *m)
{
    const fn_train_memory *b = &m->memory;
    char total[32], w[32], g[32], o[32], a[32], bt[32], data[32];
    format_bytes(b->device, total, sizeof total);
    format_bytes(b->weights, w, sizeof w);
    format_bytes(b->gradients, g, sizeof g);
    format_bytes(b->optimizer, o, sizeof o);
    format_bytes(b->activations, a, sizeof a);
    format_bytes(b->batches, bt, sizeof bt);
    format_bytes(b->data, data, sizeof data);
    char where[32];
    snprintf(where, sizeof where, m->device == FN_CUDA ? "cuda:%d" : "the cpu", m->gpu);
    printf("memory on %s: %s (weights %s, gradients %s, optimiser state %s, activations %s",
           where, total, w, g, o, a);
    if (m->device == FN_CUDA)
        printf(", batches %s); host: data %s\n", bt, data);
    else
        printf("); data %s\n", data);
}

static void on_model(void *user, const fn_train_model *m)
{
    (void)user;
    print_layers(m);
    print_memory(m);
}

static void on_resume(void *user, const char *checkpoint, const fn_train_state *s)
{
    (void)user;
    printf("resuming from %s: epoch %lld, step %lld\n", checkpoint, s->epoch + 1, s->step);
}

static void on_start(void *user, const fn_train_plan *p)
{
    (void)user;
    const int bf16 = p->grad_sum == FN_COMM_SUM_BF16;
    if (p->ranks > 1)
        printf("data parallel: %d ranks on %d %s%s of %d node%s, each taking its share of every "
               "batch of %d%s\n",
               p->ranks, p->devices, p->device == FN_CUDA ? "GPU" : "CPU",
               p->devices == 1 ? "" : "s", p->nodes, p->nodes == 1 ? "" : "s", p->batch_size,
               bf16 ? "; gradients summed in bfloat16" : "");
    else if (bf16)
        printf("data parallel: 1 rank; gradients summed in bfloat16\n");
    printf("training: %lld rows, %lld batch%s of up to %d per epoch, %d epoch%s, %d layer%s\n",
           p->rows, p->batches, p->batches == 1 ? "" : "es", p->batch_size, p->epochs,
           p->epochs == 1 ? "" : "s", p->layers, p->layers == 1 ? "" : "s");
}

static void format_eta(double seconds, char *buf, size_t n)
{
    long s = seconds > 0 && seconds < 1e8 ? (long)seconds : 0;
    snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
}

/* A bar redrawn at most every 0.1 s on a terminal; else a line every
 * [run] log_every steps. */
static void on_step(void *user, const fn_train_progress *p)
{
    display *d = user;
    if (d->tty) {
        double t = now();
        if (t - d->last_bar < 0.1 && p->step < p->steps)
            return;
        d->last_bar = t;
        char eta[32], bar[31];
        double rate = p->samples_per_s;
        format_eta(rate > 0 ? (double)p->rows_left / rate : 0, eta, sizeof eta);
        int filled = (int)(30 * p->step / p->steps);
        for (int i = 0; i < 30; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[30] = '\0';
        printf("\r epoch %lld/%d [%s] %lld/%lld loss %.4f %.0f samples/s, %s left ",
               p->epoch + 1, p->epochs, bar, p->step, p->steps, p->loss, rate, eta);
        fflush(stdout);
    } else if (d->log_every > 0 && p->step % d->log_every == 0 && p->step < p->steps) {
        printf("epoch %lld/%d step %lld/%lld loss %.4f %.0f samples/s\n", p->epoch + 1, p->epochs,
               p->step, p->steps, p->loss, p->samples_per_s);
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

/* The epoch's line: its training figures, the validation set's when
 * there is one, and its own time beside the run's so far. */
static void on_epoch(void *user, const fn_train_epoch *e)
{
    const display *d = user;
    char tl[32], ta[32], vl[32], va[32], valid[96] = "";
    format_metric(tl, sizeof tl, e->train.loss, 0);
    format_metric(ta, sizeof ta, e->train.acc, 1);
    format_metric(vl, sizeof vl, e->valid.loss, 0);
    format_metric(va, sizeof va, e->valid.acc, 1);
    /* Both NaN: no validation set; the loss alone NaN: every validation
     * row weighs 0 (its notice said so), shown as '-'. */
    if (!isnan(e->valid.loss) || !isnan(e->valid.acc))
        snprintf(valid, sizeof valid, ", valid loss %s acc %s", vl, va);
    char best[48] = "";
    if (e->improved)
        snprintf(best, sizeof best, ", best");
    else if (e->since_best > 0)
        snprintf(best, sizeof best, ", %lld epoch%s since the best", e->since_best,
                 e->since_best == 1 ? "" : "s");
    printf("%sepoch %lld/%d: train loss %s acc %s%s (epoch %.3f s, total %.3f s, %.0f "
           "samples/s%s)\n",
           d->tty ? "\r\033[K" : "", e->epoch + 1, e->epochs, tl, ta, valid, e->epoch_seconds,
           e->seconds, e->samples_per_s, best);
    fflush(stdout);
}

static void on_done(void *user, const fn_train_summary *s)
{
    (void)user;
    const fn_loader_stats *ls = &s->loader;
    if (ls->threads && ls->batches)
        printf("loader: %lld batches, %.3f ms each to prepare on %d thread%s%s; steps waited "
               "%.3f ms each for their batch\n",
               ls->batches, 1e3 * ls->prepare_seconds / (double)ls->batches, ls->threads,
               ls->threads == 1 ? "" : "s",
               ls->device_set_bytes ? ", gathered on the GPU from the set kept there" : "",
               1e3 * ls->wait_seconds / (double)ls->batches);
    if (s->stopped_early)
        printf("stopped early: no improvement in the last %lld epochs (the best %s, %.4f, at "
               "epoch %lld)\n",
               (long long)s->epochs - s->best_epoch, s->monitor, s->best, s->best_epoch);
    printf("done: %d epoch%s, %lld step%s, %.3f s, %.0f samples/s; weights written to %s\n",
           s->epochs, s->epochs == 1 ? "" : "s", s->steps, s->steps == 1 ? "" : "s", s->seconds,
           s->samples_per_s, s->weights_path);
    if (s->best_path && s->best_epoch > 0)
        printf("best: epoch %lld, %s %.4f; written to %s\n", s->best_epoch, s->monitor, s->best,
               s->best_path);
}

static int should_stop(void *user)
{
    (void)user;
    return stop_signal != 0;
}

static void on_notice(void *user, const char *text)
{
    (void)user;
    printf("notice: %s\n", text);
    fflush(stdout);
}

/* Under mpirun or srun, rank 0 alone prints; every rank asks about stops
 * (the trainer agrees on them over the ranks). */
static const fn_trainer_callbacks quiet_callbacks = {.should_stop = should_stop};

static const fn_trainer_callbacks callbacks = {
    .on_device = on_device,
    .on_resume = on_resume,
    .on_model = on_model,
    .on_start = on_start,
    .on_step = on_step,
    .on_epoch = on_epoch,
    .on_done = on_done,
    .should_stop = should_stop,
    .on_notice = on_notice,
};

/* --print-config: the configuration the run would use, every key with
 * its source, on rank 0; nothing is opened, made or written. */
static int print_config(const fn_config *cfg)
{
    char *text = NULL;
    if (fn_config_resolved_text(cfg, 1, &text) != FN_OK)
        return fail(NULL);
    if (fn_world_rank() == 0)
        fputs(text, stdout);
    free(text);
    return 0;
}

/* --- the run ------------------------------------------------------------------ */

static const char *signal_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT";
}

/* The exit status of a run that ended (status st) with this outcome. A rank
 * that stopped because another rank was interrupted exits as if by SIGTERM
 * (the ranks of a job stop together). */
static int conclude(const fn_trainer *t, fn_status st, const display *d)
{
    const int sig = stop_signal ? (int)stop_signal : SIGTERM;
    const char *by = stop_signal ? signal_name(sig) : "a signal to another rank";
    const int speak = fn_world_rank() == 0;
    switch (fn_trainer_outcome(t)) {
    case FN_TRAIN_STOPPED_AT_START:
        if (speak)
            printf("interrupted by %s before the first step; no checkpoint written\n", by);
        return 128 + sig;
    case FN_TRAIN_STOPPED:
        if (d->tty && speak)
            printf("\n");
        if (st != FN_OK)
            return fail("interrupted, and the checkpoint failed: ");
        if (speak)
            printf("interrupted by %s at epoch %lld, step %lld; checkpoint written to %s "
                   "(continue with --resume)\n",
                   by, fn_trainer_state(t)->epoch + 1, fn_trainer_state(t)->step,
                   fn_trainer_checkpoint_path(t));
        return 128 + sig;
    default:
        return st == FN_OK ? 0 : fail(NULL);
    }
}

/* Whether stdout takes a redrawn bar (\r, ANSI codes): a terminal that
 * understands them, and not a launcher's. mpirun hands its processes a
 * pseudo-terminal even when its own output goes to a file or a pipe, so
 * under a launcher (an MPI world, even of one process) the run prints
 * plain lines. */
static int draws_on_terminal(void)
{
    const char *term = getenv("TERM");
    return isatty(STDOUT_FILENO) && !fn_world_mpi() && term && term[0] &&
           strcmp(term, "dumb") != 0;
}

/* *together: the run failed on every rank at once (no rank need end the
 * others). */
static int execute(const fn_config *cfg, const args *a, int *together)
{
    char log_every[32];
    if (fn_config_get(cfg, "run.log_every", log_every, sizeof log_every) != FN_OK)
        return fail(NULL);
    display d = {.tty = draws_on_terminal(), .log_every = atoi(log_every), .last_bar = now()};
    const fn_trainer_options options = {
        .resume = a->resume, .overwrite = a->overwrite,
        .callbacks = fn_world_rank() == 0 ? &callbacks : &quiet_callbacks, .user = &d};
    fn_trainer *t = NULL;
    const fn_status created = fn_trainer_create(&t, cfg, &options);
    if (created == FN_ERR_RANKS_DIFFER) {
        /* Every rank holds the same message: rank 0 prints it, all exit. */
        *together = 1;
        return fn_world_rank() == 0 ? fail(NULL) : EXIT_ERROR;
    }
    if (created != FN_OK)
        return fail(NULL);
    fn_status st = fn_trainer_run(t);
    int status = conclude(t, st, &d);
    *together = st != FN_OK && fn_trainer_failed_on_every_rank(t);
    fn_trainer_destroy(t);
    return status;
}

/* The first SIGINT, SIGTERM or SIGHUP (its terminal closed) asks the run
 * to stop after its step (and,
 * during setup, before the first); SA_RESETHAND restores the default
 * action, so a second one ends the program at once, in a long set-up
 * (every slab of a set is read when it is opened) or a slow write alike.
 * Files are written to a temporary and renamed, so that leaves no broken
 * file. SIGPIPE is ignored, so a closed stdout fails writes (unseen)
 * instead of killing the run. Installed first thing in main: a config
 * (or the set-up after it) may take time. */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGPIPE, &sa, NULL);
}

/* Under mpirun or srun (docs/many-processes.md) every rank runs this: a
 * failure on one rank ends the others (fn_world_abort) after printing its
 * message, unless every rank failed at the same step with it; a run that
 * ends, or stops together, finalises MPI. */
int main(int argc, char **argv)
{
    install_handlers();
    if (fn_world_init(&argc, &argv) != FN_OK)
        return fail(NULL);
    args a = {0};
    int status = parse_args(argc, argv, &a);
    if (status == 0 && a.help && fn_world_rank() == 0)
        fputs(usage, stdout);
    else if (status == 0 && a.version && fn_world_rank() == 0)
        print_version();
    const int run = !a.help && !a.version;
    fn_config *cfg = NULL;
    if (status == 0 && run)
        status = load_config(&a, &cfg);
    int together = 0;
    if (status == 0 && run && a.print_config)
        status = print_config(cfg);
    else if (status == 0 && run)
        status = execute(cfg, &a, &together);
    free(a.sets);
    fn_config_destroy(cfg);
    if ((status == EXIT_ERROR || status == EXIT_USAGE) && !together)
        fn_world_abort(status);
    fn_world_finalize();
    return status;
}
