/* test_block_threads.c — the CPU block's element-wise passes run on its
 * context's threads (core/workers.h); what each thread computes must not
 * depend on how many there are. At shapes large enough to be split (rows
 * over threads, channel chunks over threads, groups that straddle a chunk),
 * forward and backward on 2, 3 and 5 threads give the same bits as on one
 * (the one-thread path is the one the gradient checks prove), for y, dx and
 * every parameter gradient. OpenBLAS runs on one thread throughout, so the
 * products are the same on every run. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/workers.h"
#include "fusenet/block.h"
#include "fusenet/device.h"
#include "fusenet/init.h"
#include "fusenet/layer.h"

typedef struct shape {
    int batch, in, out, groups;
} shape;

/* Every output of one forward and backward: y, dx, then each gradient. */
typedef struct outputs {
    float *data;
    size_t count;
} outputs;

static void fill(fn_tensor *t, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < (size_t)t->rows * (size_t)t->cols; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        t->data[i] = lo + (hi - lo) * (float)(s >> 40) / (float)(1 << 24);
    }
}

static void append(outputs *o, const fn_tensor *t)
{
    const size_t n = (size_t)t->rows * (size_t)t->cols;
    o->data = realloc(o->data, (o->count + n) * sizeof(float));
    assert_non_null(o->data);
    memcpy(o->data + o->count, t->data, n * sizeof(float));
    o->count += n;
}

/* One forward and backward of a block on a CPU context whose element-wise
 * passes run on `threads` threads. */
static outputs run(shape s, int threads)
{
    fn_context *ctx;
    assert_int_equal(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32), FN_OK);
    fn_workers_destroy(ctx->workers);
    assert_int_equal(fn_workers_create(&ctx->workers, threads), FN_OK);
    fn_rng rng = {.seed = 7};
    const fn_block_config cfg = fn_block_config_default(s.in, s.out, s.groups);
    fn_layer *l;
    assert_int_equal(fn_block_create(&l, ctx, &cfg, s.batch, &rng), FN_OK);
    fill(&fn_layer_param(l, "gamma")->value, 1, 0.5f, 1.5f);
    fill(&fn_layer_param(l, "beta")->value, 2, -0.5f, 0.5f);
    fn_tensor x, y, dy, dx;
    assert_int_equal(fn_tensor_alloc(&x, s.batch, s.in, FN_CPU), FN_OK);
    assert_int_equal(fn_tensor_alloc(&y, s.batch, s.out, FN_CPU), FN_OK);
    assert_int_equal(fn_tensor_alloc(&dy, s.batch, s.out, FN_CPU), FN_OK);
    assert_int_equal(fn_tensor_alloc(&dx, s.batch, s.in, FN_CPU), FN_OK);
    fill(&x, 3, -2.0f, 2.0f);
    fill(&dy, 4, -1.0f, 1.0f);
    assert_int_equal(fn_layer_zero_grad(l), FN_OK);
    assert_int_equal(fn_layer_forward(l, &x, &y), FN_OK);
    assert_int_equal(fn_layer_backward(l, &dy, &dx), FN_OK);
    outputs o = {0};
    append(&o, &y);
    append(&o, &dx);
    for (int i = 0; i < l->n_params; i++)
        append(&o, &l->params[i].grad);
    fn_tensor_free(&x), fn_tensor_free(&y), fn_tensor_free(&dy), fn_tensor_free(&dx);
    fn_layer_destroy(l);
    fn_context_destroy(ctx);
    return o;
}

static void expect_same_bits_on_any_threads(shape s)
{
    outputs one = run(s, 1);
    const int threads[] = {2, 3, 5};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        outputs many = run(s, threads[t]);
        assert_int_equal(many.count, one.count);
        for (size_t i = 0; i < one.count; i++) {
            if (memcmp(&many.data[i], &one.data[i], sizeof(float)) != 0)
                fail_msg("batch %d, %d -> %d, groups %d: output %zu is %.9g on %d threads, "
                         "%.9g on one",
                         s.batch, s.in, s.out, s.groups, i, (double)many.data[i], threads[t],
                         (double)one.data[i]);
        }
        free(many.data);
    }
    free(one.data);
}

/* Rows split (16384 elements a part: 700 rows of 100 make four parts),
 * chunks of 32 channels that cut groups of 25, and one group of 8192
 * channels a row (a row larger than a part by itself). */
static void test_same_bits_on_any_threads(void **state)
{
    (void)state;
    expect_same_bits_on_any_threads((shape){.batch = 700, .in = 9, .out = 100, .groups = 4});
    expect_same_bits_on_any_threads((shape){.batch = 513, .in = 33, .out = 96, .groups = 96});
    expect_same_bits_on_any_threads((shape){.batch = 12, .in = 5, .out = 8192, .groups = 1});
}

int main(void)
{
    openblas_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bits_on_any_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
