/* test_rmsprop.c — RMSprop against hand-worked steps of torch.optim.RMSprop
 * (rmsprop.h has the rule): a plain step, two steps with momentum, a
 * centered step, L2 weight decay; three steps at torch's defaults and with
 * every option on, against torch's own float64 numbers; the optimiser
 * interface (the contract of tests/support/optim_contract.h, the state a
 * configuration keeps, a restart at step count 0), through the split step
 * and the multi-tensor launch on the GPU; CUDA against CPU bit for bit.
 * CPU always, CUDA when present.
 *
 * The hand-worked numbers are dyadic with few bits, so every intermediate
 * is exact in float32 in any order: compared bit for bit. Each case was
 * also run through torch.optim.RMSprop in float64, which gives the same
 * values. */
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
#include "fusenet/rmsprop.h"
#include "fusenet/tensor.h"
#include "optim/optimizer_paths.h"
#include "test_main.h"

#define N 3

typedef struct rmsprop_case {
    const char *name;
    fn_rmsprop_config cfg;
    float g1[N], g2[N];
    float after1[N], after2[N]; /* theta after step 1, after step 2 */
    int two_steps;
    float state1[N];            /* step 1's square_avg (one step) */
} rmsprop_case;

/* theta = [1, -2, 0.5] in every case. */
static const float *const theta0 = contract_theta0;

static const rmsprop_case cases[] = {
    /* lr 0.5, alpha 0.75, eps 0.5: v = 0.25 g^2 = [0.25, 2.25, 12.25],
     * sqrt(v) + eps = [1, 2, 4], theta -= 0.5 g / that = [0.5, -0.75,
     * 0.875] -> [0.5, -1.25, -0.375]. */
    {"plain", {.lr = 0.5f, .alpha = 0.75f, .eps = 0.5f}, {1, -3, 7}, {0}, {0.5f, -1.25f, -0.375f},
     {0}, 0, {0.25f, 2.25f, 12.25f}},
    /* lr 0.5, alpha 0, eps 1, momentum 0.5: v = g^2, avg = |g| + 1. Step 1:
     * b = g / avg = [0.5, -0.75, 0.875], theta -= 0.5 b -> [0.75, -1.625,
     * 0.0625]. Step 2, g = [3, 1, -1]: g / avg = [0.75, 0.5, -0.5], b =
     * 0.5 b + that = [1, 0.125, -0.0625], theta -= 0.5 b -> [0.25,
     * -1.6875, 0.09375]. */
    {"momentum", {.lr = 0.5f, .alpha = 0, .eps = 1, .momentum = 0.5f}, {1, -3, 7}, {3, 1, -1},
     {0.75f, -1.625f, 0.0625f}, {0.25f, -1.6875f, 0.09375f}, 1, {0}},
    /* centered, lr 0.5, alpha 0.5, eps 0.5: v = 0.5 g^2, a = lerp(0, g,
     * 0.5) = 0.5 g, v - a^2 = 0.25 g^2: the plain case's avg and thetas;
     * v = [0.5, 4.5, 24.5]. */
    {"centered", {.lr = 0.5f, .alpha = 0.5f, .eps = 0.5f, .centered = 1}, {1, -3, 7}, {0},
     {0.5f, -1.25f, -0.375f}, {0}, 0, {0.5f, 4.5f, 24.5f}},
    /* The plain case with L2 weight_decay 0.5: g + 0.5 theta, the gradient
     * chosen so that the decayed one is plain's: [0.5, -2, 6.75] + [0.5, -1,
     * 0.25] = [1, -3, 7]. */
    {"L2", {.lr = 0.5f, .alpha = 0.75f, .eps = 0.5f, .weight_decay = 0.5f}, {0.5f, -2, 6.75f},
     {0}, {0.5f, -1.25f, -0.375f}, {0}, 0, {0.25f, 2.25f, 12.25f}},
};
#define N_CASES (sizeof cases / sizeof cases[0])

typedef struct tensors {
    fn_tensor value, grad, v, b, a;
} tensors;

