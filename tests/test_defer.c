/* test_defer.c — the deferred training step (src/trainer/step_deferred.c) on
 * the CPU, where the test hook FN_TEST_DEFER_LAG makes the trainer defer
 * as the GPU does, with copies of the loss's sums that arrive late on
 * purpose:
 *  - the loss tally counts a step's loss as the trainer's host sums do,
 *    records the first non-finite step and counts nothing after it, and
 *    its late copies arrive as its lag says;
 *  - an optimiser's split step (prepare, apply) is its step bit for bit,
 *    and a raised skip flag leaves parameters and state untouched (SGD
 *    with momentum, Adam);
 *  - a deferred run (a last short batch, a warm-up schedule, validation)
 *    ends with the eager run's weights bit for bit and the same
 *    metrics.csv (but its times);
 *  - a run that diverges stops with the eager run's message, word for word
 *    (the step where the loss first went non-finite, the first non-finite
 *    value), with the eager run's parameters: the roll-back undoes the
 *    steps queued after the bad one;
 *  - a deferred run stopped mid-epoch and resumed ends as the eager run;
 *  - the trainer folds SGD's momentum into backward (fn_optimizer_fold:
 *    each gradient's grad_beta is the momentum) in one process without
 *    clipping, and not with clipping or Nesterov momentum.
 * The same comparisons on the GPU, with CUDA graphs: test_step_graph_cuda.c. */
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

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/adam.h"
#include "fusenet/config.h"
#include "fusenet/loss.h"
#include "nn/loss_tally.h"
#include "fusenet/sgd.h"
#include "fusenet/trainer.h"
#include "optim/optimizer_paths.h"
#include "core/test_hooks.h"
#include "program.h"
#include "sets.h"
#include "trainer_run.h"
#include "test_main.h"

enum { ROWS = 200, BATCH = 32, EPOCHS = 3, PATH_CAP = 512, MSG_CAP = 2048 };

typedef program_files fixture;

/* --- the loss tally ------------------------------------------------------------ */

/* A cross-entropy step counted in the tally. */
static fn_status tally_ce(fn_loss_tally *t, const fn_tensor *logits, const int32_t *labels,
                          fn_tensor *loss, fn_tensor *dlogits)
{
    const fn_loss_targets targets = {.labels = labels};
    return fn_loss_tally_step(t, &fn_cross_entropy_kind, NULL, logits, &targets, loss, dlogits);
}

static void test_tally_counts(void **state)
{
    fn_context *ctx = *state;
    fn_loss_tally *t = NULL;
    EXPECT_OK(fn_loss_tally_create(&t, ctx, 1));
    EXPECT_OK(fn_loss_tally_set(t, 1.5, 4, 10, 20));
    float logits[6] = {1, 2, 3, 0.5f, -1, 0.25f};
    int32_t labels[2] = {2, 1};
    fn_tensor x = fn_tensor_view(logits, 2, 3, FN_CPU), loss, d;
    EXPECT_OK(fn_tensor_alloc(&loss, 1, 1, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&d, 2, 3, FN_CPU));
    EXPECT_OK(tally_ce(t, &x, labels, &loss, &d));
    float value = 0;
    int correct = 0;
    EXPECT_OK(fn_cross_entropy_loss_read(ctx, &x, labels, &loss, NULL, &value, &correct));
    fn_loss_tally_value v;
    EXPECT_OK(fn_loss_tally_read(t, &v));
    /* The trainer's sum: loss_sum += (double)loss * rows, from 1.5. */
    const double expected = 1.5 + (double)value * 2;
    assert_memory_equal(&v.loss_sum, &expected, sizeof expected);
    assert_int_equal(v.correct, 4 + correct);
    assert_int_equal(v.seen, 12);
    assert_int_equal(v.steps, 1);
    assert_int_equal(v.bad, 0);
    assert_int_equal(v.bad_step, -1);
    assert_true(v.last_loss == value);
    assert_int_equal(*fn_loss_tally_bad_flag(t), 0);

    /* A non-finite loss: recorded as step 20 + 1, nothing counted. */
    logits[0] = NAN;
    EXPECT_OK(tally_ce(t, &x, labels, &loss, &d));
    logits[0] = 1;
    EXPECT_OK(tally_ce(t, &x, labels, &loss, &d)); /* finite, after it */
    EXPECT_OK(fn_loss_tally_read(t, &v));
    assert_int_equal(v.bad, 1);
    assert_int_equal(v.bad_step, 21);
    assert_true(isnan(v.bad_loss));
    assert_int_equal(v.steps, 1);
    assert_int_equal(v.seen, 12);
    assert_memory_equal(&v.loss_sum, &expected, sizeof expected);
    assert_int_not_equal(*fn_loss_tally_bad_flag(t), 0);

    /* set clears it. */
    EXPECT_OK(fn_loss_tally_set(t, 0, 0, 0, 30));
    assert_int_equal(*fn_loss_tally_bad_flag(t), 0);
    fn_tensor_free(&loss);
    fn_tensor_free(&d);
    fn_loss_tally_destroy(t);
}

