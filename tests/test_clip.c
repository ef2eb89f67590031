/* test_clip.c — clipping by the global gradient norm (clip.h) as
 * torch.nn.utils.clip_grad_norm_: hand-worked norms over two tensors, the
 * factor max_norm / (norm + 1e-6) applied only below 1 (so max_norm equal
 * to the norm still scales, as in PyTorch), gradients left alone bit for
 * bit otherwise; on the GPU the same, plus a large set of tensors whose
 * norm must match the CPU's and be bit-identical from run to run (the
 * reduction has no atomics); a clipper over a communicator of one process
 * (the sharded optimiser's kind, its sum of squares taken to the host and
 * summed over the ranks) equal to the plain one bit for bit. CPU always,
 * CUDA when present. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "expect.h"
#include "fusenet/clip.h"
#include "test_main.h"

/* "weight" [1, 3] = [3, 4, 0] and "bias" [1, 1] = [12]: norm 13. */
static const float grads[4] = {3, 4, 0, 12};

static void make_params(fn_param p[2], fn_device dev)
{
    p[0] = (fn_param){.name = "weight"};
    p[1] = (fn_param){.name = "bias"};
    must(fn_tensor_alloc(&p[0].value, 1, 3, dev));
    must(fn_tensor_alloc(&p[0].grad, 1, 3, dev));
    must(fn_tensor_alloc(&p[1].value, 1, 1, dev));
    must(fn_tensor_alloc(&p[1].grad, 1, 1, dev));
    must(fn_tensor_upload(&p[0].grad, grads, 3));
    must(fn_tensor_upload(&p[1].grad, grads + 3, 1));
}

static void read_grads(const fn_param p[2], float out[4])
{
    must(fn_tensor_download(&p[0].grad, out, 3));
    must(fn_tensor_download(&p[1].grad, out + 3, 1));
}

static void free_params(fn_param p[2])
{
    for (int i = 0; i < 2; i++) {
        fn_tensor_free(&p[i].value);
        fn_tensor_free(&p[i].grad);
    }
}

/* Clips the two tensors to max_norm; the norm must be 13 and the gradients
 * grads * factor (factor 1: untouched). */
static void expect_clip(fn_context *ctx, float max_norm, int scaled)
{
    fn_param p[2];
    make_params(p, fn_context_device(ctx));
    fn_param *list[2] = {&p[0], &p[1]};
    fn_clip *clip = NULL;
    must(fn_clip_create(&clip, ctx, list, 2, max_norm));
    double norm = 0;
    must(fn_clip_last_norm(clip, &norm));
    assert_true(isnan(norm) && !fn_clip_applied(clip));
    must(fn_clip_apply(clip));
    must(fn_clip_last_norm(clip, &norm));
    /* 9 + 16 + 144 = 169 is exact in double, and so is its root. */
    assert_true(norm == 13.0);
    float got[4];
    read_grads(p, got);
    /* torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1. */
    const float factor = scaled ? (float)((double)max_norm / (13.0 + FN_CLIP_EPS)) : 1.0f;
    for (int i = 0; i < 4; i++) {
        const float want = grads[i] * factor;
        if (memcmp(&got[i], &want, sizeof want) != 0)
            fail_msg("max_norm %g, gradient %d: %.9g, expected %.9g", (double)max_norm, i,
                     (double)got[i], (double)want);
    }
    printf("    max_norm %-4g: norm %g, gradients %s\n", (double)max_norm, norm,
           scaled ? "scaled" : "untouched");
    fn_clip_destroy(clip);
    free_params(p);
}

