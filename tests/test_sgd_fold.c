/* test_sgd_fold.c — SGD's momentum folded into backward on the CPU
 * (fn_optimizer_fold, sgd.c): which configurations fold, what the fold
 * does to the parameters and gives back, and one step folded against the
 * unfolded step within their error bound, bit-identical when repeated
 * one parameter at a time (tests/support/sgd_fold.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/linear.h"
#include "fusenet/sgd.h"
#include "sgd_fold.h"
#include "test_main.h"

/* Folds a fresh SGD of cfg over a linear layer's parameters; returns
 * whether it folded, after checking what a fold leaves. */
static int fold_of(fn_context *ctx, const fn_sgd_config *cfg)
{
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 1, .offset = 0};
    EXPECT_OK(fn_linear_create(&l, ctx, 3, 2, 4, &rng));
    fn_param *params[] = {&l->params[0], &l->params[1]};
    const fn_tensor own = l->params[0].grad;
    fn_sgd *sgd = NULL;
    EXPECT_OK(fn_sgd_create(&sgd, ctx, params, 2, cfg));
    int folded = -1;
    EXPECT_OK(fn_optimizer_fold(fn_sgd_optimizer(sgd), &folded));
    if (folded) {
        for (int i = 0; i < 2; i++) { /* the gradient is the buffer, grad_beta mu */
            assert_ptr_equal(l->params[i].grad.data, fn_sgd_momentum_buffer(sgd, i)->data);
            assert_true(l->params[i].grad_beta == cfg->momentum);
        }
        int again = 0;
        EXPECT_OK(fn_optimizer_fold(fn_sgd_optimizer(sgd), &again));
        assert_int_equal(again, 1);
    } else {
        assert_ptr_equal(l->params[0].grad.data, own.data);
        assert_true(l->params[0].grad_beta == 0.0f);
    }
    fn_sgd_destroy(sgd); /* gives the parameters their own gradients back */
    assert_ptr_equal(l->params[0].grad.data, own.data);
    assert_true(l->params[0].grad_beta == 0.0f && l->params[1].grad_beta == 0.0f);
    fn_layer_destroy(l);
    return folded;
}

static void test_which_configurations_fold(void **state)
{
    fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    assert_int_equal(fold_of(*state, &cfg), 0); /* no momentum: nothing to fold */
    cfg.momentum = 0.9f;
    cfg.weight_decay = 0.01f;
    assert_int_equal(fold_of(*state, &cfg), 1);
    cfg.nesterov = 1;
    assert_int_equal(fold_of(*state, &cfg), 0); /* reads g besides buf */
    cfg.nesterov = 0;
    cfg.dampening = 0.5f;
    assert_int_equal(fold_of(*state, &cfg), 0); /* buf = mu buf + (1 - d) g */
    int folded = -1;
    EXPECT_FAIL(fn_optimizer_fold(NULL, &folded), FN_ERR_INVALID, "fn_optimizer_fold");
    assert_int_equal(folded, 0);
}

static void test_folded_step_agrees_with_unfolded(void **state)
{
    assert_int_equal(fold_check(*state), 4);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_which_configurations_fold),
          cmocka_unit_test(test_folded_step_agrees_with_unfolded))
