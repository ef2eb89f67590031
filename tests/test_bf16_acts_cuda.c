/* test_bf16_acts_cuda.c — bfloat16 activations between layers (net.c,
 * layer.h: forward_bf16, bf16_input), in bf16 math on the GPU:
 *  - a net of three blocks and a linear head joins block 0 to block 1 and
 *    block 1 to block 2 through bfloat16 (the head and a residual block read
 *    their float input, so nothing joins into them): the net's buffers are
 *    smaller by the two float activations, 2 x BATCH x H x 4 bytes, and the
 *    layers' own buffers are the same; in fp32 math nothing joins; the
 *    memory check before building (model.h) counts the same saving;
 *  - training with the joins ends with the same weights, and every step's
 *    loss and output, bit for bit, as the same training with none (the test
 *    hook FN_TEST_BF16_ACTS_OFF: each block rounds its float input itself):
 *    momentum SGD, plain SGD folded into the backward, AdamW; a residual
 *    block writing bfloat16 into the block after it; and through `train`'s
 *    trainer (its CUDA graphs, its evaluation, metrics.csv);
 *  - the non-finite scan finds a NaN in a bfloat16 output where it finds it
 *    in the float one.
 * A producer that rounded otherwise than the consumer (not to nearest
 * even, or twice), or a consumer that read a stale input, changes the bits.
 * Skips without a GPU (and the comparisons without the test hooks). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
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
#include "fusenet/layer_kind.h"
#include "fusenet/linear.h"
#include "fusenet/loss.h"
#include "fusenet/model.h"
#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "optim/optimizers/sgd/sgd_fused.h"
#include "optim/optimizer_paths.h"
#include "core/test_hooks.h"
#include "test_main.h"
#include "trainer_run.h"
#include "nn/model_memory.h"

enum { BATCH = 24, IN = 40, H = 64, OUT = 10, GROUPS = 4, STEPS = 6, MSG_CAP = 1024 };
static const float lr = 0.05f;

typedef enum optimiser { MOMENTUM, PLAIN, ADAMW } optimiser;
static const char *const how_names[] = {"momentum SGD", "plain SGD (folded)", "AdamW"};

typedef struct model {
    fn_net *net;
    fn_optimizer *opt;
    fn_sgd *sgd; /* NULL for AdamW */
    optimiser how;
    fn_tensor x, target, loss, dy; /* [BATCH, IN], [BATCH, OUT], [1, 1], [BATCH, OUT] */
} model;

static void set_acts_off(int off)
{
    if (off)
        setenv("FN_TEST_BF16_ACTS_OFF", "1", 1);
    else
        unsetenv("FN_TEST_BF16_ACTS_OFF");
}

static void add_block(fn_net *net, fn_context *ctx, int in, int residual, fn_rng *rng)
{
    fn_layer *l = NULL;
    fn_block_config c = fn_block_config_default(in, H, GROUPS);
    c.residual = residual;
    EXPECT_OK(fn_block_create(&l, ctx, &c, BATCH, rng));
    EXPECT_OK(fn_net_add(net, l));
}

/* block IN -> H, then block H -> H (a residual one with `residual`), block
 * H -> H, linear H -> OUT from seed 11, built with the joins off or not;
 * its optimiser `how`; data and a target from seed 12. */
static void model_make(model *m, fn_context *ctx, optimiser how, int residual, int off)
{
    fn_rng rng = {.seed = 11, .offset = 0};
    fn_layer *l = NULL;
    *m = (model){.how = how};
    set_acts_off(off);
    EXPECT_OK(fn_net_create(&m->net, ctx, BATCH));
    add_block(m->net, ctx, IN, 0, &rng);
    add_block(m->net, ctx, H, residual, &rng);
    add_block(m->net, ctx, H, 0, &rng);
    EXPECT_OK(fn_linear_create(&l, ctx, H, OUT, BATCH, &rng));
    EXPECT_OK(fn_net_add(m->net, l));
    set_acts_off(0);
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
    EXPECT_OK(fn_tensor_alloc(&m->target, BATCH, OUT, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&m->loss, 1, 1, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&m->dy, BATCH, OUT, FN_CUDA));
    EXPECT_OK(fn_init_uniform(&m->x, -1.0f, 1.0f, &data));
    EXPECT_OK(fn_init_uniform(&m->target, -0.5f, 0.5f, &data));
}

