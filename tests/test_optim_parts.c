/* test_optim_parts.c — a step made of partial steps (optimizer.h:
 * step_params, one call per layer's parameters in any order, then
 * fn_optimizer_step_done; data parallelism updates each layer as soon as
 * its gradient sum is in) equals the whole step bit for bit, over three
 * steps (the first, which starts the state, and two with it) for SGD with
 * momentum and weight decay, Adam and AdamW; ranges outside the parameters
 * are refused. On the CPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "expect.h"
#include "fusenet/adam.h"
#include "fusenet/sgd.h"
#include "optim/optimizer_paths.h"
#include "test_main.h"

enum { PARAMS = 4, STEPS = 3 };
static const int shapes[PARAMS][2] = {{3, 5}, {1, 5}, {2, 3}, {1, 2}};

typedef struct twin {
    fn_param params[PARAMS];
    fn_param *list[PARAMS];
    fn_optimizer *opt;
} twin;

/* Values and gradients from a fixed sequence; the gradients change with
 * the step. */
static void fill(fn_tensor *t, unsigned seed)
{
    const int n = t->rows * t->cols;
    for (int i = 0; i < n; i++)
        t->data[i] = (float)((int)((seed * 2654435761u + (unsigned)i * 40503u) % 2001) - 1000) /
                     512.0f;
}

static void make(twin *w, fn_context *ctx, const char *kind)
{
    for (int i = 0; i < PARAMS; i++) {
        assert_int_equal(fn_tensor_alloc(&w->params[i].value, shapes[i][0], shapes[i][1], FN_CPU),
                         FN_OK);
        assert_int_equal(fn_tensor_alloc(&w->params[i].grad, shapes[i][0], shapes[i][1], FN_CPU),
                         FN_OK);
        w->params[i].name = "p";
        fill(&w->params[i].value, (unsigned)i + 1);
        w->list[i] = &w->params[i];
    }
    if (strcmp(kind, "sgd") == 0) {
        fn_sgd_config cfg = fn_sgd_config_default(0.125f);
        cfg.momentum = 0.875f;
        cfg.weight_decay = 0.0625f;
        fn_sgd *sgd = NULL;
        assert_int_equal(fn_sgd_create(&sgd, ctx, w->list, PARAMS, &cfg), FN_OK);
        w->opt = fn_sgd_optimizer(sgd);
    } else {
        fn_adam_config cfg = fn_adam_config_default(0.01f, strcmp(kind, "adamw") == 0);
        assert_int_equal(fn_adam_create(&w->opt, ctx, w->list, PARAMS, &cfg), FN_OK);
    }
}

static void release(twin *w)
{
    fn_optimizer_destroy(w->opt);
    for (int i = 0; i < PARAMS; i++) {
        fn_tensor_free(&w->params[i].value);
        fn_tensor_free(&w->params[i].grad);
    }
}

static void same_steps(void **state, const char *kind)
{
    fn_context *ctx = *state;
    twin whole, parts;
    make(&whole, ctx, kind);
    make(&parts, ctx, kind);
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < PARAMS; i++) {
            fill(&whole.params[i].grad, 100u * (unsigned)s + (unsigned)i);
            fill(&parts.params[i].grad, 100u * (unsigned)s + (unsigned)i);
        }
        assert_int_equal(fn_optimizer_step(whole.opt), FN_OK);
        /* Last "layer" first, as the backward pass finishes them. */
        assert_int_equal(fn_optimizer_step_params(parts.opt, 2, 2), FN_OK);
        assert_int_equal(fn_optimizer_step_params(parts.opt, 0, 2), FN_OK);
        fn_optimizer_step_done(parts.opt);
        assert_int_equal(fn_optimizer_steps(parts.opt), s + 1);
        for (int i = 0; i < PARAMS; i++) {
            const fn_tensor *a = &whole.params[i].value, *b = &parts.params[i].value;
            assert_memory_equal(a->data, b->data, sizeof(float) * (size_t)(a->rows * a->cols));
        }
    }
    assert_int_equal(fn_optimizer_step_params(parts.opt, 3, 2), FN_ERR_INVALID);
    assert_int_equal(fn_optimizer_step_params(parts.opt, -1, 1), FN_ERR_INVALID);
    release(&whole);
    release(&parts);
}

static void sgd_parts(void **state) { same_steps(state, "sgd"); }
static void adam_parts(void **state) { same_steps(state, "adam"); }
static void adamw_parts(void **state) { same_steps(state, "adamw"); }

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(sgd_parts),
          cmocka_unit_test(adam_parts), cmocka_unit_test(adamw_parts))
