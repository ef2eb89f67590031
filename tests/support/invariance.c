/* invariance.c — the batch-invariance checks of invariance.h. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "estimate.h"
#include "expect.h"
#include "fusenet/inference.h"
#include "fusenet/layer_kind.h"
#include "fusenet/memory_set.h"
#include "fusenet/model.h"
#include "fusenet/weights.h"
#include "invariance.h"

typedef struct shape {
    int n, in, out;
} shape;

/* One row, one input, one output, widths below, at and past the partial
 * sums' eight and the GPU's tiles, and a long reduction. */
static const shape shapes[] = {
    {1, 1, 1},    {1, 5, 1},    {1, 300, 7},  {7, 1, 9},    {3, 8, 4},
    {2, 9, 3},    {13, 17, 33}, {300, 64, 10}, {33, 129, 65}, {65, 256, 40},
    {5, 1000, 3}, {70, 31, 130},
};

/* x, w, bias in [-1, 1), float32 values, as floats and doubles. */
typedef struct operands {
    double *x, *w, *b;
    float *xf, *wf, *bf;
} operands;

static operands make_operands(int n, int in, int out, uint64_t seed)
{
    operands o = {chk_alloc((size_t)n * in), chk_alloc((size_t)out * in), chk_alloc((size_t)out),
                  chk_alloc_float((size_t)n * in), chk_alloc_float((size_t)out * in),
                  chk_alloc_float((size_t)out)};
    chk_rng rng = chk_rng_seed(seed);
    chk_fill(o.x, (size_t)n * in, -1, 1, &rng);
    chk_fill(o.w, (size_t)out * in, -1, 1, &rng);
    chk_fill(o.b, (size_t)out, -1, 1, &rng);
    chk_to_float(o.xf, o.x, (size_t)n * in);
    chk_to_float(o.wf, o.w, (size_t)out * in);
    chk_to_float(o.bf, o.b, (size_t)out);
    return o;
}

static void free_operands(operands *o)
{
    free(o->x);
    free(o->w);
    free(o->b);
    free(o->xf);
    free(o->wf);
    free(o->bf);
}

/* The reference y and est_linear_errors' bound of it (a zero bias when the
 * product takes none). */
static int compare_shape(const char *name, inv_product product, void *arg, double u_op,
                         const shape *s, int with_bias, uint64_t seed)
{
    const int n = s->n, in = s->in, out = s->out;
    operands o = make_operands(n, in, out, seed);
    if (!with_bias)
        memset(o.b, 0, sizeof(double) * (size_t)out);
    float *y = chk_alloc_float((size_t)n * out);
    product(arg, y, o.xf, o.wf, with_bias ? o.bf : NULL, n, in, out);
    double *got = chk_alloc((size_t)n * out), *want = chk_alloc((size_t)n * out);
    chk_to_double(got, y, (size_t)n * out);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < out; c++) {
            double sum = o.b[c];
            for (int k = 0; k < in; k++)
                sum += o.x[(size_t)r * in + k] * o.w[(size_t)c * in + k];
            want[(size_t)r * out + c] = sum;
        }
    double *ey = chk_alloc((size_t)n * out), *edx = chk_alloc((size_t)n * in),
           *edw = chk_alloc((size_t)out * in), *edb = chk_alloc((size_t)out),
           *dy = chk_alloc((size_t)n * out);
    est_linear_errors(n, in, out, o.w, o.b, o.x, dy, u_op, ey, edx, edw, edb);
    char label[96];
    chk_shape(label, sizeof label, n, in, out, 0, -1);
    const int ok = chk_compare(name, label, with_bias ? "y (bias)" : "y", got, want, n, out,
                               (chk_tol){.atol = 1, .rtol = 4 * CHK_U32, .scale = ey});
    free(ey);
    free(edx);
    free(edw);
    free(edb);
    free(dy);
    free(got);
    free(want);
    free(y);
    free_operands(&o);
    return ok;
}

void inv_expect_reference(const char *name, inv_product product, void *arg, double u_op)
{
    chk_table_header(name);
    int failed = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int with_bias = 0; with_bias < 2; with_bias++)
            failed += !compare_shape(name, product, arg, u_op, &shapes[i], with_bias,
                                     100 + 2 * i + (uint64_t)with_bias);
    assert_int_equal(failed, 0);
}

/* Rows [r0, r0 + rows) of the batch on their own. */
static void expect_slice(const char *name, inv_product product, void *arg, const operands *o,
                         const float *whole, int r0, int rows, int in, int out)
{
    float *y = chk_alloc_float((size_t)rows * out);
    product(arg, y, o->xf + (size_t)r0 * in, o->wf, o->bf, rows, in, out);
    if (memcmp(y, whole + (size_t)r0 * out, sizeof(float) * (size_t)rows * out) != 0)
        fail_msg("%s [%d x %d -> %d]: rows %d..%d computed as a batch of %d differ from the "
                 "whole batch's", name, rows, in, out, r0, r0 + rows - 1, rows);
    free(y);
}