static void model_free(model *m)
{
    fn_optimizer_destroy(m->opt);
    fn_net_destroy(m->net);
    fn_tensor_free(&m->x);
    fn_tensor_free(&m->target);
    fn_tensor_free(&m->loss);
    fn_tensor_free(&m->dy);
}

/* A training step under the mean squared error, as `train` takes it with
 * m's optimiser; its output and loss on the host (free them). */
static void step(model *m, float **y_host, float *loss)
{
    fn_tensor y;
    EXPECT_OK(fn_net_forward(m->net, &m->x, &y));
    *y_host = tensor_to_host(&y);
    EXPECT_OK(fn_mse_loss(fn_net_context(m->net), &y, &m->target, &m->loss, &m->dy));
    float *l = tensor_to_host(&m->loss);
    *loss = l[0];
    free(l);
    if (m->how == PLAIN) {
        EXPECT_OK(fn_optimizer_backward_step(m->opt, m->net, &m->dy));
        return;
    }
    EXPECT_OK(fn_net_backward(m->net, &m->dy));
    EXPECT_OK(fn_optimizer_step(m->opt));
}

static fn_context *bf16_context(void)
{
    skip_without_gpu();
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, FN_MATH_BF16));
    return ctx;
}

/* --- memory ---------------------------------------------------------------------- */

/* The float buffers between the layers of model_make's net without joins:
 * every layer's output [BATCH, H or OUT] and the gradients of all but the
 * last ([BATCH, H] each). */
static size_t float_buffer_bytes(void)
{
    return (size_t)BATCH * (3 * H + OUT) * sizeof(float) + (size_t)BATCH * 3 * H * sizeof(float);
}

static void expect_same_layer_buffers(const model *a, const model *b)
{
    for (int i = 0; i < fn_net_n_layers(a->net); i++)
        assert_int_equal(fn_layer_buffer_bytes(fn_net_layer(a->net, i)),
                         fn_layer_buffer_bytes(fn_net_layer(b->net, i)));
}

/* The memory check's activations (model.h) for model_make's net on ctx,
 * built with the joins off or not. */
static double estimated_activations(fn_context *ctx, int residual, int off)
{
    const fn_layer_kind *block = NULL, *res = NULL, *linear = NULL;
    EXPECT_OK(fn_layer_kind_find("block", &block));
    EXPECT_OK(fn_layer_kind_find("residual", &res));
    EXPECT_OK(fn_layer_kind_find("linear", &linear));
    const fn_layer_hparams hp = {.groups = GROUPS, .eps = 1e-5f, .negative_slope = 0.01f};
    const fn_layer_spec specs[] = {
        {block, H, 0}, {residual ? res : block, H, 0}, {block, H, 0}, {linear, OUT, 0}};
    set_acts_off(off);
    fn_model_memory need;
    fn_model_memory_start(&need, fn_context_device(ctx), fn_context_math(ctx));
    set_acts_off(0);
    for (int i = 0, in = IN; i < 4; in = fn_layer_spec_out(&specs[i], in), i++)
        fn_model_memory_add(&need, &specs[i], in, &hp, BATCH, i == 0);
    return need.activations;
}

