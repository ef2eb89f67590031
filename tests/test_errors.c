/* test_errors.c — the invalid-argument paths of the public API on the CPU:
 * every bad call must fail with the right status AND a message that names
 * the thing and the problem, and must leave nothing half-built behind. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/block.h"
#include "fusenet/linear.h"
#include "fusenet/loss.h"
#include "fusenet/loss_kind.h"
#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "test_main.h"

typedef struct fixture {
    fn_context *ctx;
    fn_rng rng;
} fixture;

static int setup(void **state)
{
    static fixture f;
    f = (fixture){.rng = {.seed = 1, .offset = 0}};
    if (fn_context_create(&f.ctx, FN_CPU, 0, FN_MATH_FP32) != FN_OK)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fn_context_destroy(f->ctx);
    return 0;
}

/* A block [in -> out] with `groups` groups for batches of up to 8 rows. */
static fn_layer *make_block(fixture *f, int in, int out, int groups)
{
    fn_layer *l = NULL;
    fn_block_config cfg = fn_block_config_default(in, out, groups);
    EXPECT_OK(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng));
    return l;
}

static void test_block_config(void **state)
{
    fixture *f = *state;
    fn_layer *l = (fn_layer *)&l; /* must be reset to NULL on failure */
    fn_block_config cfg = fn_block_config_default(64, 10, 3);
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID,
                "groups 3 does not divide out_features 10");
    assert_null(l);
    cfg = fn_block_config_default(0, 16, 4);
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID, "in 0");
    cfg = fn_block_config_default(16, 0, 1);
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID, "out 0");
    cfg = fn_block_config_default(16, 16, 0);
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID, "groups 0");
    cfg = fn_block_config_default(16, 16, 4);
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 0, &f->rng), FN_ERR_INVALID, "max_batch 0");
    cfg.eps = 0.0f;
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID, "eps");
    cfg.eps = NAN;
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID, "eps");
    cfg = fn_block_config_default(16, 16, 4);
    cfg.negative_slope = -0.5f;
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID,
                "negative_slope -0.5");
    cfg.negative_slope = INFINITY;
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID,
                "negative_slope");
    assert_null(l);
    assert_int_equal(f->rng.offset, 0); /* nothing was drawn for a rejected block */
}

static void test_block_null_arguments(void **state)
{
    fixture *f = *state;
    fn_layer *l = NULL;
    fn_block_config cfg = fn_block_config_default(16, 16, 4);
    EXPECT_FAIL(fn_block_create(NULL, f->ctx, &cfg, 8, &f->rng), FN_ERR_INVALID, "layer is NULL");
    EXPECT_FAIL(fn_block_create(&l, NULL, &cfg, 8, &f->rng), FN_ERR_INVALID, "ctx is NULL");
    EXPECT_FAIL(fn_block_create(&l, f->ctx, NULL, 8, &f->rng), FN_ERR_INVALID, "cfg is NULL");
    EXPECT_FAIL(fn_block_create(&l, f->ctx, &cfg, 8, NULL), FN_ERR_INVALID, "rng is NULL");
    fn_block_config got;
    EXPECT_FAIL(fn_block_get_config(NULL, &got), FN_ERR_INVALID, "layer is NULL");
}

static void test_block_forward_shapes(void **state)
{
    fixture *f = *state;
    fn_layer *l = make_block(f, 64, 32, 4);
    float xbuf[9 * 100] = {0}, ybuf[9 * 32] = {0};
    fn_tensor x = fn_tensor_view(xbuf, 4, 100, FN_CPU);
    fn_tensor y = fn_tensor_view(ybuf, 4, 32, FN_CPU);
    EXPECT_FAIL(fn_layer_forward(l, &x, &y), FN_ERR_INVALID,
                "block: x has 100 columns, expected 64");
    x = fn_tensor_view(xbuf, 9, 64, FN_CPU);
    y = fn_tensor_view(ybuf, 9, 32, FN_CPU);
    EXPECT_FAIL(fn_layer_forward(l, &x, &y), FN_ERR_INVALID,
                "x has 9 rows, expected 1 to max_batch 8");
    x = fn_tensor_view(xbuf, 4, 64, FN_CPU);
    y = fn_tensor_view(ybuf, 4, 31, FN_CPU);
    EXPECT_FAIL(fn_layer_forward(l, &x, &y), FN_ERR_INVALID,
                "block: y has shape [4, 31], expected [4, 32]");
    EXPECT_FAIL(fn_layer_forward(l, &x, NULL), FN_ERR_INVALID, "block: y is NULL");
    EXPECT_FAIL(fn_layer_forward(l, NULL, &y), FN_ERR_INVALID, "block: x is NULL");
    fn_tensor empty = fn_tensor_view(NULL, 4, 64, FN_CPU);
    EXPECT_FAIL(fn_layer_forward(l, &empty, &y), FN_ERR_INVALID, "block: x is NULL");
    EXPECT_FAIL(fn_layer_forward(NULL, &x, &y), FN_ERR_INVALID, "layer is NULL");
    fn_layer_destroy(l);
}

