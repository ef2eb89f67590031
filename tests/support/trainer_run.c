/* trainer_run.c — a test's run of fn_trainer and its comparisons
 * (trainer_run.h). */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "fusenet/optimizer.h"
#include "expect.h"
#include "program.h"
#include "trainer_run.h"

enum { PATH_CAP = 1024 };

typedef struct stopper {
    long long steps, stop_after; /* -1: never */
} stopper;

static void on_step(void *user, const fn_train_progress *p)
{
    assert_true(isfinite(p->loss));
    ((stopper *)user)->steps++;
}

static int should_stop(void *user)
{
    const stopper *s = user;
    return s->stop_after >= 0 && s->steps >= s->stop_after;
}

static const fn_trainer_callbacks callbacks = {.on_step = on_step, .should_stop = should_stop};

static void set_lag(const char *defer_lag)
{
    if (defer_lag)
        setenv("FN_TEST_DEFER_LAG", defer_lag, 1);
    else
        unsetenv("FN_TEST_DEFER_LAG");
}

fn_trainer *trainer_run(const char *dir, const char *ini, const char *out, const char *defer_lag,
                        const char *sets, int resume, long long stop_after, fn_config **cfg,
                        fn_status *st, char *msg, size_t msg_cap)
{
    char set[PATH_CAP + 16], more[512];
    set_lag(defer_lag);
    snprintf(set, sizeof set, "output.dir=%s/%s", dir, out);
    must(fn_config_load(cfg, ini));
    must(fn_config_set(*cfg, set));
    snprintf(more, sizeof more, "%s", sets ? sets : "");
    for (char *item = strtok(more, ";"); item; item = strtok(NULL, ";"))
        must(fn_config_set(*cfg, item));
    must(fn_config_finish(*cfg));
    stopper s = {.stop_after = stop_after};
    const fn_trainer_options options = {.resume = resume, .overwrite = 1,
                                        .callbacks = &callbacks, .user = &s};
    fn_trainer *t = NULL;
    must(fn_trainer_create(&t, *cfg, &options));
    *st = fn_trainer_run(t);
    snprintf(msg, msg_cap, "%s", *st == FN_OK ? "" : fn_last_error());
    set_lag(NULL);
    return t;
}

void expect_same_weights(const fn_net *a, const fn_net *b)
{
    assert_int_equal(fn_net_n_params(a), fn_net_n_params(b));
    for (int i = 0; i < fn_net_n_params(a); i++) {
        const fn_tensor *p = &fn_net_param(a, i)->value, *q = &fn_net_param(b, i)->value;
        const size_t n = fn_tensor_count(p);
        assert_int_equal(n, fn_tensor_count(q));
        float *x = chk_alloc_float(n), *y = chk_alloc_float(n);
        must(fn_tensor_download(p, x, n));
        must(fn_tensor_download(q, y, n));
        if (memcmp(x, y, n * sizeof *x) != 0)
            fail_msg("parameter %d (%s) differs", i, fn_net_param(a, i)->name);
        free(x);
        free(y);
    }
}

int same_weights(const fn_net *a, const fn_net *b)
{
    int same = fn_net_n_params(a) == fn_net_n_params(b);
    for (int i = 0; same && i < fn_net_n_params(a); i++) {
        const fn_tensor *p = &fn_net_param(a, i)->value, *q = &fn_net_param(b, i)->value;
        const size_t n = fn_tensor_count(p);
        if (n != fn_tensor_count(q))
            return 0;
        float *x = tensor_to_host(p), *y = tensor_to_host(q);
        same = memcmp(x, y, n * sizeof *x) == 0;
        free(x);
        free(y);
    }
    return same;
}

char *metrics_without_times(const char *dir, const char *out)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s/metrics.csv", dir, out);
    char *text = program_slurp(path);
    char *kept = calloc(strlen(text) + 1, 1);
    assert_non_null(kept);
    int column = 0;
    char *w = kept;
    for (const char *c = text; *c; c++) {
        if (*c == '\n')
            column = 0;
        const int drop = column == 5 || column == 6;
        if (*c == ',')
            column++;
        if (!drop || *c == '\n')
            *w++ = *c;
    }
    free(text);
    return kept;
}

void expect_runs_same_as_first(const char *dir, fn_trainer *const *t, const char (*out)[64],
                               int n)
{
    char *m0 = metrics_without_times(dir, out[0]);
    assert_true(strlen(m0) > 40);
    for (int i = 1; i < n; i++) {
        if (!same_weights(fn_trainer_net(t[0]), fn_trainer_net(t[i])))
            fail_msg("%s: the weights differ from %s's", out[i], out[0]);
        char *mi = metrics_without_times(dir, out[i]);
        assert_string_equal(m0, mi);
        free(mi);
    }
    free(m0);
}

