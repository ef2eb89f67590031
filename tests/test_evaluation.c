/* test_evaluation.c — predict's figures (evaluation.h) against long double
 * references: cross-entropy and accuracy (ties to the lower column), mse,
 * MAE and R² per output (NaN for a constant column; a target offset by 1e6
 * loses nothing), the same figures whether the rows come in one batch or
 * many; the row-wise softmax and argmax; each loss's link to probabilities
 * (softmax, sigmoid, none for values); and the confusion matrix with
 * per-class precision, recall and F1 (confusion.h) on a hand-counted
 * example. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fusenet/confusion.h"
#include "fusenet/evaluation.h"
#include "fusenet/loss_kind.h"
#include "test_main.h"

enum { ROWS = 200, OUT = 3 };

static float uniform(uint64_t *s, float lo, float hi)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((double)(*s >> 11) / 9007199254740992.0);
}

/* Relative agreement to 1e-12: every figure is a float64 sum of at most
 * 600 terms of relative error 2^-53 each, so about 600 * 1.1e-16 ≈ 7e-14
 * relative at worst, against a long double reference. */
static void near(double got, long double want, const char *what)
{
    if (!(fabsl((long double)got - want) <= 1e-12L * fabsl(want) + 1e-15L))
        fail_msg("%s: %.17g, reference %.17Lg", what, got, want);
}

static void test_labels(void **state)
{
    (void)state;
    static float y[ROWS * OUT];
    static int32_t labels[ROWS];
    uint64_t s = 1;
    for (int i = 0; i < ROWS * OUT; i++)
        y[i] = uniform(&s, -6, 6);
    for (int i = 0; i < ROWS; i++)
        labels[i] = i % OUT;
    y[0] = y[1] = y[2] = 1.0f; /* a tie: column 0 wins, the label is 0 */
    long double loss = 0;
    long long correct = 0;
    for (int i = 0; i < ROWS; i++) {
        const float *r = y + i * OUT;
        long double sum = 0;
        int best = 0;
        for (int j = 0; j < OUT; j++) {
            sum += expl((long double)r[j]);
            best = r[j] > r[best] ? j : best;
        }
        loss += logl(sum) - r[labels[i]];
        correct += best == labels[i];
    }
    fn_evaluation *whole = NULL, *parts = NULL;
    assert_int_equal(fn_evaluation_create(&whole, FN_DATA_LABELS, OUT), FN_OK);
    assert_int_equal(fn_evaluation_create(&parts, FN_DATA_LABELS, OUT), FN_OK);
    assert_int_equal(fn_evaluation_add(whole, ROWS, y, labels, NULL), FN_OK);
    for (int i = 0; i < ROWS; i += 64) {
        int n = ROWS - i < 64 ? ROWS - i : 64;
        assert_int_equal(fn_evaluation_add(parts, n, y + i * OUT, labels + i, NULL), FN_OK);
    }
    fn_evaluation_result a, b;
    fn_evaluation_get(whole, &a);
    fn_evaluation_get(parts, &b);
    assert_int_equal(a.rows, ROWS);
    near(a.loss, loss / ROWS, "cross-entropy");
    assert_int_equal(a.correct, correct);
    near(a.accuracy, (long double)correct / ROWS, "accuracy");
    assert_null(a.mae);
    assert_true(a.loss == b.loss && a.correct == b.correct);
    int32_t bad = OUT;
    assert_int_equal(fn_evaluation_add(whole, 1, y, &bad, NULL), FN_ERR_INVALID);
    fn_evaluation_destroy(whole);
    fn_evaluation_destroy(parts);
}

static void test_values(void **state)
{
    (void)state;
    static float y[ROWS * OUT], t[ROWS * OUT];
    uint64_t s = 2;
    for (int i = 0; i < ROWS; i++) {
        t[i * OUT + 0] = uniform(&s, -1, 1);
        t[i * OUT + 1] = 1e6f + uniform(&s, 0, 8); /* a large offset */
        t[i * OUT + 2] = 2.5f;                       /* constant: R² is NaN */
        for (int j = 0; j < OUT; j++)
            y[i * OUT + j] = t[i * OUT + j] + uniform(&s, -0.5f, 0.5f);
    }
    fn_evaluation *e = NULL;
    assert_int_equal(fn_evaluation_create(&e, FN_DATA_FLOATS, OUT), FN_OK);
    for (int i = 0; i < ROWS; i += 50)
        assert_int_equal(fn_evaluation_add(e, 50, y + i * OUT, NULL, t + i * OUT), FN_OK);
    fn_evaluation_result r;
    fn_evaluation_get(e, &r);
    long double sse_all = 0;
    for (int j = 0; j < OUT; j++) {
        long double mean = 0, sse = 0, sae = 0, sst = 0;
        for (int i = 0; i < ROWS; i++)
            mean += t[i * OUT + j];
        mean /= ROWS;
        for (int i = 0; i < ROWS; i++) {
            long double err = (long double)y[i * OUT + j] - t[i * OUT + j];
            sse += err * err;
            sae += fabsl(err);
            sst += (t[i * OUT + j] - mean) * (t[i * OUT + j] - mean);
        }
        sse_all += sse;
        near(r.mae[j], sae / ROWS, "MAE");
        if (j == 2)
            assert_true(isnan(r.r2[j]));
        else
            /* R² of column 1: SS_tot about 1e6 is kept with the shift by
             * the first target, so its relative error stays ~1e-13 too. */
            near(r.r2[j], 1 - sse / sst, "R2");
    }
    near(r.loss, sse_all / (ROWS * OUT), "mse");
    assert_true(isnan(r.accuracy));
    fn_evaluation_destroy(e);
}

