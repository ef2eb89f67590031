/* test_bf16_cuda.c — the bf16 math mode's products on the GPU, element by
 * element against float64:
 *  (a) the rounding kernel (fn_cuda_to_bf16) bit for bit against a host
 *      round-to-nearest-even, on ties, subnormals, the largest floats
 *      (which round to infinity), infinities and NaN;
 *  (b) each of the three products of gemm_cuda.h (y = x w^T, dw += dy^T x,
 *      dx = dy w, the path of the linear layer) at shapes with odd sizes and
 *      widths that are not multiples of 8, every element within the bf16
 *      error model of tests/support/estimate.h: both operands rounded to
 *      nearest bfloat16 (u = 2^-8), so each term x_k w_k carries at most
 *      (2u + u^2)|x_k w_k|, and the fp32 accumulation at most
 *      LAMBDA sqrt(K) 2^-24 sum|t|, plus 4 float32 roundings of the result
 *      (and of dw's old value, which the += keeps); and, where the products
 *      are long enough to average (K >= 16), a relative error above 1e-3,
 *      which fp32 (~1e-7) and TF32 (~3e-4) stay below: the mode really
 *      rounds to bf16 (expected about sqrt(2/3) 2^-8 = 3.2e-3);
 *  (c) fn_cuda_gemm_bf16 writing a bfloat16 result (what the block stores z
 *      as): the same bound plus one bf16 rounding of the result, 2^-8 |r|;
 *  (d) misuse refused with FN_ERR_INVALID: a bf16 product on a non-bf16
 *      context, fp32 operands to the bf16 context's split product, and a
 *      workspace too small;
 *  (e) on the CPU too: the workspace a layer sizes for its bf16 products,
 *      two bf16 operands of the largest pair, each padded to 64 floats.
 * Every GPU test skips, saying why, on a machine without a GPU. */
#include <float.h>
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
#include "core/gemm_cuda.h"
#include "estimate.h"
#include "expect.h"
#include "test_main.h"

/* ---- host bfloat16 ---- */

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Round to nearest, ties to even; NaN stays NaN (quiet). */
static uint16_t host_to_bf16(float f)
{
    const uint32_t u = float_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static double bf16_value(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

/* n bf16 values from the GPU: they travel as the bits of fn_bf16_floats(n)
 * floats. */
static void download_bf16(uint16_t *dst, const fn_tensor *t, size_t n)
{
    const size_t floats = fn_bf16_floats(n);
    float *tmp = chk_alloc_float(floats);
    EXPECT_OK(fn_tensor_download(t, tmp, floats));
    memcpy(dst, tmp, n * sizeof *dst);
    free(tmp);
}

static fn_context *bf16_context(void)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, FN_MATH_BF16));
    return ctx;
}

static void upload_doubles(fn_tensor *t, const double *src, size_t n)
{
    float *tmp = chk_alloc_float(n);
    chk_to_float(tmp, src, n);
    EXPECT_OK(fn_tensor_upload(t, tmp, n));
    free(tmp);
}

/* A device tensor of exactly n floats (one row; n is small here). */
static void alloc_floats(fn_tensor *t, size_t n)
{
    assert_true(n > 0 && n < (size_t)1 << 30);
    EXPECT_OK(fn_tensor_alloc(t, 1, (int)n, FN_CUDA));
}

/* ---- (a) rounding ---- */