void inv_expect_rows_invariant(const char *name, inv_product product, void *arg)
{
    const shape cases[] = {{300, 64, 10}, {70, 129, 65}, {40, 1000, 3}, {33, 7, 130}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int n = cases[i].n, in = cases[i].in, out = cases[i].out;
        operands o = make_operands(n, in, out, 7 + i);
        float *whole = chk_alloc_float((size_t)n * out);
        product(arg, whole, o.xf, o.wf, o.bf, n, in, out);
        for (int r = 0; r < n; r += 1 + r / 8)
            expect_slice(name, product, arg, &o, whole, r, 1, in, out);
        for (int r = 0; r + 7 <= n; r += 5)
            expect_slice(name, product, arg, &o, whole, r, 7, in, out);
        free(whole);
        free_operands(&o);
    }
}

/* ---- through fn_infer ---- */

enum { INFER_IN = 64, INFER_ROWS = 301, INFER_OUT = 10 };

/* A weights file of every layer kind, made on the CPU. */
static void write_weights(const char *path)
{
    const char *kinds[] = {"block", "dropout", "residual", "gelu", "relu", "linear"};
    const int widths[] = {96, 0, 96, 80, 72, INFER_OUT};
    fn_layer_spec specs[6];
    for (int i = 0; i < 6; i++) {
        EXPECT_OK(fn_layer_kind_find(kinds[i], &specs[i].kind));
        specs[i].width = widths[i];
        specs[i].value = i == 1 ? 0.25 : 0;
    }
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    const fn_layer_hparams hp = {.groups = 8, .eps = 1e-5f, .negative_slope = 0.01f};
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create(&net, cpu, specs, 6, INFER_IN, &hp, 1, 5));
    EXPECT_OK(fn_weights_save(path, net, NULL));
    fn_net_destroy(net);
    fn_context_destroy(cpu);
}

/* The outputs of the rows x [rows, INFER_IN] in batches of up to batch. */
static void infer(fn_context *ctx, const char *path, int batch, const float *x, int rows,
                  float *y)
{
    fn_net *net = NULL;
    EXPECT_OK(fn_weights_build(&net, ctx, path, batch));
    fn_memory_set *set = NULL;
    EXPECT_OK(fn_memory_set_inputs(&set, "rows", x, rows, INFER_IN));
    EXPECT_OK(fn_infer(net, NULL, set, y));
    fn_memory_set_destroy(set);
    fn_net_destroy(net);
}

void inv_expect_infer_invariant(fn_context *ctx)
{
    char path[] = "/tmp/fn_invariance_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_weights(path);
    double *xd = chk_alloc((size_t)INFER_ROWS * INFER_IN);
    chk_rng rng = chk_rng_seed(3);
    chk_fill(xd, (size_t)INFER_ROWS * INFER_IN, -2, 2, &rng);
    float *x = chk_alloc_float((size_t)INFER_ROWS * INFER_IN);
    chk_to_float(x, xd, (size_t)INFER_ROWS * INFER_IN);
    const size_t count = (size_t)INFER_ROWS * INFER_OUT;
    float *first = chk_alloc_float(count), *y = chk_alloc_float(count);
    infer(ctx, path, 300, x, INFER_ROWS, first);
    const int batches[] = {1, 7, 64};
    for (int i = 0; i < 3; i++) {
        infer(ctx, path, batches[i], x, INFER_ROWS, y);
        for (int r = 0; r < INFER_ROWS; r++)
            if (memcmp(y + (size_t)r * INFER_OUT, first + (size_t)r * INFER_OUT,
                       sizeof(float) * INFER_OUT) != 0)
                fail_msg("%s %s: row %d predicted in batches of %d differs from batches of 300 "
                         "(%.9g vs %.9g)", fn_device_name(fn_context_device(ctx)),
                         fn_math_name(fn_context_math(ctx)), r, batches[i],
                         (double)y[(size_t)r * INFER_OUT], (double)first[(size_t)r * INFER_OUT]);
    }
    /* The rows in another order: row perm[i] at place i. */
    int *perm = calloc(INFER_ROWS, sizeof *perm);
    assert_non_null(perm);
    for (int i = 0; i < INFER_ROWS; i++)
        perm[i] = i;
    for (int i = INFER_ROWS - 1; i > 0; i--) {
        const int j = (int)(chk_rng_next(&rng) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    float *xs = chk_alloc_float((size_t)INFER_ROWS * INFER_IN);
    for (int i = 0; i < INFER_ROWS; i++)
        memcpy(xs + (size_t)i * INFER_IN, x + (size_t)perm[i] * INFER_IN,
               sizeof(float) * INFER_IN);
    infer(ctx, path, 300, xs, INFER_ROWS, y);
    for (int i = 0; i < INFER_ROWS; i++)
        if (memcmp(y + (size_t)i * INFER_OUT, first + (size_t)perm[i] * INFER_OUT,
                   sizeof(float) * INFER_OUT) != 0)
            fail_msg("%s %s: row %d predicted at place %d of a shuffled set differs",
                     fn_device_name(fn_context_device(ctx)), fn_math_name(fn_context_math(ctx)),
                     perm[i], i);
    unlink(path);
    free(perm);
    free(xs);
    free(first);
    free(y);
    free(x);
    free(xd);
}
