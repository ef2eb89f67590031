/* test_bf16_copy_cuda.c — the bfloat16 copy of a weight that its writers
 * keep current (param.h), in bf16 mode on the GPU:
 *  - an optimiser keeps the copies of the blocks' weights from its creation
 *    to its destroy (a linear layer's weight has none);
 *  - training with the kept copies ends with the same weights, bit for bit,
 *    as the same training with none kept (the test hook
 *    FN_TEST_BF16_COPY_OFF: every forward rounds W itself): momentum SGD,
 *    plain SGD folded into the backward, AdamW, on a net of layers; and
 *    through `train`'s trainer (its CUDA graphs, its deferred step, the
 *    fused plain step) for momentum SGD, plain SGD and AdamW, and a run
 *    stopped mid-epoch and resumed from its checkpoint;
 *  - after each writer outside a step (the optimiser's adoption of freshly
 *    initialised weights, loading a weights file, loading a safetensors
 *    file, loading a checkpoint) the forward that reads the kept copy
 *    equals the one that rounds W afresh, bit for bit, with weights that
 *    differ from the ones the copy held before.
 * A writer that forgot the copy leaves it holding the weights before its
 * write, so the forward (and every later step) reads other weights and the
 * bits differ. Skips without a GPU (and the runs without the test hooks). */
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
#include "fusenet/adam.h"
#include "fusenet/block.h"
#include "fusenet/checkpoint.h"
#include "fusenet/export.h"
#include "fusenet/linear.h"
#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "optim/optimizers/sgd/sgd_fused.h"
#include "fusenet/weights.h"
#include "optim/optimizer_paths.h"
#include "core/test_hooks.h"
#include "test_main.h"
#include "trainer_run.h"

enum { BATCH = 24, IN = 40, H1 = 64, H2 = 32, OUT = 10, GROUPS = 4, STEPS = 6, MSG_CAP = 1024 };
static const float lr = 0.05f;

typedef enum optimiser { MOMENTUM, PLAIN, ADAMW } optimiser;
static const char *const how_names[] = {"momentum SGD", "plain SGD (folded)", "AdamW"};

typedef struct model {
    fn_net *net;
    fn_optimizer *opt;
    fn_sgd *sgd; /* NULL for AdamW */
    optimiser how;
    fn_tensor x, dy; /* [BATCH, IN], [BATCH, OUT] */
} model;

/* block IN -> H1, block H1 -> H2, linear H2 -> OUT from seed `seed`, its
 * optimiser `how` (keeping the copies unless FN_TEST_BF16_COPY_OFF), and
 * data and an output gradient from seed 12. */
static void model_make(model *m, fn_context *ctx, optimiser how, uint64_t seed)
{
    fn_rng rng = {.seed = seed, .offset = 0};
    fn_layer *l = NULL;
    *m = (model){.how = how};
    EXPECT_OK(fn_net_create(&m->net, ctx, BATCH));
    const fn_block_config c1 = fn_block_config_default(IN, H1, GROUPS);
    const fn_block_config c2 = fn_block_config_default(H1, H2, GROUPS);
    EXPECT_OK(fn_block_create(&l, ctx, &c1, BATCH, &rng));
    EXPECT_OK(fn_net_add(m->net, l));
    EXPECT_OK(fn_block_create(&l, ctx, &c2, BATCH, &rng));
    EXPECT_OK(fn_net_add(m->net, l));
    EXPECT_OK(fn_linear_create(&l, ctx, H2, OUT, BATCH, &rng));
    EXPECT_OK(fn_net_add(m->net, l));
    fn_param *const *params = fn_net_params(m->net);
    const int n = fn_net_n_params(m->net);
    if (how == ADAMW) {
        const fn_adam_config ac = fn_adam_config_default(lr, 1);
        EXPECT_OK(fn_adam_create(&m->opt, ctx, params, n, &ac));
    } else {
        fn_sgd_config sc = fn_sgd_config_default(lr);
        sc.momentum = how == MOMENTUM ? 0.9f : 0.0f;
        EXPECT_OK(fn_sgd_create(&m->sgd, ctx, params, n, &sc));
        m->opt = fn_sgd_optimizer(m->sgd);
    }
    fn_rng data = {.seed = 12, .offset = 0};
    EXPECT_OK(fn_tensor_alloc(&m->x, BATCH, IN, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&m->dy, BATCH, OUT, FN_CUDA));
    EXPECT_OK(fn_init_uniform(&m->x, -1.0f, 1.0f, &data));
    EXPECT_OK(fn_init_uniform(&m->dy, -0.5f, 0.5f, &data));
}

