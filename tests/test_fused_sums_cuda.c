/* test_fused_sums_cuda.c — the sums the GPU finishes in the launch that
 * makes their parts (reduce_cuda.cuh, block_arrived_last: the last block
 * to arrive adds the partial results in a fixed order), at many shapes:
 *  (a) the column sums over the batch: the linear layer's bias gradient
 *      and the block's dgamma, dbeta, dbias (team and group paths) against
 *      float64 sums of the same terms on the host, within the error bound
 *      of a float sum of their count; a second backward adds exactly the
 *      same sums again (the arrival counter set itself back to 0) and a
 *      third after zeroing gives the first bits;
 *  (b) a loss tally's step (loss_tally.h) with cross_entropy and mse,
 *      whose kernel finishes the loss into the tally itself, without and
 *      with the head's bias left to it (fn_loss_tally_step_biased), and
 *      huber, which takes neither (the tally adds the bias and finishes):
 *      the value, the gradient and the biased predictions the same bits
 *      as the loss's own read of predictions biased on the host, and the
 *      tally's sums after several steps those the host adds (loss_sum +=
 *      value * rows, the correct count, rows and steps); a non-finite loss
 *      raises the bad flag at its step and stops the counting.
 *  (c) fn_net_forward_unbiased: the head's output less its bias on the
 *      GPU (plus the bias: forward's bits), forward's on the CPU.
 * Shapes: batch 1, odd widths, batches below, at and above the 32 rows of
 * a column chunk and above the 32 chunks' cap, losses over one block and
 * over the reduce buffer's cap of blocks. Skips without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/init.h"
#include "fusenet/linear.h"
#include "fusenet/loss.h"
#include "fusenet/loss_kind.h"
#include "nn/loss_tally.h"
#include "fusenet/net.h"
#include "nn/layers/block/block_impl.h"
#include "nn/losses/huber/huber.h"
#include "test_main.h"

/* A float sum of n terms in any order is within (n - 1) u sum |terms| of
 * the exact sum (u = 2^-24); the terms themselves carry a few roundings of
 * magnitudes the callers add up in abs_sum. */
static double sum_bound(int n, double abs_sum) { return (n + 8) * 0x1p-24 * abs_sum + 1e-30; }

static fn_tensor device_uniform(int rows, int cols, float lo, float hi, fn_rng *rng)
{
    fn_tensor t;
    EXPECT_OK(fn_tensor_alloc(&t, rows, cols, FN_CUDA));
    EXPECT_OK(fn_init_uniform(&t, lo, hi, rng));
    return t;
}

/* Fails unless got[c] is within sum_bound of want[c] for every column. */
static void expect_sums(const char *what, const float *got, const double *want,
                        const double *abs_sum, int n, int C)
{
    for (int c = 0; c < C; c++) {
        const double err = fabs((double)got[c] - want[c]);
        if (!(err <= sum_bound(n, abs_sum[c])))
            fail_msg("%s, column %d of %d, %d rows: %.9g, float64 sum %.9g (bound %.3g)", what, c,
                     C, n, (double)got[c], want[c], sum_bound(n, abs_sum[c]));
    }
}

/* Fails unless twice[c] == once[c] + once[c] bit for bit (the second
 * backward accumulated the same sums). */
static void expect_doubled(const char *what, const float *once, const float *twice, int C)
{
    for (int c = 0; c < C; c++)
        if (memcmp(&twice[c], &(float){once[c] + once[c]}, sizeof(float)) != 0)
            fail_msg("%s, column %d: %.9g after two backward passes, %.9g after one", what, c,
                     (double)twice[c], (double)once[c]);
}

/* Backward adds to the gradients from here on (grad_beta 1, param.h), so a
 * second backward shows whether the arrival counters set themselves back. */
static void accumulate_grads(fn_layer *l)
{
    for (int p = 0; p < l->n_params; p++)
        l->params[p].grad_beta = 1.0f;
}

/* --- (a) column sums --------------------------------------------------------- */

typedef struct linear_shape {
    int batch, in, out;
} linear_shape;

