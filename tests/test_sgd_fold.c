/* test_sgd_fold.c — SGD's momentum folded into backward on the CPU
 * (fn_optimizer_fold, sgd.c): which configurations fold, what the fold
 * does to the parameters (their own gradient tensors freed: the heap in
 * use drops by their bytes) and gives back (gradients of their own again,
 * zeroed), and one step folded against the unfolded step within their
 * error bound, bit-identical when repeated one parameter at a time
 * (tests/support/sgd_fold.h). */
#define _GNU_SOURCE /* mallinfo2 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/linear.h"
#include "fusenet/sgd.h"
#include "optim/optimizer_paths.h"
#include "sgd_fold.h"
#include "test_main.h"

#if defined(__SANITIZE_ADDRESS__)
/* ASan's allocator (libasan; GCC installs no header for it). */
size_t __sanitizer_get_current_allocated_bytes(void);
/* The heap's bytes in use (ASan's allocator: with its redzones). */
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
#include <malloc.h>
/* The heap's bytes in use (glibc: the chunks and the mapped blocks). */
static size_t heap_in_use(void)
{
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}
#endif

/* After the optimiser gave them back: a gradient of the value's shape,
 * zeroed, of the parameter's own (the layer's zeroing writes it). */
static void expect_own_grads(fn_layer *l)
{
    for (int i = 0; i < l->n_params; i++) {
        const fn_tensor *g = &l->params[i].grad;
        assert_non_null(g->data);
        assert_int_equal(g->rows, l->params[i].value.rows);
        assert_int_equal(g->cols, l->params[i].value.cols);
        for (size_t k = 0; k < fn_tensor_count(g); k++)
            assert_true(g->data[k] == 0.0f);
        assert_true(l->params[i].grad_beta == 0.0f && l->params[i].grad_bf16 == NULL);
    }
    EXPECT_OK(fn_layer_zero_grad(l));
}

/* Folds a fresh SGD of cfg over a linear layer's parameters; returns
 * whether it folded, after checking what a fold leaves. */
static int fold_of(fn_context *ctx, const fn_sgd_config *cfg)
{
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 1, .offset = 0};
    EXPECT_OK(fn_linear_create(&l, ctx, 512, 512, 4, &rng));
    fn_param *params[] = {&l->params[0], &l->params[1]};
    const fn_tensor own = l->params[0].grad;
    /* The weight's gradient, 1 MiB: large enough that glibc gives it back
     * (small chunks stay "in use" in its thread cache), and half of it
     * far more than another thread's allocations meanwhile. */
    const size_t weight_bytes = (size_t)512 * 512 * sizeof(float);
    const size_t grad_bytes = weight_bytes + (size_t)512 * sizeof(float);
    fn_sgd *sgd = NULL;
    EXPECT_OK(fn_sgd_create(&sgd, ctx, params, 2, cfg));
    int folded = -1;
    const size_t before = heap_in_use();
    EXPECT_OK(fn_optimizer_fold(fn_sgd_optimizer(sgd), &folded));
    const size_t after = heap_in_use();
    if (folded) {
        for (int i = 0; i < 2; i++) { /* the gradient is the buffer, grad_beta mu */
            assert_ptr_equal(l->params[i].grad.data, fn_sgd_momentum_buffer(sgd, i)->data);
            assert_true(l->params[i].grad_beta == cfg->momentum);
        }
        /* the own gradients freed (with their allocator's overhead) */
        if (!(after + weight_bytes / 2 <= before))
            fail_msg("folding freed %lld bytes of the heap, not the weight gradient's %zu",
                     (long long)before - (long long)after, weight_bytes);
        /* counted once, as the optimiser's state */
        assert_int_equal(fn_optimizer_grad_state_bytes(fn_sgd_optimizer(sgd)), grad_bytes);
        int again = 0;
        EXPECT_OK(fn_optimizer_fold(fn_sgd_optimizer(sgd), &again));
        assert_int_equal(again, 1);
        assert_true(heap_in_use() + weight_bytes / 2 > after); /* nothing freed again */
    } else {
        assert_ptr_equal(l->params[0].grad.data, own.data);
        assert_true(l->params[0].grad_beta == 0.0f);
        assert_true(after + weight_bytes / 2 > before); /* nothing freed */
        assert_int_equal(fn_optimizer_grad_state_bytes(fn_sgd_optimizer(sgd)), 0);
    }
    fn_sgd_destroy(sgd); /* gives the parameters gradients of their own back */
    if (!folded)
        assert_ptr_equal(l->params[0].grad.data, own.data);
    expect_own_grads(l);
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

/* A second optimiser folding parameters the first has folded is refused
 * (the first's buffers are their gradients: folding again would free
 * them), and both destroys in either order leave the layer gradients of
 * its own (ASan: no double free). */
static void test_second_fold_refused(void **state)
{
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 1, .offset = 0};
    EXPECT_OK(fn_linear_create(&l, *state, 3, 2, 4, &rng));
    fn_param *params[] = {&l->params[0], &l->params[1]};
    fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    cfg.momentum = 0.9f;
    fn_sgd *first = NULL, *second = NULL;
    EXPECT_OK(fn_sgd_create(&first, *state, params, 2, &cfg));
    EXPECT_OK(fn_sgd_create(&second, *state, params, 2, &cfg));
    int folded = -1;
    EXPECT_OK(fn_optimizer_fold(fn_sgd_optimizer(first), &folded));
    assert_int_equal(folded, 1);
    EXPECT_FAIL(fn_optimizer_fold(fn_sgd_optimizer(second), &folded), FN_ERR_INVALID,
                "already adds into its gradient");
    assert_ptr_equal(l->params[0].grad.data, fn_sgd_momentum_buffer(first, 0)->data);
    fn_sgd_destroy(second);
    fn_sgd_destroy(first);
    expect_own_grads(l);
    fn_layer_destroy(l);
}

static void test_folded_step_agrees_with_unfolded(void **state)
{
    assert_int_equal(fold_check(*state), 4);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_which_configurations_fold),
          cmocka_unit_test(test_second_fold_refused),
          cmocka_unit_test(test_folded_step_agrees_with_unfolded))