static void test_tally_mse_overflow(void **state)
{
    fn_context *ctx = *state;
    fn_loss_tally *t = NULL;
    EXPECT_OK(fn_loss_tally_create(&t, ctx, 1));
    EXPECT_OK(fn_loss_tally_set(t, 0, 0, 0, 0));
    float p[2] = {3e30f, 0}, q[2] = {-3e30f, 0};
    fn_tensor pred = fn_tensor_view(p, 1, 2, FN_CPU), target = fn_tensor_view(q, 1, 2, FN_CPU);
    fn_tensor loss;
    EXPECT_OK(fn_tensor_alloc(&loss, 1, 1, FN_CPU));
    EXPECT_OK(fn_loss_tally_step(t, &fn_mse_kind, NULL, &pred, &(fn_loss_targets){.values = &target}, &loss, NULL));
    fn_loss_tally_value v;
    EXPECT_OK(fn_loss_tally_read(t, &v));
    assert_int_equal(v.bad, 1);
    assert_int_equal(v.bad_step, 0);
    assert_true(isinf(v.bad_loss));
    fn_tensor_free(&loss);
    fn_loss_tally_destroy(t);
}

/* With lag 3, copy i arrives once i + 3 copies were posted; a poll takes
 * the newest that has, once. */
static void test_tally_lag(void **state)
{
    fn_context *ctx = *state;
    fn_loss_tally *t = NULL;
    assert_int_not_equal(fn_loss_tally_create(&t, ctx, FN_LOSS_TALLY_RING + 1), FN_OK);
    EXPECT_OK(fn_loss_tally_create(&t, ctx, 3));
    float logits[2] = {0, 0};
    int32_t label = 0;
    fn_tensor x = fn_tensor_view(logits, 1, 2, FN_CPU), loss;
    EXPECT_OK(fn_tensor_alloc(&loss, 1, 1, FN_CPU));
    fn_loss_tally_value v;
    int fresh = 1;
    for (int step = 0; step < 6; step++) {
        EXPECT_OK(tally_ce(t, &x, &label, &loss, NULL));
        EXPECT_OK(fn_loss_tally_post(t));
        EXPECT_OK(fn_loss_tally_poll(t, &v, &fresh));
        /* After post p (1-based) copies 0 .. p - 3 have arrived. */
        if (step < 2) {
            assert_int_equal(fresh, 0);
        } else {
            assert_int_equal(fresh, 1);
            assert_int_equal(v.steps, step - 1); /* copy step - 2 saw step - 1 steps */
        }
        EXPECT_OK(fn_loss_tally_poll(t, &v, &fresh));
        assert_int_equal(fresh, 0); /* taken already */
    }
    EXPECT_OK(fn_loss_tally_read(t, &v));
    assert_int_equal(v.steps, 6);
    fn_tensor_free(&loss);
    fn_loss_tally_destroy(t);
}

/* --- the split step ---------------------------------------------------------------- */

typedef struct params {
    fn_param p[2];
    fn_param *list[2];
} params;

static void make_params(params *ps, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    for (int i = 0; i < 2; i++) {
        fn_param *p = &ps->p[i];
        p->name = i ? "bias" : "weight";
        EXPECT_OK(fn_tensor_alloc(&p->value, 3 + i, 5 - 2 * i, FN_CPU));
        EXPECT_OK(fn_tensor_alloc(&p->grad, 3 + i, 5 - 2 * i, FN_CPU));
        for (size_t k = 0; k < fn_tensor_count(&p->value); k++) {
            p->value.data[k] = (float)chk_uniform(&rng, -1, 1);
            p->grad.data[k] = (float)chk_uniform(&rng, -1, 1);
        }
        ps->list[i] = p;
    }
}

static void free_params(params *ps)
{
    for (int i = 0; i < 2; i++) {
        fn_tensor_free(&ps->p[i].value);
        fn_tensor_free(&ps->p[i].grad);
    }
}

static void expect_same_values(const params *a, const params *b)
{
    for (int i = 0; i < 2; i++)
        assert_memory_equal(a->p[i].value.data, b->p[i].value.data,
                            fn_tensor_count(&a->p[i].value) * sizeof(float));
}

