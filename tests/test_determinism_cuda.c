/* test_determinism_cuda.c — the GPU backend's promises that need no
 * reference implementation: two training runs from one seed give
 * bit-identical weights; GPU initialisation equals CPU initialisation bit for
 * bit; dropout draws the CPU's masks bit for bit (the step and the row
 * read from the device, so a new pass changes them); every math mode is
 * accepted; and each of the three products, in each
 * mode, matches a float64 product within that mode's accuracy (tf32x3 within
 * 3e-5, bf16 within 1e-2; test_bf16_cuda.c checks bf16 element by element).
 * Every test skips, saying why, on a machine without a GPU. */
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
#include "core/cuda_runtime.h"
#include "expect.h"
#include "fusenet/block.h"
#include "fusenet/dropout.h"
#include "fusenet/init.h"
#include "fusenet/linear.h"
#include "fusenet/loss.h"
#include "fusenet/net.h"
#include "fusenet/sgd.h"
#include "core/gemm_cuda.h"
#include "test_main.h"

static fn_context *gpu_context(fn_math math)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CUDA, 0, math));
    return ctx;
}

static void upload_doubles(fn_tensor *t, const double *src)
{
    const size_t n = fn_tensor_count(t);
    float *tmp = chk_alloc_float(n);
    chk_to_float(tmp, src, n);
    EXPECT_OK(fn_tensor_upload(t, tmp, n));
    free(tmp);
}

static void download_doubles(double *dst, const fn_tensor *t)
{
    const size_t n = fn_tensor_count(t);
    float *tmp = chk_alloc_float(n);
    EXPECT_OK(fn_tensor_download(t, tmp, n));
    chk_to_double(dst, tmp, n);
    free(tmp);
}

/* ---- math modes and initialisation ---- */

static void test_math_modes_accepted(void **state)
{
    (void)state;
    skip_without_gpu();
    for (int mode = 0; mode < FN_MATH_MODES; mode++) { /* every mode of device.h */
        fn_context *ctx = gpu_context((fn_math)mode);
        assert_int_equal(fn_context_math(ctx), mode);
        assert_int_equal(fn_context_device(ctx), FN_CUDA);
        fn_context_destroy(ctx);
    }
}

/* One (seed, offset) gives the same bits on both devices, and both advance
 * the offset alike. An odd count checks the tail of Philox's blocks of 4. */
static void test_init_uniform_matches_cpu(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *ctx = gpu_context(FN_MATH_FP32);
    enum { ROWS = 37, COLS = 53 };
    fn_tensor cpu = {0}, gpu = {0};
    EXPECT_OK(fn_tensor_alloc(&cpu, ROWS, COLS, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&gpu, ROWS, COLS, FN_CUDA));
    const uint64_t offsets[] = {0, 7, 1000};
    for (size_t k = 0; k < sizeof offsets / sizeof *offsets; k++) {
        fn_rng rc = {.seed = 1234, .offset = offsets[k]}, rg = rc;
        EXPECT_OK(fn_init_uniform(&cpu, -0.25f, 0.75f, &rc));
        EXPECT_OK(fn_init_uniform(&gpu, -0.25f, 0.75f, &rg));
        assert_true(rc.offset == rg.offset);
        static float back[ROWS * COLS];
        EXPECT_OK(fn_tensor_download(&gpu, back, ROWS * COLS));
        for (int i = 0; i < ROWS * COLS; i++)
            if (memcmp(&back[i], &cpu.data[i], sizeof(float)) != 0)
                fail_msg("offset %llu, element %d: GPU %.9g, CPU %.9g",
                         (unsigned long long)offsets[k], i, (double)back[i],
                         (double)cpu.data[i]);
    }
    fn_tensor_free(&cpu);
    fn_tensor_free(&gpu);
    fn_context_destroy(ctx);
}

