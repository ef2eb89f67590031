/* test_sgd.c — SGD against hand-worked steps of torch.optim.SGD: plain, the
 * first momentum step (buffer = g), a second momentum step with dampening,
 * nesterov, weight decay; through fn_sgd_update, through fn_sgd over a
 * parameter list, and through the optimiser interface (optimizer.h), whose
 * published state, step count and fused path are checked too. CPU always,
 * CUDA when present (skipped otherwise).
 *
 * The numbers are dyadic with few bits (0.5, 0.25, 0.75, ...), so every
 * intermediate of the hand arithmetic is exact in float32 in any order and
 * with or without fused multiply-adds: the expected values are exact and
 * compared bit for bit. One non-dyadic case (lr 0.1) checks ordinary
 * rounding with a stated ulp bound. torch.optim.SGD's rules:
 *   g = grad + wd * theta
 *   b = g on the first step, else b = momentum * b + (1 - dampening) * g
 *   g = nesterov ? g + momentum * b : b        (when momentum != 0)
 *   theta = theta - lr * g */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "optim_contract.h"
#include "fusenet/sgd.h"
#include "fusenet/tensor.h"
#include "optim/optimizer_paths.h"
#include "test_main.h"

#define N 3

typedef struct sgd_case {
    const char *name;
    fn_sgd_config cfg;
    float theta[N], g1[N], g2[N];
    float after1[N], after2[N]; /* theta after step 1, after step 2 */
    float buf1[N];              /* the momentum buffer after step 1 */
} sgd_case;