static const linear_shape linear_shapes[] = {
    {1, 3, 1},    {1, 5, 10},   {7, 4, 33},    {31, 6, 10},   {32, 3, 64},   {33, 5, 100},
    {100, 7, 65}, {1024, 3, 10}, {1025, 4, 33}, {3000, 2, 70}, {5000, 3, 10},
};

/* db after one backward, after a second one (accumulated), after zeroing. */
static void check_linear(fn_context *ctx, const linear_shape *s)
{
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 21, .offset = 0};
    EXPECT_OK(fn_linear_create(&l, ctx, s->in, s->out, s->batch, &rng));
    fn_tensor x = device_uniform(s->batch, s->in, -1, 1, &rng);
    fn_tensor dy = device_uniform(s->batch, s->out, -1, 1, &rng);
    fn_tensor y, dx;
    EXPECT_OK(fn_tensor_alloc(&y, s->batch, s->out, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&dx, s->batch, s->in, FN_CUDA));
    fn_tensor *db = &l->params[1].grad;
    assert_string_equal(l->params[1].name, "bias");
    const int C = s->out;
    float *once = malloc(C * sizeof *once), *twice = malloc(C * sizeof *twice),
          *again = malloc(C * sizeof *again);
    EXPECT_OK(fn_layer_forward(l, &x, &y));
    accumulate_grads(l);
    EXPECT_OK(fn_layer_zero_grad(l));
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    EXPECT_OK(fn_tensor_download(db, once, C));
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    EXPECT_OK(fn_tensor_download(db, twice, C));
    EXPECT_OK(fn_layer_zero_grad(l));
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    EXPECT_OK(fn_tensor_download(db, again, C));

    float *h = tensor_to_host(&dy);
    double *want = calloc(C, sizeof *want), *abs_sum = calloc(C, sizeof *abs_sum);
    for (int n = 0; n < s->batch; n++)
        for (int c = 0; c < C; c++) {
            want[c] += h[(size_t)n * C + c];
            abs_sum[c] += fabs(h[(size_t)n * C + c]);
        }
    char what[96];
    snprintf(what, sizeof what, "linear db [%d rows, %d out]", s->batch, C);
    expect_sums(what, once, want, abs_sum, s->batch, C);
    expect_doubled(what, once, twice, C);
    assert_memory_equal(once, again, C * sizeof *once);
    free(h), free(want), free(abs_sum), free(once), free(twice), free(again);
    fn_tensor_free(&x), fn_tensor_free(&dy), fn_tensor_free(&y), fn_tensor_free(&dx);
    fn_layer_destroy(l);
}

static void test_linear_bias_sums(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    for (size_t i = 0; i < sizeof linear_shapes / sizeof linear_shapes[0]; i++)
        check_linear(ctx, &linear_shapes[i]);
    fn_context_destroy(ctx);
}

typedef struct block_shape {
    int batch, in, out, groups;
    const char *why;
} block_shape;

static const block_shape block_shapes[] = {
    {1, 5, 16, 4, "batch 1, team path"},
    {31, 3, 48, 3, "one chunk, K = 16"},
    {33, 7, 48, 3, "two chunks, K = 16"},
    {1100, 5, 48, 3, "32 chunks of 35 rows (the cap)"},
    {70, 9, 30, 10, "K = 3, scalar team path, odd width"},
    {45, 4, 260, 2, "K = 130, scalar group path"},
    {40, 3, 1024, 1, "K = 1024, float4 group path"},
    {2000, 3, 132, 2, "K = 66, many rows"},
};

/* The float64 column sums of the block's backward from what its forward
 * and backward left (z, mean, rstd, dz; fp32 caches): dgamma = sum du zhat,
 * dbeta = sum du, dbias = sum dz, and in abs_sum the magnitudes the float
 * terms' roundings scale with (zhat's from z + b - mean, before the
 * cancellation), plus the whole term where u is too close to 0 for its
 * sign to be sure in float (the slope's side may differ). */
