/* test_schedule.c — learning-rate schedules (schedule.h) against hand-worked
 * values of their formulas, which are those of PyTorch's LambdaLR with a
 * linear warm-up factor min(1, (t + 1) / W), StepLR and, after the warm-up,
 * CosineAnnealingLR(T_max = T - W, eta_min = min_lr); and the checks of
 * their settings. Pure arithmetic in double: values within 1e-15
 * relative (a few roundings of numbers near 1). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fusenet/schedule.h"
#include "test_main.h"

static void expect_lr(const fn_schedule *s, long long t, double want)
{
    const double got = fn_schedule_lr(s, t);
    if (!(fabs(got - want) <= 1e-15 * fabs(want)))
        fail_msg("%s, step %lld: lr %.17g, expected %.17g", fn_schedule_name(s->kind), t, got,
                 want);
}

static void test_constant_and_warmup(void **state)
{
    (void)state;
    fn_schedule s = {.kind = FN_SCHEDULE_CONSTANT, .lr = 0.1};
    assert_int_equal(fn_schedule_check(&s), FN_OK);
    expect_lr(&s, 0, 0.1);
    expect_lr(&s, 1000000, 0.1);
    /* W = 4: 0.8 * (t + 1) / 4 = 0.2, 0.4, 0.6, 0.8, then 0.8. */
    s = (fn_schedule){.kind = FN_SCHEDULE_CONSTANT, .lr = 0.8, .warmup_steps = 4};
    assert_int_equal(fn_schedule_check(&s), FN_OK);
    expect_lr(&s, 0, 0.2);
    expect_lr(&s, 1, 0.4);
    expect_lr(&s, 2, 0.6);
    expect_lr(&s, 3, 0.8);
    expect_lr(&s, 4, 0.8);
}

static void test_step(void **state)
{
    (void)state;
    /* lr 1 * 0.5^floor(t / 3). */
    fn_schedule s = {.kind = FN_SCHEDULE_STEP, .lr = 1, .step_size = 3, .gamma = 0.5};
    assert_int_equal(fn_schedule_check(&s), FN_OK);
    expect_lr(&s, 0, 1);
    expect_lr(&s, 2, 1);
    expect_lr(&s, 3, 0.5);
    expect_lr(&s, 8, 0.25);
    expect_lr(&s, 9, 0.125);
    /* With W = 2 the warm-up factor multiplies the step rate: 0.5, 1. */
    s.warmup_steps = 2;
    expect_lr(&s, 0, 0.5);
    expect_lr(&s, 1, 1);
    expect_lr(&s, 3, 0.5);
}

static void test_cosine(void **state)
{
    (void)state;
    /* lr 1, min_lr 0.2, W = 2, T = 10: warm-up 0.5, 1; then
     * 0.2 + 0.8 (1 + cos(pi (t - 2) / 8)) / 2. */
    fn_schedule s = {.kind = FN_SCHEDULE_COSINE, .lr = 1, .min_lr = 0.2, .warmup_steps = 2,
                     .total_steps = 10};
    assert_int_equal(fn_schedule_check(&s), FN_OK);
    expect_lr(&s, 0, 0.5);
    expect_lr(&s, 1, 1);
    expect_lr(&s, 2, 1);                                  /* cos 0 = 1 */
    expect_lr(&s, 4, 0.2 + 0.4 * (1 + 0.70710678118654752)); /* cos(pi/4) */
    expect_lr(&s, 6, 0.6);                                /* cos(pi/2) = 0 */
    expect_lr(&s, 9, 0.2 + 0.4 * (1 - 0.92387953251128674)); /* cos(7 pi/8) */
    expect_lr(&s, 10, 0.2);                               /* the end, and past it */
    expect_lr(&s, 25, 0.2);
    /* No warm-up, min_lr 0: lr (1 + cos(pi t / T)) / 2. */
    s = (fn_schedule){.kind = FN_SCHEDULE_COSINE, .lr = 0.5, .total_steps = 4};
    expect_lr(&s, 0, 0.5);
    expect_lr(&s, 2, 0.25);
    /* A warm-up as long as the run: no decay. */
    s = (fn_schedule){.kind = FN_SCHEDULE_COSINE, .lr = 0.5, .warmup_steps = 4, .total_steps = 4};
    expect_lr(&s, 3, 0.5);
}

static void expect_invalid(const fn_schedule *s, const char *text)
{
    assert_int_equal(fn_schedule_check(s), FN_ERR_INVALID);
    if (!strstr(fn_last_error(), text))
        fail_msg("message '%s' lacks '%s'", fn_last_error(), text);
}

static void test_checks(void **state)
{
    (void)state;
    fn_schedule s = {.kind = FN_SCHEDULE_STEP, .lr = 1, .gamma = 0.5};
    expect_invalid(&s, "step needs step_size >= 1");
    s = (fn_schedule){.kind = FN_SCHEDULE_STEP, .lr = 1, .step_size = 1, .gamma = 0};
    expect_invalid(&s, "gamma 0");
    s = (fn_schedule){.kind = FN_SCHEDULE_COSINE, .lr = 1, .min_lr = 2};
    expect_invalid(&s, "min_lr 2 must be >= 0 and <= lr 1");
    s = (fn_schedule){.kind = FN_SCHEDULE_CONSTANT, .lr = 1, .warmup_steps = -1};
    expect_invalid(&s, "warmup_steps -1");
    s = (fn_schedule){.kind = FN_SCHEDULE_CONSTANT, .lr = 0};
    expect_invalid(&s, "lr 0");
    fn_schedule_kind k;
    assert_int_equal(fn_schedule_parse("cosine", &k), FN_OK);
    assert_int_equal(k, FN_SCHEDULE_COSINE);
    assert_int_equal(fn_schedule_parse("linear", &k), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "expected constant, step or cosine, got 'linear'"));
    assert_string_equal(fn_schedule_name(FN_SCHEDULE_STEP), "step");
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_constant_and_warmup), cmocka_unit_test(test_step),
          cmocka_unit_test(test_cosine), cmocka_unit_test(test_checks))
