/* test_sample_weight.c — per-row sample weights (fn_loss_targets.weights,
 * fn_memory_set_weights) on the CPU:
 *  - every registered loss (cross_entropy plain and with class_weights and
 *    label_smoothing, mse, huber, bce_with_logits) with weights gives the
 *    value sum_n w_n l_n / sum_n w_n (cross_entropy with class weights cw:
 *    sum_n w_n cw[y_n] l_n-style rows over sum_n w_n cw[y_n]) and its
 *    gradient, against a float64 reference at several shapes, and the
 *    reference's gradient against central differences of its value;
 *  - weights of 1 give the unweighted value and gradient bit for bit;
 *  - an integer weight k equals the row repeated k times (float32 rounding);
 *  - bad weights (negative, NaN, infinite, all 0, a set of inputs alone)
 *    are refused naming sample_weight and the row;
 *  - the loader hands each batch's weights with its rows, shuffled, in
 *    every rank's share;
 *  - a run with weights of 2 everywhere is bit for bit the unweighted run
 *    (a power-of-two scale cancels exactly in sum(w l) / sum(w)), and a
 *    validation set whose later rows weigh 0 reports the loss of its
 *    first rows alone. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/data.h"
#include "fusenet/loader.h"
#include "fusenet/loss_kind.h"
#include "fusenet/memory_set.h"
#include "fusenet/trainer.h"
#include "nn/losses/cross_entropy/cross_entropy_options.h"
#include "nn/losses/huber/huber.h"
#include "program.h"
#include "test_main.h"
#include "trainer_run.h"

/* One float32 rounding of a float64 value: at most half an ulp, an ulp
 * being at most 2^-23 of the value; the library's double sums differ from
 * the reference's in order only (~1e-15 relative), which may move the
 * rounding by one ulp: 2^-23 relative. ABS_SLACK: double rounding of O(1)
 * terms that cancel to a gradient near 0 (a few 1e-16, scaled by at most
 * 1 / W with W >= 0.1 here). */
#define ULP (1.0 / 8388608.0)
#define ABS_SLACK 1e-14

enum { LOSS_MSE, LOSS_HUBER, LOSS_BCE, LOSS_CE, LOSS_CE_OPTIONS, N_LOSSES };

static const char *const loss_names[N_LOSSES] = {"mse", "huber", "bce_with_logits",
                                                 "cross_entropy", "cross_entropy"};

/* A batch: predictions, targets (labels or values) and weights. */
typedef struct batch {
    int rows, cols;
    float *pred;   /* [rows, cols] */
    float *values; /* [rows, cols] */
    int32_t *labels; /* [rows] */
    float *w;      /* [rows] */
} batch;

static void batch_make(batch *b, int rows, int cols, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    b->rows = rows;
    b->cols = cols;
    b->pred = chk_alloc_float((size_t)rows * cols);
    b->values = chk_alloc_float((size_t)rows * cols);
    b->labels = calloc((size_t)rows, sizeof *b->labels);
    b->w = chk_alloc_float((size_t)rows);
    assert_non_null(b->labels);
    for (int i = 0; i < rows * cols; i++) {
        b->pred[i] = (float)chk_uniform(&rng, -3, 3);
        b->values[i] = (float)chk_uniform(&rng, 0, 1); /* in [0, 1]: bce takes them too */
    }
    for (int n = 0; n < rows; n++) {
        b->labels[n] = (int32_t)(chk_rng_next(&rng) % (uint64_t)cols);
        /* some rows weigh 0; the first never does (the sum stays > 0.1) */
        b->w[n] = n % 4 == 3 ? 0.0f : (float)chk_uniform(&rng, 0.1, 3);
    }
}

static void batch_free(batch *b)
{
    free(b->pred);
    free(b->values);
    free(b->labels);
    free(b->w);
}

static float class_weights[16];

/* The options block of loss `which` (NULL for the losses without keys
 * set here). */