static void block_reference(const fn_block *b, const float *dy, int N, double *want[3],
                            double *abs_sum[3])
{
    const int C = b->base.out_features, G = b->cfg.groups, K = C / G;
    float *z = tensor_to_host(&b->z), *mean = tensor_to_host(&b->mean),
          *rstd = tensor_to_host(&b->rstd), *dz = tensor_to_host(&b->dz),
          *bias = tensor_to_host(&b->params[FN_BLOCK_BIAS].value),
          *gamma = tensor_to_host(&b->params[FN_BLOCK_GAMMA].value),
          *beta = tensor_to_host(&b->params[FN_BLOCK_BETA].value);
    const double slope = b->cfg.negative_slope;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            const size_t i = (size_t)n * C + c, s = (size_t)n * G + c / K;
            const double zh = ((double)z[i] + bias[c] - mean[s]) * rstd[s];
            const double u = gamma[c] * zh + beta[c];
            const double du = 2.0 * dy[i] * (u > 0 ? 1.0 : slope);
            const double terms[3] = {du * zh, du, dz[i]};
            const double scale = fabs(gamma[c] * zh) + fabs(beta[c]);
            /* Either side of the slope, scaled so that sum_bound covers it. */
            const double unsure = fabs(u) <= 1e-5 * scale ? 0x1p24 * 2.0 * fabs(dy[i]) : 0.0;
            const double mags[3] = {
                fabs(du) * (fabs(zh) + rstd[s] * (fabs(z[i]) + fabs(bias[c]) + fabs(mean[s]))) +
                    unsure * fabs(zh),
                fabs(du) + unsure, fabs(dz[i])};
            for (int q = 0; q < 3; q++) {
                want[q][c] += terms[q];
                abs_sum[q][c] += mags[q];
            }
        }
    free(z), free(mean), free(rstd), free(dz), free(bias), free(gamma), free(beta);
}

static void download_sums(fn_layer *l, float *out[3])
{
    const int which[3] = {FN_BLOCK_GAMMA, FN_BLOCK_BETA, FN_BLOCK_BIAS};
    for (int q = 0; q < 3; q++)
        EXPECT_OK(fn_tensor_download(&l->params[which[q]].grad, out[q], l->out_features));
}

static void check_block(fn_context *ctx, const block_shape *s)
{
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 5, .offset = 0};
    const fn_block_config cfg = fn_block_config_default(s->in, s->out, s->groups);
    EXPECT_OK(fn_block_create(&l, ctx, &cfg, s->batch, &rng));
    EXPECT_OK(fn_init_uniform(&l->params[FN_BLOCK_GAMMA].value, 0.5f, 1.5f, &rng));
    EXPECT_OK(fn_init_uniform(&l->params[FN_BLOCK_BETA].value, -0.5f, 0.5f, &rng));
    fn_tensor x = device_uniform(s->batch, s->in, -1, 1, &rng);
    fn_tensor dy = device_uniform(s->batch, s->out, -1, 1, &rng);
    fn_tensor y, dx;
    EXPECT_OK(fn_tensor_alloc(&y, s->batch, s->out, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&dx, s->batch, s->in, FN_CUDA));
    const int C = s->out;
    float *once[3], *twice[3], *again[3];
    double *want[3], *abs_sum[3];
    for (int q = 0; q < 3; q++) {
        once[q] = malloc(C * sizeof(float));
        twice[q] = malloc(C * sizeof(float));
        again[q] = malloc(C * sizeof(float));
        want[q] = calloc(C, sizeof(double));
        abs_sum[q] = calloc(C, sizeof(double));
    }
    EXPECT_OK(fn_layer_forward(l, &x, &y));
    accumulate_grads(l);
    EXPECT_OK(fn_layer_zero_grad(l));
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    download_sums(l, once);
    float *h = tensor_to_host(&dy);
    block_reference((const fn_block *)l, h, s->batch, want, abs_sum);
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    download_sums(l, twice);
    EXPECT_OK(fn_layer_zero_grad(l));
    EXPECT_OK(fn_layer_backward(l, &dy, &dx));
    download_sums(l, again);

    static const char *names[3] = {"dgamma", "dbeta", "dbias"};
    for (int q = 0; q < 3; q++) {
        char what[160];
        snprintf(what, sizeof what, "block %s [%d rows, out %d, groups %d: %s]", names[q],
                 s->batch, C, s->groups, s->why);
        expect_sums(what, once[q], want[q], abs_sum[q], s->batch, C);
        expect_doubled(what, once[q], twice[q], C);
        assert_memory_equal(once[q], again[q], C * sizeof(float));
        free(once[q]), free(twice[q]), free(again[q]), free(want[q]), free(abs_sum[q]);
    }
    free(h);
    fn_tensor_free(&x), fn_tensor_free(&dy), fn_tensor_free(&y), fn_tensor_free(&dx);
    fn_layer_destroy(l);
}