static void test_rounding_matches_host(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *ctx = bf16_context();
    const float specials[] = {
        0.0f, -0.0f, 1.0f, -1.0f,
        1.00390625f,           /* 1 + 2^-8: halfway to 1 + 2^-7, down to even 1 */
        1.01171875f,           /* 1 + 3 2^-8: halfway, up to even 1 + 2^-6 */
        1.0f + 0x1p-8f + 0x1p-20f, /* just above halfway: up */
        0x1p-130f, -0x1p-140f, /* subnormals */
        FLT_MIN, FLT_MAX, -FLT_MAX, /* FLT_MAX rounds to infinity */
        INFINITY, -INFINITY, NAN,
        3.14159265f, -2.71828182f, 1e-20f, 65504.0f,
    };
    enum { RANDOM = 4099 }; /* odd: the second operand starts mid-word */
    const size_t ns = sizeof specials / sizeof *specials, n = ns + RANDOM;
    float *in = chk_alloc_float(n);
    memcpy(in, specials, sizeof specials);
    chk_rng rng = chk_rng_seed(5);
    for (size_t i = ns; i < n; i++)
        in[i] = (float)(chk_uniform(&rng, -1, 1) * exp(chk_uniform(&rng, -30, 30)));
    /* a = the first na values, b = the rest, both halves of one launch:
     * odd counts take the scalar kernel, multiples of 4 (16-byte aligned
     * sources, 8-byte aligned results) the kernel of four a thread. */
    const size_t splits[2] = {7, 8};
    uint16_t *got = malloc(n * sizeof *got);
    assert_non_null(got);
    fn_tensor src = {0}, a_h = {0}, b_h = {0};
    alloc_floats(&src, n);
    EXPECT_OK(fn_tensor_upload(&src, in, n));
    for (int k = 0; k < 2; k++) {
        const size_t na = splits[k], nb = k == 0 ? n - na : (n - na) / 4 * 4;
        alloc_floats(&a_h, fn_bf16_floats(na));
        alloc_floats(&b_h, fn_bf16_floats(nb));
        EXPECT_OK(fn_cuda_to_bf16(ctx, (fn_bf16 *)a_h.data, src.data, na, (fn_bf16 *)b_h.data,
                                  src.data + na, nb));
        EXPECT_OK(fn_context_sync(ctx));
        download_bf16(got, &a_h, na);
        download_bf16(got + na, &b_h, nb);
        for (size_t i = 0; i < na + nb; i++) {
            const uint16_t want = host_to_bf16(in[i]);
            const int both_nan = isnan(bf16_value(want)) && isnan(bf16_value(got[i]));
            if (got[i] != want && !both_nan)
                fail_msg("to_bf16(%a) = 0x%04x, round to nearest even gives 0x%04x (%s kernel)",
                         (double)in[i], got[i], want, k == 0 ? "scalar" : "four-a-thread");
        }
        fn_tensor_free(&a_h);
        fn_tensor_free(&b_h);
    }
    printf("to_bf16: %zu values, both kernels bit for bit as round-to-nearest-even\n", n);
    free(got);
    free(in);
    fn_tensor_free(&src);
    fn_context_destroy(ctx);
}

/* ---- (b) the three products ---- */

typedef struct pshape {
    int n, in, out;
} pshape;

static const pshape pshapes[] = {
    {1, 1, 1},        /* one term */
    {3, 5, 7},        /* every width odd */
    {31, 17, 23},     /* no width a multiple of 8 */
    {64, 96, 128},    /* multiples of 8: the tensor-core path */
    {130, 257, 100},  /* long K, odd */
    {257, 300, 1024}, /* several cuBLAS tiles each way */
};

/* The bound of one element whose terms have absolute sum abs_sum over k,
 * of reference value ref (and an old value `old` kept by a +=). */
static double bound(int k, double abs_sum, double ref, double old)
{
    const double u = CHK_UBF16;
    return (2 * u + u * u) * abs_sum + EST_LAMBDA * sqrt((double)k) * CHK_U32 * abs_sum +
           4 * CHK_U32 * (fabs(ref) + fabs(old) + abs_sum);
}

typedef struct worst {
    double excess;   /* max |err| / bound */
    size_t at;
    double num, den; /* Frobenius sums for the relative error */
} worst;

static void account(worst *w, size_t i, double got, double ref, double b)
{
    const double e = fabs(got - ref);
    if (!(e <= b) || e / b > w->excess) {
        w->excess = isfinite(e) ? fmax(w->excess, e / b) : INFINITY;
        w->at = i;
    }
    w->num += e * e;
    w->den += ref * ref;
}