static const void *options_of(int which, fn_cross_entropy_options *ce, fn_huber_options *hu,
                              int cols)
{
    if (which == LOSS_HUBER) {
        hu->delta = 0.7f;
        return hu;
    }
    if (which == LOSS_CE_OPTIONS) {
        for (int c = 0; c < cols; c++)
            class_weights[c] = 0.5f + 0.25f * (float)c;
        *ce = (fn_cross_entropy_options){{class_weights, cols}, 0.1f};
        return ce;
    }
    return NULL;
}

/* The kind's read on the CPU: value and gradient [rows, cols]. */
static void run_loss(int which, const batch *b, const float *pred, const float *w, float *value,
                     float *grad)
{
    const fn_loss_kind *kind = NULL;
    EXPECT_OK(fn_loss_kind_find(loss_names[which], &kind));
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32));
    fn_cross_entropy_options ce;
    fn_huber_options hu;
    const void *options = options_of(which, &ce, &hu, b->cols);
    fn_tensor p = fn_tensor_view((float *)pred, b->rows, b->cols, FN_CPU);
    fn_tensor t = fn_tensor_view(b->values, b->rows, b->cols, FN_CPU);
    fn_tensor d = fn_tensor_view(grad, b->rows, b->cols, FN_CPU);
    float l1 = 0;
    fn_tensor loss = fn_tensor_view(&l1, 1, 1, FN_CPU);
    const fn_loss_targets targets = {.labels = b->labels, .values = &t, .weights = w};
    int correct = 0;
    EXPECT_OK(kind->read(ctx, options, &p, &targets, &loss, &d, value, &correct));
    fn_context_destroy(ctx);
}

/* Row n's loss (before any mean) and its gradient g [cols], in float64,
 * as PyTorch's reduction='none' gives them (mse, huber, bce: the sum over
 * the row's elements, the mean dividing by cols; cross_entropy: with the
 * class weight of its label folded in). *row_weight: what the row adds to
 * the divisor besides its sample weight (cols; cw[y] for cross_entropy). */
static double ref_row(int which, const batch *b, const double *x, int n, double *g,
                      double *row_weight)
{
    const int C = b->cols;
    const float *y = b->values + (size_t)n * C;
    double l = 0;
    if (which == LOSS_CE || which == LOSS_CE_OPTIONS) {
        const int lab = b->labels[n];
        const double eps = which == LOSS_CE_OPTIONS ? (double)0.1f : 0.0; /* the option's float */
        double m = x[0], z = 0, wsum = 0;
        for (int c = 1; c < C; c++)
            m = fmax(m, x[c]);
        for (int c = 0; c < C; c++)
            z += exp(x[c] - m);
        const double lse = m + log(z);
        for (int c = 0; c < C; c++)
            wsum += which == LOSS_CE_OPTIONS ? class_weights[c] : 1.0;
        const double wy = which == LOSS_CE_OPTIONS ? class_weights[lab] : 1.0;
        l = (1 - eps) * wy * (lse - x[lab]);
        for (int c = 0; c < C; c++) {
            const double wc = which == LOSS_CE_OPTIONS ? class_weights[c] : 1.0;
            const double p = exp(x[c] - lse);
            l += eps / C * wc * (lse - x[c]);
            g[c] = (1 - eps) * wy * (p - (c == lab)) + eps / C * (wsum * p - wc);
        }
        *row_weight = wy;
        return l;
    }
    for (int c = 0; c < C; c++) {
        const double e = x[c] - y[c];
        if (which == LOSS_MSE) {
            l += e * e;
            g[c] = 2 * e;
        } else if (which == LOSS_HUBER) {
            const double d = 0.7f;
            l += fabs(e) < d ? 0.5 * e * e : d * (fabs(e) - 0.5 * d);
            g[c] = fmin(fmax(e, -d), d);
        } else {
            l += fmax(x[c], 0) - x[c] * y[c] + log1p(exp(-fabs(x[c])));
            g[c] = 1 / (1 + exp(-x[c])) - y[c];
        }
    }
    *row_weight = C;
    return l;
}