static void test_block_column_sums(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    for (size_t i = 0; i < sizeof block_shapes / sizeof block_shapes[0]; i++)
        check_block(ctx, &block_shapes[i]);
    fn_context_destroy(ctx);
}

/* --- (b) a loss finished into a tally by its own kernel ------------------------ */

enum { STEPS = 3 };

static const int loss_rows[] = {1, 7, 8, 9, 33, 256, 1000, 4097, 20000};
static const int loss_cols[] = {1, 3, 10, 37};

/* One loss's inputs: pred (the head's output without its bias when the
 * case has one), the targets, and the bias. */
typedef struct loss_case {
    const fn_loss_kind *kind;
    const void *options;
    int rows, cols;
    fn_tensor pred, target, bias, labels_mem;
    const int32_t *labels; /* labels_mem's data: int32 labels, device [rows] */
} loss_case;

static void make_case(loss_case *lc, const fn_loss_kind *kind, const void *options, int rows,
                      int cols)
{
    memset(lc, 0, sizeof *lc);
    lc->kind = kind;
    lc->options = options;
    lc->rows = rows;
    lc->cols = cols;
    fn_rng rng = {.seed = 9, .offset = (uint64_t)rows * 131 + (uint64_t)cols};
    lc->pred = device_uniform(rows, cols, -3, 3, &rng);
    lc->target = device_uniform(rows, cols, -1, 1, &rng);
    lc->bias = device_uniform(1, cols, -2, 2, &rng);
    int32_t *host = malloc(rows * sizeof *host);
    for (int n = 0; n < rows; n++)
        host[n] = (int32_t)((n * 7 + 3) % cols);
    EXPECT_OK(fn_tensor_alloc(&lc->labels_mem, 1, rows, FN_CUDA));
    EXPECT_OK(fn_tensor_upload(&lc->labels_mem, (const float *)host, rows));
    lc->labels = (const int32_t *)lc->labels_mem.data;
    free(host);
}

static void free_case(loss_case *lc)
{
    fn_tensor_free(&lc->pred), fn_tensor_free(&lc->target), fn_tensor_free(&lc->bias);
    fn_tensor_free(&lc->labels_mem);
}

/* pred + bias, added on the host (one float addition, as the layer does). */
static void add_bias_on_host(fn_tensor *out, const loss_case *lc)
{
    float *p = tensor_to_host(&lc->pred), *b = tensor_to_host(&lc->bias);
    for (int n = 0; n < lc->rows; n++)
        for (int c = 0; c < lc->cols; c++)
            p[(size_t)n * lc->cols + c] += b[c];
    EXPECT_OK(fn_tensor_upload(out, p, fn_tensor_count(out)));
    free(p), free(b);
}

/* The tally's steps (STEPS of them, each on a fresh copy of pred; with
 * the bias left to the loss when `biased`) against the loss's own read of
 * the biased predictions: the value, the gradient and the biased
 * predictions the same bits, and the sums the host's. */
