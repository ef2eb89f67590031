/* test_layer_updates_cuda.c — each layer's update on the side stream
 * beside the backward of the layers before it (src/trainer/step_choice.c,
 * fn_trainer_backward_update) against the one update after the whole
 * backward ([run] layer_updates true and false), on the GPU:
 *  - the optimiser's parts (a multi-tensor table a part, reading the
 *    whole's scalars) equal its one launch bit for bit, applied in reverse
 *    order with an empty part between, on tensors of several pieces, for
 *    SGD with momentum and for AdamW;
 *  - a net of three blocks and a linear head trained three epochs ends
 *    with the same weights bit for bit and the same metrics.csv (but its
 *    times) as the one-update run with graphs, replayed as CUDA graphs
 *    (the fork and join captured: as many graphs as the one-update run), without
 *    graphs and eager (the loss read every step), for SGD with momentum
 *    folded into backward (its buffers fp32, and bfloat16 with
 *    momentum_bf16) and AdamW, in fp32 and bf16 (the update writes
 *    the weights' bf16 copies the next forward reads), and centered
 *    RMSprop (two tables cut alike);
 *  - a diverging graph run stops with the one-update eager run's message
 *    and parameters.
 * Skips without a GPU (the CPU's half: test_layer_updates.c). */
#define _POSIX_C_SOURCE 200809L
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
#include "gpu_params.h"
#include "fusenet/adam.h"
#include "fusenet/sgd.h"
#include "program.h"
#include "sets.h"
#include "trainer/trainer_impl.h"
#include "trainer_run.h"
#include "test_main.h"

enum { ROWS = 200, BATCH = 32, EPOCHS = 3, MSG_CAP = 2048 };

typedef program_files fixture;

/* --- the optimiser's parts ---------------------------------------------------------- */

/* Three steps of `whole` (prepare, apply) and of `parts` (prepare, its
 * parts {2, 0, 1} applied last first), with a changing lr: the same
 * values and state bit for bit after each. */
static void expect_parts_as_whole(fn_optimizer *whole, fn_optimizer *parts, gpu_params *a,
                                  gpu_params *b)
{
    const int counts[] = {2, 0, 1};
    must(fn_optimizer_set_parts(parts, counts, 3));
    for (int s = 0; s < 3; s++) {
        const float lr = 0.01f * (float)(s + 1);
        fn_optimizer_set_lr(whole, lr);
        fn_optimizer_set_lr(parts, lr);
        must(fn_optimizer_prepare(whole));
        must(fn_optimizer_apply(whole, NULL));
        must(fn_optimizer_prepare(parts));
        for (int k = 2; k >= 0; k--)
            must(fn_optimizer_apply_part(parts, k, NULL));
        for (int i = 0; i < GPU_PARAMS_N; i++) {
            expect_tensors_equal(&a->p[i].value, &b->p[i].value, "a value");
            for (int kind = 0; kind < fn_optimizer_n_state(whole); kind++)
                expect_tensors_equal(fn_optimizer_state(whole, kind, i),
                                     fn_optimizer_state(parts, kind, i), "a state tensor");
        }
    }
}

static void test_parts_sgd(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    gpu_params a, b;
    gpu_params_make(&a, &b, 7);
    fn_sgd_config cfg = fn_sgd_config_default(0.01f);
    cfg.momentum = 0.9f;
    cfg.weight_decay = 1e-3f;
    fn_sgd *whole = NULL, *parts = NULL;
    must(fn_sgd_create(&whole, ctx, a.list, GPU_PARAMS_N, &cfg));
    must(fn_sgd_create(&parts, ctx, b.list, GPU_PARAMS_N, &cfg));
    expect_parts_as_whole(fn_sgd_optimizer(whole), fn_sgd_optimizer(parts), &a, &b);
    fn_sgd_destroy(whole);
    fn_sgd_destroy(parts);
    gpu_params_free(&a, &b);
    fn_context_destroy(ctx);
}

static void test_parts_adamw(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    gpu_params a, b;
    gpu_params_make(&a, &b, 8);
    const fn_adam_config cfg = fn_adam_config_default(0.01f, 1);
    fn_optimizer *whole = NULL, *parts = NULL;
    must(fn_adam_create(&whole, ctx, a.list, GPU_PARAMS_N, &cfg));
    must(fn_adam_create(&parts, ctx, b.list, GPU_PARAMS_N, &cfg));
    expect_parts_as_whole(whole, parts, &a, &b);
    fn_optimizer_destroy(whole);
    fn_optimizer_destroy(parts);
    gpu_params_free(&a, &b);
    fn_context_destroy(ctx);
}

/* --- runs ---------------------------------------------------------------------------- */

/* Eight inputs; three classes by two signs. */
static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > 0); }

static const set_shape shape = {.cols = 8, .label = label_of};