static void test_block_wrong_device(void **state)
{
    fixture *f = *state;
    fn_layer *l = make_block(f, 8, 8, 2);
    float xbuf[2 * 8] = {0}, ybuf[2 * 8] = {0};
    /* Descriptors that claim GPU memory: rejected before anything reads them. */
    fn_tensor x = fn_tensor_view(xbuf, 2, 8, FN_CUDA);
    fn_tensor y = fn_tensor_view(ybuf, 2, 8, FN_CPU);
    EXPECT_FAIL(fn_layer_forward(l, &x, &y), FN_ERR_INVALID, "block: x is on the cuda");
    x.device = FN_CPU;
    y.device = FN_CUDA;
    EXPECT_FAIL(fn_layer_forward(l, &x, &y), FN_ERR_INVALID, "block: y is on the cuda");
    y.device = FN_CPU;
    EXPECT_OK(fn_layer_forward(l, &x, &y));
    fn_tensor dx = fn_tensor_view(xbuf, 2, 8, FN_CUDA);
    EXPECT_FAIL(fn_layer_backward(l, &y, &dx), FN_ERR_INVALID, "block: dx is on the cuda");
    fn_layer_destroy(l);
}

static void test_block_backward_order_and_shapes(void **state)
{
    fixture *f = *state;
    fn_layer *l = make_block(f, 6, 8, 2);
    float xbuf[8 * 6] = {0}, ybuf[8 * 8] = {0}, dybuf[8 * 8] = {0}, dxbuf[8 * 6] = {0};
    fn_tensor x = fn_tensor_view(xbuf, 4, 6, FN_CPU), y = fn_tensor_view(ybuf, 4, 8, FN_CPU);
    fn_tensor dy = fn_tensor_view(dybuf, 4, 8, FN_CPU), dx = fn_tensor_view(dxbuf, 4, 6, FN_CPU);
    EXPECT_FAIL(fn_layer_backward(l, &dy, &dx), FN_ERR_INVALID, "block: backward before forward");
    EXPECT_OK(fn_layer_forward(l, &x, &y));
    fn_tensor dy3 = fn_tensor_view(dybuf, 3, 8, FN_CPU);
    EXPECT_FAIL(fn_layer_backward(l, &dy3, &dx), FN_ERR_INVALID,
                "block: dy has shape [3, 8], expected [4, 8]");
    fn_tensor dx_wide = fn_tensor_view(dxbuf, 4, 7, FN_CPU);
    EXPECT_FAIL(fn_layer_backward(l, &dy, &dx_wide), FN_ERR_INVALID,
                "block: dx has shape [4, 7], expected [4, 6]");
    EXPECT_FAIL(fn_layer_backward(l, NULL, &dx), FN_ERR_INVALID, "block: dy is NULL");
    EXPECT_OK(fn_layer_backward(l, &dy, NULL)); /* dx is optional */
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    /* A forward its checks reject changes nothing: the last good one stands. */
    fn_tensor bad_x = fn_tensor_view(xbuf, 4, 5, FN_CPU);
    EXPECT_FAIL(fn_layer_forward(l, &bad_x, &y), FN_ERR_INVALID, "x has 5 columns");
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    fn_layer_destroy(l);
}

