/* test_faults.c — what a fault leaves behind.
 *
 * SIGKILL: a run of a wide network that writes a checkpoint every epoch is
 * killed again and again: at random times, and inside a write of a
 * checkpoint (a random epoch's) or of the weights. For the latter the run
 * gets the test-only FN_TEST_WRITE_DELAY_MS (src/core/test_hooks.h, compiled
 * in by FN_TEST_HOOKS builds only: the test skips without it), which holds
 * every write open for WRITE_DELAY_MS between the temporary's fsync and
 * its rename, and the kill comes at most KILL_WITHIN_MS after the run's
 * temporary ("<file>.<pid>-<n>.tmp") appears: so each of those kills lands inside the write, whatever the
 * machine's load, and the test asserts that every one did. After every
 * kill checkpoint.h5 and weights.h5 are absent only if never written, else
 * complete files that the library's loaders open and whose values equal,
 * bit for bit, those of a reference run stopped at the same epoch. The
 * broken temporaries left behind are then ignored and removed by --resume,
 * which ends with the reference's final weights, a user's <file>.tmp kept.
 * Non-finite loss: a run with a huge lr stops with "step S (epoch E, batch
 * B): loss is nan; first non-finite: layer L (kind) ...", exit 1, no
 * weights.h5, and checkpoint.h5 is the one of epoch E-1, equal to a
 * reference run's; fn_net_find_nonfinite names the first bad value; and
 * the library refuses to write a non-finite value into a file.
 * Out of GPU memory: a clear error naming the layer (skips without a GPU).
 * Two runs on one output directory: the second fails at once, naming the
 * first's pid, and touches nothing; a killed holder leaves no stale lock.
 * Files and symbolic links at a temporary's old name (<file>.tmp) or at a
 * dead process's are never written through, removed or replaced; a dead
 * process's leftover temporaries (regular files) are removed by the next
 * run, anything else of a like name kept.
 * metrics.csv's rewrite on --resume is atomic: a SIGKILL inside it leaves
 * the old file whole.
 * A full disk (RLIMIT_FSIZE, SIGXFSZ ignored: writes fail with EFBIG, as
 * with ENOSPC) while a checkpoint, the weights or predict's outputs are
 * written: exit 1 with the path and the system's reason, no crash (HDF5's
 * clean-up at exit once crashed on the file it could not close), no
 * temporary left, and the files of an earlier run as they were.
 * SIGINT and SIGTERM (exit 130, 143, checkpoint, resume) are covered by
 * test_train_cli. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/checkpoint.h"
#include "fusenet/config.h"
#include "fusenet/model.h"
#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "fusenet/weights.h"
#include "run/config_impl.h"
#include "store/dir_lock.h"
#include "core/test_hooks.h"
#include "program.h"
#include "test_main.h"

enum { PATH_CAP = 1024, IN_FEATURES = 6 /* of tests/bad_inputs/good.h5 */ };

typedef program_files fixture;

