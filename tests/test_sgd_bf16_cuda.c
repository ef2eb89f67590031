/* test_sgd_bf16_cuda.c — SGD with the weights' momentum buffers in
 * bfloat16 (momentum_bf16, sgd.h) on the GPU in bf16 math:
 *  - one step from one state, folded and not, against the float32
 *    buffers' step within the bound of tests/support/sgd_fold.c (and the
 *    bits it must keep: the unfolded value, the one-tensor path, every
 *    float32 buffer);
 *  - several steps with the gradient held fixed against float32 buffers,
 *    within the bound the rounding of each step's buffer adds up to:
 *    E_k = E'_k + 2^-8 (|b_k| + E'_k), E'_k = mu E_{k-1} + the fp32
 *    roundings; the values within D_k = D_{k-1} + lr E'_k + roundings;
 *  - a block trained several steps: bit-identical run to run, the same
 *    bits when resumed in the middle through the published float32 state
 *    (what a checkpoint stores), the weight's buffer bfloat16 numbers;
 *  - refused on the GPU in any other math mode.
 * Skips without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/sgd.h"
#include "optim/optimizer_paths.h"
#include "kind.h"
#include "problem.h"
#include "runner.h"
#include "sgd_fold.h"
#include "tensor_doubles.h"
#include "test_main.h"

static const float kMu = 0.9f, kLr = 0.1f;
static const double kU = 0x1p-24, kUh = 0x1p-8;

static fn_context *bf16_context(void)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, FN_MATH_BF16));
    return ctx;
}

static void test_one_step_within_bound(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *ctx = bf16_context();
    assert_int_equal(fold_check_bf16(ctx), 3);
    fn_context_destroy(ctx);
}

/* --- several steps with a fixed gradient ------------------------------------ */

enum { ROWS = 64, COLS = 96, COUNT = ROWS * COLS, FIXED_STEPS = 12 };

/* A weight made outside a layer, with a bfloat16 copy (as a block's in
 * bf16 math), its value and gradient uploaded. */
typedef struct loose_weight {
    fn_param p;
    fn_tensor copy; /* storage of the bfloat16 copy */
} loose_weight;

static void weight_open(loose_weight *w, const float *value, const float *grad)
{
    memset(w, 0, sizeof *w);
    w->p.name = "weight";
    EXPECT_OK(fn_tensor_alloc(&w->p.value, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&w->p.grad, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&w->copy, ROWS, COLS / 2, FN_CUDA));
    EXPECT_OK(fn_tensor_upload(&w->p.value, value, COUNT));
    EXPECT_OK(fn_tensor_upload(&w->p.grad, grad, COUNT));
    w->p.value_bf16 = w->copy.data;
}

static void weight_close(loose_weight *w)
{
    fn_tensor_free(&w->p.value);
    fn_tensor_free(&w->p.grad);
    fn_tensor_free(&w->copy);
}

static fn_sgd *sgd_over(fn_context *ctx, fn_param *p, int momentum_bf16)
{
    fn_sgd_config cfg = fn_sgd_config_default(kLr);
    cfg.momentum = kMu;
    cfg.momentum_bf16 = momentum_bf16;
    fn_sgd *sgd = NULL;
    fn_param *list[1] = {p};
    EXPECT_OK(fn_sgd_create(&sgd, ctx, list, 1, &cfg));
    return sgd;
}

static void download(const fn_tensor *t, double *out)
{
    float *f = tensor_to_host(t);
    chk_to_double(out, f, COUNT);
    free(f);
}

/* The bound of the file's header, element by element, after each step:
 * the float32 buffers' run (b, p) against the bfloat16 ones' (bh, ph). */
