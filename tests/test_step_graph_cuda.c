/* test_step_graph_cuda.c — the GPU's deferred step (src/trainer/step_deferred.c)
 * and its CUDA graphs (src/trainer/step_graph.c), in process:
 *  - the multi-tensor updates (one launch for every parameter, lr from the
 *    device) equal the one-tensor kernels bit for bit, for SGD with
 *    momentum and for AdamW, on tensors that span several pieces;
 *  - a run replayed as graphs, the same run without graphs ([run]
 *    cuda_graphs = false) and the eager run (the loss read every step:
 *    FN_TEST_DEFER_LAG=0) end with the same weights bit for bit and the same
 *    metrics.csv but its times, with a last short batch (uncaptured) and a
 *    warm-up schedule (its lr written before each replay); for SGD with
 *    momentum, AdamW with clipping, the mse and bce_with_logits losses; the graph run holds
 *    one graph a loader slot; the eager run gathers its batches on the host
 *    ([run] data_on_device = false), the others from the set kept on the GPU
 *    (true);
 *  - with dropout layers, whose kernels read the step from the device, the
 *    three runs end alike too: each replay draws its own step's masks;
 *  - a graph run stopped mid-epoch and resumed ends as the uninterrupted one;
 *  - a diverging graph run stops with the eager run's message (the step
 *    where the loss first went non-finite, the first non-finite value) and
 *    its parameters.
 * Skips without a GPU (the CPU half of these checks: test_defer.c). */
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
#include "gpu_params.h"
#include "fusenet/adam.h"
#include "fusenet/config.h"
#include "fusenet/loader.h"
#include "fusenet/sgd.h"
#include "fusenet/trainer.h"
#include "core/test_hooks.h"
#include "program.h"
#include "sets.h"
#include "trainer_run.h"
#include "trainer/trainer_impl.h"
#include "test_main.h"

enum { ROWS = 200, BATCH = 32, EPOCHS = 3, PATH_CAP = 512, MSG_CAP = 2048 };

typedef program_files fixture;

/* --- the multi-tensor updates ------------------------------------------------------ */

static void test_multi_tensor_sgd(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    gpu_params a, b;
    gpu_params_make(&a, &b, 3);
    fn_sgd_config cfg = fn_sgd_config_default(0.05f);
    cfg.momentum = 0.9f;
    cfg.weight_decay = 1e-3f;
    cfg.nesterov = 1;
    fn_sgd *opt = NULL;
    must(fn_sgd_create(&opt, ctx, b.list, GPU_PARAMS_N, &cfg));
    fn_tensor bufs[GPU_PARAMS_N];
    for (int i = 0; i < GPU_PARAMS_N; i++)
        must(fn_tensor_alloc(&bufs[i], gpu_params_shapes[i][0], gpu_params_shapes[i][1], FN_CUDA));
    for (int s = 0; s < 3; s++) {
        cfg.lr = 0.05f * (float)(s + 1); /* a changing lr: read on the device */
        fn_sgd_set_lr(opt, cfg.lr);
        for (int i = 0; i < GPU_PARAMS_N; i++)
            must(fn_sgd_update(ctx, &a.p[i].value, &a.p[i].grad, &bufs[i], &cfg, s == 0));
        must(fn_sgd_step(opt));
        for (int i = 0; i < GPU_PARAMS_N; i++) {
            expect_tensors_equal(&a.p[i].value, &b.p[i].value, "an SGD value");
            expect_tensors_equal(&bufs[i], fn_sgd_momentum_buffer(opt, i), "a momentum buffer");
        }
    }
    /* The one-launch zeroing. */
    must(fn_optimizer_zero_grad(fn_sgd_optimizer(opt)));
    for (int i = 0; i < GPU_PARAMS_N; i++) {
        must(fn_tensor_zero(&a.p[i].grad));
        expect_tensors_equal(&a.p[i].grad, &b.p[i].grad, "a zeroed gradient");
    }
    for (int i = 0; i < GPU_PARAMS_N; i++)
        fn_tensor_free(&bufs[i]);
    fn_sgd_destroy(opt);
    gpu_params_free(&a, &b);
    fn_context_destroy(ctx);
}

static void test_multi_tensor_adam(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    gpu_params a, b;
    gpu_params_make(&a, &b, 4);
    fn_adam_config cfg = fn_adam_config_default(0.01f, 1);
    fn_optimizer *opt = NULL;
    must(fn_adam_create(&opt, ctx, b.list, GPU_PARAMS_N, &cfg));
    fn_tensor m[GPU_PARAMS_N], v[GPU_PARAMS_N];
    for (int i = 0; i < GPU_PARAMS_N; i++) {
        must(fn_tensor_alloc(&m[i], gpu_params_shapes[i][0], gpu_params_shapes[i][1], FN_CUDA));
        must(fn_tensor_alloc(&v[i], gpu_params_shapes[i][0], gpu_params_shapes[i][1], FN_CUDA));
    }
    for (int s = 1; s <= 3; s++) {
        cfg.lr = 0.01f / (float)s;
        fn_optimizer_set_lr(opt, cfg.lr);
        for (int i = 0; i < GPU_PARAMS_N; i++)
            must(fn_adam_update(ctx, &a.p[i].value, &a.p[i].grad, &m[i], &v[i], &cfg, s));
        must(fn_optimizer_step(opt));
        for (int i = 0; i < GPU_PARAMS_N; i++) {
            expect_tensors_equal(&a.p[i].value, &b.p[i].value, "an Adam value");
            expect_tensors_equal(&m[i], fn_optimizer_state(opt, 0, i), "exp_avg");
            expect_tensors_equal(&v[i], fn_optimizer_state(opt, 1, i), "exp_avg_sq");
        }
    }
    for (int i = 0; i < GPU_PARAMS_N; i++) {
        fn_tensor_free(&m[i]);
        fn_tensor_free(&v[i]);
    }
    fn_optimizer_destroy(opt);
    gpu_params_free(&a, &b);
    fn_context_destroy(ctx);
}

