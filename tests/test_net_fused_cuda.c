/* test_net_fused_cuda.c — fn_sgd_fused_backward, the net's plain-SGD step
 * with the update folded into backward (what `train` runs on the GPU when
 * momentum and weight decay are 0), against fn_net_zero_grad +
 * fn_net_backward + fn_sgd_step on two copies of one net (block 40 -> 64,
 * block 64 -> 32, linear 32 -> 10; batch 24):
 *  - on the GPU, in every math mode, after one step: the linear layer's
 *    parameters and every block's bias, gamma and beta bit for bit; each
 *    block's weight within 8 float32 roundings of |w| + lr |dW| (the fused
 *    update is accumulated by the dW product: one rounding instead of two);
 *    after four steps every parameter within 1e-4 (bf16: 2.3e-2, see
 *    compare_steps) of its total change plus 8 roundings of its magnitude;
 *    and two fused runs bit for bit equal;
 *  - on the CPU (no fusion there: backward and update layer by layer)
 *    bit for bit after four steps;
 *  - fn_sgd_count_step advances the step count only for plain SGD;
 *  - fused (fn_optimizer_fuse, as `train` fuses), the blocks' gradients are
 *    freed on the GPU and the results stay bit for bit the fused ones; the
 *    optimiser's own step then fails and its zeroing skips them; a later
 *    fn_net_backward allocates them again; on the CPU (no fused backward)
 *    nothing is freed, and a released layer's gradients come back from
 *    its next backward with the bits of one never released.
 * The GPU cases skip, saying why, without a GPU. */
#include <float.h>
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
#include "fusenet/block.h"
#include "fusenet/linear.h"
#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "optim/optimizers/sgd/sgd_fused.h"
#include "optim/optimizer_paths.h"
#include "test_main.h"

enum { BATCH = 24, IN = 40, H1 = 64, H2 = 32, OUT = 10, GROUPS = 4, STEPS = 4 };
static const float lr = 0.1f;

typedef struct model {
    fn_net *net;
    fn_sgd *opt;
    fn_tensor x, dy; /* [BATCH, IN], [BATCH, OUT] */
} model;

/* The same net, data and output gradient for every call with one device. */
static void model_make(model *m, fn_context *ctx)
{
    const fn_device dev = fn_context_device(ctx);
    fn_rng rng = {.seed = 11, .offset = 0};
    fn_layer *l = NULL;
    EXPECT_OK(fn_net_create(&m->net, ctx, BATCH));
    fn_block_config c1 = fn_block_config_default(IN, H1, GROUPS);
    fn_block_config c2 = fn_block_config_default(H1, H2, GROUPS);
    EXPECT_OK(fn_block_create(&l, ctx, &c1, BATCH, &rng));
    EXPECT_OK(fn_net_add(m->net, l));
    EXPECT_OK(fn_block_create(&l, ctx, &c2, BATCH, &rng));
    EXPECT_OK(fn_net_add(m->net, l));
    EXPECT_OK(fn_linear_create(&l, ctx, H2, OUT, BATCH, &rng));
    EXPECT_OK(fn_net_add(m->net, l));
    /* gamma and beta off their defaults, so their updates show. */
    for (int i = 0; i < 2; i++) {
        fn_layer *block = fn_net_layer(m->net, i);
        EXPECT_OK(fn_init_uniform(&fn_layer_param(block, "gamma")->value, 0.5f, 1.5f, &rng));
        EXPECT_OK(fn_init_uniform(&fn_layer_param(block, "beta")->value, -0.5f, 0.5f, &rng));
    }
    const fn_sgd_config cfg = fn_sgd_config_default(lr);
    EXPECT_OK(fn_sgd_create(&m->opt, ctx, fn_net_params(m->net), fn_net_n_params(m->net), &cfg));
    fn_rng data = {.seed = 12, .offset = 0};
    EXPECT_OK(fn_tensor_alloc(&m->x, BATCH, IN, dev));
    EXPECT_OK(fn_tensor_alloc(&m->dy, BATCH, OUT, dev));
    EXPECT_OK(fn_init_uniform(&m->x, -1.0f, 1.0f, &data));
    EXPECT_OK(fn_init_uniform(&m->dy, -0.5f, 0.5f, &data));
}

static void model_free(model *m)
{
    fn_sgd_destroy(m->opt); /* gives fused layers gradients of their own again */
    for (int i = 0; i < fn_net_n_params(m->net); i++)
        assert_non_null(fn_net_param(m->net, i)->grad.data);
    fn_net_destroy(m->net);
    fn_tensor_free(&m->x);
    fn_tensor_free(&m->dy);
}