/* Three steps of a and b, a by step, b by prepare and apply, with a
 * learning rate that changes; then a skipped step of b changes nothing. */
static void check_split(fn_optimizer *a, fn_optimizer *b, params *pa, params *pb)
{
    assert_true(fn_optimizer_can_split(b));
    for (int s = 0; s < 3; s++) {
        fn_optimizer_set_lr(a, 0.1f / (float)(s + 1));
        fn_optimizer_set_lr(b, 0.1f / (float)(s + 1));
        EXPECT_OK(fn_optimizer_step(a));
        EXPECT_OK(fn_optimizer_prepare(b));
        EXPECT_OK(fn_optimizer_apply(b, NULL));
        expect_same_values(pa, pb);
        assert_int_equal(fn_optimizer_steps(a), fn_optimizer_steps(b));
    }
    params before;
    make_params(&before, 1);
    for (int i = 0; i < 2; i++)
        memcpy(before.p[i].value.data, pb->p[i].value.data,
               fn_tensor_count(&pb->p[i].value) * sizeof(float));
    const int skip = 1;
    EXPECT_OK(fn_optimizer_prepare(b));
    EXPECT_OK(fn_optimizer_apply(b, &skip));
    expect_same_values(&before, pb);
    free_params(&before);
    /* The gradients zeroed through the optimiser. */
    EXPECT_OK(fn_optimizer_zero_grad(b));
    for (int i = 0; i < 2; i++)
        for (size_t k = 0; k < fn_tensor_count(&pb->p[i].grad); k++)
            assert_true(pb->p[i].grad.data[k] == 0.0f);
}

static void test_split_sgd(void **state)
{
    fn_context *ctx = *state;
    params pa, pb;
    make_params(&pa, 4);
    make_params(&pb, 4);
    fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    cfg.momentum = 0.9f;
    cfg.weight_decay = 0.01f;
    fn_sgd *a = NULL, *b = NULL;
    EXPECT_OK(fn_sgd_create(&a, ctx, pa.list, 2, &cfg));
    EXPECT_OK(fn_sgd_create(&b, ctx, pb.list, 2, &cfg));
    check_split(fn_sgd_optimizer(a), fn_sgd_optimizer(b), &pa, &pb);
    fn_sgd_destroy(a);
    fn_sgd_destroy(b);
    free_params(&pa);
    free_params(&pb);
}

static void test_split_adam(void **state)
{
    fn_context *ctx = *state;
    params pa, pb;
    make_params(&pa, 5);
    make_params(&pb, 5);
    const fn_adam_config cfg = fn_adam_config_default(0.1f, 1);
    fn_optimizer *a = NULL, *b = NULL;
    EXPECT_OK(fn_adam_create(&a, ctx, pa.list, 2, &cfg));
    EXPECT_OK(fn_adam_create(&b, ctx, pb.list, 2, &cfg));
    check_split(a, b, &pa, &pb);
    fn_optimizer_destroy(a);
    fn_optimizer_destroy(b);
    free_params(&pa);
    free_params(&pb);
}

/* --- runs ------------------------------------------------------------------------ */

/* Four inputs; three classes by a sign and a comparison. */
static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > x[2]); }

static const set_shape shape = {.cols = 4, .label = label_of};

/* ROWS = 6 batches of 32 and one of 8; a warm-up over the first 9 steps. */
static int setup_runs(void **state)
{
    *state = deferred_run_files("fn_defer_", &shape, ROWS, 11, "block 16, block 16, linear 3",
                                "cpu", BATCH, EPOCHS);
    return 0;
}

/* A run of run.ini (trainer_run.h) into <dir>/<out>, deferred with `lag`
 * (0: eager). */
static fn_trainer *run(const fixture *f, const char *out, int lag, const char *sets, int resume,
                       long long stop_after, fn_config **cfg, fn_status *st, char *msg)
{
    char lag_text[8];
    snprintf(lag_text, sizeof lag_text, "%d", lag);
    return trainer_run(f->dir, f->ini, out, lag > 0 ? lag_text : NULL, sets, resume, stop_after,
                       cfg, st, msg, MSG_CAP);
}

/* Every parameter's grad_beta after an eager run of run.ini with sets. */
static void expect_grad_beta(const fixture *f, const char *sets, float want)
{
    fn_config *cfg = NULL;
    fn_status st = FN_OK;
    char msg[MSG_CAP];
    fn_trainer *t = run(f, "fold", 0, sets, 0, -1, &cfg, &st, msg);
    if (st != FN_OK)
        fail_msg("the run with %s failed: %s", sets ? sets : "run.ini", msg);
    const fn_net *net = fn_trainer_net(t);
    for (int i = 0; i < fn_net_n_params(net); i++)
        if (fn_net_param(net, i)->grad_beta != want)
            fail_msg("%s: parameter %d's grad_beta %g, expected %g", sets ? sets : "run.ini", i,
                     (double)fn_net_param(net, i)->grad_beta, (double)want);
    trainer_release(t, cfg);
}