static void test_linear_errors(void **state)
{
    fixture *f = *state;
    fn_layer *l = (fn_layer *)&l;
    EXPECT_FAIL(fn_linear_create(&l, f->ctx, 0, 4, 8, &f->rng), FN_ERR_INVALID, "in 0");
    assert_null(l);
    EXPECT_FAIL(fn_linear_create(&l, f->ctx, 4, 0, 8, &f->rng), FN_ERR_INVALID, "out 0");
    EXPECT_FAIL(fn_linear_create(&l, f->ctx, 4, 4, 0, &f->rng), FN_ERR_INVALID, "max_batch 0");
    EXPECT_FAIL(fn_linear_create(&l, f->ctx, 4, 4, 8, NULL), FN_ERR_INVALID, "rng is NULL");
    EXPECT_OK(fn_linear_create(&l, f->ctx, 5, 3, 8, &f->rng));
    float xbuf[8 * 5] = {0}, ybuf[8 * 3] = {0};
    fn_tensor x = fn_tensor_view(xbuf, 2, 4, FN_CPU), y = fn_tensor_view(ybuf, 2, 3, FN_CPU);
    EXPECT_FAIL(fn_layer_forward(l, &x, &y), FN_ERR_INVALID,
                "linear: x has 4 columns, expected 5");
    EXPECT_FAIL(fn_layer_backward(l, &y, NULL), FN_ERR_INVALID, "linear: backward before forward");
    fn_block_config cfg;
    EXPECT_FAIL(fn_block_get_config(l, &cfg), FN_ERR_INVALID, "linear, not a block");
    assert_null(fn_layer_param(l, "gamma"));
    assert_non_null(fn_layer_param(l, "bias"));
    fn_layer_destroy(l);
}

static void test_sgd_options(void **state)
{
    (void)state;
    fn_sgd_config cfg = fn_sgd_config_default(0.0f);
    EXPECT_FAIL(fn_sgd_config_check(&cfg), FN_ERR_INVALID, "lr 0 must be positive");
    cfg.lr = NAN;
    EXPECT_FAIL(fn_sgd_config_check(&cfg), FN_ERR_INVALID, "lr");
    cfg = fn_sgd_config_default(0.1f);
    EXPECT_OK(fn_sgd_config_check(&cfg));
    cfg.momentum = -0.5f;
    EXPECT_FAIL(fn_sgd_config_check(&cfg), FN_ERR_INVALID, "momentum -0.5");
    cfg = fn_sgd_config_default(0.1f);
    cfg.weight_decay = -1.0f;
    EXPECT_FAIL(fn_sgd_config_check(&cfg), FN_ERR_INVALID, "weight_decay -1");
    cfg = fn_sgd_config_default(0.1f);
    cfg.dampening = 1.5f;
    EXPECT_FAIL(fn_sgd_config_check(&cfg), FN_ERR_INVALID, "dampening 1.5 must be in [0, 1]");
    cfg = fn_sgd_config_default(0.1f);
    cfg.nesterov = 1;
    EXPECT_FAIL(fn_sgd_config_check(&cfg), FN_ERR_INVALID, "nesterov needs momentum > 0");
    cfg.momentum = 0.9f;
    cfg.dampening = 0.1f;
    EXPECT_FAIL(fn_sgd_config_check(&cfg), FN_ERR_INVALID, "dampening 0");
    cfg.dampening = 0.0f;
    EXPECT_OK(fn_sgd_config_check(&cfg));
}

static void test_sgd_update_and_create(void **state)
{
    fixture *f = *state;
    float v[6] = {0}, g[6] = {0}, b[6] = {0};
    fn_tensor value = fn_tensor_view(v, 2, 3, FN_CPU), grad = fn_tensor_view(g, 3, 2, FN_CPU);
    fn_tensor buf = fn_tensor_view(b, 2, 3, FN_CPU);
    fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    EXPECT_FAIL(fn_sgd_update(f->ctx, &value, &grad, NULL, &cfg, 1), FN_ERR_INVALID,
                "grad has shape [3, 2], expected [2, 3]");
    grad = fn_tensor_view(g, 2, 3, FN_CPU);
    cfg.momentum = 0.9f;
    EXPECT_FAIL(fn_sgd_update(f->ctx, &value, &grad, NULL, &cfg, 1), FN_ERR_INVALID,
                "momentum buffer is NULL");
    grad.device = FN_CUDA;
    EXPECT_FAIL(fn_sgd_update(f->ctx, &value, &grad, &buf, &cfg, 1), FN_ERR_INVALID,
                "grad is on the cuda");
    grad.device = FN_CPU;
    EXPECT_OK(fn_sgd_update(f->ctx, &value, &grad, &buf, &cfg, 1));
    cfg.lr = -1.0f;
    EXPECT_FAIL(fn_sgd_update(f->ctx, &value, &grad, &buf, &cfg, 1), FN_ERR_INVALID, "lr -1");

    fn_sgd *opt = (fn_sgd *)&opt;
    fn_layer *l = make_block(f, 4, 4, 2);
    fn_param *params[] = {fn_layer_param(l, "weight"), NULL};
    EXPECT_FAIL(fn_sgd_create(&opt, f->ctx, params, 2, &cfg), FN_ERR_INVALID, "lr -1");
    assert_null(opt);
    cfg.lr = 0.1f;
    EXPECT_FAIL(fn_sgd_create(&opt, f->ctx, params, 2, &cfg), FN_ERR_INVALID,
                "parameter 1 is NULL");
    EXPECT_FAIL(fn_sgd_create(&opt, f->ctx, params, 0, &cfg), FN_ERR_INVALID, "no parameters");
    EXPECT_OK(fn_sgd_create(&opt, f->ctx, params, 1, &cfg));
    fn_sgd_set_lr(opt, INFINITY);
    EXPECT_FAIL(fn_sgd_step(opt), FN_ERR_INVALID, "weight");
    assert_int_equal(fn_sgd_steps(opt), 0);
    fn_sgd_destroy(opt);
    fn_layer_destroy(l);
}