static int setup(void **state)
{
    *state = program_files_new("fn_faults_");
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

/* run.ini: the corpus' good.h5 (24 rows, 6 columns, 4 classes). */
static void write_config(const fixture *f, const char *layers, const char *train)
{
    FILE *out = fopen(f->ini, "w");
    assert_non_null(out);
    fprintf(out,
            "[data]\ntrain = %s\n[model]\nlayers = %s\ngroups = 2\n[train]\n%s\n"
            "[run]\ndevice = cpu\nlog_every = 0\n",
            source_path("tests/bad_inputs/good.h5"), layers, train);
    fclose(out);
}

/* train run.ini --set output.dir=<dir>/<out> plus up to two more --set. */
enum { FRESH, RESUME, OVERWRITE }; /* start_train's mode */

/* mode OVERWRITE: a fresh run that may replace an earlier run's files. */
static pid_t start_train(const fixture *f, const char *out, const char *set1, const char *set2,
                         int mode)
{
    char set_out[PATH_CAP];
    snprintf(set_out, sizeof set_out, "output.dir=%s", program_files_at(f, out));
    const char *argv[12] = {f->ini, "--set", set_out};
    int n = 3;
    if (set1) {
        argv[n++] = "--set";
        argv[n++] = set1;
    }
    if (set2) {
        argv[n++] = "--set";
        argv[n++] = set2;
    }
    if (mode != FRESH)
        argv[n++] = mode == RESUME ? "--resume" : "--overwrite";
    argv[n] = NULL;
    return program_start("train", argv, NULL, f->out, f->err);
}

static void expect_success(const fixture *f, pid_t pid, const char *what)
{
    int status = program_wait(pid, NULL);
    if (status != 0) {
        char *err = program_slurp(f->err);
        fail_msg("%s: exit status %d; stderr:\n%s", what, status, err);
    }
}

/* --- the network of run.ini, for the library's loaders ------------------------ */

typedef struct model {
    fn_config *cfg;
    fn_context *ctx;
    fn_net *net;
    fn_sgd *opt;
} model;

static void model_open(const fixture *f, model *m)
{
    EXPECT_OK(fn_config_load(&m->cfg, f->ini));
    EXPECT_OK(fn_config_finish(m->cfg));
    EXPECT_OK(fn_context_create(&m->ctx, FN_CPU, -1, FN_MATH_FP32));
    EXPECT_OK(fn_model_build(&m->net, m->ctx, m->cfg, IN_FEATURES));
    fn_sgd_config sgd = *(const fn_sgd_config *)m->cfg->optimizer_options;
    sgd.lr = m->cfg->lr;
    EXPECT_OK(fn_sgd_create(&m->opt, m->ctx, fn_net_params(m->net), fn_net_n_params(m->net), &sgd));
}

static void model_close(model *m)
{
    fn_sgd_destroy(m->opt);
    fn_net_destroy(m->net);
    fn_context_destroy(m->ctx);
    fn_config_destroy(m->cfg);
}

static void expect_same_tensor(const fn_tensor *a, const fn_tensor *b, const char *what,
                               const char *name, const char *file)
{
    assert_int_equal(fn_tensor_count(a), fn_tensor_count(b));
    for (size_t i = 0; i < fn_tensor_count(a); i++)
        if (memcmp(&a->data[i], &b->data[i], sizeof(float)) != 0)
            fail_msg("%s: %s %s value %zu is %.9g, the reference has %.9g", file, what, name, i,
                     (double)a->data[i], (double)b->data[i]);
}

/* Every parameter and, with opt, every momentum buffer of a equals b's. */
static void expect_same_model(model *a, model *b, int momentum, const char *file)
{
    for (int i = 0; i < fn_net_n_params(a->net); i++) {
        const fn_param *p = fn_net_param(a->net, i), *q = fn_net_param(b->net, i);
        expect_same_tensor(&p->value, &q->value, "parameter", p->name, file);
        if (momentum)
            expect_same_tensor(fn_sgd_momentum_buffer(a->opt, i),
                               fn_sgd_momentum_buffer(b->opt, i), "momentum of", p->name, file);
    }
}

/* --- SIGKILL while writing ----------------------------------------------------- */

enum { EPOCHS = 5, KILLS = 18, WRITE_DELAY_MS = 250, KILL_WITHIN_MS = 50 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_for(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* 1 when name is "<file>.<pid>-<n>.tmp", a writer's temporary for file
 * (pid 0: of any process). */
static int is_tmp_of(const char *name, const char *file, pid_t pid)
{
    char prefix[PATH_CAP];
    const int len = pid ? snprintf(prefix, sizeof prefix, "%s.%ld-", file, (long)pid)
                        : snprintf(prefix, sizeof prefix, "%s.", file);
    if (strncmp(name, prefix, (size_t)len) != 0)
        return 0;
    const char *p = name + len;
    while (!pid && *p >= '0' && *p <= '9')
        p++;
    if (!pid && (p == name + len || *p++ != '-'))
        return 0;
    const char *digits = p;
    while (*p >= '0' && *p <= '9')
        p++;
    return p > digits && strcmp(p, ".tmp") == 0;
}

/* The number of temporaries for dir/file in dir (pid 0: of any process). */
static int tmps_of(const char *dir, const char *file, pid_t pid)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += is_tmp_of(e->d_name, file, pid);
    closedir(d);
    return n;
}

/* No name ending in ".tmp" in dir. */
static void expect_no_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0)
            fail_msg("%s/%s was left", dir, e->d_name);
    }
    closedir(d);
}

/* A small generator, so the kill times differ from case to case but the test
 * is the same every time. */
static double uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 9007199254740992.0;
}

typedef struct references {
    model ckpt[EPOCHS + 1]; /* [e]: a run of e epochs, its checkpoint loaded */
    fn_train_state state[EPOCHS + 1];
    double seconds; /* wall time of the full run */
} references;

static void make_references(const fixture *f, references *r)
{
    for (int e = 1; e <= EPOCHS; e++) {
        char name[32], epochs[32];
        snprintf(name, sizeof name, "ref%d", e);
        snprintf(epochs, sizeof epochs, "train.epochs=%d", e);
        double t0 = now();
        expect_success(f, start_train(f, name, epochs, NULL, FRESH), "reference run");
        r->seconds = now() - t0;
        snprintf(name, sizeof name, "ref%d/checkpoint.h5", e);
        model_open(f, &r->ckpt[e]);
        EXPECT_OK(fn_checkpoint_load(program_files_at(f, name), r->ckpt[e].net,
                                     fn_sgd_optimizer(r->ckpt[e].opt),
                                     &r->state[e]));
        assert_int_equal(r->state[e].epoch, e);
    }
}

/* checkpoint.h5 and weights.h5 of <dir>/kill after a kill: each there is
 * whole; *seen_* say whether each was ever there. (Every killed run is a
 * fresh one with --overwrite, which removes the earlier run's files before
 * its first write: a file may go, but never be left broken.) */
static void check_after_kill(const fixture *f, references *r, int *seen_ckpt, int *seen_weights,
                             int k)
{
    char what[64];
    const char *ckpt = program_files_at(f, "kill/checkpoint.h5");
    if (access(ckpt, F_OK) == 0) {
        *seen_ckpt = 1;
        model m;
        fn_train_state s;
        model_open(f, &m);
        fn_status st = fn_checkpoint_load(ckpt, m.net, fn_sgd_optimizer(m.opt), &s);
        if (st != FN_OK)
            fail_msg("kill %d: checkpoint.h5 is broken: %s", k, fn_last_error());
        if (s.epoch < 1 || s.epoch > EPOCHS || s.step != 0)
            fail_msg("kill %d: checkpoint.h5 at epoch %lld step %lld", k, s.epoch, s.step);
        assert_int_equal(s.global_step, r->state[s.epoch].global_step);
        snprintf(what, sizeof what, "kill %d: checkpoint.h5 of epoch %lld", k, s.epoch);
        expect_same_model(&m, &r->ckpt[s.epoch], 1, what);
        model_close(&m);
    }
    const char *weights = program_files_at(f, "kill/weights.h5");
    if (access(weights, F_OK) == 0) {
        *seen_weights = 1;
        model m;
        model_open(f, &m);
        if (fn_weights_load(m.net, weights) != FN_OK)
            fail_msg("kill %d: weights.h5 is broken: %s", k, fn_last_error());
        snprintf(what, sizeof what, "kill %d: weights.h5", k);
        expect_same_model(&m, &r->ckpt[EPOCHS], 0, what);
        model_close(&m);
    }
}