static void test_momentum_folded_in_one_process(void **state)
{
    const fixture *f = *state;
    expect_grad_beta(f, NULL, 0.9f); /* run.ini: momentum 0.9 */
    expect_grad_beta(f, "train.clip_grad_norm=0.5", 0.0f);
    expect_grad_beta(f, "train.nesterov=true", 0.0f);
}

static void test_deferred_run_is_eager_run(void **state)
{
    skip_without_test_hooks();
    fixture *f = *state;
    char msg[MSG_CAP];
    fn_status st;
    fn_config *ce = NULL, *cd = NULL, *ca = NULL, *cb = NULL;
    fn_trainer *e = run(f, "eager", 0, NULL, 0, -1, &ce, &st, msg);
    EXPECT_OK(st);
    fn_trainer *d = run(f, "deferred", 3, NULL, 0, -1, &cd, &st, msg);
    EXPECT_OK(st);
    expect_same_weights(fn_trainer_net(e), fn_trainer_net(d));
    char *me = metrics_without_times(f->dir, "eager"), *md = metrics_without_times(f->dir, "deferred");
    assert_true(strlen(me) > 40);
    assert_string_equal(me, md);
    free(me);
    free(md);
    /* Adam with clipping, mse-free: the split step with its own scalars. */
    const char *adam = "train.optimizer=adam;train.momentum=0;train.clip_grad_norm=0.5";
    fn_trainer *a = run(f, "adam_eager", 0, adam, 0, -1, &ca, &st, msg);
    EXPECT_OK(st);
    fn_trainer *b = run(f, "adam_deferred", 8, adam, 0, -1, &cb, &st, msg);
    EXPECT_OK(st);
    expect_same_weights(fn_trainer_net(a), fn_trainer_net(b));
    trainer_release(e, ce);
    trainer_release(d, cd);
    trainer_release(a, ca);
    trainer_release(b, cb);
}

/* lr 30 with momentum: the run diverges after an epoch or two, past a
 * checkpoint. The deferred runs, whose copies of the sums arrive up to 7
 * steps late (more than an epoch's 7 steps), stop with the eager run's
 * message and parameters, naming their own checkpoint of the last good
 * state. */
static void test_deferred_nonfinite_stop(void **state)
{
    skip_without_test_hooks();
    fixture *f = *state;
    char eager_msg[MSG_CAP];
    fn_config *ce = NULL;
    fn_trainer *e = trainer_run_diverging(f->dir, f->ini, "nan_eager", NULL, &ce, eager_msg, MSG_CAP);
    assert_non_null(strstr(eager_msg, "first non-finite: layer"));
    if (!strstr(eager_msg, "nan_eager/checkpoint.h5 (the last good state) is kept"))
        fail_msg("the run diverged before its first checkpoint: %s", eager_msg);
    const char *lags[] = {"1", "2", "8"};
    for (int i = 0; i < 3; i++) {
        char out[32];
        snprintf(out, sizeof out, "nan_lag%s", lags[i]);
        expect_same_stop(f->dir, f->ini, e, eager_msg, "nan_eager", out, lags[i]);
    }
    trainer_release(e, ce);
}

static void test_deferred_resume(void **state)
{
    skip_without_test_hooks();
    const fixture *f = *state;
    fn_config *cfg = NULL;
    fn_trainer *t = expect_resumed_as_whole(f->dir, f->ini, NULL, "3", 10, &cfg); /* mid epoch 2 */
    trainer_release(t, cfg);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_tally_counts),
          cmocka_unit_test(test_tally_mse_overflow), cmocka_unit_test(test_tally_lag),
          cmocka_unit_test(test_split_sgd), cmocka_unit_test(test_split_adam),
          cmocka_unit_test_setup_teardown(test_deferred_run_is_eager_run, setup_runs,
          deferred_run_teardown),
          cmocka_unit_test_setup_teardown(test_deferred_nonfinite_stop, setup_runs, deferred_run_teardown),
          cmocka_unit_test_setup_teardown(test_deferred_resume, setup_runs, deferred_run_teardown),
          cmocka_unit_test_setup_teardown(test_momentum_folded_in_one_process, setup_runs,
                                          deferred_run_teardown))
