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

#include "fusenet/schedule_kind.h"
#include "optim/schedules/cosine/cosine_schedule.h"
#include "optim/schedules/plateau/plateau_schedule.h"
#include "optim/schedules/step/step_schedule.h"
#include "test_main.h"

/* The registry's kind called name. */
static const fn_schedule_kind *kind(const char *name)
{
    const fn_schedule_kind *k = NULL;
    assert_int_equal(fn_schedule_kind_find(name, &k), FN_OK);
    return k;
}

static void expect_lr(const fn_schedule *s, long long t, double want)
{
    const double got = fn_schedule_lr(s, t);
    if (!(fabs(got - want) <= 1e-15 * fabs(want)))
        fail_msg("%s, step %lld: lr %.17g, expected %.17g", fn_schedule_name(s), t, got,
                 want);
}

/* s is valid, and its rate at each step t[i] is want[i]. */
static void expect_lrs(const fn_schedule *s, int n, const long long *t, const double *want)
{
    assert_int_equal(fn_schedule_check(s), FN_OK);
    for (int i = 0; i < n; i++)
        expect_lr(s, t[i], want[i]);
}

static void test_constant_and_warmup(void **state)
{
    (void)state;
    fn_schedule s = {.kind = kind("constant"), .lr = 0.1};
    assert_int_equal(fn_schedule_check(&s), FN_OK);
    expect_lr(&s, 0, 0.1);
    expect_lr(&s, 1000000, 0.1);
    /* W = 4: 0.8 * (t + 1) / 4 = 0.2, 0.4, 0.6, 0.8, then 0.8. */
    s = (fn_schedule){.kind = kind("constant"), .lr = 0.8, .warmup_steps = 4};
    expect_lrs(&s, 5, (const long long[]){0, 1, 2, 3, 4},
               (const double[]){0.2, 0.4, 0.6, 0.8, 0.8});
}

static void test_step(void **state)
{
    (void)state;
    /* lr 1 * 0.5^floor(t / 3). */
    const fn_step_schedule_options o = {.step_size = 3, .gamma = 0.5f};
    fn_schedule s = {.kind = kind("step"), .lr = 1, .options = &o};
    expect_lrs(&s, 5, (const long long[]){0, 2, 3, 8, 9},
               (const double[]){1, 1, 0.5, 0.25, 0.125});
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
    const fn_cosine_schedule_options o = {.min_lr = 0.2f}, zero = {0};
    fn_schedule s = {.kind = kind("cosine"), .lr = 1, .options = &o, .warmup_steps = 2,
                     .total_steps = 10};
    assert_int_equal(fn_schedule_check(&s), FN_OK);
    expect_lr(&s, 0, 0.5);
    expect_lr(&s, 1, 1);
    expect_lr(&s, 2, 1);                                  /* cos 0 = 1 */
    const double m = 0.2f, h = (1 - m) / 2; /* the float32 option, as the config holds it */
    expect_lr(&s, 4, m + h * (1 + 0.70710678118654752)); /* cos(pi/4) */
    expect_lr(&s, 6, m + h);                             /* cos(pi/2) = 0 */
    expect_lr(&s, 9, m + h * (1 - 0.92387953251128674)); /* cos(7 pi/8) */
    expect_lr(&s, 10, m);                                /* the end, and past it */
    expect_lr(&s, 25, m);
    /* No warm-up, min_lr 0: lr (1 + cos(pi t / T)) / 2. */
    s = (fn_schedule){.kind = kind("cosine"), .lr = 0.5, .options = &zero, .total_steps = 4};
    expect_lr(&s, 0, 0.5);
    expect_lr(&s, 2, 0.25);
    /* A warm-up as long as the run: no decay. */
    s = (fn_schedule){.kind = kind("cosine"), .lr = 0.5, .options = &zero, .warmup_steps = 4,
                      .total_steps = 4};
    expect_lr(&s, 3, 0.5);
}

/* ReduceLROnPlateau(factor 0.5, patience 1, threshold 0.1, cooldown 1,
 * min_lr 0.2) from lr 1, mode 'min', 'rel', as torch steps it: an epoch is
 * better when its metric is below best * 0.9. 10: best. 9.5: bad 1. 9.5:
 * bad 2 > 1, lr 0.5, cooldown 1. 8: best (8 < 9); the cooldown epoch.
 * 8: bad 1. 8: bad 2, lr 0.25, cooldown 1. 8: cooldown. 7.1: best (< 7.2).
 * 7.1: bad 1. 7.1: lr max(0.125, 0.2) = 0.2. 7.1: cooldown. 7.1: bad 1.
 * 7.1: max(0.1, 0.2) = 0.2, no change. (torch.optim.lr_scheduler gives
 * the same sequence.) The rate between epochs is the one in effect, times
 * the warm-up factor; a NaN metric is a bad epoch. */