static void test_fixed_gradient_within_bound(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *ctx = bf16_context();
    float *value = chk_alloc_float(COUNT), *grad = chk_alloc_float(COUNT);
    chk_rng rng = chk_rng_seed(17);
    for (size_t k = 0; k < COUNT; k++) {
        value[k] = (float)chk_uniform(&rng, -1, 1);
        grad[k] = (float)chk_uniform(&rng, -1, 1);
    }
    loose_weight w32, w16;
    weight_open(&w32, value, grad);
    weight_open(&w16, value, grad);
    fn_sgd *s32 = sgd_over(ctx, &w32.p, 0), *s16 = sgd_over(ctx, &w16.p, 1);
    static double b[COUNT], bh[COUNT], p[COUNT], ph[COUNT], b_prev[COUNT], p_prev[COUNT];
    static double E[COUNT], D[COUNT];
    double worst = 0; /* the largest |bh - b| / bound seen */
    for (size_t k = 0; k < COUNT; k++)
        p_prev[k] = value[k];
    for (int step = 1; step <= FIXED_STEPS; step++) {
        EXPECT_OK(fn_sgd_step(s32));
        EXPECT_OK(fn_sgd_step(s16));
        EXPECT_OK(fn_optimizer_state_export(fn_sgd_optimizer(s16)));
        download(fn_sgd_momentum_buffer(s32, 0), b);
        download(fn_sgd_momentum_buffer(s16, 0), bh);
        download(&w32.p.value, p);
        download(&w16.p.value, ph);
        for (size_t k = 0; k < COUNT; k++) {
            const double g = fabs((double)grad[k]);
            const double bp = step > 1 ? fabs(b_prev[k]) : 0.0;
            /* the sums mu b + g before rounding to bfloat16, apart by */
            const double e_sum = kMu * E[k] + 4.0 * kU * (kMu * (bp + E[k]) + g);
            const double e_buf = e_sum + kUh * (fabs(b[k]) + e_sum);
            const double d_val =
                D[k] + kLr * e_sum + 4.0 * kU * (fabs(p_prev[k]) + D[k] + kLr * (fabs(b[k]) + e_sum));
            if (!(fabs(bh[k] - b[k]) <= e_buf))
                fail_msg("step %d [%zu]: bfloat16 buffer %.9g, float32 %.9g, bound %.3g", step, k,
                         bh[k], b[k], e_buf);
            if (!(fabs(ph[k] - p[k]) <= d_val))
                fail_msg("step %d [%zu]: value with the bfloat16 buffer %.9g, float32 %.9g, bound "
                         "%.3g", step, k, ph[k], p[k], d_val);
            if (e_buf > 0 && fabs(bh[k] - b[k]) / e_buf > worst)
                worst = fabs(bh[k] - b[k]) / e_buf;
            E[k] = e_buf;
            D[k] = d_val;
            b_prev[k] = b[k];
            p_prev[k] = p[k];
        }
    }
    /* the bound is met, not idle: the buffers were rounded to bfloat16 */
    assert_true(worst > 0.25);
    fn_sgd_destroy(s32);
    fn_sgd_destroy(s16);
    weight_close(&w32);
    weight_close(&w16);
    free(value);
    free(grad);
    fn_context_destroy(ctx);
}

/* --- a block trained several steps ------------------------------------------ */

enum { TRAIN_STEPS = 6 };

static const gc_case train_case = {.batch = 32, .in = 64, .out = 128, .groups = 8,
                                   .slope = 0.01f, .eps = 1e-5f, .xscale = 1, .wscale = 1,
                                   .boffset = 0, .seed = 23, .why = "momentum_bf16"};