/* ROWS = 6 batches of 32 and one of 8 (uncaptured); weights of several
 * pieces each. */
static int setup(void **state)
{
    unsetenv("FN_TEST_LAYER_UPDATES"); /* whatever a failed test before left */
    *state = deferred_run_files("fn_layer_updates_cuda_", &shape, ROWS, 41,
                                "block 96, block 64, block 64, linear 3", "cuda", BATCH, EPOCHS);
    return 0;
}

/* A run of run.ini with sets into <dir>/<out>: eager (the loss read every
 * step) or deferred; each layer's update beside backward unless off. */
static fn_trainer *run(const fixture *f, const char *out, int off, int eager, const char *sets,
                       fn_config **cfg)
{
    char msg[MSG_CAP], all[4096];
    fn_status st = FN_OK;
    sets_join(all, sizeof all, sets, off ? "run.layer_updates=false" : "run.layer_updates=true");
    fn_trainer *t =
        trainer_run(f->dir, f->ini, out, eager ? "0" : NULL, all, 0, -1, cfg, &st, msg, MSG_CAP);
    if (st != FN_OK)
        fail_msg("%s (%s): %s", out, sets ? sets : "run.ini", msg);
    return t;
}

/* The one-update run with graphs against the layers' updates with graphs,
 * without and eager, of `sets` (";"-separated, may be NULL). */
static void expect_same_runs(const fixture *f, const char *name, const char *sets)
{
    skip_without_gpu();
    skip_without_test_hooks();
    enum { N = 4 };
    char out[N][64], more[N][600];
    const char *how[N] = {"one", "graph", "plain", "eager"};
    fn_config *cfg[N];
    fn_trainer *t[N];
    for (int i = 0; i < N; i++) {
        snprintf(out[i], sizeof out[i], "%s_%s", name, how[i]);
        sets_join(more[i], sizeof more[i], sets,
                  i == 2 ? "run.cuda_graphs=false" : "run.cuda_graphs=true");
        t[i] = run(f, out[i], i == 0, i == 3, more[i], &cfg[i]);
        if (t[i]->layer_updates != (i > 0))
            fail_msg("%s: layer_updates %d", out[i], t[i]->layer_updates);
    }
    assert_true(fn_trainer_graph_count(t[0]) > 0);
    assert_int_equal(fn_trainer_graph_count(t[1]), fn_trainer_graph_count(t[0]));
    assert_int_equal(fn_trainer_graph_count(t[2]), 0);
    expect_runs_same_as_first(f->dir, t, out, N);
    for (int i = 0; i < N; i++)
        trainer_release(t[i], cfg[i]);
}

static void test_sgd_folded(void **state) { expect_same_runs(*state, "sgd", NULL); }

static void test_sgd_folded_bf16(void **state)
{
    expect_same_runs(*state, "sgd_bf16", "run.math=bf16");
}

/* The momentum buffers in bfloat16: each part's table reads them too. */
static void test_sgd_folded_momentum_bf16(void **state)
{
    expect_same_runs(*state, "sgd_mbf16", "run.math=bf16;train.momentum_bf16=true");
}

static void test_adamw(void **state)
{
    expect_same_runs(*state, "adamw", "train.optimizer=adamw;train.momentum=0");
}

static void test_adamw_bf16(void **state)
{
    expect_same_runs(*state, "adamw_bf16", "train.optimizer=adamw;train.momentum=0;run.math=bf16");
}

static void test_rmsprop(void **state)
{
    expect_same_runs(*state, "rmsprop",
                     "train.optimizer=rmsprop;train.centered=true;train.lr=0.01");
}

static void test_nonfinite_stop(void **state)
{
    skip_without_gpu();
    skip_without_test_hooks();
    const fixture *f = *state;
    char one_msg[MSG_CAP];
    fn_config *cfg = NULL;
    fn_trainer *one = trainer_run_diverging(f->dir, f->ini, "nan_one", "0", &cfg, one_msg, MSG_CAP);
    assert_int_equal(one->layer_updates, 0);
    setenv("FN_TEST_LAYER_UPDATES", "1", 1); /* the graphed stop: each layer's update */
    expect_same_stop(f->dir, f->ini, one, one_msg, "nan_one", "nan_graph", NULL);
    unsetenv("FN_TEST_LAYER_UPDATES");
    trainer_release(one, cfg);
}

#define RUN_TEST(test) cmocka_unit_test_setup_teardown(test, setup, deferred_run_teardown)

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_parts_sgd), cmocka_unit_test(test_parts_adamw),
              RUN_TEST(test_sgd_folded), RUN_TEST(test_sgd_folded_bf16),
              RUN_TEST(test_sgd_folded_momentum_bf16), RUN_TEST(test_adamw),
              RUN_TEST(test_adamw_bf16), RUN_TEST(test_rmsprop), RUN_TEST(test_nonfinite_stop))