static void step(model *m, int fused)
{
    fn_tensor y;
    EXPECT_OK(fn_net_forward(m->net, &m->x, &y));
    if (fused) {
        EXPECT_OK(fn_sgd_fused_backward(m->net, &m->dy, lr));
        EXPECT_OK(fn_sgd_count_step(m->opt));
    } else {
        EXPECT_OK(fn_net_zero_grad(m->net));
        EXPECT_OK(fn_net_backward(m->net, &m->dy));
        EXPECT_OK(fn_sgd_step(m->opt));
    }
}

/* Host copies of every parameter's values (or gradients) of the net. */
static float **snapshot(const model *m, int grads)
{
    float **s = calloc((size_t)fn_net_n_params(m->net), sizeof *s);
    assert_non_null(s);
    for (int i = 0; i < fn_net_n_params(m->net); i++) {
        const fn_param *p = fn_net_param(m->net, i);
        s[i] = tensor_to_host(grads ? &p->grad : &p->value);
    }
    return s;
}

static void snapshot_free(const model *m, float **s)
{
    for (int i = 0; i < fn_net_n_params(m->net); i++)
        free(s[i]);
    free(s);
}

/* Whether net parameter p is a block's weight. */
static int is_block_weight(const model *m, int p)
{
    const int n = fn_net_n_layers(m->net);
    for (int i = 0, first = 0; i < n; first += fn_net_layer(m->net, i++)->n_params) {
        const fn_layer *l = fn_net_layer(m->net, i);
        if (p < first + l->n_params)
            return strcmp(l->ops->kind, "block") == 0 && strcmp(l->params[p - first].name, "weight") == 0;
    }
    return 0;
}

/* After one step: all but the blocks' weights bit for bit; those within 8
 * roundings of |w0| + lr |dW|. */
static void compare_one_step(fn_math math)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, math));
    model a, b;
    model_make(&a, ctx);
    model_make(&b, ctx);
    float **w0 = snapshot(&a, 0);
    step(&a, 0);
    step(&b, 1);
    assert_int_equal(fn_sgd_steps(a.opt), 1);
    assert_int_equal(fn_sgd_steps(b.opt), 1);
    float **va = snapshot(&a, 0), **vb = snapshot(&b, 0), **ga = snapshot(&a, 1);
    const char *mode = fn_math_name(math);
    for (int p = 0; p < fn_net_n_params(a.net); p++) {
        const size_t n = fn_tensor_count(&fn_net_param(a.net, p)->value);
        const char *name = fn_net_param(a.net, p)->name;
        if (!is_block_weight(&a, p)) {
            for (size_t i = 0; i < n; i++)
                if (memcmp(&va[p][i], &vb[p][i], sizeof(float)) != 0)
                    fail_msg("%s: parameter %d (%s) value %zu: fused %.9g, unfused %.9g", mode, p,
                             name, i, (double)vb[p][i], (double)va[p][i]);
            continue;
        }
        double worst = 0.0, moved = 0.0;
        for (size_t i = 0; i < n; i++) {
            const double tol =
                8.0 * FLT_EPSILON * (fabs((double)w0[p][i]) + lr * fabs((double)ga[p][i]));
            const double d = fabs((double)va[p][i] - vb[p][i]);
            if (d > tol)
                fail_msg("%s: parameter %d (block weight) value %zu: fused %.9g, unfused %.9g "
                         "(tolerance %.3g)",
                         mode, p, i, (double)vb[p][i], (double)va[p][i], tol);
            worst = fmax(worst, d);
            moved = fmax(moved, fabs((double)vb[p][i] - w0[p][i]));
        }
        printf("%-6s one step, parameter %d (block weight): fused within %.3g of unfused, "
               "update up to %.3g\n",
               mode, p, worst, moved);
        assert_true(moved > 0.0);
    }
    snapshot_free(&a, w0);
    snapshot_free(&a, va);
    snapshot_free(&b, vb);
    snapshot_free(&a, ga);
    model_free(&a);
    model_free(&b);
    fn_context_destroy(ctx);
}

/* Fuses m's optimiser into its net: the blocks' gradients freed, the
 * linear layer's kept; the optimiser's own step and apply refused, its
 * zeroing (the table's launch) fine. */