static void check_tally(fn_context *ctx, const fn_loss_kind *kind, const void *options, int rows,
                        int cols, int biased)
{
    loss_case lc;
    make_case(&lc, kind, options, rows, cols);
    fn_tensor want_pred, pred, loss, d, tally_loss, d_tally;
    EXPECT_OK(fn_tensor_alloc(&want_pred, rows, cols, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&pred, rows, cols, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&loss, 1, 1, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&tally_loss, 1, 1, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&d, rows, cols, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&d_tally, rows, cols, FN_CUDA));
    if (biased)
        add_bias_on_host(&want_pred, &lc);
    else
        EXPECT_OK(fn_tensor_copy(&want_pred, &lc.pred));
    const fn_loss_targets targets = {.labels = lc.labels, .values = &lc.target};
    float value = 0;
    int correct = 0;
    EXPECT_OK(kind->read(ctx, options, &want_pred, &targets, &loss, &d, &value, &correct));

    fn_loss_tally *t = NULL;
    EXPECT_OK(fn_loss_tally_create(&t, ctx, 1));
    EXPECT_OK(fn_loss_tally_set(t, 0.25, 2, 3, 40));
    double loss_sum = 0.25;
    for (int k = 0; k < STEPS; k++) {
        EXPECT_OK(fn_tensor_copy(&pred, &lc.pred));
        EXPECT_OK(fn_loss_tally_step_biased(t, kind, options, &pred, biased ? lc.bias.data : NULL,
                                            &targets, &tally_loss, &d_tally));
        loss_sum += (double)value * rows;
    }
    fn_loss_tally_value v;
    EXPECT_OK(fn_loss_tally_read(t, &v));
    float got = 0;
    EXPECT_OK(fn_tensor_download(&tally_loss, &got, 1));
    char what[128];
    snprintf(what, sizeof what, "%s [%d, %d]%s", kind->name, rows, cols,
             biased ? " with the bias" : "");
    if (memcmp(&got, &value, sizeof got) != 0)
        fail_msg("%s: the tally's value %.9g, the loss's own %.9g", what, (double)got,
                 (double)value);
    expect_tensors_equal(&want_pred, &pred, what);
    expect_tensors_equal(&d, &d_tally, what);
    if (v.bad || v.steps != STEPS || v.seen != 3 + (long long)STEPS * rows ||
        v.correct != 2 + (long long)STEPS * correct || v.loss_sum != loss_sum ||
        memcmp(&v.last_loss, &value, sizeof value) != 0)
        fail_msg("%s: tally bad %d steps %lld seen %lld correct %lld loss_sum %.17g last %.9g; "
                 "expected 0, %d, %lld, %lld, %.17g, %.9g",
                 what, v.bad, v.steps, v.seen, v.correct, v.loss_sum, (double)v.last_loss, STEPS,
                 3 + (long long)STEPS * rows, 2 + (long long)STEPS * correct, loss_sum,
                 (double)value);
    fn_tensor *all[] = {&want_pred, &pred, &loss, &d, &tally_loss, &d_tally};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        fn_tensor_free(all[i]);
    fn_loss_tally_destroy(t);
    free_case(&lc);
}

/* Every shape, without and with the bias. */
static void check_tally_shapes(const fn_loss_kind *kind, const void *options)
{
    fn_context *ctx = context_or_skip(FN_CUDA);
    for (size_t r = 0; r < sizeof loss_rows / sizeof loss_rows[0]; r++)
        for (size_t c = 0; c < sizeof loss_cols / sizeof loss_cols[0]; c++)
            for (int biased = 0; biased < 2; biased++)
                check_tally(ctx, kind, options, loss_rows[r], loss_cols[c], biased);
    fn_context_destroy(ctx);
}

static void test_tally_cross_entropy(void **state)
{
    (void)state;
    check_tally_shapes(&fn_cross_entropy_kind, NULL);
}

static void test_tally_mse(void **state)
{
    (void)state;
    check_tally_shapes(&fn_mse_kind, NULL);
}

/* A loss that takes no bias (huber) gets it added by the tally first, and
 * its sums finished by the tally's kernel: the same results. */
static void test_tally_huber(void **state)
{
    (void)state;
    const fn_huber_options options = {.delta = 0.5f};
    check_tally_shapes(&fn_huber_kind, &options);
}

/* A non-finite logit: the step is recorded as the first bad one, and the
 * finite step after it is not counted. */