static void alloc_tensors(tensors *t, int cols, fn_device dev)
{
    fn_tensor *all[] = {&t->value, &t->grad, &t->v, &t->b, &t->a};
    for (int i = 0; i < 5; i++) {
        must(fn_tensor_alloc(all[i], 1, cols, dev));
        must(fn_tensor_zero(all[i]));
    }
}

static void free_tensors(tensors *t)
{
    fn_tensor *all[] = {&t->value, &t->grad, &t->v, &t->b, &t->a};
    for (int i = 0; i < 5; i++)
        fn_tensor_free(all[i]);
}

static int run_case(fn_context *ctx, int i)
{
    const rmsprop_case *c = &cases[i];
    tensors t;
    alloc_tensors(&t, N, fn_context_device(ctx));
    must(fn_tensor_upload(&t.value, theta0, N));
    must(fn_tensor_upload(&t.grad, c->g1, N));
    must(fn_rmsprop_update(ctx, &t.value, &t.grad, &t.v, &t.b, &t.a, &c->cfg));
    int ok = same_bits("theta after step 1", c->name, &t.value, c->after1, N);
    if (c->two_steps) {
        must(fn_tensor_upload(&t.grad, c->g2, N));
        must(fn_rmsprop_update(ctx, &t.value, &t.grad, &t.v, &t.b, &t.a, &c->cfg));
        ok &= same_bits("theta after step 2", c->name, &t.value, c->after2, N);
    } else {
        ok &= same_bits("square_avg after step 1", c->name, &t.v, c->state1, N);
    }
    if (c->cfg.centered) {
        static const float a1[N] = {0.5f, -1.5f, 3.5f};
        ok &= same_bits("grad_avg after step 1", c->name, &t.a, a1, N);
    }
    free_tensors(&t);
    return case_line(c->name, ok);
}

CASES_ON_EACH_DEVICE(update, run_case, N_CASES)

/* lr 1e-2, three steps from theta0 with contract_torch_grads, at torch's
 * defaults and with momentum 0.9, centered, weight_decay 0.1; the expected
 * values are torch.optim.RMSprop's in float64 from the same float32
 * inputs. Tolerance: each step's update lr * b has |b| <= 3 * 11 (three
 * terms g / avg of at most about 1 / sqrt(1 - alpha) = 10, times 1 + 0.9
 * + 0.81 at most), each term through about 12 roundings: <= 12 * 2^-24 *
 * 0.33 ~ 2.4e-7 a step, plus the rounding of theta (|theta| <= 2: 2^-23
 * ~ 1.2e-7); three steps: <= 1.1e-6. */
static const struct {
    const char *name;
    float momentum, wd;
    int centered;
    double want[N];
} runs[] = {
    {"defaults", 0, 0, 0, {0.8238249859870819, -1.972571971108416, 0.436909742285244}},
    {"everything on", 0.9f, 0.1f, 1,
     {0.5617603474209216, -1.7909718692520753, 0.29677445855351503}},
};

static int run_defaults(fn_context *ctx, int r)
{
    fn_rmsprop_config cfg = fn_rmsprop_config_default(1e-2f);
    cfg.momentum = runs[r].momentum;
    cfg.weight_decay = runs[r].wd;
    cfg.centered = runs[r].centered;
    tensors t;
    alloc_tensors(&t, N, fn_context_device(ctx));
    must(fn_tensor_upload(&t.value, theta0, N));
    for (int s = 0; s < 3; s++) {
        must(fn_tensor_upload(&t.grad, contract_torch_grads[s], N));
        must(fn_rmsprop_update(ctx, &t.value, &t.grad, &t.v, &t.b, &t.a, &cfg));
    }
    const int ok = near_torch(runs[r].name, &t.value, runs[r].want, N, 1.1e-6);
    free_tensors(&t);
    return ok;
}

CASES_ON_EACH_DEVICE(defaults, run_defaults, sizeof runs / sizeof runs[0])

/* The momentum case through fn_optimizer over two parameters, centered
 * too (alpha 0 makes a = g, so v - a^2 = 0 and avg = eps = 1: the case
 * with g / 1 in place of g / (|g| + 1) is worked below): two steps; the
 * contract with all three kinds of state; at step count 0 the state
 * starts afresh, so the same two steps give the same values. Without
 * momentum and centering only square_avg is kept. */