static void model_free(model *m)
{
    fn_optimizer_destroy(m->opt);
    fn_net_destroy(m->net);
    fn_tensor_free(&m->x);
    fn_tensor_free(&m->dy);
}

/* A training step as `train` takes it with m's optimiser: plain SGD
 * folded into the backward, the others backward then update. */
static void step(model *m)
{
    fn_tensor y;
    EXPECT_OK(fn_net_forward(m->net, &m->x, &y));
    if (m->how == PLAIN) {
        EXPECT_OK(fn_optimizer_backward_step(m->opt, m->net, &m->dy));
        return;
    }
    EXPECT_OK(fn_net_zero_grad(m->net));
    EXPECT_OK(fn_net_backward(m->net, &m->dy));
    EXPECT_OK(fn_optimizer_step(m->opt));
}

/* The forward's output on the host (free it). */
static float *forward(model *m)
{
    fn_tensor y;
    EXPECT_OK(fn_net_forward(m->net, &m->x, &y));
    return tensor_to_host(&y);
}

/* Makes the model's optimiser keep no copy (or keep them again): what the
 * hook does to an optimiser made under it. */
static void set_copy_off(int off)
{
    if (off)
        setenv("FN_TEST_BF16_COPY_OFF", "1", 1);
    else
        unsetenv("FN_TEST_BF16_COPY_OFF");
}

static fn_context *bf16_context(void)
{
    skip_without_gpu();
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, FN_MATH_BF16));
    return ctx;
}

/* Which of the net's parameters keep a copy: the blocks' weights only. */
static void expect_kept(const model *m, int kept)
{
    for (int i = 0; i < fn_net_n_layers(m->net); i++) {
        const fn_layer *l = fn_net_layer(m->net, i);
        for (int p = 0; p < l->n_params; p++) {
            const int block_weight =
                strcmp(l->ops->kind, "block") == 0 && strcmp(l->params[p].name, "weight") == 0;
            if (fn_param_bf16_kept(&l->params[p]) != (kept && block_weight))
                fail_msg("layer %d (%s) parameter %s: kept %d, expected %d", i, l->ops->kind,
                         l->params[p].name, fn_param_bf16_kept(&l->params[p]),
                         kept && block_weight);
            assert_int_equal(l->params[p].value_bf16 != NULL, block_weight);
        }
    }
}

/* --- ownership ------------------------------------------------------------------- */

static void test_optimiser_keeps_copies(void **state)
{
    (void)state;
    fn_context *ctx = bf16_context();
    model m;
    model_make(&m, ctx, MOMENTUM, 11);
    expect_kept(&m, 1);
    /* A second owner (an AdamW over the same parameters): kept until both
     * are gone. */
    fn_optimizer *other = NULL;
    const fn_adam_config ac = fn_adam_config_default(lr, 1);
    EXPECT_OK(fn_adam_create(&other, ctx, fn_net_params(m.net), fn_net_n_params(m.net), &ac));
    fn_optimizer_destroy(m.opt);
    m.opt = other;
    expect_kept(&m, 1);
    fn_optimizer_destroy(other);
    m.opt = NULL;
    expect_kept(&m, 0);
    model_free(&m);
    /* Under the test hook no optimiser keeps one. */
    if (fn_test_hooks_enabled()) {
        set_copy_off(1);
        model_make(&m, ctx, MOMENTUM, 11);
        set_copy_off(0);
        expect_kept(&m, 0);
        model_free(&m);
    }
    fn_context_destroy(ctx);
}

/* --- training, kept against rounded every forward -------------------------------- */