static void check_hand_worked(fn_device device)
{
    fn_context *ctx = context_or_skip(device);
    expect_clip(ctx, 6.5f, 1); /* factor 6.5 / 13.000001: [1.5, 2, 0, 6] less a hair */
    expect_clip(ctx, 20.0f, 0);
    expect_clip(ctx, 13.0f, 1); /* 13 / 13.000001 < 1: PyTorch scales here too */
    /* The one-call form. */
    fn_param p[2];
    make_params(p, device);
    fn_param *list[2] = {&p[0], &p[1]};
    double norm = 0;
    must(fn_clip_grad_norm(ctx, list, 2, 6.5f, &norm));
    float got[4];
    read_grads(p, got);
    assert_true(norm == 13.0);
    assert_true(fabs(got[3] - 6.0) < 1e-5);
    free_params(p);
    fn_context_destroy(ctx);
}

TESTS_ON_EACH_DEVICE(hand_worked, check_hand_worked)

static void test_checks(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CPU);
    fn_param p[2];
    make_params(p, FN_CPU);
    fn_param *list[2] = {&p[0], &p[1]};
    fn_clip *clip = NULL;
    assert_int_equal(fn_clip_create(&clip, ctx, list, 2, 0.0f), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "max_norm 0 must be positive"));
    assert_int_equal(fn_clip_create(&clip, ctx, list, 0, 1.0f), FN_ERR_INVALID);
    assert_int_equal(fn_clip_apply(NULL), FN_ERR_INVALID);
    assert_null(clip);
    free_params(p);
    fn_context_destroy(ctx);
}

enum { BIG_TENSORS = 3 };
static const int big_cols[BIG_TENSORS] = {1000003, 257, 1};

static void make_big(fn_param *p, fn_device dev, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    for (int i = 0; i < BIG_TENSORS; i++) {
        const int n = big_cols[i];
        float *g = chk_alloc_float((size_t)n);
        for (int j = 0; j < n; j++)
            g[j] = (float)chk_uniform(&rng, -1, 1);
        p[i] = (fn_param){.name = "g"};
        must(fn_tensor_alloc(&p[i].value, 1, n, dev));
        must(fn_tensor_alloc(&p[i].grad, 1, n, dev));
        must(fn_tensor_upload(&p[i].grad, g, (size_t)n));
        free(g);
    }
}

static void free_big(fn_param *p)
{
    for (int i = 0; i < BIG_TENSORS; i++) {
        fn_tensor_free(&p[i].value);
        fn_tensor_free(&p[i].grad);
    }
}

static double clip_big(fn_context *ctx, fn_param *p, float **out)
{
    fn_param *list[BIG_TENSORS];
    for (int i = 0; i < BIG_TENSORS; i++)
        list[i] = &p[i];
    double norm = 0;
    must(fn_clip_grad_norm(ctx, list, BIG_TENSORS, 10.0f, &norm));
    *out = chk_alloc_float((size_t)big_cols[0]);
    must(fn_tensor_download(&p[0].grad, *out, (size_t)big_cols[0]));
    return norm;
}

/* About 10^6 values in [-1, 1]: norm ~ sqrt(10^6 / 3) ~ 577, clipped to
 * 10. The GPU's double sum (blocks, then the blocks in order) and the CPU's
 * (in order) differ only in rounding: each <= 10^6 * 2^-53 ~ 1.1e-10
 * relative of the sum of squares; allowed 1e-9 relative of the norm. The
 * scaled gradients then differ by at most the factor's rounding to float
 * (1 ulp). Two GPU runs are bit-identical. */