static void test_losses(void **state)
{
    fixture *f = *state;
    float p[6] = {0}, t[6] = {0}, d[6] = {0}, lv[1] = {0};
    fn_tensor pred = fn_tensor_view(p, 2, 3, FN_CPU), target = fn_tensor_view(t, 3, 2, FN_CPU);
    fn_tensor loss = fn_tensor_view(lv, 1, 1, FN_CPU), dpred = fn_tensor_view(d, 2, 3, FN_CPU);
    EXPECT_FAIL(fn_mse_loss(f->ctx, &pred, &target, &loss, &dpred), FN_ERR_INVALID,
                "mse loss: target has shape [3, 2], expected [2, 3]");
    target = fn_tensor_view(t, 2, 3, FN_CPU);
    fn_tensor wide_loss = fn_tensor_view(d, 1, 2, FN_CPU);
    EXPECT_FAIL(fn_mse_loss(f->ctx, &pred, &target, &wide_loss, &dpred), FN_ERR_INVALID,
                "loss has shape [1, 2], expected [1, 1]");
    fn_tensor bad_d = fn_tensor_view(d, 1, 3, FN_CPU);
    EXPECT_FAIL(fn_mse_loss(f->ctx, &pred, &target, &loss, &bad_d), FN_ERR_INVALID,
                "dpred has shape [1, 3]");
    EXPECT_FAIL(fn_mse_loss(f->ctx, &pred, &target, NULL, NULL), FN_ERR_INVALID, "loss is NULL");
    EXPECT_FAIL(fn_mse_loss(NULL, &pred, &target, &loss, NULL), FN_ERR_INVALID, "ctx is NULL");
    pred.device = FN_CUDA;
    EXPECT_FAIL(fn_mse_loss(f->ctx, &pred, &target, &loss, NULL), FN_ERR_INVALID,
                "pred is on the cuda, expected the cpu");
    pred.device = FN_CPU;
    EXPECT_OK(fn_mse_loss(f->ctx, &pred, &target, &loss, NULL));
}

static void test_cross_entropy_labels(void **state)
{
    fixture *f = *state;
    float p[6] = {0}, d[6] = {0}, lv[1] = {0};
    fn_tensor logits = fn_tensor_view(p, 2, 3, FN_CPU), loss = fn_tensor_view(lv, 1, 1, FN_CPU);
    fn_tensor dlogits = fn_tensor_view(d, 2, 3, FN_CPU);
    int32_t labels[2] = {0, 3};
    EXPECT_FAIL(fn_cross_entropy_loss(f->ctx, &logits, NULL, &loss, &dlogits), FN_ERR_INVALID,
                "labels is NULL");
    EXPECT_FAIL(fn_cross_entropy_loss(f->ctx, &logits, labels, &loss, &dlogits), FN_ERR_INVALID,
                "row 1: label 3 is outside [0, 3)");
    labels[0] = -1;
    EXPECT_FAIL(fn_cross_entropy_loss(f->ctx, &logits, labels, &loss, &dlogits), FN_ERR_INVALID,
                "row 0: label -1");
    int correct = -1;
    EXPECT_FAIL(fn_count_correct(f->ctx, &logits, labels, &correct), FN_ERR_INVALID,
                "row 0: label -1");
    labels[0] = 0;
    labels[1] = 2;
    EXPECT_FAIL(fn_count_correct(f->ctx, &logits, labels, NULL), FN_ERR_INVALID,
                "correct is NULL");
    EXPECT_OK(fn_count_correct(f->ctx, &logits, labels, &correct));
    assert_int_equal(correct, 1); /* all-equal rows: ties go to column 0 */
    assert_string_equal(fn_cross_entropy_kind.name, "cross_entropy");
}

