/* test_adam.c — Adam and AdamW against hand-worked steps of torch.optim.Adam
 * and torch.optim.AdamW (adam.h has the rules): two steps with beta2 = 0
 * (m's running mean and bias correction 1), AdamW's decoupled decay, Adam's
 * L2 decay, a first step with beta2 = 0.75 (v and bias correction 2);
 * three steps at torch's defaults against torch's own float64 numbers; the
 * optimiser interface (name, published exp_avg and exp_avg_sq, no fused
 * step, a failed step not counted, a restart at step count 0); CUDA
 * against CPU bit for bit. CPU always, CUDA when present.
 *
 * The hand-worked numbers are dyadic with few bits, so every intermediate
 * is exact in float32 in any order: compared bit for bit. Each case was
 * also run through torch.optim in float64, which gives the same values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "expect.h"
#include "optim_contract.h"
#include "fusenet/adam.h"
#include "fusenet/tensor.h"
#include "optim/optimizer_paths.h"
#include "test_main.h"

#define N 3

typedef struct adam_case {
    const char *name;
    fn_adam_config cfg;
    float g1[N], g2[N];
    float after1[N], after2[N]; /* theta after step 1, after step 2 */
    int two_steps;              /* after2 is exact */
} adam_case;

/* theta = [1, -2, 0.5] in every case. */
static const float *const theta0 = contract_theta0;

static const adam_case cases[] = {
    /* Adam, lr 0.75, betas (0.5, 0), eps 0.5. Step 1: m = lerp(0, g, 0.5) =
     * 0.5 g = [0.25, -0.75, 1.75]; v = g^2; step_size = 0.75 / (1 - 0.5) =
     * 1.5; bc2 = sqrt(1 - 0) = 1; denom = |g| + 0.5 = [1, 2, 4];
     * theta -= 1.5 m / denom = [0.375, -0.5625, 0.65625] -> [0.625, -1.4375,
     * -0.15625]. Step 2: m = 0.5 (g2 + m) = [0.875, -0.125, 0.125];
     * step_size = 0.75 / (1 - 0.25) = 1; denom = |g2| + 0.5 = [2, 1, 2];
     * theta -= [0.4375, -0.125, 0.0625] -> [0.1875, -1.3125, -0.21875]. */
    {"adam", {.lr = 0.75f, .beta1 = 0.5f, .beta2 = 0, .eps = 0.5f},
     {0.5f, -1.5f, 3.5f}, {1.5f, 0.5f, -1.5f},
     {0.625f, -1.4375f, -0.15625f}, {0.1875f, -1.3125f, -0.21875f}, 1},
    /* AdamW, as adam with weight_decay 0.5: theta *= 1 - 0.75 * 0.5 = 0.625
     * first. Step 1: [0.625, -1.25, 0.3125] - [0.375, -0.5625, 0.65625] =
     * [0.25, -0.6875, -0.34375]. Step 2: 0.625 theta = [0.15625,
     * -0.4296875, -0.21484375], minus [0.4375, -0.125, 0.0625] =
     * [-0.28125, -0.3046875, -0.27734375]. */
    {"adamw", {.lr = 0.75f, .beta1 = 0.5f, .beta2 = 0, .eps = 0.5f, .weight_decay = 0.5f,
               .decoupled = 1},
     {0.5f, -1.5f, 3.5f}, {1.5f, 0.5f, -1.5f},
     {0.25f, -0.6875f, -0.34375f}, {-0.28125f, -0.3046875f, -0.27734375f}, 1},
    /* Adam with L2 weight_decay 0.5: g + 0.5 theta. The gradients are chosen
     * so that the decayed ones are adam's: [0, -0.5, 3.25] + [0.5, -1, 0.25]
     * = [0.5, -1.5, 3.5]; then [1.1875, 1.21875, -1.421875] + 0.5 [0.625,
     * -1.4375, -0.15625] = [1.5, 0.5, -1.5]: the same thetas as adam. */
    {"adam L2", {.lr = 0.75f, .beta1 = 0.5f, .beta2 = 0, .eps = 0.5f, .weight_decay = 0.5f},
     {0, -0.5f, 3.25f}, {1.1875f, 1.21875f, -1.421875f},
     {0.625f, -1.4375f, -0.15625f}, {0.1875f, -1.3125f, -0.21875f}, 1},
    /* Adam, lr 0.5, betas (0.5, 0.75), eps 0.5, step 1: v = 0.25 g^2 =
     * [0.0625, 0.5625, 3.0625]; bc2 = sqrt(1 - 0.75) = 0.5, so sqrt(v) / bc2
     * = |g|; step_size = 0.5 / 0.5 = 1; theta -= 0.5 g / (|g| + 0.5) =
     * [0.25, -0.375, 0.4375] -> [0.75, -1.625, 0.0625]. (Step 2's
     * 1 - 0.75^2 = 0.4375 has no exact square root.) */
    {"adam beta2", {.lr = 0.5f, .beta1 = 0.5f, .beta2 = 0.75f, .eps = 0.5f},
     {0.5f, -1.5f, 3.5f}, {0, 0, 0},
     {0.75f, -1.625f, 0.0625f}, {0, 0, 0}, 0},
};
#define N_CASES (sizeof cases / sizeof cases[0])

