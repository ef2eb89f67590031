/* test_layer_updates.c — each layer's update queued right after its own
 * backward (fn_trainer_backward_update, src/trainer/step_choice.c) against
 * the one update after the whole backward ([run] layer_updates true and
 * false, the default), on the CPU, where both run in call order:
 *  - a net of three blocks and a linear head trained three epochs ends
 *    with the same weights bit for bit and the same metrics.csv (but its
 *    times), eager and deferred (the skip flag read by every part), for
 *    SGD with momentum folded into backward, plain SGD, AdamW, centered
 *    RMSprop with momentum, and with dropout layers (parts without
 *    parameters). An update moved one layer early (before its layer's
 *    backward: the last step's gradients, and the layer's dx product
 *    reading the new weights) fails these comparisons;
 *  - a diverging run stops with the one-update run's message and
 *    parameters, eager and deferred;
 *  - not with clipping (it needs every gradient first);
 *  - the optimiser's parts (fn_optimizer_set_parts, _apply_part) check
 *    their arguments.
 * The GPU's side stream and CUDA graphs: test_layer_updates_cuda.c. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/linear.h"
#include "fusenet/sgd.h"
#include "program.h"
#include "sets.h"
#include "trainer/trainer_impl.h"
#include "trainer_run.h"
#include "test_main.h"

enum { ROWS = 200, BATCH = 32, EPOCHS = 3, MSG_CAP = 2048 };

typedef program_files fixture;

/* Eight inputs; three classes by two signs. */
static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > 0); }

static const set_shape shape = {.cols = 8, .label = label_of};

/* ROWS = 6 batches of 32 and one of 8; SGD with momentum 0.9 under a
 * warm-up and a cosine schedule (trainer_run.h). */
static int setup_runs(void **state)
{
    unsetenv("FN_TEST_LAYER_UPDATES"); /* whatever a failed test before left */
    *state = deferred_run_files("fn_layer_updates_", &shape, ROWS, 31,
                                "block 32, block 32, block 32, linear 3", "cpu", BATCH, EPOCHS);
    return 0;
}

/* A run of run.ini with sets into <dir>/<out>, deferred with lag (NULL:
 * eager), each layer's update beside backward ([run] layer_updates) unless
 * off. */
static fn_trainer *run(const fixture *f, const char *out, int off, const char *lag,
                       const char *sets, fn_config **cfg)
{
    char msg[MSG_CAP], all[4096];
    fn_status st = FN_OK;
    sets_join(all, sizeof all, sets, off ? "run.layer_updates=false" : "run.layer_updates=true");
    fn_trainer *t = trainer_run(f->dir, f->ini, out, lag, all, 0, -1, cfg, &st, msg, MSG_CAP);
    if (st != FN_OK)
        fail_msg("%s (%s): %s", out, sets ? sets : "run.ini", msg);
    return t;
}

/* The run of sets with each layer's update beside backward, eager and
 * deferred (lag 3), against the one-update eager run. */
static void expect_same_runs(const fixture *f, const char *name, const char *sets)
{
    skip_without_test_hooks();
    char out[3][64];
    const char *lag[3] = {NULL, NULL, "3"};
    fn_config *cfg[3] = {NULL, NULL, NULL};
    fn_trainer *t[3];
    for (int i = 0; i < 3; i++) {
        snprintf(out[i], sizeof out[i], "%s_%s", name, i == 0 ? "one" : i == 1 ? "layers" : "deferred");
        t[i] = run(f, out[i], i == 0, lag[i], sets, &cfg[i]);
        assert_int_equal(t[i]->layer_updates, i > 0);
    }
    expect_runs_same_as_first(f->dir, t, out, 3);
    for (int i = 0; i < 3; i++)
        trainer_release(t[i], cfg[i]);
}

static void test_sgd_momentum_folded(void **state)
{
    expect_same_runs(*state, "sgd", NULL);
}

static void test_sgd_plain(void **state)
{
    expect_same_runs(*state, "plain", "train.momentum=0");
}

static void test_adamw(void **state)
{
    expect_same_runs(*state, "adamw", "train.optimizer=adamw;train.momentum=0");
}

static void test_rmsprop(void **state)
{
    expect_same_runs(*state, "rmsprop", "train.optimizer=rmsprop;train.centered=true;train.lr=0.01");
}