static void test_cuda_matches_cpu(void **state)
{
    (void)state;
    fn_context *gpu = context_or_skip(FN_CUDA);
    fn_context *cpu = context_or_skip(FN_CPU);
    fn_param a[BIG_TENSORS], b[BIG_TENSORS], c[BIG_TENSORS];
    make_big(a, FN_CPU, 5);
    make_big(b, FN_CUDA, 5);
    make_big(c, FN_CUDA, 5);
    float *ga, *gb, *gc;
    const double na = clip_big(cpu, a, &ga), nb = clip_big(gpu, b, &gb), nc = clip_big(gpu, c, &gc);
    printf("    norm: CPU %.17g, CUDA %.17g\n", na, nb);
    assert_true(fabs(na - nb) <= 1e-9 * na);
    assert_true(memcmp(&nb, &nc, sizeof nb) == 0);
    assert_memory_equal(gb, gc, (size_t)big_cols[0] * sizeof(float));
    for (int j = 0; j < big_cols[0]; j++)
        if (!(fabsf(ga[j] - gb[j]) <= 2 * 0x1p-24f * fabsf(ga[j])))
            fail_msg("gradient %d: CPU %.9g, CUDA %.9g", j, (double)ga[j], (double)gb[j]);
    free(ga);
    free(gb);
    free(gc);
    free_big(a);
    free_big(b);
    free_big(c);
    fn_context_destroy(cpu);
    fn_context_destroy(gpu);
}

/* Clips p to max_norm, over comm when not NULL; the norm, p[0]'s gradient. */
static double clip_with(fn_context *ctx, fn_param *p, fn_comm *comm, float max_norm, float **out)
{
    fn_param *list[BIG_TENSORS];
    for (int i = 0; i < BIG_TENSORS; i++)
        list[i] = &p[i];
    fn_clip *clip = NULL;
    must(fn_clip_create(&clip, ctx, list, BIG_TENSORS, max_norm));
    if (comm)
        must(fn_clip_set_comm(clip, comm));
    double norm = 0;
    must(fn_clip_last_norm(clip, &norm));
    assert_true(isnan(norm));
    must(fn_clip_apply(clip));
    must(fn_clip_last_norm(clip, &norm));
    fn_clip_destroy(clip);
    *out = chk_alloc_float((size_t)big_cols[0]);
    must(fn_tensor_download(&p[0].grad, *out, (size_t)big_cols[0]));
    return norm;
}

/* The split path (the rank's sum of squares, the sum over the ranks, the
 * scaling by the factor) on one process adds the same doubles in the same
 * order as the plain one and scales by the same float: the same bits, for
 * a norm ~577 clipped to 10 and one left alone below 1000. */
static void check_comm_self(fn_device device)
{
    fn_context *ctx = context_or_skip(device);
    fn_comm *comm = NULL;
    must(fn_comm_create(&comm, ctx, FN_COMM_SELF));
    const float max_norms[2] = {10.0f, 1000.0f};
    for (int k = 0; k < 2; k++) {
        fn_param a[BIG_TENSORS], b[BIG_TENSORS];
        make_big(a, device, 11);
        make_big(b, device, 11);
        float *ga, *gb;
        const double na = clip_with(ctx, a, NULL, max_norms[k], &ga);
        const double nb = clip_with(ctx, b, comm, max_norms[k], &gb);
        printf("    max_norm %g: norm %.17g alone, %.17g over a communicator\n",
               (double)max_norms[k], na, nb);
        assert_true(na > 500 && na < 700);
        assert_memory_equal(&na, &nb, sizeof na);
        assert_memory_equal(ga, gb, (size_t)big_cols[0] * sizeof(float));
        for (int i = 1; i < BIG_TENSORS; i++) {
            const size_t n = (size_t)big_cols[i];
            float *x = chk_alloc_float(n), *y = chk_alloc_float(n);
            must(fn_tensor_download(&a[i].grad, x, n));
            must(fn_tensor_download(&b[i].grad, y, n));
            assert_memory_equal(x, y, n * sizeof(float));
            free(x);
            free(y);
        }
        free(ga);
        free(gb);
        free_big(a);
        free_big(b);
    }
    fn_comm_destroy(comm);
    fn_context_destroy(ctx);
}

TESTS_ON_EACH_DEVICE(comm_self, check_comm_self)

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_hand_worked_cpu),
          cmocka_unit_test(test_hand_worked_cuda), cmocka_unit_test(test_checks),
          cmocka_unit_test(test_cuda_matches_cpu), cmocka_unit_test(test_comm_self_cpu),
          cmocka_unit_test(test_comm_self_cuda))