static void check_interface(fn_device device)
{
    const rmsprop_case *c = &cases[1];
    contract k;
    contract_open(&k, device, N, theta0, c->g1);
    fn_optimizer *opt = NULL;
    must(fn_rmsprop_create(&opt, k.ctx, k.list, 2, &c->cfg));
    assert_non_null(fn_rmsprop_get_config(opt));
    assert_false(fn_optimizer_can_backward_step(opt));
    assert_null(fn_optimizer_state(opt, 2, 0)); /* not centered: no grad_avg */
    for (int round = 0; round < 2; round++) {
        contract_two_steps(opt, k.params, N, c->g2, c->after2);
        static const float b2[N] = {1, 0.125f, -0.0625f}, v2[N] = {9, 1, 1};
        assert_true(same_bits("square_avg", "fn_optimizer", fn_optimizer_state(opt, 0, 0), v2, N));
        assert_true(same_bits("momentum_buffer", "fn_optimizer", fn_optimizer_state(opt, 1, 0), b2,
                              N));
        contract_restart(k.params, N, theta0, c->g1);
        fn_optimizer_set_steps(opt, 0);
    }
    fn_optimizer_destroy(opt);

    /* Centered with alpha 0: a = g, avg = sqrt(g^2 - g^2) + 1 = 1, so
     * b = 0.5 b + g: step 1 b = [1, -3, 7], theta -= 0.5 b -> [0.5, -0.5,
     * -3]; step 2 b = [3.5, -0.5, 2.5], theta -> [-1.25, -0.25, -4.25]. */
    fn_rmsprop_config centered = c->cfg;
    centered.centered = 1;
    must(fn_rmsprop_create(&opt, k.ctx, k.list, 2, &centered));
    must(fn_optimizer_step(opt));
    contract_grads(k.params, N, c->g2);
    must(fn_optimizer_step(opt));
    static const float after2[N] = {-1.25f, -0.25f, -4.25f}, a2[N] = {3, 1, -1};
    assert_true(same_bits("centered weight", "fn_optimizer", &k.params[0].value, after2, N));
    assert_true(same_bits("grad_avg", "fn_optimizer", fn_optimizer_state(opt, 2, 0), a2, N));
    static const char *const state[] = {"square_avg", "momentum_buffer", "grad_avg"};
    expect_optimizer_contract(opt, "rmsprop", state, 3);
    fn_optimizer_destroy(opt);

    fn_rmsprop_config plain = fn_rmsprop_config_default(0.1f);
    must(fn_rmsprop_create(&opt, k.ctx, k.list, 2, &plain));
    assert_non_null(fn_optimizer_state(opt, 0, 1));
    assert_null(fn_optimizer_state(opt, 1, 0));
    assert_null(fn_optimizer_state(opt, 2, 0));
    fn_optimizer_destroy(opt);
    contract_close(&k);
}

TESTS_ON_EACH_DEVICE(interface, check_interface)

/* Fills t with values in [lo, hi), every seventh scaled by 1e-4. */
static void fill(chk_rng *rng, float *host, int count, double lo, double hi)
{
    for (int i = 0; i < count; i++)
        host[i] = (float)chk_uniform(rng, lo, hi) * (i % 7 == 0 ? 1e-4f : 1.0f);
}

/* The CUDA kernel against the CPU on 10007 random values over five steps
 * with every option on, then without momentum and centering: both round
 * every operation on its own in the same order, so they agree bit for
 * bit. */