static void expect_same_training(optimiser how)
{
    skip_without_test_hooks();
    fn_context *ctx = bf16_context();
    model kept, rounded;
    model_make(&kept, ctx, how, 11);
    set_copy_off(1);
    model_make(&rounded, ctx, how, 11);
    set_copy_off(0);
    expect_kept(&kept, 1);
    expect_kept(&rounded, 0);
    for (int k = 0; k < STEPS; k++) {
        step(&kept);
        step(&rounded);
    }
    printf("%s: %d bf16 steps with the kept copies and with W rounded every forward\n",
           how_names[how], STEPS);
    expect_same_weights(kept.net, rounded.net);
    float *yk = forward(&kept), *yr = forward(&rounded);
    if (memcmp(yk, yr, sizeof(float) * BATCH * OUT) != 0)
        fail_msg("%s: the forwards after training differ", how_names[how]);
    free(yk);
    free(yr);
    model_free(&kept);
    model_free(&rounded);
    fn_context_destroy(ctx);
}

static void test_same_training_momentum(void **state)
{
    (void)state;
    expect_same_training(MOMENTUM);
}

static void test_same_training_plain(void **state)
{
    (void)state;
    expect_same_training(PLAIN);
}

static void test_same_training_adamw(void **state)
{
    (void)state;
    expect_same_training(ADAMW);
}

/* --- host-side writers ------------------------------------------------------------ */

/* The forward reading m's kept copies equals the forward rounding W afresh
 * (the copies released for it, then kept again). */
static void expect_copy_current(model *m, const char *after)
{
    expect_kept(m, 1);
    float *kept = forward(m);
    for (int i = 0; i < fn_net_n_params(m->net); i++)
        fn_param_release_bf16(fn_net_param(m->net, i));
    expect_kept(m, 0);
    float *fresh = forward(m);
    for (int i = 0; i < fn_net_n_params(m->net); i++)
        EXPECT_OK(fn_param_keep_bf16(fn_net_param(m->net, i), fn_net_context(m->net)));
    for (int i = 0; i < BATCH * OUT; i++)
        if (memcmp(&kept[i], &fresh[i], sizeof(float)) != 0)
            fail_msg("after %s: output %d reading the kept copy %.9g, rounding W %.9g", after, i,
                     (double)kept[i], (double)fresh[i]);
    free(kept);
    free(fresh);
}

/* Fails unless a and b's block weights differ (so a stale copy shows). */
static void expect_other_weights(const model *a, const model *b)
{
    assert_false(same_weights(a->net, b->net));
}

static void test_writers_refresh(void **state)
{
    (void)state;
    fn_context *ctx = bf16_context();
    char dir[64], path[160];
    program_temp_dir(dir, sizeof dir, "fn_bf16_copy_");
    model src, m;
    model_make(&src, ctx, MOMENTUM, 21);
    step(&src); /* weights no init gives */
    model_make(&m, ctx, MOMENTUM, 11);
    expect_copy_current(&m, "the optimiser's adoption of initialised weights");

    expect_other_weights(&src, &m);
    snprintf(path, sizeof path, "%s/w.h5", dir);
    EXPECT_OK(fn_weights_save(path, src.net, NULL));
    EXPECT_OK(fn_weights_load(m.net, path));
    expect_same_weights(src.net, m.net);
    expect_copy_current(&m, "loading a weights file");

    step(&m);
    expect_other_weights(&src, &m);
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    EXPECT_OK(fn_export_write(src.net, NULL, NULL, FN_EXPORT_SAFETENSORS, path));
    EXPECT_OK(fn_weights_load(m.net, path));
    expect_same_weights(src.net, m.net);
    expect_copy_current(&m, "loading a safetensors file");

    step(&src);
    expect_other_weights(&src, &m);
    snprintf(path, sizeof path, "%s/ckpt.h5", dir);
    const fn_train_state s = {.epoch = 1, .seed = 5, .batch_size = BATCH, .rows = 40,
                              .slab_rows = 40};
    EXPECT_OK(fn_checkpoint_save(path, src.net, src.opt, &s, NULL));
    fn_train_state back = {0};
    EXPECT_OK(fn_checkpoint_load(path, m.net, m.opt, &back));
    expect_same_weights(src.net, m.net);
    expect_copy_current(&m, "loading a checkpoint");

    /* And training goes on from there as the source's does. */
    step(&src);
    step(&m);
    expect_same_weights(src.net, m.net);
    model_free(&src);
    model_free(&m);
    program_remove_dir(dir);
    fn_context_destroy(ctx);
}