/* The weighted loss in float64 and (grad non-NULL) its gradient. */
static double ref_loss(int which, const batch *b, const double *x, const float *w, double *grad)
{
    const int C = b->cols;
    double *g = calloc((size_t)C, sizeof *g);
    double sum = 0, W = 0;
    assert_non_null(g);
    for (int n = 0; n < b->rows; n++) {
        double rw = 0;
        const double l = ref_row(which, b, x + (size_t)n * C, n, g, &rw);
        const double wn = w ? w[n] : 1.0;
        sum += wn * l;
        W += wn * rw;
        for (int c = 0; grad && c < C; c++)
            grad[(size_t)n * C + c] = wn * g[c];
    }
    for (int i = 0; grad && i < b->rows * C; i++)
        grad[i] /= W;

    free(g);
    return sum / W;
}

static void expect_close(double got, double want, double rel, const char *what, int i)
{
    if (fabs(got - want) > rel * fabs(want) + ABS_SLACK)
        fail_msg("%s %d: %.9g, expected %.9g", what, i, got, want);
}

/* Value and gradient against float64, and the reference's gradient
 * against central differences of its own value. */
static void weighted_matches_float64(void **state)
{
    (void)state;
    static const int shapes[][2] = {{1, 1}, {1, 4}, {7, 3}, {33, 5}, {64, 10}};
    for (int which = 0; which < N_LOSSES; which++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int rows = shapes[s][0], cols = shapes[s][1];
            if (which >= LOSS_CE && cols < 2)
                continue; /* a class per column */
            batch b;
            batch_make(&b, rows, cols, 100 + (uint64_t)(which * 10 + s));
            const size_t n = (size_t)rows * cols;
            float value = 0, *grad = chk_alloc_float(n);
            double *x = calloc(n, sizeof *x), *want = calloc(n, sizeof *want);
            assert_true(x && want);
            for (size_t i = 0; i < n; i++)
                x[i] = b.pred[i];
            run_loss(which, &b, b.pred, b.w, &value, grad);
            const double ref = ref_loss(which, &b, x, b.w, want);
            expect_close(value, ref, ULP, loss_names[which], (int)s);
            for (size_t i = 0; i < n; i++)
                expect_close(grad[i], want[i], ULP, loss_names[which], (int)(s * 100000 + i));
            /* Central differences of the float64 value, step h: the error
             * is O(h^2 f''') ~ 1e-10 here, far below the 1e-6 allowed. */
            const double h = 1e-5;
            for (size_t i = 0; i < n; i++) {
                const double keep = x[i];
                x[i] = keep + h;
                const double up = ref_loss(which, &b, x, b.w, NULL);
                x[i] = keep - h;
                const double down = ref_loss(which, &b, x, b.w, NULL);
                x[i] = keep;
                const double fd = (up - down) / (2 * h);
                if (fabs(fd - want[i]) > 1e-6 * (1 + fabs(want[i])))
                    fail_msg("%s: d/dx %zu: %.9g by differences, %.9g", loss_names[which], i, fd,
                             want[i]);
            }
            free(x);
            free(want);
            free(grad);
            batch_free(&b);
        }
}

/* Weights of 1: the unweighted bits. */
static void ones_are_unweighted_bits(void **state)
{
    (void)state;
    for (int which = 0; which < N_LOSSES; which++) {
        batch b;
        batch_make(&b, 37, 6, 7 + (uint64_t)which);
        for (int r = 0; r < b.rows; r++)
            b.w[r] = 1.0f;
        const size_t n = (size_t)b.rows * b.cols;
        float v0 = 0, v1 = 0, *g0 = chk_alloc_float(n), *g1 = chk_alloc_float(n);
        run_loss(which, &b, b.pred, NULL, &v0, g0);
        run_loss(which, &b, b.pred, b.w, &v1, g1);
        if (memcmp(&v0, &v1, sizeof v0) != 0)
            fail_msg("%s: %.9g with weights of 1, %.9g without", loss_names[which], v1, v0);
        assert_memory_equal(g0, g1, n * sizeof *g0);
        free(g0);
        free(g1);
        batch_free(&b);
    }
}

/* Integer weights k_n against each row repeated k_n times, unweighted:
 * the value within an ulp or two (one rounding each, sums in other
 * orders); the gradient of a row against the sum of its copies', each
 * copy rounded once, so within (k + 1) ulps of the value. */