static int report(const char *what, const pshape *s, int k, const worst *w)
{
    const double rel = sqrt(w->num / w->den);
    const int ok = w->excess <= 1.0 && (k < 16 || rel > 1e-3);
    printf("bf16 %-13s [%d, %d -> %d]: largest error %.3g of its bound (at %zu), relative "
           "error %.3g %s\n",
           what, s->n, s->in, s->out, w->excess, w->at, rel, ok ? "ok" : "FAIL");
    if (k >= 16 && rel <= 1e-3)
        printf("    a relative error <= 1e-3 over %d terms: the operands were not rounded to "
               "bf16\n", k);
    return ok;
}

typedef struct pdata {
    double *x, *w, *dy, *dw0; /* [n, in], [out, in], [n, out], [out, in] */
    fn_tensor tx, tw, tdy, tdw, ty, tdx, ws;
    size_t ws_floats;
} pdata;

static void pdata_make(pdata *d, const pshape *s, uint64_t seed)
{
    const size_t nx = (size_t)s->n * s->in, nw = (size_t)s->out * s->in,
                 ny = (size_t)s->n * s->out;
    chk_rng rng = chk_rng_seed(seed);
    d->x = chk_alloc(nx), d->w = chk_alloc(nw), d->dy = chk_alloc(ny), d->dw0 = chk_alloc(nw);
    chk_fill(d->x, nx, -1, 1, &rng);
    chk_fill(d->w, nw, -1, 1, &rng);
    chk_fill(d->dy, ny, -1, 1, &rng);
    chk_fill(d->dw0, nw, -1, 1, &rng);
    d->tx = d->tw = d->tdy = d->tdw = d->ty = d->tdx = d->ws = (fn_tensor){0};
    alloc_floats(&d->tx, nx), alloc_floats(&d->tw, nw), alloc_floats(&d->tdy, ny);
    alloc_floats(&d->tdw, nw), alloc_floats(&d->ty, ny), alloc_floats(&d->tdx, nx);
    d->ws_floats = fn_cuda_gemm_workspace_floats(FN_MATH_BF16, s->n, s->in, s->out);
    assert_true(d->ws_floats > 0);
    alloc_floats(&d->ws, d->ws_floats);
    upload_doubles(&d->tx, d->x, nx);
    upload_doubles(&d->tw, d->w, nw);
    upload_doubles(&d->tdy, d->dy, ny);
    upload_doubles(&d->tdw, d->dw0, nw);
}

static void pdata_free(pdata *d)
{
    free(d->x), free(d->w), free(d->dy), free(d->dw0);
    fn_tensor *t[] = {&d->tx, &d->tw, &d->tdy, &d->tdw, &d->ty, &d->tdx, &d->ws};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        fn_tensor_free(t[i]);
}

static double *download_doubles(const fn_tensor *t, size_t n)
{
    float *tmp = chk_alloc_float(n);
    double *out = chk_alloc(n);
    EXPECT_OK(fn_tensor_download(t, tmp, n));
    chk_to_double(out, tmp, n);
    free(tmp);
    return out;
}