static void expect_fused(model *m)
{
    const size_t linear = fn_layer_grad_bytes(fn_net_layer(m->net, 2));
    EXPECT_OK(fn_optimizer_fuse(fn_sgd_optimizer(m->opt), m->net));
    assert_int_equal(fn_layer_grad_bytes(fn_net_layer(m->net, 0)), 0);
    assert_int_equal(fn_layer_grad_bytes(fn_net_layer(m->net, 1)), 0);
    assert_int_equal(fn_layer_grad_bytes(fn_net_layer(m->net, 2)), linear);
    EXPECT_OK(fn_optimizer_zero_grad(fn_sgd_optimizer(m->opt)));
    EXPECT_FAIL(fn_sgd_step(m->opt), FN_ERR_INVALID, "fn_optimizer_fuse");
    EXPECT_FAIL(fn_optimizer_apply(fn_sgd_optimizer(m->opt), NULL), FN_ERR_INVALID,
                "fn_optimizer_fuse");
    EXPECT_OK(fn_context_sync(fn_net_context(m->net)));
}

/* A backward after fused steps: the blocks' gradients allocated again. */
static void expect_restored(model *m)
{
    fn_tensor y;
    EXPECT_OK(fn_net_forward(m->net, &m->x, &y));
    EXPECT_OK(fn_net_backward(m->net, &m->dy));
    for (int i = 0; i < 2; i++)
        assert_int_equal(fn_layer_grad_bytes(fn_net_layer(m->net, i)),
                         fn_layer_param_bytes(fn_net_layer(m->net, i)));
    EXPECT_OK(fn_context_sync(fn_net_context(m->net)));
}

/* After STEPS steps: every parameter within 1e-4 of its total change plus
 * 8 roundings of its size; a second fused run equal bit for bit. In bf16
 * the first step's few-ulp difference of a block weight can move it across
 * a bf16 rounding boundary in the next forward: that operand then differs
 * by one bf16 step (2^-8 relative), as large as the rounding every operand
 * carries, so each later step's gradients may differ by up to the bf16
 * product bound, 2^-7 relative per term (tests/support/estimate.h); over
 * the STEPS - 1 = 3 later steps that is 3 * 2^-7 = 2.3e-2 of the change. */
static void compare_steps(fn_math math)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, math));
    model a, b, c;
    model_make(&a, ctx);
    model_make(&b, ctx);
    model_make(&c, ctx);
    expect_fused(&c);
    float **w0 = snapshot(&a, 0);
    for (int k = 0; k < STEPS; k++) {
        step(&a, 0);
        step(&b, 1);
        step(&c, 1);
    }
    assert_int_equal(fn_sgd_steps(b.opt), STEPS);
    expect_restored(&c);
    float **va = snapshot(&a, 0), **vb = snapshot(&b, 0), **vc = snapshot(&c, 0);
    const char *mode = fn_math_name(math);
    for (int p = 0; p < fn_net_n_params(a.net); p++) {
        const size_t n = fn_tensor_count(&fn_net_param(a.net, p)->value);
        if (memcmp(vb[p], vc[p], n * sizeof(float)) != 0)
            fail_msg("%s: two fused runs differ in parameter %d (%s)", mode, p,
                     fn_net_param(a.net, p)->name);
        double change = 0.0, worst = 0.0;
        for (size_t i = 0; i < n; i++)
            change = fmax(change, fabs((double)va[p][i] - w0[p][i]));
        const double rel = math == FN_MATH_BF16 ? (STEPS - 1) * 0x1p-7 : 1e-4;
        for (size_t i = 0; i < n; i++) {
            const double tol = rel * change + 8.0 * FLT_EPSILON * fabs((double)va[p][i]);
            const double d = fabs((double)va[p][i] - vb[p][i]);
            if (d > tol)
                fail_msg("%s: after %d steps parameter %d (%s) value %zu: fused %.9g, unfused "
                         "%.9g (tolerance %.3g)",
                         mode, STEPS, p, fn_net_param(a.net, p)->name, i, (double)vb[p][i],
                         (double)va[p][i], tol);
            worst = fmax(worst, d);
        }
        assert_true(change > 0.0);
        if (worst > 0.0)
            printf("%-6s %d steps, parameter %d (%s): fused within %.3g of unfused, total "
                   "change up to %.3g\n",
                   mode, STEPS, p, fn_net_param(a.net, p)->name, worst, change);
    }
    snapshot_free(&a, w0);
    snapshot_free(&a, va);
    snapshot_free(&b, vb);
    snapshot_free(&c, vc);
    model_free(&a);
    model_free(&b);
    model_free(&c);
    fn_context_destroy(ctx);
}

static void test_fused_net_step_cuda(void **state)
{
    (void)state;
    skip_without_gpu();
    for (int mode = 0; mode < FN_MATH_MODES; mode++) { /* every mode of device.h */
        compare_one_step((fn_math)mode);
        compare_steps((fn_math)mode);
    }
}

