/* test_net_bf16_join.c — how a net joins two layers through bfloat16
 * (net.c; layer.h: forward_bf16, bf16_input), on the CPU with layers of a
 * test kind that follow the hooks' contract there (y = 1.5 v + 0.1 per
 * value, v the input as the layer reads it; one with a bfloat16 input
 * rounds a float input into it first, to nearest even, as a block does):
 *  - a layer with forward_bf16 before one whose bf16_input gives a buffer
 *    is joined: the net's float buffer between them goes (fn_net_buffer_bytes
 *    smaller by it), the output is the same bit for bit as the same net
 *    built under the test hook FN_TEST_BF16_ACTS_OFF, batch after batch of
 *    different sizes, and backward runs on the float gradients;
 *  - no join where the first has no forward_bf16, or the second no buffer;
 *  - the non-finite scan finds a NaN in a joined (bfloat16) output at its
 *    row and column;
 *  - fn_layer_forward_bf16 refuses a layer without the hook, an input in
 *    bfloat16 to a layer that takes none, and rows out of range.
 * The blocks' own joins in bf16 math on the GPU: test_bf16_acts_cuda. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/net.h"
#include "core/test_hooks.h"
#include "test_main.h"

enum { BATCH = 5, WIDTH = 6 };

typedef struct fake {
    fn_layer base;   /* first member */
    uint16_t *x_h;   /* [max_batch, in]: its bfloat16 input, or NULL: it reads float */
} fake;

static uint16_t to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (isnan(f))
        return (uint16_t)((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1u); /* to nearest, ties to even */
    return (uint16_t)(bits >> 16);
}

static float from_bf16(uint16_t h)
{
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Input value i as the layer reads it: x (rounded into x_h first where it
 * has one), or (x NULL) what the layer before wrote into x_h. */
static float input_at(fake *f, const fn_tensor *x, size_t i)
{
    if (x && f->x_h)
        f->x_h[i] = to_bf16(x->data[i]);
    return f->x_h ? from_bf16(f->x_h[i]) : x->data[i];
}

static fn_status fake_forward_bf16(fn_layer *l, const fn_tensor *x, int rows, fn_tensor *y,
                                   void *y_h)
{
    fake *f = (fake *)l;
    const size_t n = (size_t)rows * (size_t)l->in_features;
    for (size_t i = 0; i < n; i++) {
        const float out = 1.5f * input_at(f, x, i) + 0.1f;
        if (y_h)
            ((uint16_t *)y_h)[i] = to_bf16(out);
        else
            y->data[i] = out;
    }
    return FN_OK;
}

static fn_status fake_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    return fake_forward_bf16(l, x, x->rows, y, NULL);
}

static fn_status fake_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    const size_t n = (size_t)l->batch * (size_t)l->in_features;
    for (size_t i = 0; dx && i < n; i++)
        dx->data[i] = 1.5f * dy->data[i];
    return FN_OK;
}

static void fake_destroy(fn_layer *l)
{
    free(((fake *)l)->x_h);
    free(l);
}

static void *fake_bf16_input(fn_layer *l) { return ((fake *)l)->x_h; }

static const fn_layer_ops float_ops = {
    .kind = "float", .forward = fake_forward, .backward = fake_backward,
    .destroy = fake_destroy,
};
static const fn_layer_ops bf16_ops = {
    .kind = "bf16", .forward = fake_forward, .backward = fake_backward,
    .destroy = fake_destroy, .bf16_input = fake_bf16_input, .forward_bf16 = fake_forward_bf16,
};

/* A test layer of WIDTH -> WIDTH: with the bf16 hooks or not, with a
 * bfloat16 input buffer or not. */
static fn_layer *fake_layer(fn_context *ctx, int hooks, int takes_bf16)
{
    fake *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->base = (fn_layer){.ops = hooks ? &bf16_ops : &float_ops, .ctx = ctx, .device = FN_CPU,
                         .in_features = WIDTH, .out_features = WIDTH, .max_batch = BATCH};
    if (takes_bf16) {
        f->x_h = calloc(((size_t)BATCH * WIDTH + 1) / 2 * 2, sizeof *f->x_h); /* whole floats */
        assert_non_null(f->x_h);
    }
    return &f->base;
}

/* A net of layers described by "h" (hooks and a bfloat16 input), "w"
 * (hooks, writes bfloat16 but reads float), "f" (neither), built with the
 * joins off or on. */
static fn_net *fake_net(fn_context *ctx, const char *layers, int off)
{
    fn_net *net = NULL;
    if (off)
        setenv("FN_TEST_BF16_ACTS_OFF", "1", 1);
    EXPECT_OK(fn_net_create(&net, ctx, BATCH));
    for (const char *c = layers; *c; c++)
        EXPECT_OK(fn_net_add(net, fake_layer(ctx, *c != 'f', *c == 'h')));
    unsetenv("FN_TEST_BF16_ACTS_OFF");
    return net;
}

/* Outputs and input gradients, [BATCH, WIDTH] each. */
static size_t float_bytes(int n_layers)
{
    return (size_t)(2 * n_layers - 1) * BATCH * WIDTH * sizeof(float);
}

static size_t join_bytes(int joins) { return (size_t)joins * BATCH * WIDTH * sizeof(float); }