static void test_plateau(void **state)
{
    (void)state;
    const fn_plateau_schedule_options o = {.factor = 0.5f, .patience = 1, .threshold = 0.1f,
                                           .cooldown = 1, .min_lr = 0.2f};
    fn_schedule s = {.kind = kind("plateau"), .lr = 1, .options = &o, .warmup_steps = 2};
    assert_int_equal(fn_schedule_check(&s), FN_OK);
    expect_lr(&s, 0, 0.5);
    expect_lr(&s, 5, 1);
    static const double metric[] = {10, 9.5, 9.5, 8, 8, 8, 8, 7.1, 7.1, 7.1, 7.1, 7.1, 7.1};
    const double min = 0.2f;
    const double lr[] = {1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, min, min, min, min};
    for (int e = 0; e < 13; e++) {
        fn_schedule_epoch_end(&s, metric[e]);
        expect_lr(&s, 100, lr[e]);
    }
    assert_true(s.state[FN_PLATEAU_BEST] == 7.1);
    assert_true(s.state[FN_PLATEAU_COOLDOWN] == 1);
    expect_lr(&s, 0, min * 0.5); /* the warm-up factor multiplies it */
    /* Another schedule made from the state continues it: the checkpoint's
     * use. */
    fn_schedule copy = {.kind = s.kind, .lr = 1, .options = &o};
    for (int i = 0; i < FN_SCHEDULE_STATE_MAX; i++)
        copy.state[i] = s.state[i];
    expect_lr(&copy, 7, min);
    /* patience 0: every epoch without improvement reduces; NaN is one. */
    const fn_plateau_schedule_options eager = {.factor = 0.1f, .threshold = 1e-4f};
    s = (fn_schedule){.kind = kind("plateau"), .lr = 1, .options = &eager};
    fn_schedule_epoch_end(&s, 1);
    expect_lr(&s, 0, 1);
    fn_schedule_epoch_end(&s, NAN);
    expect_lr(&s, 0, (double)0.1f);
    /* A constant schedule ignores epoch ends. */
    s = (fn_schedule){.kind = kind("constant"), .lr = 0.3};
    fn_schedule_epoch_end(&s, 1);
    fn_schedule_epoch_end(&s, 2);
    expect_lr(&s, 0, 0.3);
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
    fn_step_schedule_options step = {.gamma = 0.5f};
    fn_schedule s = {.kind = kind("step"), .lr = 1, .options = &step};
    expect_invalid(&s, "step needs step_size >= 1");
    step = (fn_step_schedule_options){.step_size = 1, .gamma = 0};
    expect_invalid(&s, "gamma 0");
    const fn_cosine_schedule_options cosine = {.min_lr = 2};
    s = (fn_schedule){.kind = kind("cosine"), .lr = 1, .options = &cosine};
    expect_invalid(&s, "min_lr 2 is above lr 1");
    s = (fn_schedule){.kind = kind("constant"), .lr = 1, .warmup_steps = -1};
    expect_invalid(&s, "warmup_steps -1");
    s = (fn_schedule){.kind = kind("constant"), .lr = 0};
    expect_invalid(&s, "lr 0");
    s = (fn_schedule){.kind = kind("step"), .lr = 1};
    expect_invalid(&s, "step has no options block");
    const fn_schedule_kind *k = NULL;
    assert_int_equal(fn_schedule_kind_find("linear", &k), FN_ERR_INVALID);
    assert_non_null(
        strstr(fn_last_error(), "expected constant, step, cosine or plateau, got 'linear'"));
    const fn_plateau_schedule_options factor1 = {.factor = 1};
    s = (fn_schedule){.kind = kind("plateau"), .lr = 1, .options = &factor1};
    expect_invalid(&s, "factor 1 must be > 0 and < 1");
    const fn_plateau_schedule_options threshold1 = {.factor = 0.5f, .threshold = 1};
    s.options = &threshold1;
    expect_invalid(&s, "threshold 1 must be >= 0 and < 1");
    assert_string_equal(fn_schedule_name(&s), "plateau");
    /* Every kind has a name and a rate, and is found by its name. */
    for (int i = 0; i < fn_schedule_kind_count(); i++) {
        const fn_schedule_kind *ki = fn_schedule_kind_at(i);
        assert_non_null(ki->rate);
        assert_ptr_equal(kind(ki->name), ki);
    }
    assert_null(fn_schedule_kind_at(fn_schedule_kind_count()));
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_constant_and_warmup), cmocka_unit_test(test_step),
          cmocka_unit_test(test_cosine), cmocka_unit_test(test_plateau),
          cmocka_unit_test(test_checks))