static void test_tally_nonfinite(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    loss_case lc;
    make_case(&lc, &fn_cross_entropy_kind, NULL, 300, 10);
    fn_tensor loss;
    EXPECT_OK(fn_tensor_alloc(&loss, 1, 1, FN_CUDA));
    fn_loss_tally *t = NULL;
    EXPECT_OK(fn_loss_tally_create(&t, ctx, 1));
    EXPECT_OK(fn_loss_tally_set(t, 0, 0, 0, 7));
    const fn_loss_targets targets = {.labels = lc.labels};
    EXPECT_OK(fn_loss_tally_step(t, lc.kind, NULL, &lc.pred, &targets, &loss, NULL));
    const float inf = INFINITY;
    fn_tensor at = fn_tensor_view(lc.pred.data + 123, 1, 1, FN_CUDA);
    EXPECT_OK(fn_tensor_upload(&at, &inf, 1));
    EXPECT_OK(fn_loss_tally_step(t, lc.kind, NULL, &lc.pred, &targets, &loss, NULL));
    const float one = 1.0f;
    EXPECT_OK(fn_tensor_upload(&at, &one, 1));
    EXPECT_OK(fn_loss_tally_step(t, lc.kind, NULL, &lc.pred, &targets, &loss, NULL));
    fn_loss_tally_value v;
    EXPECT_OK(fn_loss_tally_read(t, &v));
    assert_int_equal(v.bad, 1);
    assert_int_equal(v.bad_step, 8);
    assert_int_equal(v.steps, 1);
    assert_int_equal(v.seen, 300);
    assert_false(isfinite(v.bad_loss));
    fn_loss_tally_destroy(t);
    fn_tensor_free(&loss);
    free_case(&lc);
    fn_context_destroy(ctx);
}

/* --- (c) the head's bias left to the loss --------------------------------------- */

/* fn_net_forward_unbiased on a block and a linear head: on the GPU the
 * head's output without its bias, and the bias, whose float addition
 * gives fn_net_forward's bits; on the CPU (no forward_unbiased) forward's
 * output and no bias. A layer without the hook forwards as usual. */
static void check_forward_unbiased(fn_device device)
{
    fn_context *ctx = context_or_skip(device);
    enum { ROWS = 9, IN = 5, HIDDEN = 16, OUT = 3 };
    fn_net *net = NULL;
    EXPECT_OK(fn_net_create(&net, ctx, ROWS));
    fn_rng rng = {.seed = 3, .offset = 0};
    fn_layer *block = NULL, *head = NULL;
    const fn_block_config cfg = fn_block_config_default(IN, HIDDEN, 4);
    EXPECT_OK(fn_block_create(&block, ctx, &cfg, ROWS, &rng));
    EXPECT_OK(fn_net_add(net, block));
    EXPECT_OK(fn_linear_create(&head, ctx, HIDDEN, OUT, ROWS, &rng));
    EXPECT_OK(fn_net_add(net, head));
    fn_tensor x;
    EXPECT_OK(fn_tensor_alloc(&x, ROWS, IN, device));
    EXPECT_OK(fn_init_uniform(&x, -1, 1, &rng));

    fn_tensor y;
    EXPECT_OK(fn_net_forward(net, &x, &y));
    float *want = tensor_to_host(&y);
    const float *bias = (const float *)&rng; /* anything but NULL */
    EXPECT_OK(fn_net_forward_unbiased(net, &x, &y, &bias));
    float *got = tensor_to_host(&y);
    if (device == FN_CUDA) {
        assert_ptr_equal(bias, head->params[1].value.data);
        float *b = tensor_to_host(&head->params[1].value);
        for (int i = 0; i < ROWS * OUT; i++)
            got[i] += b[i % OUT];
        free(b);
    } else {
        assert_null(bias);
    }
    assert_memory_equal(got, want, ROWS * OUT * sizeof(float));
    EXPECT_FAIL(fn_net_forward_unbiased(net, &x, &y, NULL), FN_ERR_INVALID, "bias is NULL");

    fn_tensor h;
    EXPECT_OK(fn_tensor_alloc(&h, ROWS, HIDDEN, device));
    bias = (const float *)&rng;
    EXPECT_OK(fn_layer_forward_unbiased(block, &x, &h, &bias));
    assert_null(bias);
    free(want), free(got);
    fn_tensor_free(&x), fn_tensor_free(&h);
    fn_net_destroy(net);
    fn_context_destroy(ctx);
}

TESTS_ON_EACH_DEVICE(forward_unbiased, check_forward_unbiased)

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_linear_bias_sums),
              cmocka_unit_test(test_block_column_sums), cmocka_unit_test(test_tally_cross_entropy),
              cmocka_unit_test(test_tally_mse), cmocka_unit_test(test_tally_huber),
              cmocka_unit_test(test_tally_nonfinite), cmocka_unit_test(test_forward_unbiased_cpu),
              cmocka_unit_test(test_forward_unbiased_cuda))