static int check_products(const pshape *s)
{
    fn_context *ctx = bf16_context();
    pdata d;
    pdata_make(&d, s, 42 + (uint64_t)s->n);
    const int N = s->n, in = s->in, out = s->out;
    EXPECT_OK(fn_cuda_gemm_forward(ctx, d.ty.data, d.tx.data, d.tw.data, N, in, out, d.ws.data,
                                   d.ws_floats));
    EXPECT_OK(fn_cuda_gemm_dweight(ctx, d.tdw.data, 1.0f, d.tdy.data, d.tx.data, N, in, out,
                                   d.ws.data, d.ws_floats));
    EXPECT_OK(fn_cuda_gemm_dinput(ctx, d.tdx.data, d.tdy.data, d.tw.data, N, in, out, d.ws.data,
                                  d.ws_floats));
    EXPECT_OK(fn_context_sync(ctx));
    double *y = download_doubles(&d.ty, (size_t)N * out);
    double *dw = download_doubles(&d.tdw, (size_t)out * in);
    double *dx = download_doubles(&d.tdx, (size_t)N * in);

    worst wy = {0}, wdw = {0}, wdx = {0};
    for (int n = 0; n < N; n++)
        for (int o = 0; o < out; o++) {
            double r = 0, a = 0;
            for (int i = 0; i < in; i++) {
                const double t = d.x[(size_t)n * in + i] * d.w[(size_t)o * in + i];
                r += t, a += fabs(t);
            }
            const size_t at = (size_t)n * out + o;
            account(&wy, at, y[at], r, bound(in, a, r, 0));
        }
    for (int o = 0; o < out; o++)
        for (int i = 0; i < in; i++) {
            double r = 0, a = 0;
            for (int n = 0; n < N; n++) {
                const double t = d.dy[(size_t)n * out + o] * d.x[(size_t)n * in + i];
                r += t, a += fabs(t);
            }
            const size_t at = (size_t)o * in + i;
            const double old = d.dw0[at];
            account(&wdw, at, dw[at], old + r, bound(N, a, old + r, old));
        }
    for (int n = 0; n < N; n++)
        for (int i = 0; i < in; i++) {
            double r = 0, a = 0;
            for (int o = 0; o < out; o++) {
                const double t = d.dy[(size_t)n * out + o] * d.w[(size_t)o * in + i];
                r += t, a += fabs(t);
            }
            const size_t at = (size_t)n * in + i;
            account(&wdx, at, dx[at], r, bound(out, a, r, 0));
        }
    /* dw's relative error is diluted by dw0, so only y and dx are asked to
     * show bf16's rounding (k = 0 below). */
    int ok = report("y = x w^T", s, in, &wy);
    ok &= report("dw += dy^T x", s, 0, &wdw);
    ok &= report("dx = dy w", s, out, &wdx);
    free(y), free(dw), free(dx);
    pdata_free(&d);
    fn_context_destroy(ctx);
    return ok;
}

static void test_products_vs_float64(void **state)
{
    (void)state;
    skip_without_gpu();
    int ok = 1;
    for (size_t k = 0; k < sizeof pshapes / sizeof *pshapes; k++)
        ok &= check_products(&pshapes[k]);
    assert_true(ok);
}

/* ---- (c) a bf16 result ---- */

static int check_bf16_result(const pshape *s)
{
    fn_context *ctx = bf16_context();
    pdata d;
    pdata_make(&d, s, 7 + (uint64_t)s->in);
    const int N = s->n, in = s->in, out = s->out;
    const size_t nx = (size_t)N * in, nw = (size_t)out * in, ny = (size_t)N * out;
    fn_tensor xh = {0}, wh = {0}, zh = {0};
    alloc_floats(&xh, fn_bf16_floats(nx));
    alloc_floats(&wh, fn_bf16_floats(nw));
    alloc_floats(&zh, fn_bf16_floats(ny));
    EXPECT_OK(fn_cuda_to_bf16(ctx, (fn_bf16 *)xh.data, d.tx.data, nx, (fn_bf16 *)wh.data,
                              d.tw.data, nw));
    /* Row-major z [N, out] = x w^T, as the block's forward product. */
    EXPECT_OK(fn_cuda_gemm_bf16(ctx, 1, 0, out, N, in, 1.0f, (const fn_bf16 *)wh.data, in,
                                (const fn_bf16 *)xh.data, in, 0.0f, zh.data, 1, out));
    EXPECT_OK(fn_context_sync(ctx));
    uint16_t *z = malloc(ny * sizeof *z);
    assert_non_null(z);
    download_bf16(z, &zh, ny);
    worst wz = {0};
    for (int n = 0; n < N; n++)
        for (int o = 0; o < out; o++) {
            double r = 0, a = 0;
            for (int i = 0; i < in; i++) {
                const double t = d.x[(size_t)n * in + i] * d.w[(size_t)o * in + i];
                r += t, a += fabs(t);
            }
            const size_t at = (size_t)n * out + o;
            /* One more rounding, of a result within bound(...) of r. */
            const double b = bound(in, a, r, 0);
            account(&wz, at, bf16_value(z[at]), r, b + CHK_UBF16 * (fabs(r) + b));
        }
    const int ok = report("z = x w^T bf16", s, in, &wz);
    free(z);
    fn_tensor_free(&xh), fn_tensor_free(&wh), fn_tensor_free(&zh);
    pdata_free(&d);
    fn_context_destroy(ctx);
    return ok;
}