static void test_joins_save_memory(void **state)
{
    (void)state;
    fn_context *ctx = bf16_context();
    model on, off;
    model_make(&on, ctx, MOMENTUM, 0, 0);
    model_make(&off, ctx, MOMENTUM, 0, 1);
    /* Blocks 0 -> 1 and 1 -> 2 joined: two float outputs [24, 64] gone,
     * 2 x 24 x 64 x 4 = 12288 bytes of 37824. */
    const size_t joined = 2 * (size_t)BATCH * H * sizeof(float);
    printf("bf16: net buffers %zu bytes with the joins, %zu without (%zu saved)\n",
           fn_net_buffer_bytes(on.net), fn_net_buffer_bytes(off.net), joined);
    assert_int_equal(fn_net_buffer_bytes(off.net), float_buffer_bytes());
    assert_int_equal(fn_net_buffer_bytes(on.net), float_buffer_bytes() - joined);
    expect_same_layer_buffers(&on, &off);
    /* the memory check before building counts the same saving */
    assert_true(estimated_activations(ctx, 0, 1) - estimated_activations(ctx, 0, 0) ==
                (double)joined);
    model_free(&on);
    model_free(&off);
    /* A residual block reads its float input (its skip): only 1 -> 2 joins. */
    model_make(&on, ctx, MOMENTUM, 1, 0);
    assert_int_equal(fn_net_buffer_bytes(on.net), float_buffer_bytes() - joined / 2);
    assert_true(estimated_activations(ctx, 1, 1) - estimated_activations(ctx, 1, 0) ==
                (double)(joined / 2));
    model_free(&on);
    fn_context_destroy(ctx);
    /* fp32 math: no layer takes bfloat16, nothing joins. */
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, FN_MATH_FP32));
    model_make(&on, ctx, MOMENTUM, 0, 0);
    assert_int_equal(fn_net_buffer_bytes(on.net), float_buffer_bytes());
    assert_true(estimated_activations(ctx, 0, 0) == estimated_activations(ctx, 0, 1));
    model_free(&on);
    fn_context_destroy(ctx);
}

/* --- training, joined against float ---------------------------------------------- */

static void expect_same_training(optimiser how, int residual)
{
    skip_without_test_hooks();
    fn_context *ctx = bf16_context();
    model on, off;
    model_make(&on, ctx, how, residual, 0);
    model_make(&off, ctx, how, residual, 1);
    assert_true(fn_net_buffer_bytes(on.net) < fn_net_buffer_bytes(off.net));
    for (int k = 0; k < STEPS; k++) {
        float *y_on, *y_off, loss_on, loss_off;
        step(&on, &y_on, &loss_on);
        step(&off, &y_off, &loss_off);
        printf("%s%s step %d: loss %.9g joined, %.9g float\n", how_names[how],
               residual ? " (residual)" : "", k, (double)loss_on, (double)loss_off);
        if (memcmp(&loss_on, &loss_off, sizeof loss_on) != 0)
            fail_msg("%s step %d: loss %.9g joined, %.9g float", how_names[how], k,
                     (double)loss_on, (double)loss_off);
        for (int i = 0; i < BATCH * OUT; i++)
            if (memcmp(&y_on[i], &y_off[i], sizeof(float)) != 0)
                fail_msg("%s step %d: output %d is %.9g joined, %.9g float", how_names[how], k,
                         i, (double)y_on[i], (double)y_off[i]);
        free(y_on);
        free(y_off);
    }
    expect_same_weights(on.net, off.net);
    model_free(&on);
    model_free(&off);
    fn_context_destroy(ctx);
}

static void test_same_training_momentum(void **state)
{
    (void)state;
    expect_same_training(MOMENTUM, 0);
}

static void test_same_training_plain(void **state)
{
    (void)state;
    expect_same_training(PLAIN, 0);
}

static void test_same_training_adamw(void **state)
{
    (void)state;
    expect_same_training(ADAMW, 0);
}

static void test_same_training_residual(void **state)
{
    (void)state;
    expect_same_training(MOMENTUM, 1);
}

/* --- the non-finite scan --------------------------------------------------------- */

/* A NaN in row 3 of x makes row 3 of block 0's output NaN: found there,
 * in its bfloat16 output as in its float one. */