/* Lines of the run's stdout that report a finished epoch ("epoch 2/5: ..."). */
static int epochs_reported(const fixture *f)
{
    char *text = program_slurp(f->out);
    int n = 0;
    for (const char *p = text; (p = strstr(p, ": train loss")) != NULL; p++)
        n++;
    free(text);
    return n;
}

/* Waits until the run pid has a temporary for <dir>/<file>; fails the
 * test after `limit` seconds or when the run ends first. */
static void wait_for_tmp(const fixture *f, pid_t pid, const char *dir, const char *file,
                         double limit, int k)
{
    double t0 = now();
    while (!tmps_of(dir, file, pid)) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            fail_msg("kill %d: the run ended before a temporary of %s/%s appeared: %s", k, dir,
                     file, program_slurp(f->err));
        if (now() - t0 > limit)
            fail_msg("kill %d: no temporary of %s/%s appeared within %.0f s", k, dir, file,
                     limit);
        sleep_for(2e-4);
    }
}

/* Starts a run in <dir>/kill and SIGKILLs it. Target 0: at a random time
 * (returns 1 when a temporary of the run is left, only counted). Target 1:
 * inside the checkpoint write of a random epoch; target 2: inside the
 * weights write: with the write delay, at most KILL_WITHIN_MS after the
 * run's temporary ("<file>.<pid>-<n>.tmp") appears; returns 1 when that
 * temporary is left, which must be always. */
static int kill_one(const fixture *f, const references *r, int k, uint64_t *rng)
{
    const char *files[2] = {"checkpoint.h5", "weights.h5"};
    char dir[PATH_CAP];
    snprintf(dir, sizeof dir, "%s", program_files_at(f, "kill"));
    int target = k % 3; /* 0: any time, 1: a checkpoint write, 2: the weights write */
    double t0 = now();
    if (target != 0) {
        char delay[16];
        snprintf(delay, sizeof delay, "%d", WRITE_DELAY_MS);
        setenv("FN_TEST_WRITE_DELAY_MS", delay, 1);
    }
    pid_t pid = start_train(f, "kill", NULL, NULL, OVERWRITE);
    unsetenv("FN_TEST_WRITE_DELAY_MS");
    const double limit = 20 * r->seconds + 30;
    if (target == 0) {
        sleep_for(r->seconds * (0.3 + 0.8 * uniform(rng)));
    } else if (target == 1) {
        /* Epoch e's line is printed before its checkpoint is written, and
         * epoch e-1's write was renamed away before epoch e began: the
         * next .tmp to appear is epoch e's. */
        int e = 1 + (int)(uniform(rng) * EPOCHS);
        e = e > EPOCHS ? EPOCHS : e;
        while (epochs_reported(f) < e) {
            if (now() - t0 > limit)
                fail_msg("kill %d: epoch %d not reported within %.0f s", k, e, limit);
            sleep_for(1e-3);
        }
        wait_for_tmp(f, pid, dir, files[0], limit, k);
        sleep_for(KILL_WITHIN_MS * 1e-3 * uniform(rng));
    } else {
        wait_for_tmp(f, pid, dir, files[1], limit, k);
        sleep_for(KILL_WITHIN_MS * 1e-3 * uniform(rng));
    }
    kill(pid, SIGKILL);
    int sig = 0;
    int status = program_wait(pid, &sig);
    if (!sig && status != 0)
        fail_msg("kill %d: the run failed by itself (status %d): %s", k, status,
                 program_slurp(f->err));
    if (target != 0)
        return sig && tmps_of(dir, files[target - 1], pid) == 1;
    return sig && tmps_of(dir, files[0], pid) + tmps_of(dir, files[1], pid) > 0;
}