/* theta = [1, -2, 0.5], g1 = [0.5, 0.25, -1], g2 = [1, -0.5, 0.25]. */
static const sgd_case cases[] = {
    /* plain, lr 0.5: theta - 0.5 g1 = [1 - 0.25, -2 - 0.125, 0.5 + 0.5]
     * = [0.75, -2.125, 1]; then - 0.5 g2 = [0.75 - 0.5, -2.125 + 0.25,
     * 1 - 0.125] = [0.25, -1.875, 0.875]. */
    {"plain", {.lr = 0.5f}, {1, -2, 0.5f}, {0.5f, 0.25f, -1}, {1, -0.5f, 0.25f},
     {0.75f, -2.125f, 1}, {0.25f, -1.875f, 0.875f}, {0, 0, 0}},
    /* momentum 0.5, dampening 0.25. Step 1: b = g1 (no dampening on the
     * first step), theta = [0.75, -2.125, 1] as plain. Step 2:
     * b = 0.5 g1 + 0.75 g2 = [0.25 + 0.75, 0.125 - 0.375, -0.5 + 0.1875]
     *   = [1, -0.25, -0.3125]; theta = [0.75 - 0.5, -2.125 + 0.125,
     *   1 + 0.15625] = [0.25, -2, 1.15625]. */
    {"momentum+damp", {.lr = 0.5f, .momentum = 0.5f, .dampening = 0.25f},
     {1, -2, 0.5f}, {0.5f, 0.25f, -1}, {1, -0.5f, 0.25f},
     {0.75f, -2.125f, 1}, {0.25f, -2, 1.15625f}, {0.5f, 0.25f, -1}},
    /* nesterov, momentum 0.5. Step 1: b = g1, g = g1 + 0.5 b = 1.5 g1 =
     * [0.75, 0.375, -1.5]; theta = [1 - 0.375, -2 - 0.1875, 0.5 + 0.75] =
     * [0.625, -2.1875, 1.25]. Step 2: b = 0.5 g1 + g2 = [1.25, -0.375,
     * -0.25]; g = g2 + 0.5 b = [1.625, -0.6875, 0.125]; theta =
     * [0.625 - 0.8125, -2.1875 + 0.34375, 1.25 - 0.0625] =
     * [-0.1875, -1.84375, 1.1875]. */
    {"nesterov", {.lr = 0.5f, .momentum = 0.5f, .nesterov = 1},
     {1, -2, 0.5f}, {0.5f, 0.25f, -1}, {1, -0.5f, 0.25f},
     {0.625f, -2.1875f, 1.25f}, {-0.1875f, -1.84375f, 1.1875f}, {0.5f, 0.25f, -1}},
    /* weight decay 0.25, lr 0.5. Step 1: g = g1 + 0.25 theta = [0.75,
     * -0.25, -0.875]; theta = [1 - 0.375, -2 + 0.125, 0.5 + 0.4375] =
     * [0.625, -1.875, 0.9375]. Step 2: g = g2 + 0.25 theta = [1.15625,
     * -0.96875, 0.484375]; theta = [0.625 - 0.578125, -1.875 + 0.484375,
     * 0.9375 - 0.2421875] = [0.046875, -1.390625, 0.6953125]. */
    {"weight decay", {.lr = 0.5f, .weight_decay = 0.25f},
     {1, -2, 0.5f}, {0.5f, 0.25f, -1}, {1, -0.5f, 0.25f},
     {0.625f, -1.875f, 0.9375f}, {0.046875f, -1.390625f, 0.6953125f}, {0, 0, 0}},
    /* weight decay 0.25 + momentum 0.5 + dampening 0.25. Step 1 as weight
     * decay: b = [0.75, -0.25, -0.875], theta = [0.625, -1.875, 0.9375].
     * Step 2: g = [1.15625, -0.96875, 0.484375]; b = 0.5 b + 0.75 g =
     * [0.375 + 0.8671875, -0.125 - 0.7265625, -0.4375 + 0.36328125] =
     * [1.2421875, -0.8515625, -0.07421875]; theta = [0.625 - 0.62109375,
     * -1.875 + 0.42578125, 0.9375 + 0.037109375] =
     * [0.00390625, -1.44921875, 0.974609375]. */
    {"wd+momentum", {.lr = 0.5f, .momentum = 0.5f, .dampening = 0.25f, .weight_decay = 0.25f},
     {1, -2, 0.5f}, {0.5f, 0.25f, -1}, {1, -0.5f, 0.25f},
     {0.625f, -1.875f, 0.9375f}, {0.00390625f, -1.44921875f, 0.974609375f},
     {0.75f, -0.25f, -0.875f}},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static void upload(fn_tensor *t, const float *v) { must(fn_tensor_upload(t, v, fn_tensor_count(t))); }

static int run_case(fn_context *ctx, int i)
{
    const sgd_case *c = &cases[i];
    fn_device dev = fn_context_device(ctx);
    fn_tensor value = {0}, grad = {0}, buf = {0};
    must(fn_tensor_alloc(&value, 1, N, dev));
    must(fn_tensor_alloc(&grad, 1, N, dev));
    must(fn_tensor_alloc(&buf, 1, N, dev));
    must(fn_sgd_config_check(&c->cfg));
    upload(&value, c->theta);
    upload(&grad, c->g1);
    must(fn_sgd_update(ctx, &value, &grad, &buf, &c->cfg, 1));
    int ok = same_bits("theta after step 1", c->name, &value, c->after1, N);
    if (c->cfg.momentum != 0)
        ok &= same_bits("buffer after step 1", c->name, &buf, c->buf1, N);
    upload(&grad, c->g2);
    must(fn_sgd_update(ctx, &value, &grad, &buf, &c->cfg, 0));
    ok &= same_bits("theta after step 2", c->name, &value, c->after2, N);
    fn_tensor_free(&value);
    fn_tensor_free(&grad);
    fn_tensor_free(&buf);
    return case_line(c->name, ok);
}

CASES_ON_EACH_DEVICE(update, run_case, N_CASES)

/* lr 0.1, theta 1, grad 0.3: theta' = 1 - 0.03 = 0.97. lr and grad are
 * rounded to float32 (relative error <= u32 = 2^-24 each), the product and
 * the difference once more each: |theta' - 0.97| <= u32 (|lr g| 3 + |theta'|)
 * ~ 6e-8 * 1.06 ~ 6.3e-8, about one ulp of 0.97 (2^-24 ~ 6e-8); allowed:
 * 2 ulp = 1.2e-7. */
static void check_rounding(fn_device device)
{
    fn_context *ctx = context_or_skip(device);
    fn_tensor value = {0}, grad = {0};
    must(fn_tensor_alloc(&value, 1, 1, device));
    must(fn_tensor_alloc(&grad, 1, 1, device));
    float theta = 1, g = 0.3f, got;
    upload(&value, &theta);
    must(fn_tensor_upload(&grad, &g, 1));
    fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    must(fn_sgd_update(ctx, &value, &grad, NULL, &cfg, 1));
    must(fn_tensor_download(&value, &got, 1));
    printf("    lr 0.1: theta %.9g, expected 0.97, diff %.3g\n", (double)got,
           fabs((double)got - 0.97));
    fn_tensor_free(&value);
    fn_tensor_free(&grad);
    fn_context_destroy(ctx);
    assert_true(fabs((double)got - 0.97) <= 2 * 0x1p-24);
}

TESTS_ON_EACH_DEVICE(rounding, check_rounding)

/* The wd+momentum case's fn_sgd over the two contract parameters, at
 * theta with gradients g1. */
static fn_sgd *wd_momentum_sgd(fn_context *ctx, fn_param params[2], fn_param *list[2],
                               fn_device device)
{
    const sgd_case *c = &cases[4];
    contract_params(params, list, N, c->theta, c->g1, device);
    fn_sgd *sgd = NULL;
    must(fn_sgd_create(&sgd, ctx, list, 2, &c->cfg));
    return sgd;
}

/* fn_sgd over two parameters, the wd+momentum case: "weight" holds the
 * case's three values, "bias" the first one only (its numbers are the first
 * column of the case). Two steps, then the step count and the buffers. */
static void check_optimizer(fn_device device)
{
    fn_context *ctx = context_or_skip(device);
    const sgd_case *c = &cases[4];
    fn_param params[2], *list[2];
    fn_sgd *opt = wd_momentum_sgd(ctx, params, list, device);
    must(fn_sgd_step(opt));
    contract_grads(params, N, c->g2);
    must(fn_sgd_step(opt));
    int ok = same_bits("weight after 2 steps", "fn_sgd", &params[0].value, c->after2, N);
    float bias[N] = {0};
    must(fn_tensor_download(&params[1].value, bias, 1));
    ok &= memcmp(&bias[0], &c->after2[0], sizeof bias[0]) == 0;
    if (memcmp(&bias[0], &c->after2[0], sizeof bias[0]) != 0)
        printf("    fn_sgd bias after 2 steps: got %.9g, expected %.9g\n", (double)bias[0],
               (double)c->after2[0]);
    ok &= fn_sgd_steps(opt) == 2;
    /* b after step 2 = [1.2421875, -0.8515625, -0.07421875] (see the case). */
    static const float buf2[N] = {1.2421875f, -0.8515625f, -0.07421875f};
    fn_tensor *b = fn_sgd_momentum_buffer(opt, 0);
    ok &= b != NULL && same_bits("momentum buffer after 2 steps", "fn_sgd", b, buf2, N);
    printf("    fn_sgd over params: %s\n", ok ? "ok" : "FAIL");
    fn_sgd_destroy(opt);
    contract_params_free(params);
    fn_context_destroy(ctx);
    assert_true(ok);
}

TESTS_ON_EACH_DEVICE(optimizer, check_optimizer)

/* The wd+momentum case through fn_optimizer: the same two steps, its
 * "momentum" state is the SGD buffer, a failed step is not counted, and
 * only plain SGD on the GPU offers the fused backward step. */
static void check_interface(fn_device device)
{
    fn_context *ctx = context_or_skip(device);
    const sgd_case *c = &cases[4];
    fn_param params[2], *list[2];
    fn_sgd *sgd = wd_momentum_sgd(ctx, params, list, device);
    fn_optimizer *opt = fn_sgd_optimizer(sgd);
    assert_ptr_equal(fn_optimizer_state(opt, 0, 1), fn_sgd_momentum_buffer(sgd, 1));
    assert_false(fn_optimizer_can_backward_step(opt));
    assert_int_equal(fn_optimizer_backward_step(opt, NULL, NULL), FN_ERR_INVALID);

    contract_two_steps(opt, params, N, c->g2, c->after2);
    static const char *const state[] = {"momentum"};
    expect_optimizer_contract(opt, "sgd", state, 1);
    fn_optimizer_destroy(opt);

    fn_sgd_config plain = fn_sgd_config_default(0.5f);
    must(fn_sgd_create(&sgd, ctx, list, 2, &plain));
    opt = fn_sgd_optimizer(sgd);
    assert_int_equal(fn_optimizer_n_state(opt), 1);
    assert_null(fn_optimizer_state(opt, 0, 0));
    if (device == FN_CUDA)
        assert_true(fn_optimizer_can_backward_step(opt));
    else
        assert_false(fn_optimizer_can_backward_step(opt));
    fn_optimizer_destroy(opt);
    contract_params_free(params);
    fn_context_destroy(ctx);
}

TESTS_ON_EACH_DEVICE(interface, check_interface)

/* torch.optim.SGD refuses these; so must we. */
static void test_config_check(void **state)
{
    (void)state;
    fn_sgd_config nesterov_damp = {.lr = 0.1f, .momentum = 0.9f, .dampening = 0.1f, .nesterov = 1};
    fn_sgd_config nesterov_no_momentum = {.lr = 0.1f, .nesterov = 1};
    fn_sgd_config negative_lr = {.lr = -0.1f};
    fn_sgd_config negative_wd = {.lr = 0.1f, .weight_decay = -1};
    fn_sgd_config good = {.lr = 0.1f, .momentum = 0.9f, .nesterov = 1};
    assert_int_equal(fn_sgd_config_check(&nesterov_damp), FN_ERR_INVALID);
    assert_int_equal(fn_sgd_config_check(&nesterov_no_momentum), FN_ERR_INVALID);
    assert_int_equal(fn_sgd_config_check(&negative_lr), FN_ERR_INVALID);
    assert_int_equal(fn_sgd_config_check(&negative_wd), FN_ERR_INVALID);
    assert_int_equal(fn_sgd_config_check(&good), FN_OK);
}

/* momentum_bf16 needs momentum (C API and config alike) and a GPU in bf16
 * math: the CPU in any math mode refuses it, naming the option and why. */
static void test_momentum_bf16_refused(void **state)
{
    (void)state;
    fn_sgd_config no_momentum = {.lr = 0.1f, .momentum_bf16 = 1};
    EXPECT_FAIL(fn_sgd_config_check(&no_momentum), FN_ERR_INVALID,
                "sgd: momentum_bf16 needs momentum > 0 (got 0)");
    static const fn_math modes[] = {FN_MATH_FP32, FN_MATH_BF16};
    static const char *const why[] = {
        "sgd: momentum_bf16 needs the GPU in bf16 math (here device cpu, math fp32)",
        "sgd: momentum_bf16 needs the GPU in bf16 math (here device cpu, math bf16)"};
    for (int m = 0; m < 2; m++) {
        fn_context *ctx = NULL;
        EXPECT_OK(fn_context_create(&ctx, FN_CPU, 0, modes[m]));
        const sgd_case *c = &cases[4];
        fn_param params[2], *list[2];
        contract_params(params, list, N, c->theta, c->g1, FN_CPU);
        fn_sgd_config cfg = c->cfg;
        cfg.momentum_bf16 = 1;
        fn_sgd *sgd = NULL;
        EXPECT_FAIL(fn_sgd_create(&sgd, ctx, list, 2, &cfg), FN_ERR_INVALID, why[m]);
        assert_null(sgd);
        cfg.momentum_bf16 = 0; /* the same parameters take the float32 buffers */
        EXPECT_OK(fn_sgd_create(&sgd, ctx, list, 2, &cfg));
        fn_sgd_destroy(sgd);
        contract_params_free(params);
        fn_context_destroy(ctx);
    }
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_update_cpu), cmocka_unit_test(test_update_cuda),
          cmocka_unit_test(test_rounding_cpu), cmocka_unit_test(test_rounding_cuda),
          cmocka_unit_test(test_optimizer_cpu), cmocka_unit_test(test_optimizer_cuda),
          cmocka_unit_test(test_interface_cpu), cmocka_unit_test(test_interface_cuda),
          cmocka_unit_test(test_config_check), cmocka_unit_test(test_momentum_bf16_refused))