static fn_sgd *block_sgd(fn_context *ctx, fn_layer *layer, int fold)
{
    fn_param *params[GC_MAX_TENSORS];
    for (int i = 0; i < layer->n_params; i++)
        params[i] = &layer->params[i];
    fn_sgd_config cfg = fn_sgd_config_default(kLr);
    cfg.momentum = kMu;
    cfg.weight_decay = 1e-3f; /* the folded update stores the buffer too */
    cfg.momentum_bf16 = 1;
    fn_sgd *sgd = NULL;
    EXPECT_OK(fn_sgd_create(&sgd, ctx, params, layer->n_params, &cfg));
    /* Its state's bytes: the float32 views, and the bfloat16 buffers of the
     * weights with a bfloat16 copy (two values a float, rows padded). */
    size_t floats = 0;
    for (int i = 0; i < layer->n_params; i++) {
        const fn_tensor *v = &layer->params[i].value;
        floats += fn_tensor_count(v);
        if (layer->params[i].value_bf16)
            floats += (size_t)v->rows * (size_t)((v->cols + 1) / 2);
    }
    assert_int_equal(fn_optimizer_state_bytes(fn_sgd_optimizer(sgd)), floats * sizeof(float));
    int folded = 0;
    if (fold) {
        EXPECT_OK(fn_optimizer_fold(fn_sgd_optimizer(sgd), &folded));
        assert_int_equal(folded, 1);
    }
    return sgd;
}

/* What a checkpoint's save and load do with the optimiser: its published
 * float32 state to the host, a new optimiser, the state uploaded and
 * imported, the step count set. */
static fn_sgd *resume(fn_context *ctx, fn_layer *layer, fn_sgd *old, int fold)
{
    fn_optimizer *opt = fn_sgd_optimizer(old);
    EXPECT_OK(fn_optimizer_state_export(opt));
    float *host[GC_MAX_TENSORS];
    for (int i = 0; i < layer->n_params; i++)
        host[i] = tensor_to_host(fn_optimizer_state(opt, 0, i));
    const long long steps = fn_optimizer_steps(opt);
    fn_sgd_destroy(old);
    fn_sgd *sgd = block_sgd(ctx, layer, 0);
    opt = fn_sgd_optimizer(sgd);
    for (int i = 0; i < layer->n_params; i++) {
        fn_tensor *t = fn_optimizer_state(opt, 0, i);
        EXPECT_OK(fn_tensor_upload(t, host[i], fn_tensor_count(t)));
        free(host[i]);
    }
    EXPECT_OK(fn_optimizer_state_import(opt));
    fn_optimizer_set_steps(opt, steps);
    int folded = 0;
    if (fold)
        EXPECT_OK(fn_optimizer_fold(opt, &folded));
    return sgd;
}

typedef struct trained {
    int n;
    size_t count[GC_MAX_TENSORS];
    float *val[GC_MAX_TENSORS], *buf[GC_MAX_TENSORS];
    int kept[GC_MAX_TENSORS]; /* the parameter's buffer is bfloat16 */
} trained;

/* TRAIN_STEPS steps of a block on one batch (fold: momentum folded into
 * backward), resumed before step resume_at (-1: never). */
static void train(fn_context *ctx, const gc_problem *p, int fold, int resume_at, trained *out)
{
    fn_layer *layer = NULL;
    EXPECT_OK(gc_layer(&layer, ctx, p));
    EXPECT_OK(run_set_params(layer, p->t + 1));
    const int B = p->c->batch;
    fn_tensor x = doubles_upload(FN_CUDA, p->t[0], B, p->c->in),
              dy = doubles_upload(FN_CUDA, p->dy, B, p->c->out), y, dx;
    EXPECT_OK(fn_tensor_alloc(&y, B, p->c->out, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&dx, B, p->c->in, FN_CUDA));
    fn_sgd *sgd = block_sgd(ctx, layer, fold);
    for (int s = 0; s < TRAIN_STEPS; s++) {
        if (s == resume_at)
            sgd = resume(ctx, layer, sgd, fold);
        EXPECT_OK(fn_layer_forward(layer, &x, &y));
        EXPECT_OK(fn_layer_backward(layer, &dy, &dx));
        EXPECT_OK(fn_sgd_step(sgd));
    }
    EXPECT_OK(fn_optimizer_state_export(fn_sgd_optimizer(sgd)));
    out->n = layer->n_params;
    for (int i = 0; i < layer->n_params; i++) {
        out->count[i] = fn_tensor_count(&layer->params[i].value);
        out->val[i] = tensor_to_host(&layer->params[i].value);
        out->buf[i] = tensor_to_host(fn_sgd_momentum_buffer(sgd, i));
        out->kept[i] = layer->params[i].value_bf16 != NULL;
    }
    fn_sgd_destroy(sgd); /* before the layer: it gives the gradients back */
    fn_layer_destroy(layer);
    fn_tensor_free(&x);
    fn_tensor_free(&dy);
    fn_tensor_free(&y);
    fn_tensor_free(&dx);
}

