/* test_optim_table.c — the public optimiser table (optimizer.h) is what a
 * new optimiser fills, and no more: it stays narrow (the library's
 * performance paths live in the private optimizer_paths.h), and an
 * optimiser that fills it alone steps, zeroes, publishes its state and
 * answers every performance entry point the trainer asks ("none here")
 * without a hook of its own. On the CPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "expect.h"
#include "fusenet/optimizer.h"
#include "optim/optimizer_paths.h"
#include "test_main.h"

/* The most slots the public table may have: the nine a new optimiser
 * fills or leaves NULL (name, step, set_lr, the four of its published
 * state, destroy, paths) and one to spare. Every slot is a pointer or
 * the int n_state, which is no wider than one on the platforms we build. */
enum { MOST_SLOTS = 10 };

/* theta -= lr g, with no state: the smallest optimiser there is. */
typedef struct tiny {
    fn_optimizer base;
    float lr;
} tiny;

static fn_status tiny_step(fn_optimizer *opt)
{
    const float lr = ((tiny *)opt)->lr;
    for (int i = 0; i < opt->n_params; i++) {
        fn_param *p = opt->params[i];
        for (size_t k = 0; k < fn_tensor_count(&p->value); k++)
            p->value.data[k] -= lr * p->grad.data[k];
    }
    return FN_OK;
}

static void tiny_set_lr(fn_optimizer *opt, float lr) { ((tiny *)opt)->lr = lr; }

static fn_tensor *tiny_state(fn_optimizer *opt, int kind, int param)
{
    (void)opt, (void)kind, (void)param;
    return NULL;
}

static void tiny_destroy(fn_optimizer *opt)
{
    fn_optimizer_release(opt);
    free(opt);
}

static const fn_optimizer_ops tiny_ops = {
    .name = "tiny",
    .step = tiny_step,
    .set_lr = tiny_set_lr,
    .state = tiny_state,
    .destroy = tiny_destroy,
};

static void table_is_narrow(void **state)
{
    (void)state;
    assert_true(sizeof(fn_optimizer_ops) <= MOST_SLOTS * sizeof(void *));
}

static void public_table_alone(void **state)
{
    fn_context *ctx = *state;
    fn_param p = {.name = "w"};
    fn_param *list[] = {&p};
    EXPECT_OK(fn_tensor_alloc(&p.value, 1, 2, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&p.grad, 1, 2, FN_CPU));
    p.value.data[0] = 1.0f, p.value.data[1] = 2.0f;
    p.grad.data[0] = 4.0f, p.grad.data[1] = -8.0f;
    tiny *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->lr = 1.0f;
    EXPECT_OK(fn_optimizer_init(&t->base, &tiny_ops, ctx, list, 1, "tiny"));
    fn_optimizer *opt = &t->base;

    fn_optimizer_set_lr(opt, 0.25f);
    EXPECT_OK(fn_optimizer_step(opt));
    assert_true(p.value.data[0] == 0.0f && p.value.data[1] == 4.0f); /* exact in binary */
    assert_int_equal(fn_optimizer_steps(opt), 1);
    EXPECT_OK(fn_optimizer_zero_grad(opt));
    assert_true(p.grad.data[0] == 0.0f && p.grad.data[1] == 0.0f);
    EXPECT_OK(fn_optimizer_state_export(opt));
    EXPECT_OK(fn_optimizer_state_import(opt));
    assert_int_equal(fn_optimizer_state_bytes(opt), 0);

    /* What the trainer asks before it picks a faster step: none here. */
    int folded = 1;
    EXPECT_OK(fn_optimizer_fold(opt, &folded));
    assert_int_equal(folded, 0);
    assert_false(fn_optimizer_can_split(opt));
    assert_false(fn_optimizer_can_apply_parts(opt));
    assert_false(fn_optimizer_can_step_params(opt));
    assert_false(fn_optimizer_can_backward_step(opt));
    assert_int_equal(fn_optimizer_grad_state_bytes(opt), 0);
    EXPECT_FAIL(fn_optimizer_prepare(opt), FN_ERR_INVALID, "tiny has no split step");
    EXPECT_FAIL(fn_optimizer_step_params(opt, 0, 1), FN_ERR_INVALID, "no partial steps");
    assert_int_equal(fn_optimizer_steps(opt), 1); /* refused steps are not counted */

    fn_optimizer_destroy(opt);
    fn_tensor_free(&p.value);
    fn_tensor_free(&p.grad);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(table_is_narrow),
          cmocka_unit_test(public_table_alone))