static void test_scan_finds_bf16_output(void **state)
{
    (void)state;
    skip_without_test_hooks();
    fn_context *ctx = bf16_context();
    model m[2];
    fn_nonfinite found[2];
    for (int k = 0; k < 2; k++) {
        model_make(&m[k], ctx, MOMENTUM, 0, k);
        float *x = tensor_to_host(&m[k].x);
        x[3 * IN + 5] = NAN;
        EXPECT_OK(fn_tensor_upload(&m[k].x, x, (size_t)BATCH * IN));
        free(x);
        fn_tensor y;
        EXPECT_OK(fn_net_forward(m[k].net, &m[k].x, &y));
        EXPECT_OK(fn_net_find_nonfinite(m[k].net, 0, &found[k]));
        printf("%s: layer %d %s row %d col %d\n", k ? "float" : "joined", found[k].layer,
               found[k].what, found[k].row, found[k].col);
        assert_int_equal(found[k].layer, 0);
        assert_string_equal(found[k].what, "output");
        assert_int_equal(found[k].row, 3);
        assert_true(isnan(found[k].value));
    }
    assert_int_equal(found[0].col, found[1].col);
    model_free(&m[0]);
    model_free(&m[1]);
    fn_context_destroy(ctx);
}

/* --- through the trainer ---------------------------------------------------------- */

static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > 0); }

static const set_shape shape = {.cols = 8, .label = label_of};

enum { ROWS = 200, RUN_BATCH = 32, EPOCHS = 3 };

static int setup_runs(void **state)
{
    *state = deferred_run_files("fn_bf16_acts_run_", &shape, ROWS, 21,
                                "block 32, block 32, block 32, linear 3", "cuda", RUN_BATCH,
                                EPOCHS);
    return 0;
}

static int teardown_runs(void **state)
{
    unsetenv("FN_TEST_BF16_ACTS_OFF");
    return deferred_run_teardown(state);
}

/* A run of the fixture's run.ini in bf16 with `sets` into <dir>/<out>,
 * the joins off or on. */
static fn_trainer *bf16_run(const program_files *f, const char *out, const char *sets, int off,
                            fn_config **cfg)
{
    char all[512], msg[MSG_CAP];
    sets_join(all, sizeof all, "run.math=bf16", sets);
    set_acts_off(off);
    fn_status st;
    fn_trainer *t = trainer_run(f->dir, f->ini, out, NULL, all, 0, -1, cfg, &st, msg, MSG_CAP);
    set_acts_off(0);
    if (st != FN_OK)
        fail_msg("%s: %s", out, msg);
    return t;
}

/* The run with the joins and the run without end alike (weights bit for
 * bit, metrics.csv but its times: the losses and the evaluations). */
static void expect_same_runs(const program_files *f, const char *name, const char *sets)
{
    skip_without_gpu();
    skip_without_test_hooks();
    char out[2][64];
    snprintf(out[0], sizeof out[0], "%s_joined", name);
    snprintf(out[1], sizeof out[1], "%s_float", name);
    fn_config *con = NULL, *coff = NULL;
    fn_trainer *t[2];
    t[0] = bf16_run(f, out[0], sets, 0, &con);
    t[1] = bf16_run(f, out[1], sets, 1, &coff);
    assert_true(fn_net_buffer_bytes(fn_trainer_net(t[0])) <
                fn_net_buffer_bytes(fn_trainer_net(t[1])));
    expect_runs_same_as_first(f->dir, t, out, 2);
    trainer_release(t[0], con);
    trainer_release(t[1], coff);
}

static void test_run_momentum(void **state)
{
    expect_same_runs(*state, "momentum", NULL);
}

static void test_run_plain(void **state)
{
    expect_same_runs(*state, "plain", "train.momentum=0");
}

#define RUN_TEST(test) cmocka_unit_test_setup_teardown(test, setup_runs, teardown_runs)

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_joins_save_memory),
              cmocka_unit_test(test_same_training_momentum),
              cmocka_unit_test(test_same_training_plain),
              cmocka_unit_test(test_same_training_adamw),
              cmocka_unit_test(test_same_training_residual),
              cmocka_unit_test(test_scan_finds_bf16_output), RUN_TEST(test_run_momentum),
              RUN_TEST(test_run_plain))