static void test_bf16_result_vs_float64(void **state)
{
    (void)state;
    skip_without_gpu();
    int ok = 1;
    for (size_t k = 0; k < sizeof pshapes / sizeof *pshapes; k++)
        ok &= check_bf16_result(&pshapes[k]);
    assert_true(ok);
}

/* ---- (d) misuse ---- */

static void test_misuse_refused(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *fp32 = NULL, *bf16 = bf16_context();
    EXPECT_OK(fn_context_create(&fp32, FN_CUDA, 0, FN_MATH_FP32));
    fn_tensor a = {0}, c = {0};
    alloc_floats(&a, 64);
    alloc_floats(&c, 64);
    EXPECT_FAIL(fn_cuda_gemm_bf16(fp32, 0, 0, 4, 4, 4, 1.0f, (const fn_bf16 *)a.data, 4,
                                  (const fn_bf16 *)a.data, 4, 0.0f, c.data, 0, 4),
                FN_ERR_INVALID, "on a fp32 context");
    EXPECT_FAIL(fn_cuda_gemm_split(bf16, 0, 0, 4, 4, 4, 1.0f, a.data, NULL, 4, a.data, NULL, 4,
                                   0.0f, c.data, 4),
                FN_ERR_INVALID, "fn_cuda_gemm_bf16");
    /* [4, 4] x [4, 4]: two operands of 16 values need 2 x 64 floats. */
    EXPECT_FAIL(fn_cuda_gemm_forward(bf16, c.data, a.data, a.data, 4, 4, 4, c.data, 64),
                FN_ERR_INVALID, "workspace of 64 floats");
    fn_tensor_free(&a), fn_tensor_free(&c);
    fn_context_destroy(fp32);
    fn_context_destroy(bf16);
}

/* ---- (e) workspace sizes (no GPU needed) ---- */

static void test_workspace_floats(void **state)
{
    (void)state;
    /* [3, 5] -> [3, 7]: x 15, w 35, dy 21 values; as bf16 8, 18, 11 floats,
     * each padded to 64: any pair is 128. */
    assert_int_equal(fn_cuda_gemm_workspace_floats(FN_MATH_BF16, 3, 5, 7), 128);
    assert_int_equal(fn_cuda_gemm_workspace_floats(FN_MATH_FP32, 3, 5, 7), 0);
    assert_int_equal(fn_cuda_gemm_workspace_floats(FN_MATH_TF32, 3, 5, 7), 0);
    /* The benchmark shape: w (2^26 values, 2^25 floats) and x or dy (2^23
     * values, 2^22 floats) are the largest pair; a quarter of tf32x3's four
     * floats a value. */
    const size_t bf16 = fn_cuda_gemm_workspace_floats(FN_MATH_BF16, 1024, 8192, 8192);
    assert_true(bf16 == ((size_t)1 << 25) + ((size_t)1 << 22));
    assert_true(fn_cuda_gemm_workspace_floats(FN_MATH_TF32X3, 1024, 8192, 8192) == 4 * bf16);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_workspace_floats),
              cmocka_unit_test(test_rounding_matches_host),
              cmocka_unit_test(test_products_vs_float64),
              cmocka_unit_test(test_bf16_result_vs_float64), cmocka_unit_test(test_misuse_refused))