/* --- through the trainer ---------------------------------------------------------- */

static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > 0); }

static const set_shape shape = {.cols = 8, .label = label_of};

enum { ROWS = 200, RUN_BATCH = 32, EPOCHS = 3 };

static int setup_runs(void **state)
{
    *state = deferred_run_files("fn_bf16_copy_run_", &shape, ROWS, 21,
                                "block 32, block 32, linear 3", "cuda", RUN_BATCH, EPOCHS);
    return 0;
}

static int teardown_runs(void **state)
{
    unsetenv("FN_TEST_BF16_COPY_OFF");
    return deferred_run_teardown(state);
}

/* A run of the fixture's run.ini in bf16 with `sets` into <dir>/<out>,
 * the copies off or kept, stopped after stop_after steps (-1: never),
 * resumed when `resume`. */
static fn_trainer *bf16_run(const program_files *f, const char *out, const char *sets, int off,
                            int resume, long long stop_after, fn_config **cfg)
{
    char all[512], msg[MSG_CAP];
    sets_join(all, sizeof all, "run.math=bf16", sets);
    set_copy_off(off);
    fn_status st;
    fn_trainer *t = trainer_run(f->dir, f->ini, out, NULL, all, resume, stop_after, cfg, &st, msg,
                                MSG_CAP);
    set_copy_off(0);
    if (st != FN_OK)
        fail_msg("%s: %s", out, msg);
    return t;
}

/* The run with copies kept and the run without end alike (weights bit
 * for bit, metrics.csv but its times). */
static void expect_same_runs(const program_files *f, const char *name, const char *sets)
{
    skip_without_gpu();
    skip_without_test_hooks();
    char out[2][64];
    snprintf(out[0], sizeof out[0], "%s_kept", name);
    snprintf(out[1], sizeof out[1], "%s_off", name);
    fn_config *ck = NULL, *co = NULL;
    fn_trainer *t[2];
    t[0] = bf16_run(f, out[0], sets, 0, 0, -1, &ck);
    t[1] = bf16_run(f, out[1], sets, 1, 0, -1, &co);
    expect_runs_same_as_first(f->dir, t, out, 2);
    trainer_release(t[0], ck);
    trainer_release(t[1], co);
}

static void test_run_momentum(void **state)
{
    expect_same_runs(*state, "momentum", NULL);
}

static void test_run_plain(void **state)
{
    expect_same_runs(*state, "plain", "train.momentum=0");
}

static void test_run_adamw(void **state)
{
    expect_same_runs(*state, "adamw", "train.optimizer=adamw;train.momentum=0");
}

/* Kept copies, stopped mid-epoch 2 and resumed from the checkpoint, end as
 * the whole run without copies. */
static void test_run_resumed(void **state)
{
    skip_without_gpu();
    skip_without_test_hooks();
    const program_files *f = *state;
    fn_config *cw = NULL, *cp = NULL;
    fn_trainer *whole = bf16_run(f, "whole", NULL, 1, 0, -1, &cw);
    fn_trainer *parts = bf16_run(f, "parts", NULL, 0, 0, 10, &cp);
    assert_int_equal(fn_trainer_state(parts)->global_step, 10);
    trainer_release(parts, cp);
    parts = bf16_run(f, "parts", NULL, 0, 1, -1, &cp);
    assert_int_equal(fn_trainer_outcome(parts), FN_TRAIN_DONE);
    expect_same_weights(fn_trainer_net(parts), fn_trainer_net(whole));
    trainer_release(parts, cp);
    trainer_release(whole, cw);
}

#define RUN_TEST(test) cmocka_unit_test_setup_teardown(test, setup_runs, teardown_runs)

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_optimiser_keeps_copies),
              cmocka_unit_test(test_same_training_momentum),
              cmocka_unit_test(test_same_training_plain),
              cmocka_unit_test(test_same_training_adamw), cmocka_unit_test(test_writers_refresh),
              RUN_TEST(test_run_momentum), RUN_TEST(test_run_plain), RUN_TEST(test_run_adamw),
              RUN_TEST(test_run_resumed))