typedef struct tensors {
    fn_tensor value, grad, m, v;
} tensors;

static void alloc_tensors(tensors *t, int cols, fn_device dev)
{
    must(fn_tensor_alloc(&t->value, 1, cols, dev));
    must(fn_tensor_alloc(&t->grad, 1, cols, dev));
    must(fn_tensor_alloc(&t->m, 1, cols, dev));
    must(fn_tensor_alloc(&t->v, 1, cols, dev));
    must(fn_tensor_zero(&t->m));
    must(fn_tensor_zero(&t->v));
}

static void free_tensors(tensors *t)
{
    fn_tensor_free(&t->value);
    fn_tensor_free(&t->grad);
    fn_tensor_free(&t->m);
    fn_tensor_free(&t->v);
}

static int run_case(fn_context *ctx, int i)
{
    const adam_case *c = &cases[i];
    tensors t;
    alloc_tensors(&t, N, fn_context_device(ctx));
    must(fn_adam_config_check(&c->cfg));
    must(fn_tensor_upload(&t.value, theta0, N));
    must(fn_tensor_upload(&t.grad, c->g1, N));
    must(fn_adam_update(ctx, &t.value, &t.grad, &t.m, &t.v, &c->cfg, 1));
    int ok = same_bits("theta after step 1", c->name, &t.value, c->after1, N);
    if (c->two_steps) {
        must(fn_tensor_upload(&t.grad, c->g2, N));
        must(fn_adam_update(ctx, &t.value, &t.grad, &t.m, &t.v, &c->cfg, 2));
        ok &= same_bits("theta after step 2", c->name, &t.value, c->after2, N);
    } else {
        static const float v1[N] = {0.0625f, 0.5625f, 3.0625f}, m1[N] = {0.25f, -0.75f, 1.75f};
        ok &= same_bits("exp_avg after step 1", c->name, &t.m, m1, N);
        ok &= same_bits("exp_avg_sq after step 1", c->name, &t.v, v1, N);
    }
    free_tensors(&t);
    return case_line(c->name, ok);
}

CASES_ON_EACH_DEVICE(update, run_case, N_CASES)

/* torch's defaults (betas 0.9, 0.999, eps 1e-8), lr 1e-3, three steps from
 * theta0 with contract_torch_grads; the expected values are torch.optim's in
 * float64 from the same float32 inputs (tests' numbers: Adam, Adam with
 * weight_decay 0.1, AdamW with 0.01). Tolerance: |theta| <= 2, so each
 * step's final rounding of theta is <= 2^-23 ~ 1.2e-7; the update itself
 * (about 15 roundings of a term <= lr * |m_hat / sqrt(v_hat)| <= 1e-3 * 2)
 * adds <= 15 * 2^-24 * 2e-3 ~ 2e-9 a step; three steps: <= 3.7e-7. */
static const struct {
    const char *name;
    float wd;
    int decoupled;
    double want[N];
} runs[] = {
    {"adam", 0, 0, {0.99750436506407991, -1.9985757490065261, 0.49841136656166229}},
    {"adam wd 0.1", 0.1f, 0, {0.99742687728394241, -1.9982537208884286, 0.49837463480137278}},
    {"adamw wd 0.01", 0.01f, 1, {0.99747439454103759, -1.9985157736071029, 0.49839638993697749}},
};

static int run_defaults(fn_context *ctx, int r)
{
    tensors t;
    alloc_tensors(&t, N, fn_context_device(ctx));
    fn_adam_config cfg = fn_adam_config_default(1e-3f, runs[r].decoupled);
    cfg.weight_decay = runs[r].wd;
    must(fn_tensor_upload(&t.value, theta0, N));
    for (int s = 0; s < 3; s++) {
        must(fn_tensor_upload(&t.grad, contract_torch_grads[s], N));
        must(fn_adam_update(ctx, &t.value, &t.grad, &t.m, &t.v, &cfg, s + 1));
    }
    const int ok = near_torch(runs[r].name, &t.value, runs[r].want, N, 3.7e-7);
    free_tensors(&t);
    return ok;
}

CASES_ON_EACH_DEVICE(defaults, run_defaults, sizeof runs / sizeof runs[0])

/* The adamw case through fn_optimizer over two parameters: two steps give
 * the case's values (the bias: its first column); the published state; no
 * fused step; a failed step is not counted; at step count 0 the moments
 * start afresh, so the same two steps from theta0 give the same values. */