/* Every parameter's value (grads 0) or gradient (grads 1) the same bits
 * in a and b, both on the CPU; else fails with what. */
static void expect_same_cpu(const model *a, const model *b, int grads, const char *what)
{
    for (int p = 0; p < fn_net_n_params(a->net); p++) {
        const fn_param *pa = fn_net_param(a->net, p), *pb = fn_net_param(b->net, p);
        const fn_tensor *u = grads ? &pa->grad : &pa->value, *v = grads ? &pb->grad : &pb->value;
        if (memcmp(u->data, v->data, fn_tensor_count(u) * sizeof(float)) != 0)
            fail_msg("cpu: parameter %d (%s): %s", p, pa->name, what);
    }
}

/* Two nets of the same make on a new CPU context (returned). */
static fn_context *cpu_pair(model *a, model *b)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32));
    model_make(a, ctx);
    model_make(b, ctx);
    return ctx;
}

static void cpu_pair_free(fn_context *ctx, model *a, model *b)
{
    model_free(a);
    model_free(b);
    fn_context_destroy(ctx);
}

static void test_net_step_cpu(void **state)
{
    (void)state;
    model a, b;
    fn_context *ctx = cpu_pair(&a, &b);
    for (int k = 0; k < STEPS; k++) {
        step(&a, 0);
        step(&b, 1);
    }
    expect_same_cpu(&a, &b, 0, "differs between the two paths");
    cpu_pair_free(ctx, &a, &b);
}

/* On the CPU fusing frees nothing (no layer has a fused backward there);
 * a layer's released gradients come back from its next backward, the bits
 * of a never released one's. */
static void test_released_grads_cpu(void **state)
{
    (void)state;
    model a, b;
    fn_context *ctx = cpu_pair(&a, &b);
    const size_t all = fn_layer_grad_bytes(fn_net_layer(b.net, 0));
    EXPECT_OK(fn_optimizer_fuse(fn_sgd_optimizer(b.opt), b.net));
    assert_int_equal(fn_layer_grad_bytes(fn_net_layer(b.net, 0)), all);
    for (int i = 0; i < 2; i++)
        fn_layer_release_grads(fn_net_layer(b.net, i));
    assert_int_equal(fn_layer_grad_bytes(fn_net_layer(b.net, 0)), 0);
    EXPECT_OK(fn_net_zero_grad(b.net)); /* skips the released ones */
    fn_tensor y;
    EXPECT_OK(fn_net_forward(a.net, &a.x, &y));
    EXPECT_OK(fn_net_backward(a.net, &a.dy));
    EXPECT_OK(fn_net_forward(b.net, &b.x, &y));
    EXPECT_OK(fn_net_backward(b.net, &b.dy));
    assert_int_equal(fn_layer_grad_bytes(fn_net_layer(b.net, 0)), all);
    expect_same_cpu(&a, &b, 1, "the restored gradient differs");
    cpu_pair_free(ctx, &a, &b);
}

static void test_count_step(void **state)
{
    (void)state;
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32));
    model m;
    model_make(&m, ctx);
    assert_true(fn_sgd_is_plain(m.opt));
    EXPECT_OK(fn_sgd_count_step(m.opt));
    assert_int_equal(fn_sgd_steps(m.opt), 1);
    fn_sgd *momentum = NULL;
    fn_sgd_config cfg = fn_sgd_config_default(lr);
    cfg.momentum = 0.9f;
    EXPECT_OK(fn_sgd_create(&momentum, ctx, fn_net_params(m.net), fn_net_n_params(m.net), &cfg));
    assert_false(fn_sgd_is_plain(momentum));
    assert_int_equal(fn_sgd_count_step(momentum), FN_ERR_INVALID);
    assert_int_equal(fn_sgd_steps(momentum), 0);
    fn_sgd_destroy(momentum);
    /* Before a forward there is nothing to step. */
    fn_net *empty = NULL;
    EXPECT_OK(fn_net_create(&empty, ctx, 4));
    assert_int_equal(fn_sgd_fused_backward(empty, &m.dy, lr), FN_ERR_INVALID);
    fn_net_destroy(empty);
    assert_int_equal(fn_sgd_fused_backward(NULL, &m.dy, lr), FN_ERR_INVALID);
    model_free(&m);
    fn_context_destroy(ctx);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_count_step), cmocka_unit_test(test_net_step_cpu),
              cmocka_unit_test(test_released_grads_cpu),
              cmocka_unit_test(test_fused_net_step_cuda))