program_files *deferred_run_files(const char *prefix, const set_shape *shape, int rows,
                                  uint64_t seed, const char *layers, const char *device,
                                  int batch, int epochs)
{
    program_files *f = program_files_new(prefix);
    char path[PROGRAM_PATH_CAP];
    write_set(program_files_path(f, "train.h5", path, sizeof path), rows, seed, shape);
    write_set(program_files_path(f, "valid.h5", path, sizeof path), 64, seed + 1, shape);
    program_files_ini(f, "[data]\ntrain = train.h5\nvalid = valid.h5\n"
                         "[model]\nlayers = %s\ngroups = 4\n"
                         "[train]\nbatch_size = %d\nepochs = %d\nseed = 5\nlr = 0.05\n"
                         "momentum = 0.9\nschedule = cosine\nwarmup_steps = 9\n"
                         "[run]\ndevice = %s\nlog_every = 0\n",
                      layers, batch, epochs, device);
    return f;
}

int deferred_run_teardown(void **state)
{
    program_files_free(*state);
    unsetenv("FN_TEST_DEFER_LAG");
    return 0;
}

void trainer_release(fn_trainer *t, fn_config *cfg)
{
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
}

/* A run that must succeed. */
static fn_trainer *must_run(const char *dir, const char *ini, const char *out,
                            const char *lag, int resume, long long stop_after, fn_config **cfg)
{
    char msg[2048];
    fn_status st;
    fn_trainer *t = trainer_run(dir, ini, out, lag, NULL, resume, stop_after, cfg, &st, msg,
                                sizeof msg);
    if (st != FN_OK)
        fail_msg("run %s: %s", out, msg);
    return t;
}

fn_trainer *expect_resumed_as_whole(const char *dir, const char *ini, const char *whole_lag,
                                    const char *lag, long long stop_after, fn_config **cfg)
{
    fn_config *cw = NULL, *cr = NULL;
    fn_trainer *whole = must_run(dir, ini, "whole", whole_lag, 0, -1, &cw);
    fn_trainer *t = must_run(dir, ini, "parts", lag, 0, stop_after, &cr);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_STOPPED);
    assert_int_equal(fn_trainer_state(t)->global_step, stop_after);
    trainer_release(t, cr);
    t = must_run(dir, ini, "parts", lag, 1, -1, cfg);
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    expect_same_weights(fn_trainer_net(t), fn_trainer_net(whole));
    char *mw = metrics_without_times(dir, "whole"), *mp = metrics_without_times(dir, "parts");
    assert_string_equal(mw, mp);
    free(mw);
    free(mp);
    trainer_release(whole, cw);
    return t;
}

void expect_message_but_folder(const char *msg, const char *eager_msg, const char *eager_dir,
                               const char *dir)
{
    const size_t cap = strlen(eager_msg) + strlen(dir) + 1;
    char *expected = malloc(cap);
    assert_non_null(expected);
    const char *at = strstr(eager_msg, eager_dir);
    if (at)
        snprintf(expected, cap, "%.*s%s%s", (int)(at - eager_msg), eager_msg, dir,
                 at + strlen(eager_dir));
    else
        snprintf(expected, cap, "%s", eager_msg);
    assert_string_equal(msg, expected);
    free(expected);
}

const char *const trainer_run_diverge =
    "data.valid=;train.lr=30;train.epochs=20;train.checkpoint_every=1;"
    "train.schedule=constant;train.warmup_steps=0";

void expect_same_stop(const char *dir, const char *ini, const fn_trainer *eager,
                      const char *eager_msg, const char *eager_out, const char *out,
                      const char *defer_lag)
{
    char msg[4096];
    fn_status st;
    fn_config *cfg = NULL;
    fn_trainer *t = trainer_run(dir, ini, out, defer_lag, trainer_run_diverge, 0, -1, &cfg, &st,
                                msg, sizeof msg);
    assert_int_equal(st, FN_ERR_NUMERIC);
    expect_message_but_folder(msg, eager_msg, eager_out, out);
    expect_same_weights(fn_trainer_net(eager), fn_trainer_net(t));
    assert_int_equal(fn_trainer_state(t)->global_step, fn_trainer_state(eager)->global_step);
    assert_int_equal(fn_optimizer_steps(fn_trainer_optimizer(t)),
                     fn_optimizer_steps(fn_trainer_optimizer(eager)));
    trainer_release(t, cfg);
}

const char *sets_join(char *buf, size_t cap, const char *a, const char *b)
{
    const int both = a && *a && b && *b;
    snprintf(buf, cap, "%s%s%s", a ? a : "", both ? ";" : "", b ? b : "");
    return buf;
}

fn_trainer *trainer_run_diverging(const char *dir, const char *ini, const char *out,
                                  const char *defer_lag, fn_config **cfg, char *msg,
                                  size_t msg_cap)
{
    fn_status st;
    fn_trainer *t = trainer_run(dir, ini, out, defer_lag, trainer_run_diverge, 0, -1, cfg, &st, msg,
                                msg_cap);
    if (st != FN_ERR_NUMERIC || !strstr(msg, "loss is"))
        fail_msg("the %s run did not stop at a non-finite loss: %s", out, msg);
    return t;
}