static void check_interface(fn_device device)
{
    const adam_case *c = &cases[1];
    contract k;
    contract_open(&k, device, N, theta0, c->g1);
    fn_optimizer *opt = NULL;
    must(fn_adam_create(&opt, k.ctx, k.list, 2, &c->cfg));
    assert_non_null(fn_adam_get_config(opt));
    assert_false(fn_optimizer_can_backward_step(opt));

    for (int round = 0; round < 2; round++) {
        contract_two_steps(opt, k.params, N, c->g2, c->after2);
        /* m after step 2 = [0.875, -0.125, 0.125], v = g2^2 (beta2 = 0). */
        static const float m2[N] = {0.875f, -0.125f, 0.125f}, v2[N] = {2.25f, 0.25f, 2.25f};
        assert_true(same_bits("exp_avg", "fn_optimizer", fn_optimizer_state(opt, 0, 0), m2, N));
        assert_true(same_bits("exp_avg_sq", "fn_optimizer", fn_optimizer_state(opt, 1, 0), v2, N));
        /* Again from the start: theta0, g1, and the count back at 0. */
        contract_restart(k.params, N, theta0, c->g1);
        fn_optimizer_set_steps(opt, 0);
    }
    static const char *const state[] = {"exp_avg", "exp_avg_sq"};
    expect_optimizer_contract(opt, "adamw", state, 2);
    fn_optimizer_destroy(opt);

    fn_adam_config adam = fn_adam_config_default(0.1f, 0);
    must(fn_adam_create(&opt, k.ctx, k.list, 2, &adam));
    assert_string_equal(fn_optimizer_name(opt), "adam");
    assert_float_equal(fn_adam_get_config(opt)->weight_decay, 0, 0);
    fn_optimizer_destroy(opt);
    contract_close(&k);
}

TESTS_ON_EACH_DEVICE(interface, check_interface)

/* The fused CUDA kernel against the CPU on 10007 random values over five
 * steps of AdamW at torch's defaults with decay: both round every
 * operation on its own in the same order, so they agree bit for bit. */
static void test_cuda_matches_cpu(void **state)
{
    (void)state;
    enum { COUNT = 10007, STEPS = 5 };
    fn_context *gpu = context_or_skip(FN_CUDA);
    fn_context *cpu = context_or_skip(FN_CPU);
    tensors a, b;
    alloc_tensors(&a, COUNT, FN_CPU);
    alloc_tensors(&b, COUNT, FN_CUDA);
    float *host = chk_alloc_float(COUNT);
    chk_rng rng = chk_rng_seed(12);
    chk_fill_float(host, COUNT, -1, 1, &rng);
    must(fn_tensor_upload(&a.value, host, COUNT));
    must(fn_tensor_upload(&b.value, host, COUNT));
    fn_adam_config cfg = fn_adam_config_default(1e-2f, 1);
    for (int s = 1; s <= STEPS; s++) {
        for (int i = 0; i < COUNT; i++)
            host[i] = (float)chk_uniform(&rng, -2, 2) * (i % 7 == 0 ? 1e-4f : 1.0f);
        must(fn_tensor_upload(&a.grad, host, COUNT));
        must(fn_tensor_upload(&b.grad, host, COUNT));
        must(fn_adam_update(cpu, &a.value, &a.grad, &a.m, &a.v, &cfg, s));
        must(fn_adam_update(gpu, &b.value, &b.grad, &b.m, &b.v, &cfg, s));
    }
    expect_cpu_gpu_same("theta", &a.value, &b.value, COUNT);
    expect_cpu_gpu_same("exp_avg", &a.m, &b.m, COUNT);
    expect_cpu_gpu_same("exp_avg_sq", &a.v, &b.v, COUNT);
    free(host);
    free_tensors(&a);
    free_tensors(&b);
    fn_context_destroy(cpu);
    fn_context_destroy(gpu);
}

/* torch.optim.Adam refuses these; so must we. */
static void test_config_check(void **state)
{
    (void)state;
    fn_adam_config c = fn_adam_config_default(1e-3f, 0);
    assert_int_equal(fn_adam_config_check(&c), FN_OK);
    c.beta1 = 1.0f;
    assert_int_equal(fn_adam_config_check(&c), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "beta1 1 must be in [0, 1)"));
    c = fn_adam_config_default(1e-3f, 1);
    assert_float_equal(c.weight_decay, 1e-2f, 0);
    c.beta2 = -0.1f;
    assert_int_equal(fn_adam_config_check(&c), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "adamw: beta2"));
    c = fn_adam_config_default(0, 0);
    assert_int_equal(fn_adam_config_check(&c), FN_ERR_INVALID);
    c = fn_adam_config_default(1e-3f, 0);
    c.eps = -1;
    assert_int_equal(fn_adam_config_check(&c), FN_ERR_INVALID);
    c.eps = 0;
    c.weight_decay = -1;
    assert_int_equal(fn_adam_config_check(&c), FN_ERR_INVALID);
    fn_context *ctx = context_or_skip(FN_CPU);
    tensors t;
    alloc_tensors(&t, N, FN_CPU);
    c = fn_adam_config_default(1e-3f, 0);
    assert_int_equal(fn_adam_update(ctx, &t.value, &t.grad, &t.m, &t.v, &c, 0), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "the first step is 1"));
    free_tensors(&t);
    fn_context_destroy(ctx);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_update_cpu), cmocka_unit_test(test_update_cuda),
          cmocka_unit_test(test_defaults_cpu), cmocka_unit_test(test_defaults_cuda),
          cmocka_unit_test(test_interface_cpu), cmocka_unit_test(test_interface_cuda),
          cmocka_unit_test(test_cuda_matches_cpu), cmocka_unit_test(test_config_check))