static void test_dropout(void **state)
{
    expect_same_runs(*state, "dropout",
                     "model.layers=block 32, dropout 0.5, block 32, dropout 0.25, block 32, "
                     "linear 3");
}

/* The folded momentum is what the walk updates (grad_beta 0.9 on the
 * net's gradients), and clipping keeps the one update. */
static void test_when_on(void **state)
{
    skip_without_test_hooks();
    const fixture *f = *state;
    fn_config *cfg = NULL;
    char msg[MSG_CAP];
    fn_status st = FN_OK;
    fn_trainer *t = trainer_run(f->dir, f->ini, "default", NULL, NULL, 0, -1, &cfg, &st, msg,
                                MSG_CAP);
    assert_int_equal(st, FN_OK);
    assert_int_equal(t->layer_updates, 0); /* off unless asked for */
    trainer_release(t, cfg);
    t = run(f, "on", 0, NULL, NULL, &cfg);
    assert_int_equal(t->layer_updates, 1);
    assert_true(fn_net_param(fn_trainer_net(t), 0)->grad_beta == 0.9f);
    trainer_release(t, cfg);
    t = run(f, "clipped", 0, NULL, "train.clip_grad_norm=0.5", &cfg);
    assert_int_equal(t->layer_updates, 0);
    trainer_release(t, cfg);
}

/* lr 30 with momentum diverges: the same stop, message and parameters. */
static void test_nonfinite_stop(void **state)
{
    skip_without_test_hooks();
    const fixture *f = *state;
    char one_msg[MSG_CAP];
    fn_config *cfg = NULL;
    fn_trainer *one =
        trainer_run_diverging(f->dir, f->ini, "nan_one", NULL, &cfg, one_msg, MSG_CAP);
    assert_int_equal(one->layer_updates, 0);
    assert_non_null(strstr(one_msg, "first non-finite: layer"));
    setenv("FN_TEST_LAYER_UPDATES", "1", 1); /* the stops below: each layer's update */
    expect_same_stop(f->dir, f->ini, one, one_msg, "nan_one", "nan_layers", NULL);
    expect_same_stop(f->dir, f->ini, one, one_msg, "nan_one", "nan_deferred", "2");
    unsetenv("FN_TEST_LAYER_UPDATES");
    trainer_release(one, cfg);
}

static void test_parts_checked(void **state)
{
    fn_context *ctx = *state;
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 1, .offset = 0};
    EXPECT_OK(fn_linear_create(&l, ctx, 3, 2, 4, &rng));
    fn_param *params[] = {&l->params[0], &l->params[1]};
    const fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    fn_sgd *sgd = NULL;
    EXPECT_OK(fn_sgd_create(&sgd, ctx, params, 2, &cfg));
    fn_optimizer *opt = fn_sgd_optimizer(sgd);
    assert_true(fn_optimizer_can_apply_parts(opt));
    EXPECT_FAIL(fn_optimizer_apply_part(opt, 0, NULL), FN_ERR_INVALID, "part 0 of 0");
    const int three[] = {1, 1, 1}, negative[] = {3, -1}, fine[] = {0, 2, 0};
    EXPECT_FAIL(fn_optimizer_set_parts(opt, three, 3), FN_ERR_INVALID,
                "the parts hold 3 parameters, sgd has 2");
    EXPECT_FAIL(fn_optimizer_set_parts(opt, negative, 2), FN_ERR_INVALID, "part 1 has -1");
    EXPECT_OK(fn_optimizer_set_parts(opt, fine, 3));
    EXPECT_FAIL(fn_optimizer_apply_part(opt, 3, NULL), FN_ERR_INVALID, "part 3 of 3");
    fn_sgd_destroy(sgd);
    fn_layer_destroy(l);
}

#define RUN_TEST(test) cmocka_unit_test_setup_teardown(test, setup_runs, deferred_run_teardown)

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_parts_checked),
          RUN_TEST(test_sgd_momentum_folded), RUN_TEST(test_sgd_plain), RUN_TEST(test_adamw),
          RUN_TEST(test_rmsprop), RUN_TEST(test_dropout), RUN_TEST(test_when_on),
          RUN_TEST(test_nonfinite_stop))