static void integer_weight_is_repetition(void **state)
{
    (void)state;
    for (int which = 0; which < N_LOSSES; which++) {
        batch b, rep;
        batch_make(&b, 9, 4, 50 + (uint64_t)which);
        int total = 0;
        for (int r = 0; r < b.rows; r++) {
            b.w[r] = (float)(r % 4); /* 0 to 3 copies */
            total += r % 4;
        }
        batch_make(&rep, total, 4, 1);
        int at = 0;
        for (int r = 0; r < b.rows; r++)
            for (int k = 0; k < r % 4; k++, at++) {
                memcpy(rep.pred + (size_t)at * 4, b.pred + (size_t)r * 4, 4 * sizeof(float));
                memcpy(rep.values + (size_t)at * 4, b.values + (size_t)r * 4, 4 * sizeof(float));
                rep.labels[at] = b.labels[r];
            }
        float v = 0, vr = 0, *g = chk_alloc_float(36), *gr = chk_alloc_float((size_t)total * 4);
        run_loss(which, &b, b.pred, b.w, &v, g);
        run_loss(which, &rep, rep.pred, NULL, &vr, gr);
        expect_close(v, vr, 2 * ULP, loss_names[which], 0);
        at = 0;
        for (int r = 0; r < b.rows; r++) {
            for (int c = 0; c < 4; c++) {
                double sum = 0;
                for (int k = 0; k < r % 4; k++)
                    sum += gr[(size_t)(at + k) * 4 + c];
                expect_close(g[r * 4 + c], sum, (r % 4 + 1) * ULP, "repeated row", r);
            }
            at += r % 4;
        }
        free(g);
        free(gr);
        batch_free(&b);
        batch_free(&rep);
    }
}

/* --- memory sets, batches, runs ------------------------------------------------ */

enum { ROWS = 200, IN = 4, CLASSES = 3, BATCH = 16 };

typedef struct arrays {
    float x[ROWS * IN];
    int32_t y[ROWS];
    float w[ROWS];
} arrays;

static void make_arrays(arrays *a, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    for (int i = 0; i < ROWS * IN; i++)
        a->x[i] = (float)chk_uniform(&rng, -1, 1);
    for (int n = 0; n < ROWS; n++) {
        a->y[n] = (int32_t)((a->x[n * IN] > 0) + (a->x[n * IN + 1] > 0.5f));
        a->w[n] = (float)(n + 1); /* each row's weight names it */
    }
}

static void bad_weights_refused(void **state)
{
    (void)state;
    static arrays a;
    make_arrays(&a, 3);
    fn_memory_set *m = NULL, *inputs = NULL;
    EXPECT_OK(fn_memory_set_labels(&m, "train", a.x, ROWS, IN, a.y));
    float w[ROWS];
    for (int n = 0; n < ROWS; n++)
        w[n] = 1.0f;
    w[5] = -1.0f;
    EXPECT_FAIL(fn_memory_set_weights(m, w), FN_ERR_INVALID,
                "memory set 'train': sample weight (sample_weight) of row 5 is -1: expected a "
                "finite number >= 0");
    w[5] = NAN;
    EXPECT_FAIL(fn_memory_set_weights(m, w), FN_ERR_INVALID, "of row 5 is nan");
    w[5] = INFINITY;
    EXPECT_FAIL(fn_memory_set_weights(m, w), FN_ERR_INVALID, "of row 5 is inf");
    for (int n = 0; n < ROWS; n++)
        w[n] = 0.0f;
    EXPECT_FAIL(fn_memory_set_weights(m, w), FN_ERR_INVALID,
                "every sample weight (sample_weight) is 0");
    assert_null(fn_memory_set_weight_data(m));
    w[7] = 0.5f;
    EXPECT_OK(fn_memory_set_weights(m, w));
    assert_float_equal(fn_memory_set_weight_data(m)[7], 0.5f, 0);
    EXPECT_OK(fn_memory_set_inputs(&inputs, "inputs", a.x, ROWS, IN));
    EXPECT_FAIL(fn_memory_set_weights(inputs, w), FN_ERR_INVALID, "holds inputs alone");
    fn_memory_set_destroy(m);
    fn_memory_set_destroy(inputs);
}