/* Dropout's forward and backward on the GPU equal the CPU's bit for bit,
 * at a step past 2^32 and a share starting at row 37; a second pass
 * (another step) changes the GPU's mask as it does the CPU's. */
static void test_dropout_matches_cpu(void **state)
{
    (void)state;
    skip_without_gpu();
    fn_context *gctx = gpu_context(FN_MATH_FP32), *cctx = NULL;
    EXPECT_OK(fn_context_create(&cctx, FN_CPU, 0, FN_MATH_FP32));
    enum { ROWS = 37, COLS = 53 };
    fn_rng rc = {.seed = 77, .offset = 5}, rg = rc;
    fn_layer *cpu = NULL, *gpu = NULL;
    EXPECT_OK(fn_dropout_create(&cpu, cctx, COLS, 0.3, ROWS, &rc, 0));
    EXPECT_OK(fn_dropout_create(&gpu, gctx, COLS, 0.3, ROWS, &rg, 0));
    static float x[ROWS * COLS], yc[ROWS * COLS], yg[ROWS * COLS], dxc[ROWS * COLS],
        dxg[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = (float)(i % 97) * 0.37f - 11.0f;
    fn_tensor xg = {0}, ygt = {0}, dxgt = {0};
    EXPECT_OK(fn_tensor_alloc(&xg, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&ygt, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&dxgt, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_upload(&xg, x, ROWS * COLS));
    fn_tensor xc = fn_tensor_view(x, ROWS, COLS, FN_CPU), yct = fn_tensor_view(yc, ROWS, COLS, FN_CPU);
    fn_tensor dxct = fn_tensor_view(dxc, ROWS, COLS, FN_CPU);
    const long long steps[] = {5000000123LL, 4};
    float first[ROWS * COLS];
    for (int k = 0; k < 2; k++) {
        const fn_pass pass = {.training = 1, .step = steps[k], .row0 = 37};
        EXPECT_OK(fn_layer_set_pass(cpu, &pass));
        EXPECT_OK(fn_layer_set_pass(gpu, &pass));
        EXPECT_OK(fn_layer_forward(cpu, &xc, &yct));
        EXPECT_OK(fn_layer_forward(gpu, &xg, &ygt));
        EXPECT_OK(fn_layer_backward(cpu, &xc, &dxct)); /* dy = x */
        EXPECT_OK(fn_layer_backward(gpu, &xg, &dxgt));
        EXPECT_OK(fn_tensor_download(&ygt, yg, ROWS * COLS));
        EXPECT_OK(fn_tensor_download(&dxgt, dxg, ROWS * COLS));
        assert_memory_equal(yc, yg, sizeof yc);
        assert_memory_equal(dxc, dxg, sizeof dxc);
        if (k == 0)
            memcpy(first, yg, sizeof first);
        else
            assert_true(memcmp(first, yg, sizeof first) != 0);
    }
    fn_tensor_free(&xg);
    fn_tensor_free(&ygt);
    fn_tensor_free(&dxgt);
    fn_layer_destroy(cpu);
    fn_layer_destroy(gpu);
    fn_context_destroy(cctx);
    fn_context_destroy(gctx);
}

/* ---- the three products against float64 ---- */

enum { GN = 256, GIN = 512, GOUT = 384 };

/* The relative errors of y = x w^T, dw += dy^T x and dx = dy w in `math`,
 * each against float64. dw starts non-zero, so the += is checked too. */
static void product_errors(fn_math math, double err[3])
{
    fn_context *ctx = gpu_context(math);
    chk_rng rng = chk_rng_seed(42);
    double *x = chk_alloc((size_t)GN * GIN), *w = chk_alloc((size_t)GOUT * GIN);
    double *dy = chk_alloc((size_t)GN * GOUT), *dw0 = chk_alloc((size_t)GOUT * GIN);
    chk_fill(x, (size_t)GN * GIN, -1.0, 1.0, &rng);
    chk_fill(w, (size_t)GOUT * GIN, -1.0, 1.0, &rng);
    chk_fill(dy, (size_t)GN * GOUT, -1.0, 1.0, &rng);
    chk_fill(dw0, (size_t)GOUT * GIN, -1.0, 1.0, &rng);

    fn_tensor tx = {0}, tw = {0}, tdy = {0}, tdw = {0}, ty = {0}, tdx = {0}, ws = {0};
    EXPECT_OK(fn_tensor_alloc(&tx, GN, GIN, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&tw, GOUT, GIN, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&tdy, GN, GOUT, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&tdw, GOUT, GIN, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&ty, GN, GOUT, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&tdx, GN, GIN, FN_CUDA));
    const size_t ws_floats = fn_cuda_gemm_workspace_floats(math, GN, GIN, GOUT);
    EXPECT_OK(fn_cuda_workspace_alloc(&ws, ws_floats));
    upload_doubles(&tx, x);
    upload_doubles(&tw, w);
    upload_doubles(&tdy, dy);
    upload_doubles(&tdw, dw0);

    EXPECT_OK(fn_cuda_gemm_forward(ctx, ty.data, tx.data, tw.data, GN, GIN, GOUT, ws.data,
                                   ws_floats));
    EXPECT_OK(fn_cuda_gemm_dweight(ctx, tdw.data, 1.0f, tdy.data, tx.data, GN, GIN, GOUT, ws.data,
                                   ws_floats));
    EXPECT_OK(fn_cuda_gemm_dinput(ctx, tdx.data, tdy.data, tw.data, GN, GIN, GOUT, ws.data,
                                  ws_floats));
    EXPECT_OK(fn_context_sync(ctx));

    double *got = chk_alloc((size_t)GOUT * GIN), *ref = chk_alloc((size_t)GOUT * GIN);
    download_doubles(got, &ty);
    for (int n = 0; n < GN; n++)
        for (int o = 0; o < GOUT; o++) {
            double s = 0.0;
            for (int i = 0; i < GIN; i++)
                s += x[(size_t)n * GIN + i] * w[(size_t)o * GIN + i];
            ref[(size_t)n * GOUT + o] = s;
        }
    err[0] = chk_relative_error(got, ref, (size_t)GN * GOUT);

    /* dw - dw0 against dy^T x: the old value must be kept, not overwritten. */
    download_doubles(got, &tdw);
    for (int o = 0; o < GOUT; o++)
        for (int i = 0; i < GIN; i++) {
            double s = 0.0;
            for (int n = 0; n < GN; n++)
                s += dy[(size_t)n * GOUT + o] * x[(size_t)n * GIN + i];
            ref[(size_t)o * GIN + i] = dw0[(size_t)o * GIN + i] + s;
        }
    err[1] = chk_relative_error(got, ref, (size_t)GOUT * GIN);

    download_doubles(got, &tdx);
    for (int n = 0; n < GN; n++)
        for (int i = 0; i < GIN; i++) {
            double s = 0.0;
            for (int o = 0; o < GOUT; o++)
                s += dy[(size_t)n * GOUT + o] * w[(size_t)o * GIN + i];
            ref[(size_t)n * GIN + i] = s;
        }
    err[2] = chk_relative_error(got, ref, (size_t)GN * GIN);

    free(got);
    free(ref);
    free(x);
    free(w);
    free(dy);
    free(dw0);
    fn_tensor_free(&tx);
    fn_tensor_free(&tw);
    fn_tensor_free(&tdy);
    fn_tensor_free(&tdw);
    fn_tensor_free(&ty);
    fn_tensor_free(&tdx);
    fn_tensor_free(&ws);
    fn_context_destroy(ctx);
}

static void check_products(fn_math math, double tol)
{
    static const char *const names[] = {"y = x w^T", "dw += dy^T x", "dx = dy w"};
    double err[3];
    product_errors(math, err);
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        printf("%-6s %-13s [%d x %d x %d]: relative error %.3g (tolerance %.3g)\n",
               fn_math_name(math), names[k], GN, GIN, GOUT, err[k], tol);
        ok &= err[k] <= tol;
    }
    if (!ok)
        fail_msg("%s products beyond tolerance %.3g", fn_math_name(math), tol);
}

/* Strict fp32 with K = 512: a few float roundoffs. */
static void test_products_fp32(void **state)
{
    (void)state;
    skip_without_gpu();
    check_products(FN_MATH_FP32, 5e-6);
}

/* TF32 rounds the operands to 11 bits: ~3e-4 expected. */
static void test_products_tf32(void **state)
{
    (void)state;
    skip_without_gpu();
    check_products(FN_MATH_TF32, 2e-3);
}

/* The split recovers near-fp32 accuracy; DESIGN.md measured 1.9e-5. */
static void test_products_tf32x3(void **state)
{
    (void)state;
    skip_without_gpu();
    check_products(FN_MATH_TF32X3, 3e-5);
}

/* bf16 rounds each operand to nearest (8 significant bits): independent
 * zero-mean errors of rms 2^-8 / sqrt(3) per operand, so a product term's
 * relative error has rms sqrt(2/3) 2^-8 = 3.2e-3 and so has the Frobenius
 * relative error of a sum of many (dw's is smaller: dw0 dilutes it). 1e-2
 * allows three times that; a wrong layout or operand is off by O(1). */
static void test_products_bf16(void **state)
{
    (void)state;
    skip_without_gpu();
    check_products(FN_MATH_BF16, 1e-2);
}

/* ---- two training runs ---- */

enum { BATCH = 24, IN = 20, H1 = 48, H2 = 640, CLASSES = 5, STEPS = 6 };

/* Trains block(IN->H1, 12 groups: K = 4) + block(H1->H2, 1 group: K = 640,
 * the block-wide path) + linear(H2->CLASSES) with cross-entropy and SGD
 * (momentum 0.9, nesterov, weight decay) for STEPS steps from `seed`, and
 * returns every parameter's final value, concatenated, on the host. */
static float *train_weights(uint64_t seed, fn_math math, size_t *count)
{
    fn_context *ctx = gpu_context(math);
    fn_rng rng = {.seed = seed, .offset = 0};
    fn_net *net = NULL;
    EXPECT_OK(fn_net_create(&net, ctx, BATCH));
    fn_layer *layer = NULL;
    fn_block_config c1 = fn_block_config_default(IN, H1, 12);
    EXPECT_OK(fn_block_create(&layer, ctx, &c1, BATCH, &rng));
    EXPECT_OK(fn_net_add(net, layer));
    fn_block_config c2 = fn_block_config_default(H1, H2, 1);
    EXPECT_OK(fn_block_create(&layer, ctx, &c2, BATCH, &rng));
    EXPECT_OK(fn_net_add(net, layer));
    EXPECT_OK(fn_linear_create(&layer, ctx, H2, CLASSES, BATCH, &rng));
    EXPECT_OK(fn_net_add(net, layer));

    fn_sgd_config cfg = fn_sgd_config_default(0.05f);
    cfg.momentum = 0.9f;
    cfg.nesterov = 1;
    cfg.weight_decay = 1e-3f;
    fn_sgd *opt = NULL;
    EXPECT_OK(fn_sgd_create(&opt, ctx, fn_net_params(net), fn_net_n_params(net), &cfg));

    /* The data: one fixed batch from the test's own generator. */
    chk_rng drng = chk_rng_seed(7);
    double xd[BATCH * IN];
    chk_fill(xd, BATCH * IN, -2.0, 2.0, &drng);
    int32_t labels[BATCH];
    for (int n = 0; n < BATCH; n++)
        labels[n] = (int32_t)(chk_rng_next(&drng) % CLASSES);
    fn_tensor x = {0}, dlogits = {0}, loss = {0};
    EXPECT_OK(fn_tensor_alloc(&x, BATCH, IN, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&dlogits, BATCH, CLASSES, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&loss, 1, 1, FN_CUDA));
    upload_doubles(&x, xd);
    void *dlabels = NULL;
    EXPECT_OK(fn_cuda_alloc(&dlabels, sizeof labels));
    EXPECT_OK(fn_cuda_copy(dlabels, FN_CUDA, labels, FN_CPU, sizeof labels));

    float first_loss = 0.0f, last_loss = 0.0f;
    for (int step = 0; step < STEPS; step++) {
        fn_tensor y = {0};
        EXPECT_OK(fn_net_zero_grad(net));
        EXPECT_OK(fn_net_forward(net, &x, &y));
        EXPECT_OK(fn_cross_entropy_loss(ctx, &y, (const int32_t *)dlabels, &loss, &dlogits));
        EXPECT_OK(fn_net_backward(net, &dlogits));
        EXPECT_OK(fn_sgd_step(opt));
        float l = 0.0f;
        EXPECT_OK(fn_tensor_download(&loss, &l, 1));
        if (!isfinite(l))
            fail_msg("step %d: loss %g", step, (double)l);
        if (step == 0)
            first_loss = l;
        last_loss = l;
    }
    printf("%s, seed %llu: loss %.6f -> %.6f over %d steps\n", fn_math_name(math),
           (unsigned long long)seed, (double)first_loss, (double)last_loss, STEPS);
    if (!(last_loss < first_loss))
        fail_msg("training on one batch did not lower the loss (%g -> %g)", (double)first_loss,
                 (double)last_loss);

    size_t total = 0;
    for (int i = 0; i < fn_net_n_params(net); i++)
        total += fn_tensor_count(&fn_net_param(net, i)->value);
    float *out = chk_alloc_float(total);
    size_t at = 0;
    for (int i = 0; i < fn_net_n_params(net); i++) {
        const fn_tensor *v = &fn_net_param(net, i)->value;
        EXPECT_OK(fn_tensor_download(v, out + at, fn_tensor_count(v)));
        at += fn_tensor_count(v);
    }
    *count = total;

    fn_cuda_free(dlabels);
    fn_tensor_free(&x);
    fn_tensor_free(&dlogits);
    fn_tensor_free(&loss);
    fn_sgd_destroy(opt);
    fn_net_destroy(net);
    fn_context_destroy(ctx);
    return out;
}

static void check_two_runs(fn_math math)
{
    size_t na = 0, nb = 0;
    float *a = train_weights(2024, math, &na);
    float *b = train_weights(2024, math, &nb);
    assert_true(na == nb);
    for (size_t i = 0; i < na; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
            fail_msg("%s: weight %zu of %zu differs between runs: %.9g vs %.9g",
                     fn_math_name(math), i, na, (double)a[i], (double)b[i]);
    free(a);
    free(b);
}

static void test_two_runs_bit_identical_fp32(void **state)
{
    (void)state;
    skip_without_gpu();
    check_two_runs(FN_MATH_FP32);
}

static void test_two_runs_bit_identical_tf32x3(void **state)
{
    (void)state;
    skip_without_gpu();
    check_two_runs(FN_MATH_TF32X3);
}

static void test_two_runs_bit_identical_bf16(void **state)
{
    (void)state;
    skip_without_gpu();
    check_two_runs(FN_MATH_BF16);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_math_modes_accepted),
              cmocka_unit_test(test_init_uniform_matches_cpu),
              cmocka_unit_test(test_dropout_matches_cpu), cmocka_unit_test(test_products_fp32),
              cmocka_unit_test(test_products_tf32), cmocka_unit_test(test_products_tf32x3),
              cmocka_unit_test(test_products_bf16),
              cmocka_unit_test(test_two_runs_bit_identical_fp32),
              cmocka_unit_test(test_two_runs_bit_identical_tf32x3),
              cmocka_unit_test(test_two_runs_bit_identical_bf16))