/* Rows of values that round (the ties and halfway cases of bfloat16
 * among them), different for every batch. */
static void fill(fn_tensor *x, int seed)
{
    for (int i = 0; i < x->rows * x->cols; i++)
        x->data[i] = (float)((i * 37 + seed * 11) % 101 - 50) / 7.0f + 1.0f / 1024.0f;
}

static void test_joined_as_float(void **state)
{
    fn_context *ctx = *state;
    /* h -> h, h -> h joined; h -> f not (f has no bfloat16 input). */
    fn_net *on = fake_net(ctx, "hhhf", 0);
    assert_int_equal(fn_net_buffer_bytes(on), float_bytes(4) - join_bytes(2));
    fn_net *off = NULL;
    if (fn_test_hooks_enabled()) {
        off = fake_net(ctx, "hhhf", 1);
        assert_int_equal(fn_net_buffer_bytes(off), float_bytes(4));
    }
    fn_tensor x, dy;
    EXPECT_OK(fn_tensor_alloc(&x, BATCH, WIDTH, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&dy, BATCH, WIDTH, FN_CPU));
    for (int rows = BATCH; rows >= 1; rows -= 2) {
        fn_tensor xr = fn_tensor_rows(&x, 0, rows), dyr = fn_tensor_rows(&dy, 0, rows);
        fill(&x, rows);
        fill(&dy, rows + 1);
        fn_tensor y_on, y_off;
        EXPECT_OK(fn_net_forward(on, &xr, &y_on));
        assert_int_equal(y_on.rows, rows);
        /* Three roundings by hand: the value the net must give. */
        for (int i = 0; i < rows * WIDTH; i++) {
            float v = x.data[i];
            for (int k = 0; k < 3; k++)
                v = 1.5f * from_bf16(to_bf16(v)) + 0.1f;
            v = 1.5f * v + 0.1f;
            assert_memory_equal(&y_on.data[i], &v, sizeof v);
        }
        if (off) {
            EXPECT_OK(fn_net_forward(off, &xr, &y_off));
            assert_memory_equal(y_on.data, y_off.data, sizeof(float) * (size_t)rows * WIDTH);
        }
        EXPECT_OK(fn_net_backward(on, &dyr));
        expect_nonfinite(on, 1, -1, NULL, NULL);
    }
    fn_tensor_free(&x);
    fn_tensor_free(&dy);
    fn_net_destroy(on);
    fn_net_destroy(off);
}

static void test_no_join(void **state)
{
    fn_context *ctx = *state;
    /* f writes no bfloat16; w -> w: the second takes none. */
    fn_net *net = fake_net(ctx, "fhww", 0);
    assert_int_equal(fn_net_buffer_bytes(net), float_bytes(4));
    fn_net_destroy(net);
    /* w -> h joins: writing is enough in the first, taking in the second. */
    net = fake_net(ctx, "wh", 0);
    assert_int_equal(fn_net_buffer_bytes(net), float_bytes(2) - join_bytes(1));
    fn_net_destroy(net);
}

static void test_scan_finds_joined_nan(void **state)
{
    fn_context *ctx = *state;
    fn_net *net = fake_net(ctx, "hhf", 0);
    fn_tensor x, y;
    EXPECT_OK(fn_tensor_alloc(&x, BATCH, WIDTH, FN_CPU));
    fill(&x, 1);
    x.data[2 * WIDTH + 3] = NAN;
    fn_tensor xr = fn_tensor_rows(&x, 0, 3);
    EXPECT_OK(fn_net_forward(net, &xr, &y));
    const fn_nonfinite found = expect_nonfinite(net, 0, 0, "bf16", "output");
    assert_int_equal(found.row, 2);
    assert_int_equal(found.col, 3);
    assert_true(isnan(found.value));
    fn_tensor_free(&x);
    fn_net_destroy(net);
}

static void test_forward_bf16_refusals(void **state)
{
    fn_context *ctx = *state;
    fn_layer *plain = fake_layer(ctx, 0, 0), *writer = fake_layer(ctx, 1, 0);
    fn_tensor y;
    EXPECT_OK(fn_tensor_alloc(&y, BATCH, WIDTH, FN_CPU));
    EXPECT_FAIL(fn_layer_forward_bf16(plain, NULL, 2, &y, NULL), FN_ERR_INVALID,
                "float: no forward with bfloat16 activations on the cpu");
    EXPECT_FAIL(fn_layer_forward_bf16(writer, NULL, 2, &y, NULL), FN_ERR_INVALID,
                "bf16: x is NULL and the layer takes no bfloat16 input");
    fn_layer *reader = fake_layer(ctx, 1, 1);
    EXPECT_FAIL(fn_layer_forward_bf16(reader, NULL, BATCH + 1, &y, NULL), FN_ERR_INVALID,
                "bf16: 6 rows, expected 1 to max_batch 5");
    fn_tensor_free(&y);
    fn_layer_destroy(plain);
    fn_layer_destroy(writer);
    fn_layer_destroy(reader);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_joined_as_float),
          cmocka_unit_test(test_no_join), cmocka_unit_test(test_scan_finds_joined_nan),
          cmocka_unit_test(test_forward_bf16_refusals))