/* Each row's weight (its number + 1) arrives with it, shuffled, in both
 * shares of two ranks, over two epochs. */
static void loader_carries_weights(void **state)
{
    (void)state;
    static arrays a;
    make_arrays(&a, 4);
    fn_memory_set *m = NULL;
    EXPECT_OK(fn_memory_set_labels(&m, "train", a.x, ROWS, IN, a.y));
    EXPECT_OK(fn_memory_set_weights(m, a.w));
    const fn_data_options opt = {.targets = "y", .target_kind = FN_DATA_LABELS,
                                 .out_features = CLASSES, .batch_size = BATCH,
                                 .memory_budget = 64 * IN * sizeof(float), /* several slabs */
                                 .shuffle = 1, .seed = 5};
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32));
    for (int part = 0; part < 2; part++) {
        fn_data *d = NULL;
        EXPECT_OK(fn_data_open_memory(&d, m, &opt));
        assert_true(fn_data_has_weights(d));
        fn_loader *l = NULL;
        const fn_loader_options lo = {.mode = FN_LOADER_SYNC, .part = part, .parts = 2};
        EXPECT_OK(fn_loader_create(&l, ctx, d, &lo));
        long long seen = 0, moved = 0;
        for (int epoch = 0; epoch < 2; epoch++) {
            EXPECT_OK(fn_loader_start(l, epoch, 0));
            for (;;) {
                fn_batch b;
                EXPECT_OK(fn_loader_next(l, &b));
                if (!b.batch_rows)
                    break;
                for (int i = 0; i < b.rows; i++, seen++) {
                    assert_non_null(b.host_weights);
                    assert_float_equal(b.host_weights[i], (float)(b.index[i] + 1), 0);
                    assert_int_equal(b.host_labels[i], a.y[b.index[i]]);
                    moved += b.index[i] != seen % ROWS;
                }
            }
        }
        assert_true(moved > 0); /* shuffled */
        assert_true(seen > ROWS / 2);
        fn_loader_destroy(l);
        fn_data_close(d);
    }
    fn_context_destroy(ctx);
    fn_memory_set_destroy(m);
}

typedef struct run_result {
    double valid_loss;
} run_result;

static void on_epoch(void *user, const fn_train_epoch *e)
{
    ((run_result *)user)->valid_loss = e->valid.loss;
}

/* A short run on the CPU from memory sets into <dir>/<out>; the caller
 * releases the trainer. */
static fn_trainer *run(const char *dir, const char *out, const char *loss, fn_memory_set *train,
                       fn_memory_set *valid, run_result *r, fn_config **cfg)
{
    char text[1024];
    snprintf(text, sizeof text,
             "[model]\nlayers = block 8, linear %d\ngroups = 2\n[train]\nloss = %s\n"
             "batch_size = %d\nepochs = 2\nlr = 0.05\nmomentum = 0.9\nseed = 3\n"
             "[run]\ndevice = cpu\nlog_every = 0\n[output]\ndir = %s/%s\n",
             strcmp(loss, "mse") == 0 ? 1 : CLASSES, loss, BATCH, dir, out);
    EXPECT_OK(fn_config_parse(cfg, "sw.ini", text));
    EXPECT_OK(fn_config_use_memory_set(*cfg, "train", train));
    if (valid)
        EXPECT_OK(fn_config_use_memory_set(*cfg, "valid", valid));
    EXPECT_OK(fn_config_finish(*cfg));
    const fn_trainer_callbacks cb = {.on_epoch = on_epoch};
    const fn_trainer_options options = {.overwrite = 1, .callbacks = &cb, .user = r};
    fn_trainer *t = NULL;
    EXPECT_OK(fn_trainer_create(&t, *cfg, &options));
    EXPECT_OK(fn_trainer_run(t));
    assert_int_equal(fn_trainer_outcome(t), FN_TRAIN_DONE);
    return t;
}