static void test_softmax_argmax(void **state)
{
    (void)state;
    float x[2 * 4] = {1, 3, 3, -2, 1000, 0, -1000, 999};
    int32_t classes[2];
    fn_argmax_rows(x, 2, 4, classes);
    assert_int_equal(classes[0], 1); /* the tie goes to the lower column */
    assert_int_equal(classes[1], 0);
    fn_softmax_rows(x, 2, 4);
    for (int i = 0; i < 2; i++) {
        double sum = 0;
        for (int j = 0; j < 4; j++) {
            assert_true(x[i * 4 + j] >= 0 && isfinite(x[i * 4 + j]));
            sum += x[i * 4 + j];
        }
        assert_true(fabs(sum - 1) < 1e-6);
    }
    /* e^1 / (e^1 + e^0 + 0 + 0) for the large row, computed stably. */
    assert_true(fabsf(x[4] - (float)(exp(1.0) / (exp(1.0) + 1.0))) < 1e-7f);
    assert_true(x[1] == x[2]);
}

/* Ten rows, four classes (class 3 neither labelled nor predicted):
 * counts [[2 2 0 0] [0 2 0 0] [1 0 3 0] [0 0 0 0]]; class 0: precision 2/3,
 * recall 2/4, F1 4/7; class 1: 2/4, 2/2, 2/3; class 2: 3/3, 3/4, 6/7;
 * class 3 undefined, as is its share of the averages. */
/* The link each loss's outputs take (fn_loss_kind_probabilities):
 * cross_entropy's is the softmax of each row, bit for bit
 * fn_softmax_rows; bce_with_logits's the sigmoid of each output alone,
 * finite for any logit; mse's outputs are values, an error naming it. */
static void test_loss_links(void **state)
{
    (void)state;
    const fn_loss_kind *kind = NULL;
    float x[6] = {-1e4f, 0.0f, 2.0f, 1e4f, -2.0f, 3.0f}, soft[6];
    memcpy(soft, x, sizeof x);
    fn_softmax_rows(soft, 2, 3);
    assert_int_equal(fn_loss_kind_find("cross_entropy", &kind), FN_OK);
    float p[6];
    memcpy(p, x, sizeof x);
    assert_int_equal(fn_loss_kind_probabilities(kind, p, 2, 3), FN_OK);
    assert_memory_equal(p, soft, sizeof p);
    assert_int_equal(fn_loss_kind_find("bce_with_logits", &kind), FN_OK);
    memcpy(p, x, sizeof x);
    assert_int_equal(fn_loss_kind_probabilities(kind, p, 2, 3), FN_OK);
    for (int k = 0; k < 6; k++) /* the float64 sigmoid rounded once to float32 */
        assert_true(p[k] == (float)(1.0 / (1.0 + exp(-(double)x[k]))));
    assert_true(p[0] == 0.0f && p[1] == 0.5f && p[3] == 1.0f);
    assert_int_equal(fn_loss_kind_find("mse", &kind), FN_OK);
    assert_int_equal(fn_loss_kind_probabilities(kind, p, 2, 3), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "loss mse: its outputs are values"));
}

static void test_confusion(void **state)
{
    (void)state;
    static const int32_t labels[] = {0, 0, 0, 1, 1, 2, 2, 2, 2, 0};
    static const int32_t predicted[] = {0, 0, 1, 1, 1, 2, 2, 2, 0, 1};
    static const long long counts[4][4] = {{2, 2, 0, 0}, {0, 2, 0, 0}, {1, 0, 3, 0}, {0}};
    fn_confusion *c = NULL;
    assert_int_equal(fn_confusion_create(&c, 4), FN_OK);
    assert_int_equal(fn_confusion_add(c, 4, labels, predicted), FN_OK); /* in two batches */
    assert_int_equal(fn_confusion_add(c, 6, labels + 4, predicted + 4), FN_OK);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            assert_int_equal(fn_confusion_count(c, i, k), counts[i][k]);
    static const double want[3][3] = {{2.0 / 3, 0.5, 4.0 / 7}, {0.5, 1, 2.0 / 3},
                                      {1, 0.75, 6.0 / 7}};
    static const long long support[] = {4, 2, 4, 0};
    for (int k = 0; k < 3; k++) {
        const fn_class_scores s = fn_confusion_scores(c, k);
        near(s.precision, want[k][0], "precision");
        near(s.recall, want[k][1], "recall");
        near(s.f1, want[k][2], "f1");
        assert_int_equal(s.support, support[k]);
    }
    const fn_class_scores none = fn_confusion_scores(c, 3);
    assert_true(isnan(none.precision) && isnan(none.recall) && isnan(none.f1));
    assert_int_equal(none.support, 0);
    const fn_class_scores macro = fn_confusion_average(c, 0);
    near(macro.precision, (2.0L / 3 + 0.5L + 1) / 3, "macro precision");
    near(macro.recall, (0.5L + 1 + 0.75L) / 3, "macro recall");
    near(macro.f1, (4.0L / 7 + 2.0L / 3 + 6.0L / 7) / 3, "macro f1");
    assert_int_equal(macro.support, 10);
    const fn_class_scores weighted = fn_confusion_average(c, 1);
    near(weighted.recall, (4 * 0.5L + 2 * 1 + 4 * 0.75L) / 10, "weighted recall");
    static const int32_t bad[] = {4};
    assert_int_equal(fn_confusion_add(c, 1, bad, predicted), FN_ERR_INVALID);
    assert_int_equal(fn_confusion_count(c, 0, 0), 2);
    fn_confusion_destroy(c);
    assert_int_equal(fn_confusion_create(&c, 0), FN_ERR_INVALID);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_labels), cmocka_unit_test(test_values),
          cmocka_unit_test(test_softmax_argmax), cmocka_unit_test(test_loss_links),
          cmocka_unit_test(test_confusion))