static void trained_free(trained *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->val[i]);
        free(t->buf[i]);
    }
}

static void expect_same_run(const char *what, const trained *a, const trained *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++)
        for (size_t k = 0; k < a->count[i]; k++) {
            if (memcmp(&a->val[i][k], &b->val[i][k], sizeof(float)) != 0)
                fail_msg("%s: parameter %d [%zu]: value %.9g, then %.9g", what, i, k,
                         (double)a->val[i][k], (double)b->val[i][k]);
            if (memcmp(&a->buf[i][k], &b->buf[i][k], sizeof(float)) != 0)
                fail_msg("%s: parameter %d [%zu]: buffer %.9g, then %.9g", what, i, k,
                         (double)a->buf[i][k], (double)b->buf[i][k]);
        }
}

/* Every value of the weight's buffer is a bfloat16 number (the low half
 * of its float32 bits zero): the option took effect. */
static void expect_bf16_buffer(const trained *t)
{
    int weights = 0;
    for (int i = 0; i < t->n; i++) {
        if (!t->kept[i])
            continue;
        weights++;
        for (size_t k = 0; k < t->count[i]; k++) {
            uint32_t u;
            memcpy(&u, &t->buf[i][k], sizeof u);
            if (u & 0xffffu)
                fail_msg("parameter %d [%zu]: buffer %.9g is not a bfloat16 number", i, k,
                         (double)t->buf[i][k]);
        }
    }
    assert_int_equal(weights, 1);
}

static void test_bits_run_to_run_and_resumed(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *ctx = bf16_context();
    gc_problem p;
    EXPECT_OK(gc_problem_init(&p, &gc_block_kind, &train_case, ctx));
    for (int fold = 0; fold <= 1; fold++) {
        trained first, again, resumed;
        train(ctx, &p, fold, -1, &first);
        train(ctx, &p, fold, -1, &again);
        train(ctx, &p, fold, TRAIN_STEPS / 2, &resumed);
        expect_bf16_buffer(&first);
        expect_same_run(fold ? "folded, run to run" : "unfolded, run to run", &first, &again);
        expect_same_run(fold ? "folded, resumed" : "unfolded, resumed", &first, &resumed);
        trained_free(&first);
        trained_free(&again);
        trained_free(&resumed);
    }
    gc_problem_free(&p);
    fn_context_destroy(ctx);
}

/* Only bf16 math has weights whose products write bfloat16. */
static void test_refused_in_other_math(void **state)
{
    (void)state;
    skip_without_gpu();
    static const fn_math modes[] = {FN_MATH_FP32, FN_MATH_TF32, FN_MATH_TF32X3};
    float value[COUNT] = {0}, grad[COUNT] = {0};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        fn_context *ctx = NULL;
        EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, modes[m]));
        loose_weight w;
        weight_open(&w, value, grad);
        fn_sgd_config cfg = fn_sgd_config_default(kLr);
        cfg.momentum = kMu;
        cfg.momentum_bf16 = 1;
        fn_sgd *sgd = NULL;
        fn_param *list[1] = {&w.p};
        EXPECT_FAIL(fn_sgd_create(&sgd, ctx, list, 1, &cfg), FN_ERR_INVALID,
                    "sgd: momentum_bf16 needs the GPU in bf16 math (here device cuda, math ");
        assert_null(sgd);
        weight_close(&w);
        fn_context_destroy(ctx);
    }
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_one_step_within_bound),
              cmocka_unit_test(test_fixed_gradient_within_bound),
              cmocka_unit_test(test_bits_run_to_run_and_resumed),
              cmocka_unit_test(test_refused_in_other_math))