/* Weights of 2 on every row: the unweighted run, bit for bit (labels and
 * values); a validation set whose last rows weigh 0: the validation loss
 * of its first rows alone (the same model, batches of other sizes: sums
 * in another order, so within 1e-6 relative, a few float32 roundings of
 * a double mean), which the unweighted set's is not. */
static void runs_with_weights(void **state)
{
    (void)state;
    char dir[64];
    program_temp_dir(dir, sizeof dir, "fn_sample_weight_");
    static arrays a, v;
    make_arrays(&a, 8);
    make_arrays(&v, 9);
    float twos[ROWS], vw[ROWS], t[ROWS];
    for (int n = 0; n < ROWS; n++) {
        twos[n] = 2.0f;
        vw[n] = n < ROWS / 2 ? 1.0f : 0.0f;
        t[n] = a.x[n * IN] * 0.5f - a.x[n * IN + 2];
    }
    for (int mse = 0; mse < 2; mse++) {
        fn_memory_set *plain = NULL, *weighted = NULL, *valid = NULL, *vhalf = NULL,
                      *vweighted = NULL;
        if (mse) {
            EXPECT_OK(fn_memory_set_values(&plain, "train", a.x, ROWS, IN, t, 1));
            EXPECT_OK(fn_memory_set_values(&weighted, "train", a.x, ROWS, IN, t, 1));
            EXPECT_OK(fn_memory_set_values(&valid, "valid", v.x, ROWS, IN, t, 1));
            EXPECT_OK(fn_memory_set_values(&vhalf, "valid", v.x, ROWS / 2, IN, t, 1));
            EXPECT_OK(fn_memory_set_values(&vweighted, "valid", v.x, ROWS, IN, t, 1));
        } else {
            EXPECT_OK(fn_memory_set_labels(&plain, "train", a.x, ROWS, IN, a.y));
            EXPECT_OK(fn_memory_set_labels(&weighted, "train", a.x, ROWS, IN, a.y));
            EXPECT_OK(fn_memory_set_labels(&valid, "valid", v.x, ROWS, IN, v.y));
            EXPECT_OK(fn_memory_set_labels(&vhalf, "valid", v.x, ROWS / 2, IN, v.y));
            EXPECT_OK(fn_memory_set_labels(&vweighted, "valid", v.x, ROWS, IN, v.y));
        }
        EXPECT_OK(fn_memory_set_weights(weighted, twos));
        EXPECT_OK(fn_memory_set_weights(vweighted, vw));
        const char *loss = mse ? "mse" : "cross_entropy";
        fn_config *c1 = NULL, *c2 = NULL, *c3 = NULL, *c4 = NULL;
        run_result r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0};
        fn_trainer *t1 = run(dir, "plain", loss, plain, valid, &r1, &c1);
        fn_trainer *t2 = run(dir, "twos", loss, weighted, valid, &r2, &c2);
        fn_trainer *t3 = run(dir, "half", loss, plain, vhalf, &r3, &c3);
        fn_trainer *t4 = run(dir, "masked", loss, plain, vweighted, &r4, &c4);
        expect_same_weights(fn_trainer_net(t1), fn_trainer_net(t2));
        assert_true(r1.valid_loss == r2.valid_loss);
        expect_close(r4.valid_loss, r3.valid_loss, 1e-6, "validation loss", mse);
        assert_true(fabs(r1.valid_loss - r3.valid_loss) > 1e-4 * fabs(r3.valid_loss));
        trainer_release(t1, c1);
        trainer_release(t2, c2);
        trainer_release(t3, c3);
        trainer_release(t4, c4);
        fn_memory_set_destroy(plain);
        fn_memory_set_destroy(weighted);
        fn_memory_set_destroy(valid);
        fn_memory_set_destroy(vhalf);
        fn_memory_set_destroy(vweighted);
    }
    program_remove_dir(dir);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(weighted_matches_float64),
          cmocka_unit_test(ones_are_unweighted_bits),
          cmocka_unit_test(integer_weight_is_repetition), cmocka_unit_test(bad_weights_refused),
          cmocka_unit_test(loader_carries_weights), cmocka_unit_test(runs_with_weights))
