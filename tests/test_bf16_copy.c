/* test_bf16_copy.c — the host's side of a weight's bfloat16 copy
 * (param.h), on the CPU:
 *  - a CPU net's parameters have no copy in any math mode, bf16 included,
 *    so its optimisers keep nothing and a refresh does nothing;
 *  - owners are counted: kept while one remains, never below none; a
 *    parameter without a copy is never kept;
 *  - a CPU context never uses value_bf16 (a parameter filled in field by
 *    field may hold anything there): nothing is kept or refreshed, an
 *    optimiser over it steps.
 * The GPU side (the copy's bits after every writer): test_bf16_copy_cuda. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/adam.h"
#include "fusenet/block.h"
#include "fusenet/linear.h"
#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "test_main.h"

enum { BATCH = 4, IN = 8, HID = 8, OUT = 3 };

static fn_net *small_net(fn_context *ctx)
{
    fn_net *net = NULL;
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 3, .offset = 0};
    EXPECT_OK(fn_net_create(&net, ctx, BATCH));
    const fn_block_config c = fn_block_config_default(IN, HID, 2);
    EXPECT_OK(fn_block_create(&l, ctx, &c, BATCH, &rng));
    EXPECT_OK(fn_net_add(net, l));
    EXPECT_OK(fn_linear_create(&l, ctx, HID, OUT, BATCH, &rng));
    EXPECT_OK(fn_net_add(net, l));
    return net;
}

static void test_cpu_nets_have_no_copy(void **state)
{
    (void)state;
    for (int m = 0; m < FN_MATH_MODES; m++) {
        fn_context *ctx = NULL;
        EXPECT_OK(fn_context_create(&ctx, FN_CPU, 0, (fn_math)m));
        fn_net *net = small_net(ctx);
        fn_optimizer *adam = NULL;
        const fn_adam_config ac = fn_adam_config_default(0.01f, 1);
        EXPECT_OK(fn_adam_create(&adam, ctx, fn_net_params(net), fn_net_n_params(net), &ac));
        for (int i = 0; i < fn_net_n_params(net); i++) {
            fn_param *p = fn_net_param(net, i);
            assert_null(p->value_bf16);
            assert_int_equal(p->bf16_keepers, 0);
            assert_false(fn_param_bf16_kept(p));
            EXPECT_OK(fn_param_refresh_bf16(p, ctx));
        }
        for (int i = 0; i < fn_net_n_layers(net); i++)
            EXPECT_OK(fn_layer_refresh_bf16(fn_net_layer(net, i)));
        fn_optimizer_destroy(adam);
        fn_net_destroy(net);
        fn_context_destroy(ctx);
    }
}

static void test_keepers_counted(void **state)
{
    (void)state;
    fn_param none = {.name = "bias"};
    EXPECT_OK(fn_param_keep_bf16(&none, NULL));
    assert_int_equal(none.bf16_keepers, 0);
    assert_false(fn_param_bf16_kept(&none));
    fn_param_release_bf16(&none);
    assert_int_equal(none.bf16_keepers, 0);

    /* A copy's keepers counted without a refresh: set by hand, as
     * fn_param_keep_bf16 counts before it rounds. */
    uint16_t copy[4];
    fn_param w = {.name = "weight", .value_bf16 = copy, .bf16_keepers = 2};
    assert_true(fn_param_bf16_kept(&w));
    fn_param_release_bf16(&w);
    assert_true(fn_param_bf16_kept(&w));
    fn_param_release_bf16(&w);
    assert_false(fn_param_bf16_kept(&w));
    fn_param_release_bf16(&w);
    assert_int_equal(w.bf16_keepers, 0);
    assert_false(fn_param_bf16_kept(NULL));
}

/* A CPU context has no copies: whatever value_bf16 and bf16_keepers hold
 * (a parameter filled in field by field), keeping keeps nothing, a
 * refresh does nothing and an optimiser over it steps. */
static void test_cpu_context_ignores_the_field(void **state)
{
    fn_context *ctx = *state;
    fn_param w = {.name = "weight", .value_bf16 = (void *)(uintptr_t)0x10};
    EXPECT_OK(fn_tensor_alloc(&w.value, 2, 2, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&w.grad, 2, 2, FN_CPU));
    EXPECT_OK(fn_param_keep_bf16(&w, ctx));
    assert_int_equal(w.bf16_keepers, 0);
    fn_param *params[1] = {&w};
    fn_sgd *sgd = NULL;
    const fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    EXPECT_OK(fn_sgd_create(&sgd, ctx, params, 1, &cfg));
    assert_int_equal(w.bf16_keepers, 0);
    EXPECT_OK(fn_sgd_step(sgd));
    fn_sgd_destroy(sgd);
    assert_int_equal(w.bf16_keepers, 0);

    w.bf16_keepers = 7;
    EXPECT_OK(fn_param_refresh_bf16(&w, ctx));
    EXPECT_OK(fn_sgd_create(&sgd, ctx, params, 1, &cfg));
    EXPECT_OK(fn_sgd_step(sgd));
    fn_sgd_destroy(sgd);
    fn_tensor_free(&w.value);
    fn_tensor_free(&w.grad);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_cpu_nets_have_no_copy),
          cmocka_unit_test(test_keepers_counted),
          cmocka_unit_test(test_cpu_context_ignores_the_field))