/* --- runs ---------------------------------------------------------------------------- */

/* Eight inputs; labels: three classes by two signs; t: three float
 * targets in (0, 1) (the mse and bce_with_logits runs). */
static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > 0); }
static float value_of(const float *x, int j) { return 1.0f / (1.0f + expf(-4.0f * x[j] * x[j + 1])); }

static const set_shape shape = {.cols = 8, .label = label_of, .values = 3, .value = value_of};

/* ROWS = 6 batches of 32 and one of 8; a warm-up over the first 9 steps. */
static int setup(void **state)
{
    *state = deferred_run_files("fn_graph_cuda_", &shape, ROWS, 21, "block 32, block 32, linear 3",
                                "cuda", BATCH, EPOCHS);
    return 0;
}

/* A run of run.ini (trainer_run.h) into <dir>/<out>; eager: the loss read
 * every step. */
static fn_trainer *run(const fixture *f, const char *out, int eager, const char *sets, int resume,
                       long long stop_after, fn_config **cfg, fn_status *st, char *msg)
{
    return trainer_run(f->dir, f->ini, out, eager ? "0" : NULL, sets, resume, stop_after, cfg,
                       st, msg, MSG_CAP);
}

/* The graph run, the run without graphs and the eager run of `sets` (the
 * test skipped without a GPU). */
static void expect_three_same(const fixture *f, const char *name, const char *sets)
{
    skip_without_gpu();
    char msg[MSG_CAP], out[3][64], graph[600], plain[600], eager[600];
    const char *more = sets ? sets : "", *sep = sets ? ";" : "";
    snprintf(graph, sizeof graph, "%s%srun.data_on_device=true", more, sep);
    snprintf(plain, sizeof plain, "%s%srun.data_on_device=true;run.cuda_graphs=false", more, sep);
    snprintf(eager, sizeof eager, "%s%srun.data_on_device=false", more, sep);
    const char *how[3] = {graph, plain, eager};
    fn_config *cfg[3] = {NULL, NULL, NULL};
    fn_trainer *t[3];
    fn_status st;
    for (int i = 0; i < 3; i++) {
        snprintf(out[i], sizeof out[i], "%s_%s", name, i == 0 ? "graph" : i == 1 ? "plain" : "eager");
        t[i] = run(f, out[i], i == 2, how[i], 0, -1, &cfg[i], &st, msg);
        if (st != FN_OK)
            fail_msg("%s: %s", out[i], msg);
    }
    assert_int_equal(fn_trainer_graph_count(t[0]), FN_LOADER_SLOTS);
    assert_int_equal(fn_trainer_graph_count(t[1]), 0);
    assert_int_equal(fn_trainer_graph_count(t[2]), 0);
    expect_runs_same_as_first(f->dir, t, out, 3);
    for (int i = 0; i < 3; i++) {
        trainer_release(t[i], cfg[i]);
    }
}

static void test_graph_sgd(void **state)
{
    expect_three_same(*state, "sgd", NULL);
}

static void test_graph_adamw_clip(void **state)
{
    expect_three_same(*state, "adamw",
                      "train.optimizer=adamw;train.momentum=0;train.clip_grad_norm=0.5");
}

static void test_graph_mse(void **state)
{
    expect_three_same(*state, "mse", "data.targets=t;train.loss=mse");
}

/* The loss whose partials carry counts besides cross_entropy's: its label
 * accuracy in metrics.csv alike too. */
static void test_graph_bce(void **state)
{
    skip_without_gpu();
    expect_three_same(*state, "bce", "data.targets=t;train.loss=bce_with_logits");
}

static void test_graph_dropout(void **state)
{
    expect_three_same(*state, "dropout",
                      "model.layers=block 32, dropout 0.5, block 32, dropout 0.25, linear 3");
}

static void test_graph_resume(void **state)
{
    skip_without_gpu();
    const fixture *f = *state;
    fn_config *cfg = NULL;
    fn_trainer *t = expect_resumed_as_whole(f->dir, f->ini, NULL, NULL, 10, &cfg); /* mid epoch 2 */
    assert_true(fn_trainer_graph_count(t) > 0);
    trainer_release(t, cfg);
}

static void test_graph_nonfinite_stop(void **state)
{
    skip_without_gpu();
    skip_without_test_hooks();
    fixture *f = *state;
    char eager_msg[MSG_CAP];
    fn_config *ce = NULL;
    fn_trainer *e = trainer_run_diverging(f->dir, f->ini, "nan_eager", "0", &ce, eager_msg, MSG_CAP);
    expect_same_stop(f->dir, f->ini, e, eager_msg, "nan_eager", "nan_graph", NULL);
    trainer_release(e, ce);
}

/* A test of a deferred run: a fresh fixture before, the run's release after. */
#define GRAPH_TEST(test) cmocka_unit_test_setup_teardown(test, setup, deferred_run_teardown)

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_multi_tensor_sgd),
              cmocka_unit_test(test_multi_tensor_adam), GRAPH_TEST(test_graph_sgd),
              GRAPH_TEST(test_graph_adamw_clip), GRAPH_TEST(test_graph_mse),
              GRAPH_TEST(test_graph_bce), GRAPH_TEST(test_graph_dropout), GRAPH_TEST(test_graph_resume),
              GRAPH_TEST(test_graph_nonfinite_stop))