static void test_net_errors(void **state)
{
    fixture *f = *state;
    fn_net *net = (fn_net *)&net;
    EXPECT_FAIL(fn_net_create(&net, f->ctx, 0), FN_ERR_INVALID, "max_batch 0");
    assert_null(net);
    EXPECT_OK(fn_net_create(&net, f->ctx, 8));
    float xbuf[8 * 16] = {0}, ybuf[8 * 4] = {0};
    fn_tensor x = fn_tensor_view(xbuf, 4, 16, FN_CPU), y;
    EXPECT_FAIL(fn_net_forward(net, &x, &y), FN_ERR_INVALID, "no layers");
    EXPECT_OK(fn_net_add(net, make_block(f, 16, 8, 2)));
    /* Rejected layers are destroyed by fn_net_add (ASan builds check it). */
    EXPECT_FAIL(fn_net_add(net, make_block(f, 7, 4, 1)), FN_ERR_INVALID,
                "layer 1 (block) takes 7 features, layer 0 gives 8");
    fn_layer *small = NULL;
    EXPECT_OK(fn_linear_create(&small, f->ctx, 8, 4, 4, &f->rng));
    EXPECT_FAIL(fn_net_add(net, small), FN_ERR_INVALID, "has max_batch 4, the net needs 8");
    EXPECT_FAIL(fn_net_add(net, NULL), FN_ERR_INVALID, "layer is NULL");
    EXPECT_OK(fn_linear_create(&small, f->ctx, 8, 4, 8, &f->rng));
    EXPECT_OK(fn_net_add(net, small));
    assert_int_equal(fn_net_out_features(net), 4);
    assert_int_equal(fn_net_n_params(net), 6);
    fn_tensor dy = fn_tensor_view(ybuf, 4, 4, FN_CPU);
    EXPECT_FAIL(fn_net_backward(net, &dy), FN_ERR_INVALID, "backward before forward");
    x = fn_tensor_view(xbuf, 4, 15, FN_CPU);
    EXPECT_FAIL(fn_net_forward(net, &x, &y), FN_ERR_INVALID,
                "net layer 0: block: x has 15 columns, expected 16");
    x = fn_tensor_view(xbuf, 4, 16, FN_CPU);
    EXPECT_OK(fn_net_forward(net, &x, &y));
    fn_tensor dy3 = fn_tensor_view(ybuf, 3, 4, FN_CPU);
    EXPECT_FAIL(fn_net_backward(net, &dy3), FN_ERR_INVALID,
                "net layer 1: linear: dy has shape [3, 4], expected [4, 4]");
    EXPECT_OK(fn_net_backward(net, &dy));
    fn_net_destroy(net);
}

static void test_init_errors(void **state)
{
    fixture *f = *state;
    float buf[4] = {0};
    fn_tensor t = fn_tensor_view(buf, 2, 2, FN_CPU);
    EXPECT_FAIL(fn_init_uniform(&t, 0.0f, 1.0f, NULL), FN_ERR_INVALID, "rng is NULL");
    EXPECT_FAIL(fn_init_uniform(&t, 1.0f, -1.0f, &f->rng), FN_ERR_INVALID, "not a finite range");
    EXPECT_FAIL(fn_init_uniform(NULL, 0.0f, 1.0f, &f->rng), FN_ERR_INVALID, "tensor is NULL");
    EXPECT_FAIL(fn_init_constant(NULL, 1.0f), FN_ERR_INVALID, "tensor is NULL");
    const uint64_t before = f->rng.offset;
    EXPECT_OK(fn_init_uniform(&t, -1.0f, 1.0f, &f->rng));
    assert_true(f->rng.offset == before + 4);
}

TEST_MAIN_EACH(setup, teardown,
               cmocka_unit_test(test_block_config),
               cmocka_unit_test(test_block_null_arguments),
               cmocka_unit_test(test_block_forward_shapes),
               cmocka_unit_test(test_block_wrong_device),
               cmocka_unit_test(test_block_backward_order_and_shapes),
               cmocka_unit_test(test_linear_errors),
               cmocka_unit_test(test_sgd_options),
               cmocka_unit_test(test_sgd_update_and_create),
               cmocka_unit_test(test_losses),
               cmocka_unit_test(test_cross_entropy_labels),
               cmocka_unit_test(test_net_errors),
               cmocka_unit_test(test_init_errors))