static void test_sigkill_while_writing(void **state)
{
    fixture *f = *state;
    if (!fn_test_hooks_enabled())
        printf("the kills aimed inside a write need FN_TEST_WRITE_DELAY_MS\n");
    skip_without_test_hooks();
    write_config(f, "block 1024, block 1024, linear 4",
                 "batch_size = 24\nepochs = 5\nlr = 0.01\nmomentum = 0.9\ncheckpoint_every = 1");
    static references r;
    make_references(f, &r);
    uint64_t rng = 6;
    int seen_ckpt = 0, seen_weights = 0, random_in_write = 0, aimed = 0, aimed_in_write = 0;
    for (int k = 0; k < KILLS; k++) {
        int in_write = kill_one(f, &r, k, &rng);
        if (k % 3 == 0) {
            random_in_write += in_write;
        } else {
            aimed++;
            aimed_in_write += in_write;
            if (!in_write)
                fail_msg("kill %d: aimed inside the %s write, but no .tmp was left", k,
                         k % 3 == 1 ? "checkpoint" : "weights");
        }
        check_after_kill(f, &r, &seen_ckpt, &seen_weights, k);
    }
    printf("%d of %d kills aimed at a write landed in one; %d of %d at random times did\n",
           aimed_in_write, aimed, random_in_write, KILLS - aimed);
    assert_true(seen_ckpt);
    /* A broken temporary is never taken for the file: --resume reads
     * checkpoint.h5 and ends as the reference did. It removes the killed
     * runs' temporaries (one of a dead process planted, should the last
     * kill have left none) and leaves "<file>.tmp", no name of a run's,
     * as it was. */
    char dir[PATH_CAP];
    snprintf(dir, sizeof dir, "%s", program_files_at(f, "kill"));
    for (int i = 0; i < 2; i++) {
        FILE *junk = fopen(program_files_at(f, i ? "kill/weights.h5.tmp" : "kill/checkpoint.h5.99999999-0.tmp"), "w");
        assert_non_null(junk);
        fputs("not HDF5", junk);
        fclose(junk);
    }
    expect_success(f, start_train(f, "kill", NULL, NULL, RESUME), "resume after the kills");
    assert_int_equal(tmps_of(dir, "checkpoint.h5", 0) + tmps_of(dir, "weights.h5", 0), 0);
    char *junk = program_slurp(program_files_at(f, "kill/weights.h5.tmp"));
    assert_string_equal(junk, "not HDF5");
    free(junk);
    assert_int_equal(access(program_files_at(f, "kill/checkpoint.h5"), F_OK), 0);
    assert_int_equal(access(program_files_at(f, "kill/weights.h5"), F_OK), 0);
    check_after_kill(f, &r, &seen_ckpt, &seen_weights, KILLS);
    assert_true(seen_weights);
    for (int e = 1; e <= EPOCHS; e++)
        model_close(&r.ckpt[e]);
}

/* --- a non-finite loss --------------------------------------------------------- */

static void test_nonfinite_loss_stops(void **state)
{
    fixture *f = *state;
    /* lr at its maximum: the first epoch survives, the run diverges after. */
    write_config(f, "block 8, linear 4", "batch_size = 8\nepochs = 20\nlr = 1e6\ncheckpoint_every = 1");
    int status = program_wait(start_train(f, "nan", NULL, NULL, FRESH), NULL);
    char *err = program_slurp(f->err);
    if (status != 1)
        fail_msg("exit status %d, expected 1; stderr:\n%s", status, err);
    long long step = 0, epoch = 0, batch = 0;
    int layer = -1;
    char loss[8] = "", kind[16] = "";
    int got = sscanf(err, "train: step %lld (epoch %lld, batch %lld): loss is %7[-naif]; "
                          "first non-finite: layer %d (%15[a-z])",
                     &step, &epoch, &batch, loss, &layer, kind);
    int loss_ok = !strcmp(loss, "nan") || !strcmp(loss, "inf") || !strcmp(loss, "-inf");
    if (got != 6 || !loss_ok || epoch < 2 || batch < 1 || step != (epoch - 1) * 3 + batch || layer < 0 ||
        layer > 1 || strcmp(kind, layer == 0 ? "block" : "linear") != 0)
        fail_msg("stderr is not 'train: step S (epoch E >= 2, batch B): loss is ...; first "
                 "non-finite: layer L (kind)'; it holds:\n%s", err);
    if (!strstr(err, "nan/checkpoint.h5 (the last good state) is kept"))
        fail_msg("the message does not say the checkpoint is kept:\n%s", err);
    free(err);
    assert_int_not_equal(access(program_files_at(f, "nan/weights.h5"), F_OK), 0);
    expect_no_tmp(program_files_at(f, "nan"));

    /* The checkpoint is the one of the last whole epoch, as a run of that
     * many epochs writes it. */
    char epochs[48];
    snprintf(epochs, sizeof epochs, "train.epochs=%lld", epoch - 1);
    expect_success(f, start_train(f, "ref", epochs, NULL, FRESH), "reference run");
    model kept, ref;
    fn_train_state ks, rs;
    model_open(f, &kept);
    model_open(f, &ref);
    EXPECT_OK(fn_checkpoint_load(program_files_at(f, "nan/checkpoint.h5"), kept.net,
                                  fn_sgd_optimizer(kept.opt), &ks));
    EXPECT_OK(fn_checkpoint_load(program_files_at(f, "ref/checkpoint.h5"), ref.net,
                                  fn_sgd_optimizer(ref.opt), &rs));
    assert_int_equal(ks.epoch, epoch - 1);
    assert_int_equal(ks.global_step, rs.global_step);
    expect_same_model(&kept, &ref, 0, "nan/checkpoint.h5");
    model_close(&kept);
    model_close(&ref);
}

/* A fresh run (--overwrite) whose output directory holds an earlier run's
 * checkpoint.h5, and which writes none itself, must not offer that one as
 * its last good state, and leaves it where it was: it wrote nothing. */
static void test_nonfinite_ignores_old_checkpoint(void **state)
{
    fixture *f = *state;
    write_config(f, "block 8, linear 4", "batch_size = 8\nepochs = 20\nlr = 1e6");
    assert_int_equal(mkdir(program_files_at(f, "old"), 0777), 0);
    FILE *old = fopen(program_files_at(f, "old/checkpoint.h5"), "w");
    assert_non_null(old);
    fputs("an earlier run's", old);
    fclose(old);
    int status = program_wait(start_train(f, "old", NULL, NULL, OVERWRITE), NULL);
    char *err = program_slurp(f->err);
    if (status != 1 || !strstr(err, "loss is") || strstr(err, "checkpoint.h5") ||
        !strstr(err, "stopped: no weights written"))
        fail_msg("exit status %d; stderr should stop without naming the old checkpoint.h5; "
                 "it holds:\n%s", status, err);
    free(err);
    /* Its first file (metrics.csv, after an epoch) removed the earlier
     * run's; before any, the earlier run's is untouched. */
    char *kept = program_slurp(program_files_at(f, "old/checkpoint.h5"));
    if (access(program_files_at(f, "old/metrics.csv"), F_OK) == 0)
        assert_int_not_equal(access(program_files_at(f, "old/checkpoint.h5"), F_OK), 0);
    else
        assert_string_equal(kept, "an earlier run's");
    free(kept);
}