static void test_cuda_matches_cpu(void **state)
{
    (void)state;
    enum { COUNT = 10007, STEPS = 5 };
    fn_context *gpu = context_or_skip(FN_CUDA);
    fn_context *cpu = context_or_skip(FN_CPU);
    float *host = chk_alloc_float(COUNT);
    chk_rng rng = chk_rng_seed(12);
    for (int run = 0; run < 2; run++) {
        tensors a, b;
        alloc_tensors(&a, COUNT, FN_CPU);
        alloc_tensors(&b, COUNT, FN_CUDA);
        fill(&rng, host, COUNT, -1, 1);
        must(fn_tensor_upload(&a.value, host, COUNT));
        must(fn_tensor_upload(&b.value, host, COUNT));
        fn_rmsprop_config cfg = fn_rmsprop_config_default(1e-2f);
        if (run == 0) {
            cfg.momentum = 0.9f;
            cfg.centered = 1;
            cfg.weight_decay = 0.01f;
        }
        for (int s = 1; s <= STEPS; s++) {
            fill(&rng, host, COUNT, -2, 2);
            must(fn_tensor_upload(&a.grad, host, COUNT));
            must(fn_tensor_upload(&b.grad, host, COUNT));
            must(fn_rmsprop_update(cpu, &a.value, &a.grad, &a.v, &a.b, &a.a, &cfg));
            must(fn_rmsprop_update(gpu, &b.value, &b.grad, &b.v, &b.b, &b.a, &cfg));
        }
        const char *const names[] = {"theta", "square_avg", "momentum_buffer", "grad_avg"};
        const fn_tensor *pairs[4][2] = {{&a.value, &b.value}, {&a.v, &b.v}, {&a.b, &b.b},
                                        {&a.a, &b.a}};
        for (int k = 0; k < 4; k++) {
            char what[64];
            snprintf(what, sizeof what, "run %d, %s", run, names[k]);
            expect_cpu_gpu_same(what, pairs[k][0], pairs[k][1], COUNT);
        }
        free_tensors(&a);
        free_tensors(&b);
    }
    free(host);
    fn_context_destroy(cpu);
    fn_context_destroy(gpu);
}

/* torch.optim.RMSprop refuses negative values; eps = 0 and alpha above 1
 * are refused here too (0 / 0, a growing average), each naming the option. */
static void test_config_check(void **state)
{
    (void)state;
    fn_rmsprop_config c = fn_rmsprop_config_default(1e-2f);
    assert_int_equal(fn_rmsprop_config_check(&c), FN_OK);
    assert_float_equal(c.alpha, 0.99f, 0);
    assert_float_equal(c.eps, 1e-8f, 0);
    static const struct {
        size_t offset;
        float value;
        const char *message;
    } bad[] = {
        {offsetof(fn_rmsprop_config, lr), 0, "rmsprop: lr 0 must be positive"},
        {offsetof(fn_rmsprop_config, alpha), 1.5f, "rmsprop: alpha 1.5 must be in [0, 1]"},
        {offsetof(fn_rmsprop_config, alpha), -0.5f, "rmsprop: alpha -0.5"},
        {offsetof(fn_rmsprop_config, eps), 0, "rmsprop: eps 0 must be > 0"},
        {offsetof(fn_rmsprop_config, weight_decay), -1, "rmsprop: weight_decay -1"},
        {offsetof(fn_rmsprop_config, momentum), -0.5f, "rmsprop: momentum -0.5"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fn_rmsprop_config b = fn_rmsprop_config_default(1e-2f);
        memcpy((char *)&b + bad[i].offset, &bad[i].value, sizeof(float));
        assert_int_equal(fn_rmsprop_config_check(&b), FN_ERR_INVALID);
        if (!strstr(fn_last_error(), bad[i].message))
            fail_msg("'%s' lacks '%s'", fn_last_error(), bad[i].message);
    }
    /* A step at a bad lr is refused, naming it, and nothing moves. */
    fn_context *ctx = context_or_skip(FN_CPU);
    tensors t;
    alloc_tensors(&t, N, FN_CPU);
    c.momentum = 0.5f;
    fn_tensor missing = {0};
    assert_int_equal(fn_rmsprop_update(ctx, &t.value, &t.grad, &t.v, &missing, &t.a, &c),
                     FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "momentum_buffer"));
    free_tensors(&t);
    fn_context_destroy(ctx);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_update_cpu), cmocka_unit_test(test_update_cuda),
          cmocka_unit_test(test_defaults_cpu), cmocka_unit_test(test_defaults_cuda),
          cmocka_unit_test(test_interface_cpu), cmocka_unit_test(test_interface_cuda),
          cmocka_unit_test(test_cuda_matches_cpu), cmocka_unit_test(test_config_check))