/* fn_net_find_nonfinite on a CPU net: parameters and outputs in forward
 * order, then gradients in backward order. */
static void test_find_nonfinite(void **state)
{
    fixture *f = *state;
    write_config(f, "block 8, linear 4", "batch_size = 3");
    model m;
    model_open(f, &m);
    fn_net *net = m.net;
    float xs[3 * IN_FEATURES];
    for (int i = 0; i < 3 * IN_FEATURES; i++)
        xs[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
    fn_tensor x = fn_tensor_view(xs, 3, IN_FEATURES, FN_CPU), y;
    EXPECT_OK(fn_net_forward(net, &x, &y));
    expect_nonfinite(net, 0, -1, NULL, NULL);

    /* A bad input row: layer 0's output is the first non-finite value. */
    xs[1 * IN_FEATURES + 3] = NAN;
    EXPECT_OK(fn_net_forward(net, &x, &y));
    fn_nonfinite nf = expect_nonfinite(net, 0, 0, "block", "output");
    assert_int_equal(nf.row, 1);
    assert_true(isnan(nf.value));
    xs[1 * IN_FEATURES + 3] = 0.25f;

    /* A parameter comes before the output it makes. */
    fn_param *bias = fn_layer_param(fn_net_layer(net, 1), "bias");
    assert_non_null(bias);
    bias->value.data[2] = INFINITY;
    EXPECT_OK(fn_net_forward(net, &x, &y));
    nf = expect_nonfinite(net, 0, 1, NULL, "parameter");
    assert_string_equal(nf.param, "bias");
    assert_int_equal(nf.col, 2);
    bias->value.data[2] = 0;

    /* A bad gradient from the loss: the last layer's output gradient. */
    float dys[3 * 4] = {0};
    dys[4 + 1] = -INFINITY;
    fn_tensor dy = fn_tensor_view(dys, 3, 4, FN_CPU);
    EXPECT_OK(fn_net_forward(net, &x, &y));
    EXPECT_OK(fn_net_zero_grad(net));
    EXPECT_OK(fn_net_backward(net, &dy));
    expect_nonfinite(net, 0, -1, NULL, NULL); /* without gradients: nothing */
    nf = expect_nonfinite(net, 1, 1, "linear", "output gradient");
    assert_int_equal(nf.row, 1);
    assert_int_equal(nf.col, 1);
    model_close(&m);
}

/* A file is never written with a non-finite value: the save fails, the
 * previous file stays and no temporary is left. */
static void test_save_refuses_nonfinite(void **state)
{
    fixture *f = *state;
    write_config(f, "block 8, linear 4", "batch_size = 3\nmomentum = 0.9");
    model m;
    model_open(f, &m);
    const char *weights = program_files_at(f, "w.h5"), *ckpt = program_files_at(f, "c.h5");
    fn_train_state s = {.epoch = 1, .seed = 1, .batch_size = 3};
    EXPECT_OK(fn_weights_save(weights, m.net, NULL));
    EXPECT_OK(fn_checkpoint_save(ckpt, m.net, fn_sgd_optimizer(m.opt), &s, NULL));
    fn_param *w = fn_net_param(m.net, 0);
    float good = w->value.data[7];
    w->value.data[7] = NAN;
    assert_int_equal(fn_weights_save(weights, m.net, NULL), FN_ERR_NUMERIC);
    if (!strstr(fn_last_error(), "w.h5: group 'layer0': dataset 'weight' would hold NaN at [1, 1]"))
        fail_msg("message: %s", fn_last_error());
    assert_int_equal(fn_checkpoint_save(ckpt, m.net, fn_sgd_optimizer(m.opt), &s, NULL),
                     FN_ERR_NUMERIC);
    assert_int_equal(tmps_of(f->dir, "w.h5", 0) + tmps_of(f->dir, "c.h5", 0), 0);
    w->value.data[7] = 0;
    EXPECT_OK(fn_weights_load(m.net, weights));
    assert_true(memcmp(&w->value.data[7], &good, sizeof good) == 0);
    EXPECT_OK(fn_checkpoint_load(ckpt, m.net, fn_sgd_optimizer(m.opt), &s));
    assert_true(memcmp(&w->value.data[7], &good, sizeof good) == 0);
    model_close(&m);
}

/* --- two runs on one output directory ----------------------------------------- */

/* Names in dir other than "." and "..". */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_output_dir_in_use(void **state)
{
    fixture *f = *state;
    write_config(f, "block 8, linear 4", "batch_size = 8\nepochs = 1");
    const char *dir = program_files_at(f, "busy");
    assert_int_equal(mkdir(dir, 0777), 0);

    /* In one process, a second lock is refused too, naming this pid. */
    fn_dir_lock *lock = NULL, *second = NULL;
    EXPECT_OK(fn_dir_lock_take(&lock, dir));
    assert_int_equal(fn_dir_lock_take(&second, dir), FN_ERR_IO);
    assert_null(second);
    char expected[PATH_CAP + 96];
    snprintf(expected, sizeof expected, "%s is in use by another train run (pid %ld)", dir,
             (long)getpid());
    assert_string_equal(fn_last_error(), expected);

    /* A train run on it fails at once, before it opens any file. */
    double t0 = now();
    int status = program_wait(start_train(f, "busy", NULL, NULL, 0), NULL);
    char *err = program_slurp(f->err);
    if (status != 1 || strncmp(err, "train: ", 7) != 0 || !strstr(err, expected))
        fail_msg("exit status %d; stderr is not 'train: %s'; it holds:\n%s", status, expected,
                 err);
    free(err);
    if (now() - t0 > 10)
        fail_msg("the second run took %.1f s to fail", now() - t0);
    assert_int_equal(entries(dir), 0);
    fn_dir_lock_release(lock);

    /* A holder killed with SIGKILL leaves no lock behind. */
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t holder = fork();
    assert_true(holder >= 0);
    if (holder == 0) {
        fn_dir_lock *mine = NULL;
        char ok = fn_dir_lock_take(&mine, dir) == FN_OK;
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    assert_true(ok);
    close(ready[0]);
    close(ready[1]);
    assert_int_equal(fn_dir_lock_take(&second, dir), FN_ERR_IO);
    snprintf(expected, sizeof expected, "(pid %ld)", (long)holder);
    assert_non_null(strstr(fn_last_error(), expected));
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    expect_success(f, start_train(f, "busy", NULL, NULL, 0), "a run after the holder was killed");
    assert_int_equal(access(program_files_at(f, "busy/weights.h5"), F_OK), 0);
}

/* --- leftover temporaries that are symbolic links ------------------------------ */

static void expect_regular(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        fail_msg("%s is not a regular file", path);
}

/* Files at names a run's temporaries once had, "<file>.tmp", and at names
 * of a dead process's ("<file>.<pid>-<n>.tmp"), as symbolic links to a
 * file outside the output directory: train and predict write under names
 * of their own process and create them exclusively, so every link stays a
 * link, the file it points to stays as it was, and the run's files are
 * regular files of their own. */
static void test_tmp_symlinks_not_followed(void **state)
{
    fixture *f = *state;
    write_config(f, "block 8, linear 4", "batch_size = 8\nepochs = 2\ncheckpoint_every = 1");
    char precious[PATH_CAP]; /* path_in's buffers are reused */
    snprintf(precious, sizeof precious, "%s", program_files_at(f, "precious.txt"));
    FILE *out = fopen(precious, "w");
    assert_non_null(out);
    fputs("the user's own file", out);
    fclose(out);
    assert_int_equal(mkdir(program_files_at(f, "sym"), 0777), 0);
    static const char *names[] = {"weights.h5", "checkpoint.h5", "metrics.csv", "out.h5"};
    static const char *tails[] = {".tmp", ".99999999-0.tmp"}; /* no process has that id */
    enum { N_NAMES = sizeof names / sizeof names[0] };
    char tmp[PATH_CAP];
    for (size_t i = 0; i < N_NAMES * 2; i++) {
        snprintf(tmp, sizeof tmp, "%s/sym/%s%s", f->dir, names[i / 2], tails[i % 2]);
        assert_int_equal(symlink(precious, tmp), 0);
    }
    expect_success(f, start_train(f, "sym", NULL, NULL, 0), "train over .tmp links");
    const char *argv[] = {program_files_at(f, "sym/weights.h5"), source_path("tests/bad_inputs/good.h5"),
                          program_files_at(f, "sym/out.h5"), "--device", "cpu", NULL};
    pid_t pid = program_start("predict", argv, NULL, f->out, f->err);
    expect_success(f, pid, "predict over an out.h5.tmp link");
    char *kept = program_slurp(precious);
    assert_string_equal(kept, "the user's own file");
    free(kept);
    for (size_t i = 0; i < N_NAMES * 2; i++) {
        snprintf(tmp, sizeof tmp, "%s/sym/%s", f->dir, names[i / 2]);
        expect_regular(tmp);
        strcat(tmp, tails[i % 2]);
        struct stat st;
        char target[PATH_CAP] = "";
        if (lstat(tmp, &st) != 0 || !S_ISLNK(st.st_mode) ||
            readlink(tmp, target, sizeof target - 1) < 0 || strcmp(target, precious) != 0)
            fail_msg("%s is no longer the user's link to %s", tmp, precious);
    }
}

/* The temporaries runs killed before their rename left in an output
 * directory ("<file>.<pid>-<n>.tmp", regular files of a process that is
 * gone) are removed by the next run there before its first write; what a
 * live process may still be writing, a name of another form, another
 * file's or a directory is left as it was. */
static void test_dead_runs_temporaries_removed(void **state)
{
    fixture *f = *state;
    write_config(f, "block 8, linear 4", "batch_size = 8\nepochs = 1\ncheckpoint_every = 1");
    pid_t dead = fork(); /* a process id no process has once it is reaped */
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(program_wait(dead, NULL), 0);
    assert_int_equal(mkdir(program_files_at(f, "left"), 0777), 0);
    enum { N_GONE = 4, N_KEPT = 6 };
    char gone[N_GONE][PATH_CAP], kept[N_KEPT][PATH_CAP];
    const long d = (long)dead, live = (long)getpid();
    snprintf(gone[0], PATH_CAP, "%s/left/weights.h5.%ld-0.tmp", f->dir, d);
    snprintf(gone[1], PATH_CAP, "%s/left/checkpoint.h5.%ld-12.tmp", f->dir, d);
    snprintf(gone[2], PATH_CAP, "%s/left/metrics.csv.%ld-1.tmp", f->dir, d);
    snprintf(gone[3], PATH_CAP, "%s/left/best.h5.%ld-3.tmp", f->dir, d);
    snprintf(kept[0], PATH_CAP, "%s/left/weights.h5.%ld-0.tmp", f->dir, live);
    snprintf(kept[1], PATH_CAP, "%s/left/weights.h5.tmp", f->dir);
    snprintf(kept[2], PATH_CAP, "%s/left/weights.h5.%ld-0.tmp.old", f->dir, d);
    snprintf(kept[3], PATH_CAP, "%s/left/weights.h5.%ld-x.tmp", f->dir, d);
    snprintf(kept[4], PATH_CAP, "%s/left/out.h5.%ld-0.tmp", f->dir, d);
    snprintf(kept[5], PATH_CAP, "%s/left/metrics.csv.%ldx-0.tmp", f->dir, d);
    for (int i = 0; i < N_GONE + N_KEPT; i++) {
        FILE *out = fopen(i < N_GONE ? gone[i] : kept[i - N_GONE], "w");
        assert_non_null(out);
        fputs("a file", out);
        fclose(out);
    }
    char dir_named[PATH_CAP];
    snprintf(dir_named, sizeof dir_named, "%s/left/checkpoint.h5.%ld-0.tmp", f->dir, d);
    assert_int_equal(mkdir(dir_named, 0777), 0);
    expect_success(f, start_train(f, "left", NULL, NULL, FRESH), "a run beside leftovers");
    for (int i = 0; i < N_GONE; i++)
        if (access(gone[i], F_OK) == 0)
            fail_msg("%s, a dead process's temporary, is still there", gone[i]);
    for (int i = 0; i < N_KEPT; i++) {
        char *text = program_slurp(kept[i]);
        if (strcmp(text, "a file") != 0)
            fail_msg("%s is not as it was", kept[i]);
        free(text);
    }
    struct stat st;
    assert_true(stat(dir_named, &st) == 0 && S_ISDIR(st.st_mode));
    assert_int_equal(access(program_files_at(f, "left/weights.h5"), F_OK), 0);
}

/* --- metrics.csv rewritten atomically on --resume ------------------------------- */

static void test_metrics_rewrite_atomic(void **state)
{
    fixture *f = *state;
    /* 3 epochs, then the checkpoint of epoch 2 put back: --resume keeps 2
     * of metrics.csv's 3 lines. */
    write_config(f, "block 8, linear 4", "batch_size = 8\nepochs = 3");
    expect_success(f, start_train(f, "m", "train.epochs=2", NULL, 0), "the first two epochs");
    char ckpt[PATH_CAP], ckpt2[PATH_CAP];
    snprintf(ckpt, sizeof ckpt, "%s", program_files_at(f, "m/checkpoint.h5"));
    snprintf(ckpt2, sizeof ckpt2, "%s", program_files_at(f, "m/epoch2.h5"));
    assert_int_equal(link(ckpt, ckpt2), 0); /* the run replaces, never rewrites, a file */
    expect_success(f, start_train(f, "m", NULL, NULL, RESUME), "the third epoch");
    assert_int_equal(rename(ckpt2, ckpt), 0);
    char csv[PATH_CAP], old[PATH_CAP]; /* path_in's buffers are reused */
    snprintf(csv, sizeof csv, "%s", program_files_at(f, "m/metrics.csv"));
    snprintf(old, sizeof old, "%s", program_files_at(f, "m/old.csv"));
    char *before = program_slurp(csv);
    assert_int_equal(link(csv, old), 0);

    if (fn_test_hooks_enabled()) {
        /* Killed between the new file's fsync and its rename: the old one
         * is whole. */
        setenv("FN_TEST_WRITE_DELAY_MS", "2000", 1);
        pid_t pid = start_train(f, "m", NULL, NULL, 1);
        unsetenv("FN_TEST_WRITE_DELAY_MS");
        wait_for_tmp(f, pid, program_files_at(f, "m"), "metrics.csv", 60, 0);
        kill(pid, SIGKILL);
        int sig = 0;
        program_wait(pid, &sig);
        assert_int_equal(sig, SIGKILL);
        char *after = program_slurp(csv);
        assert_string_equal(after, before);
        free(after);
    } else {
        printf("the kill inside the rewrite needs FN_TEST_WRITE_DELAY_MS (FN_TEST_HOOKS=ON): "
               "not run\n");
    }

    /* The rewrite makes a new file: the old one (old.csv) is never
     * truncated in place. */
    expect_success(f, start_train(f, "m", NULL, NULL, 1), "the resumed run");
    char *kept = program_slurp(old);
    assert_string_equal(kept, before);
    struct stat a, b;
    assert_int_equal(stat(csv, &a), 0);
    assert_int_equal(stat(old, &b), 0);
    assert_true(a.st_ino != b.st_ino);
    char *after = program_slurp(csv);
    /* Header and epochs 1 and 2 as they were, then epoch 3 again. */
    const char *third = before;
    for (int i = 0; i < 3; i++)
        third = strchr(third, '\n') + 1;
    assert_int_equal(strncmp(after, before, (size_t)(third - before)), 0);
    assert_true(strncmp(third, "3,", 2) == 0 && strncmp(after + (third - before), "3,", 2) == 0);
    free(after);
    free(kept);
    free(before);
}

/* --- a full disk ------------------------------------------------------------------ */

enum { FSIZE_LIMIT = 100 * 1024 }; /* bytes a file may grow to */

/* program_start with the file size limit: the child inherits it and the
 * ignored SIGXFSZ (kept across exec), so its writes past the limit fail
 * with EFBIG ("File too large"). */
static pid_t start_limited(const char *program, const char *const *argv, const fixture *f)
{
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = FSIZE_LIMIT;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    pid_t pid = program_start(program, argv, NULL, f->out, f->err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    return pid;
}

/* Exit 1 (not a signal), one line "<program>: ...<file>...File too large". */
static void expect_full_disk(const fixture *f, pid_t pid, const char *program, const char *file)
{
    int sig = 0;
    int status = program_wait(pid, &sig);
    char *err = program_slurp(f->err);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s: ", program);
    const char *newline = strchr(err, '\n');
    if (sig || status != 1 || strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, file) ||
        !strstr(err, ": File too large") || !newline || newline[1])
        fail_msg("%s past the file size limit: exit status %d (signal %d); stderr is not one "
                 "line '%s...%s...: File too large'; it holds:\n%s",
                 program, status, sig, prefix, file, err);
    free(err);
}

static void test_disk_full(void **state)
{
    fixture *f = *state;
    /* Layer 1's weight is 256 KiB, past the limit; metrics.csv stays under. */
    write_config(f, "block 256, block 256, linear 4",
                 "batch_size = 8\nepochs = 2\ncheckpoint_every = 1");
    expect_success(f, start_train(f, "full", NULL, NULL, 0), "a run without a limit");
    char dir[PATH_CAP], *ckpt = NULL, *weights = NULL;
    snprintf(dir, sizeof dir, "%s", program_files_at(f, "full"));
    ckpt = program_slurp(program_files_at(f, "full/checkpoint.h5"));
    weights = program_slurp(program_files_at(f, "full/weights.h5"));

    char set_out[PATH_CAP + 16];
    snprintf(set_out, sizeof set_out, "output.dir=%s", dir);
    /* Resumed for more epochs: the folder holds this run, whose files must
     * survive the writes that fail. */
    const char *argv[] = {f->ini, "--resume", "--set", set_out, "--set", "train.epochs=3", NULL};
    expect_full_disk(f, start_limited("train", argv, f), "train", "full/checkpoint.h5");
    const char *no_ckpt[] = {f->ini,           "--resume", "--set", set_out, "--set",
                             "train.epochs=3", "--set",    "train.checkpoint_every=0", NULL};
    expect_full_disk(f, start_limited("train", no_ckpt, f), "train", "full/weights.h5");
    expect_no_tmp(dir);
    char *now_ckpt = program_slurp(program_files_at(f, "full/checkpoint.h5"));
    char *now_weights = program_slurp(program_files_at(f, "full/weights.h5"));
    assert_true(memcmp(ckpt, now_ckpt, 1 << 20) == 0);
    assert_true(memcmp(weights, now_weights, 1 << 20) == 0);
    free(ckpt);
    free(weights);
    free(now_ckpt);
    free(now_weights);

    /* predict: 24 rows of 4096 outputs are 384 KiB. */
    write_config(f, "block 8, linear 4096", "batch_size = 8\nepochs = 1");
    expect_success(f, start_train(f, "wide", NULL, NULL, 0), "a wide run without a limit");
    char w[PATH_CAP], out[PATH_CAP];
    snprintf(w, sizeof w, "%s", program_files_at(f, "wide/weights.h5"));
    snprintf(out, sizeof out, "%s", program_files_at(f, "wide/out.h5"));
    const char *predict[] = {w, source_path("tests/bad_inputs/good.h5"), out, "--device", "cpu",
                             NULL};
    expect_full_disk(f, start_limited("predict", predict, f), "predict", "out.h5");
    assert_int_not_equal(access(out, F_OK), 0);
    expect_no_tmp(program_files_at(f, "wide"));
}

/* --- out of GPU memory ----------------------------------------------------------- */

static void test_out_of_gpu_memory(void **state)
{
    fixture *f = *state;
    skip_without_gpu();
    /* Layer 1's weight alone is 262144^2 floats: 256 GiB, more than any
     * GPU holds. The size check refuses it before anything is allocated
     * (model.h), naming the need and the limit; a failed allocation itself
     * is test_device_cuda's. */
    write_config(f, "block 262144, block 262144, linear 4", "batch_size = 8");
    int status = program_wait(start_train(f, "oom", "run.device=cuda", NULL, FRESH), NULL);
    char *err = program_slurp(f->err);
    if (status != 1 || strncmp(err, "train: the network needs at least ", 34) != 0 ||
        !strstr(err, "GB of GPU memory") || !strstr(err, "of free GPU memory"))
        fail_msg("exit status %d; stderr is not 'train: the network needs at least ... GB of GPU "
                 "memory (...), more than the ... GB of free GPU memory'; it holds:\n%s",
                 status, err);
    free(err);
}

TEST_MAIN_EACH(setup, teardown,
               cmocka_unit_test(test_find_nonfinite),
               cmocka_unit_test(test_save_refuses_nonfinite),
               cmocka_unit_test(test_nonfinite_loss_stops),
               cmocka_unit_test(test_nonfinite_ignores_old_checkpoint),
               cmocka_unit_test(test_sigkill_while_writing),
               cmocka_unit_test(test_out_of_gpu_memory),
               cmocka_unit_test(test_output_dir_in_use),
               cmocka_unit_test(test_tmp_symlinks_not_followed),
               cmocka_unit_test(test_dead_runs_temporaries_removed),
               cmocka_unit_test(test_metrics_rewrite_atomic),
               cmocka_unit_test(test_disk_full))
