/* bench.c — the `bench` program: times one fused block at one shape and math
 * mode on the GPU, with CUDA events on the context's stream, after warm-up,
 * as medians: the fused normalisation kernels alone, the forward and
 * backward passes, the training step with and without dx, and the bare
 * cuBLAS products of the same shapes. Each figure comes with its floor and
 * the ratio to it: bytes moved over the measured device copy bandwidth for
 * the kernels, the sum of the step's bare products for passes and steps.
 *
 *   bench [--batch 1024] [--in 8192] [--hidden 8192] [--groups 512]
 *         [--math fp32|tf32|tf32x3|bf16] [--optimizer sgd|adamw]
 *         [--momentum 0] [--lr 1e-4] [--reps 20] [--warmup 5]
 *
 * Every figure is one line `fusenet <math> <what> <value> [floor <ms> ratio
 * <r>]` (milliseconds unless `what` says otherwise) that
 * scripts/bench_side_by_side.sh merges with scripts/bench_torch.py's lines;
 * lines starting with '#' are for people. With momentum 0 the step is the
 * fused one (fn_block_backward_sgd: plain SGD folded into the dW product);
 * the unfused step (forward, backward writing the gradients, fn_sgd_step) is timed too.
 * With momentum > 0 the step is the one train takes, momentum folded into
 * backward (fn_optimizer_fold: the dW product computes buf = mu buf + dW,
 * the update reads W and buf only); the step without the fold is timed
 * first, as step_*_unfolded. In bf16 the same four steps follow with the
 * weight's momentum buffer in bfloat16 (momentum_bf16, sgd.h: the folded
 * dW product reads and writes it with beta = mu, the update reads it),
 * named step_*_bf16buf: step_dx_m0.9_bf16buf beside step_dx_m0.9.
 * With --optimizer adamw the step is the unfused one with AdamW
 * (torch.optim.AdamW's defaults but the rate: betas 0.9, 0.999, eps 1e-8,
 * weight decay 0.01), named step_*_adamw as bench_torch.py names its fused
 * AdamW's; --momentum does not apply to it.
 * Each product's relative error against float64 sums of the fp32 operands
 * is reported (relerr_*): in bf16 it is the error of rounding both operands
 * to bfloat16 and accumulating in fp32, the error a bf16 step's products
 * carry. In bf16 the bare products are timed a second time on the fp32
 * operands with cuBLAS's own down-conversion (CUBLAS_COMPUTE_32F_FAST_16BF,
 * `*_fast16bf`): whether cuBLAS rounds operands inside the product faster
 * than the layer's separate rounding pass plus a bf16 product, and with
 * which error (its rounding is cuBLAS's, not documented as to nearest).
 * In bf16 the optimiser keeps the weight's bfloat16 copy (param.h), as in
 * `train`: the forward and step rows round only x a forward, the update
 * writes the copy; `forward_rounding_w` is the forward of a block whose
 * copy nobody keeps (it rounds W every time), and `to_bf16_w` that
 * rounding alone (also what plain SGD's step pays to refresh the copy). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "nn/layers/block/block_impl.h"
#include "core/cuda_state.h"
#include "core/gemm_cuda.h"
#include "optim/optimizer_paths.h"
#include "fusenet/adam.h"
#include "fusenet/sgd.h"

enum { INNER_KERNEL = 20, INNER_PASS = 4, ERROR_ROWS = 8 };

typedef struct options {
    int batch, in, hidden, groups;
    fn_math math;
    int adamw; /* --optimizer adamw, else SGD */
    float momentum, lr;
    int reps, warmup;
} options;

typedef struct bench {
    options o;
    fn_context *ctx;
    fn_layer *layer;
    fn_block *block;
    fn_sgd *sgd;       /* --optimizer sgd, else NULL */
    fn_optimizer *opt; /* the optimiser the unfused step runs */
    fn_tensor x, y, dy, dx;  /* [batch, in], [batch, hidden], [batch, hidden], [batch, in] */
    /* Bare products' operands: TF32 parts (tf32x3), bfloat16 copies (bf16,
     * in fn_bf16_floats of a tensor's values) or plain copies. */
    fn_tensor xs[2], ws[2];  /* [batch, in], [hidden, in]: value or big, small */
    fn_tensor dzs[2], dzts[2]; /* [batch, hidden], [hidden, batch] */
    fn_tensor xts[2];          /* [in, batch] */
    fn_tensor prod_y, prod_dw, prod_dx; /* [batch, hidden], [hidden, in], [batch, in] */
    int fast16bf; /* bf16: the bare products on fp32 operands, FAST_16BF */
    void *copy_src, *copy_dst; /* [copy_bytes] */
    size_t copy_bytes;
    cudaEvent_t start, stop;
} bench;

typedef fn_status (*bench_op)(bench *b);

static void die(const char *what)
{
    fprintf(stderr, "bench: %s: %s\n", what, fn_last_error());
    exit(1);
}

static void check(fn_status st, const char *what)
{
    if (st != FN_OK)
        die(what);
}

static void check_cuda(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "bench: %s: %s\n", what, cudaGetErrorString(err));
        exit(1);
    }
}

/* ---- command line ---- */

static int parse_int(const char *flag, const char *text, int lo)
{
    char *end = NULL;
    errno = 0;
    const long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > INT_MAX) {
        fprintf(stderr, "bench: %s: expected an integer >= %d, got '%s'\n", flag, lo, text);
        exit(2);
    }
    return (int)v;
}

static float parse_float(const char *flag, const char *text, float lo)
{
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo) || !isfinite(v)) {
        fprintf(stderr, "bench: %s: expected a number >= %g, got '%s'\n", flag, (double)lo, text);
        exit(2);
    }
    return (float)v;
}

static int parse_optimizer(const char *text)
{
    if (strcmp(text, "sgd") == 0 || strcmp(text, "adamw") == 0)
        return strcmp(text, "adamw") == 0;
    fprintf(stderr, "bench: --optimizer: expected sgd or adamw, got '%s'\n", text);
    exit(2);
}

static options parse(int argc, char **argv)
{
    options o = {.batch = 1024, .in = 8192, .hidden = 8192, .groups = 512,
                 .math = FN_MATH_FP32, .momentum = 0.0f, .lr = 1e-4f, .reps = 20, .warmup = 5};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0) {
            printf("usage: bench [--batch N] [--in N] [--hidden N] [--groups N] "
                   "[--math fp32|tf32|tf32x3|bf16] [--optimizer sgd|adamw] [--momentum M] "
                   "[--lr LR] [--reps N] [--warmup N]\n");
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench: %s needs a value (try --help)\n", flag);
            exit(2);
        }
        const char *v = argv[++i];
        if (strcmp(flag, "--batch") == 0)
            o.batch = parse_int(flag, v, 1);
        else if (strcmp(flag, "--in") == 0)
            o.in = parse_int(flag, v, 1);
        else if (strcmp(flag, "--hidden") == 0)
            o.hidden = parse_int(flag, v, 1);
        else if (strcmp(flag, "--groups") == 0)
            o.groups = parse_int(flag, v, 1);
        else if (strcmp(flag, "--math") == 0)
            check(fn_math_parse(v, &o.math), "--math");
        else if (strcmp(flag, "--optimizer") == 0)
            o.adamw = parse_optimizer(v);
        else if (strcmp(flag, "--momentum") == 0)
            o.momentum = parse_float(flag, v, 0.0f);
        else if (strcmp(flag, "--lr") == 0)
            o.lr = parse_float(flag, v, 0.0f);
        else if (strcmp(flag, "--reps") == 0)
            o.reps = parse_int(flag, v, 1);
        else if (strcmp(flag, "--warmup") == 0)
            o.warmup = parse_int(flag, v, 0);
        else {
            fprintf(stderr, "bench: unknown option '%s' (try --help)\n", flag);
            exit(2);
        }
    }
    if (o.hidden % o.groups != 0) {
        fprintf(stderr, "bench: --groups %d does not divide --hidden %d\n", o.groups, o.hidden);
        exit(2);
    }
    if (!(o.lr > 0.0f)) {
        fprintf(stderr, "bench: --lr must be positive\n");
        exit(2);
    }
    return o;
}

/* ---- timing ---- */

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of one op over reps samples, each `inner` back-to-back
 * calls between two events (so the host's launch gap before the first call
 * is spread over `inner`), after warm-up. */
static double time_op(bench *b, bench_op op, int inner)
{
    cudaStream_t s = fn_ctx_stream(b->ctx);
    for (int i = 0; i < b->o.warmup; i++)
        check(op(b), "warm-up");
    check_cuda(cudaStreamSynchronize(s), "warm-up");
    float *t = malloc((size_t)b->o.reps * sizeof *t);
    if (!t) {
        fprintf(stderr, "bench: out of host memory\n");
        exit(1);
    }
    for (int r = 0; r < b->o.reps; r++) {
        check_cuda(cudaEventRecord(b->start, s), "cudaEventRecord");
        for (int i = 0; i < inner; i++)
            check(op(b), "timed call");
        check_cuda(cudaEventRecord(b->stop, s), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(b->stop), "cudaEventSynchronize");
        check_cuda(cudaEventElapsedTime(&t[r], b->start, b->stop), "cudaEventElapsedTime");
        t[r] /= (float)inner;
    }
    qsort(t, (size_t)b->o.reps, sizeof *t, cmp_float);
    const int n = b->o.reps;
    const double med = n % 2 ? t[n / 2] : 0.5 * ((double)t[n / 2 - 1] + t[n / 2]);
    free(t);
    return med;
}

static void report(const bench *b, const char *what, double ms, double floor_ms)
{
    printf("fusenet %s %s %.4f", fn_math_name(b->o.math), what, ms);
    if (floor_ms > 0.0)
        printf(" floor %.4f ratio %.3f", floor_ms, ms / floor_ms);
    printf("\n");
    fflush(stdout);
}

/* ---- the timed operations ---- */

static fn_status op_copy(bench *b)
{
    cudaError_t err = cudaMemcpyAsync(b->copy_dst, b->copy_src, b->copy_bytes,
                                      cudaMemcpyDeviceToDevice, fn_ctx_stream(b->ctx));
    return err == cudaSuccess ? FN_OK : fn_fail(FN_ERR_CUDA, "cudaMemcpyAsync: %s",
                                                cudaGetErrorString(err));
}

static fn_status op_norm_forward(bench *b)
{
    return fn_block_cuda_normalize_forward(b->block, b->y.data, b->o.batch);
}

static fn_status op_norm_backward(bench *b)
{
    return fn_block_cuda_normalize_backward(b->block, b->dy.data, b->o.batch);
}

static fn_status op_forward(bench *b) { return fn_layer_forward(b->layer, &b->x, &b->y); }
static fn_status op_backward_dx(bench *b) { return fn_layer_backward(b->layer, &b->dy, &b->dx); }
static fn_status op_backward_nodx(bench *b) { return fn_layer_backward(b->layer, &b->dy, NULL); }

/* The step as a loop without fusions runs it: forward, backward (which
 * writes the gradients: no zeroing pass, param.h; with the momentum
 * folded, the buffers), the optimiser's update of every parameter. */
static fn_status step_unfused(bench *b, fn_tensor *dx)
{
    FN_TRY(fn_layer_forward(b->layer, &b->x, &b->y));
    FN_TRY(fn_layer_backward(b->layer, &b->dy, dx));
    return fn_optimizer_step(b->opt);
}

/* Plain SGD folded into backward: no gradient tensors touched. */
static fn_status step_fused(bench *b, fn_tensor *dx)
{
    FN_TRY(fn_layer_forward(b->layer, &b->x, &b->y));
    return fn_block_backward_sgd(b->layer, &b->dy, dx, b->o.lr);
}

static fn_status op_step_unfused_dx(bench *b) { return step_unfused(b, &b->dx); }
static fn_status op_step_unfused_nodx(bench *b) { return step_unfused(b, NULL); }
static fn_status op_step_fused_dx(bench *b) { return step_fused(b, &b->dx); }
static fn_status op_step_fused_nodx(bench *b) { return step_fused(b, NULL); }

/* The bare products, on operands already split in tf32x3 (one cuBLAS call in
 * fp32 and tf32, three in tf32x3) or rounded to bf16, as the layer issues
 * them. */
static float *small_of(fn_tensor *t) { return t[1].data; }

/* Column-major C = alpha op(A) op(B) + beta C on operand pairs as
 * make_operand leaves them, in the bench's math mode. */
static fn_status product(bench *b, int ta, int tb, int m, int n, int k, fn_tensor *a, int lda,
                         fn_tensor *bb, int ldb, float beta, float *c, int ldc)
{
    if (b->o.math == FN_MATH_BF16)
        return fn_cuda_gemm_bf16(b->ctx, ta, tb, m, n, k, 1.0f, (const fn_bf16 *)a[0].data, lda,
                                 (const fn_bf16 *)bb[0].data, ldb, beta, c, 0, ldc);
    return fn_cuda_gemm_split(b->ctx, ta, tb, m, n, k, 1.0f, a[0].data, small_of(a), lda,
                              bb[0].data, small_of(bb), ldb, beta, c, ldc);
}

/* Column-major C = op(A) op(B) + beta C on fp32 operands, which cuBLAS
 * rounds to bf16 itself (fast16bf). */
static fn_status product_fast16bf(bench *b, int ta, int tb, int m, int n, int k, const float *a,
                                  int lda, const float *bb, int ldb, float beta, float *c, int ldc)
{
    const float alpha = 1.0f;
    const cublasStatus_t st = cublasGemmEx(
        fn_ctx_cublas(b->ctx), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m,
        n, k, &alpha, a, CUDA_R_32F, lda, bb, CUDA_R_32F, ldb, &beta, c, CUDA_R_32F, ldc,
        CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return fn_fail(FN_ERR_CUDA, "cublasGemmEx (CUBLAS_COMPUTE_32F_FAST_16BF): %s",
                       cublasGetStatusString(st));
    return FN_OK;
}

static const float *weight_of(const bench *b)
{
    return b->layer->params[FN_BLOCK_WEIGHT].value.data;
}

static fn_status op_gemm_forward(bench *b)
{
    const int N = b->o.batch, in = b->o.in, C = b->o.hidden;
    if (b->fast16bf)
        return product_fast16bf(b, 1, 0, C, N, in, weight_of(b), in, b->x.data, in, 0.0f,
                                b->prod_y.data, C);
    return product(b, 1, 0, C, N, in, b->ws, in, b->xs, in, 0.0f, b->prod_y.data, C);
}

static fn_status op_gemm_dx(bench *b)
{
    const int N = b->o.batch, in = b->o.in, C = b->o.hidden;
    if (b->fast16bf)
        return product_fast16bf(b, 0, 0, in, N, C, weight_of(b), in, b->dy.data, C, 0.0f,
                                b->prod_dx.data, in);
    return product(b, 0, 0, in, N, C, b->ws, in, b->dzs, C, 0.0f, b->prod_dx.data, in);
}

/* dW with dz as it is stored: both operands with the reduced (batch)
 * dimension strided, the layout cuBLAS users get by default. */
static fn_status op_gemm_dw(bench *b)
{
    const int N = b->o.batch, in = b->o.in, C = b->o.hidden;
    if (b->fast16bf)
        return product_fast16bf(b, 0, 1, in, C, N, b->x.data, in, b->dy.data, C, 1.0f,
                                b->prod_dw.data, in);
    return product(b, 0, 1, in, C, N, b->xs, in, b->dzs, C, 1.0f, b->prod_dw.data, in);
}

/* dW with dz^T: one operand with the batch contiguous. */
static fn_status op_gemm_dw_t(bench *b)
{
    const int N = b->o.batch, in = b->o.in, C = b->o.hidden;
    return product(b, 0, 0, in, C, N, b->xs, in, b->dzts, N, 1.0f, b->prod_dw.data, in);
}

/* dW with x^T and dz^T: both operands with the batch contiguous, as the
 * layer computes it in the TF32 modes (bf16 uses op_gemm_dw's layout). */
static fn_status op_gemm_dw_tn(bench *b)
{
    const int N = b->o.batch, in = b->o.in, C = b->o.hidden;
    return product(b, 1, 0, in, C, N, b->xts, N, b->dzts, N, 1.0f, b->prod_dw.data, in);
}

/* What bf16 mode adds per forward: the fp32 weight read and its bfloat16
 * copy written (into the bare products' operand). */
static fn_status op_to_bf16_w(bench *b)
{
    const fn_tensor *w = &b->layer->params[FN_BLOCK_WEIGHT].value;
    return fn_cuda_to_bf16(b->ctx, (fn_bf16 *)b->ws[0].data, w->data, fn_tensor_count(w), NULL,
                           NULL, 0);
}

static fn_status op_transpose(bench *b)
{
    return fn_cuda_transpose(b->ctx, b->dzts[0].data,
                             b->o.math == FN_MATH_TF32X3 ? b->dzts[1].data : NULL, b->dy.data,
                             b->o.batch, b->o.hidden);
}

/* ---- set-up ---- */

static double free_mib(void)
{
    size_t free_bytes = 0, total = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    return (double)free_bytes / (1024.0 * 1024.0);
}

static void alloc(fn_tensor *t, int rows, int cols, const char *what)
{
    check(fn_tensor_alloc(t, rows, cols, FN_CUDA), what);
}

/* A bf16 operand: src (transposed first when asked) rounded to bfloat16 in
 * out[0], out[1] a 1x1 placeholder. */
static void make_bf16_operand(bench *b, fn_tensor *out, const fn_tensor *src, int transpose)
{
    const size_t n = fn_tensor_count(src);
    alloc(&out[0], 1, (int)fn_bf16_floats(n), "bf16 operand");
    alloc(&out[1], 1, 1, "operand placeholder");
    fn_tensor t = {0};
    if (transpose) {
        alloc(&t, src->cols, src->rows, "transposed operand");
        check(fn_cuda_transpose(b->ctx, t.data, NULL, src->data, src->rows, src->cols),
              "transpose");
    }
    check(fn_cuda_to_bf16(b->ctx, (fn_bf16 *)out[0].data, transpose ? t.data : src->data, n, NULL,
                          NULL, 0),
          "to bf16");
    check(fn_context_sync(b->ctx), "to bf16");
    fn_tensor_free(&t);
}

/* An operand of the bare products: in tf32x3 its TF32 part and remainder,
 * in bf16 its bfloat16 copy, else a copy of it (the small half a 1x1
 * placeholder). */
static void make_operand(bench *b, fn_tensor *out, const fn_tensor *src, int transpose)
{
    if (b->o.math == FN_MATH_BF16) {
        make_bf16_operand(b, out, src, transpose);
        return;
    }
    const int rows = transpose ? src->cols : src->rows, cols = transpose ? src->rows : src->cols;
    const int split = b->o.math == FN_MATH_TF32X3;
    alloc(&out[0], rows, cols, "operand");
    alloc(&out[1], split ? rows : 1, split ? cols : 1, "operand remainder");
    if (transpose)
        check(fn_cuda_transpose(b->ctx, out[0].data, split ? out[1].data : NULL, src->data,
                                src->rows, src->cols), "transpose");
    else if (split)
        check(fn_cuda_split_tf32(b->ctx, out[0].data, out[1].data, src->data,
                                 fn_tensor_count(src), NULL, NULL, NULL, 0), "split");
    else
        check(fn_tensor_copy(&out[0], src), "copy");
}

static void build(bench *b, const options *o)
{
    b->o = *o;
    check(fn_context_create(&b->ctx, FN_CUDA, 0, o->math), "context");
    check_cuda(cudaEventCreate(&b->start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&b->stop), "cudaEventCreate");
    fn_rng rng = {.seed = 1, .offset = 0};
    const fn_block_config cfg = fn_block_config_default(o->in, o->hidden, o->groups);
    check(fn_block_create(&b->layer, b->ctx, &cfg, o->batch, &rng), "block");
    b->block = (fn_block *)b->layer;
    fn_param *params[FN_BLOCK_N_PARAMS];
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++)
        params[i] = &b->layer->params[i];
    if (o->adamw) {
        fn_adam_config ac = fn_adam_config_default(o->lr, 1);
        check(fn_adam_create(&b->opt, b->ctx, params, FN_BLOCK_N_PARAMS, &ac), "adamw");
    } else {
        fn_sgd_config sc = fn_sgd_config_default(o->lr);
        sc.momentum = o->momentum;
        check(fn_sgd_create(&b->sgd, b->ctx, params, FN_BLOCK_N_PARAMS, &sc), "sgd");
        b->opt = fn_sgd_optimizer(b->sgd);
    }
    alloc(&b->x, o->batch, o->in, "x");
    alloc(&b->y, o->batch, o->hidden, "y");
    alloc(&b->dy, o->batch, o->hidden, "dy");
    alloc(&b->dx, o->batch, o->in, "dx");
    /* Random data, never zeros: zeros can run faster than real data. */
    check(fn_init_uniform(&b->x, -1.0f, 1.0f, &rng), "x");
    check(fn_init_uniform(&b->dy, -1.0f, 1.0f, &rng), "dy");
}

static void build_products(bench *b)
{
    const options *o = &b->o;
    make_operand(b, b->xs, &b->x, 0);
    make_operand(b, b->ws, &b->layer->params[FN_BLOCK_WEIGHT].value, 0);
    make_operand(b, b->dzs, &b->dy, 0);
    make_operand(b, b->dzts, &b->dy, 1);
    make_operand(b, b->xts, &b->x, 1);
    alloc(&b->prod_y, o->batch, o->hidden, "product y");
    alloc(&b->prod_dw, o->hidden, o->in, "product dw");
    alloc(&b->prod_dx, o->batch, o->in, "product dx");
}

static void free_products(bench *b)
{
    for (int i = 0; i < 2; i++) {
        fn_tensor_free(&b->xs[i]);
        fn_tensor_free(&b->ws[i]);
        fn_tensor_free(&b->dzs[i]);
        fn_tensor_free(&b->dzts[i]);
        fn_tensor_free(&b->xts[i]);
    }
    fn_tensor_free(&b->prod_y);
    fn_tensor_free(&b->prod_dw);
    fn_tensor_free(&b->prod_dx);
}

/* ---- accuracy of the products ---- */

static float *download(const fn_tensor *t)
{
    const size_t n = fn_tensor_count(t);
    float *h = malloc(n * sizeof *h);
    if (!h) {
        fprintf(stderr, "bench: out of host memory\n");
        exit(1);
    }
    check(fn_tensor_download(t, h, n), "download");
    return h;
}

/* Squared error and squared reference, summed over the elements compared. */
typedef struct relerr {
    double num, den;
} relerr;

static void add_error(relerr *e, double got, double ref)
{
    const double d = got - ref;
    e->num += d * d;
    e->den += ref * ref;
}

/* Row n of y = x w^T: y [N, C], x [N, in], w [C, in]. */
static void forward_row_error(relerr *e, const float *y, const float *x, const float *w, int n,
                              int in, int C)
{
    for (int o = 0; o < C; o++) {
        double r = 0.0;
        for (int i = 0; i < in; i++)
            r += (double)x[(size_t)n * in + i] * w[(size_t)o * in + i];
        add_error(e, y[(size_t)n * C + o], r);
    }
}

/* Row c of dw = dz^T x: dw [C, in], dz [N, C], x [N, in]. */
static void dw_row_error(relerr *e, const float *dw, const float *dz, const float *x, int c, int N,
                         int in, int C)
{
    for (int i = 0; i < in; i++) {
        double r = 0.0;
        for (int m = 0; m < N; m++)
            r += (double)dz[(size_t)m * C + c] * x[(size_t)m * in + i];
        add_error(e, dw[(size_t)c * in + i], r);
    }
}

/* Row n of dx = dz w: dx [N, in], dz [N, C], w [C, in]; acc [in] is scratch. */
static void dx_row_error(relerr *e, double *acc, const float *dx, const float *dz, const float *w,
                         int n, int in, int C)
{
    for (int i = 0; i < in; i++)
        acc[i] = 0.0;
    for (int o = 0; o < C; o++) {
        const double g = dz[(size_t)n * C + o];
        for (int i = 0; i < in; i++)
            acc[i] += g * w[(size_t)o * in + i];
    }
    for (int i = 0; i < in; i++)
        add_error(e, dx[(size_t)n * in + i], acc[i]);
}

/* The k-th of ERROR_ROWS indices spread evenly over [0, count). */
static int spread(int k, int count)
{
    return (int)((long long)k * (count - 1) / (ERROR_ROWS > 1 ? ERROR_ROWS - 1 : 1));
}

/* ||got - ref|| / ||ref|| over ERROR_ROWS rows of each product, against
 * float64 sums of the float32 operands; y = x w^T, dw = dz^T x, dx = dz w
 * with dz = dy. */
static void report_errors(bench *b)
{
    const int N = b->o.batch, in = b->o.in, C = b->o.hidden;
    check(fn_tensor_zero(&b->prod_dw), "zero");
    check(op_gemm_forward(b), "forward product");
    const int tf32_layout = b->o.math == FN_MATH_TF32 || b->o.math == FN_MATH_TF32X3;
    check(tf32_layout ? op_gemm_dw_tn(b) : op_gemm_dw(b), "dw product");
    check(op_gemm_dx(b), "dx product");
    float *x = download(&b->x), *w = download(&b->layer->params[FN_BLOCK_WEIGHT].value);
    float *dz = download(&b->dy), *y = download(&b->prod_y), *dw = download(&b->prod_dw);
    float *dx = download(&b->prod_dx);
    double *acc = malloc((size_t)in * sizeof *acc);
    if (!acc) {
        fprintf(stderr, "bench: out of host memory\n");
        exit(1);
    }
    relerr e[3] = {{0}};
    for (int k = 0; k < ERROR_ROWS; k++) {
        forward_row_error(&e[0], y, x, w, spread(k, N), in, C);
        dw_row_error(&e[1], dw, dz, x, spread(k, C), N, in, C);
        dx_row_error(&e[2], acc, dx, dz, w, spread(k, N), in, C);
    }
    const char *names[3] = {"relerr_forward", "relerr_dw", "relerr_dx"};
    for (int q = 0; q < 3; q++)
        printf("fusenet %s %s%s %.3g\n", fn_math_name(b->o.math), names[q],
               b->fast16bf ? "_fast16bf" : "", e[q].den > 0.0 ? sqrt(e[q].num / e[q].den) : 0.0);
    free(acc);
    free(x);
    free(w);
    free(dz);
    free(y);
    free(dw);
    free(dx);
}

/* ---- the report ---- */

/* Device copy bandwidth in GB/s, on buffers freed before it returns. */
static double measure_copy(bench *b)
{
    const double copy_ms = time_op(b, op_copy, INNER_PASS);
    const double gbps = 2.0 * (double)b->copy_bytes / (copy_ms * 1e-3) / 1e9;
    check_cuda(cudaFree(b->copy_src), "cudaFree");
    check_cuda(cudaFree(b->copy_dst), "cudaFree");
    b->copy_src = b->copy_dst = NULL;
    printf("# device copy: %.0f MiB read + written in %.4f ms\n",
           2.0 * (double)b->copy_bytes / 1048576.0, copy_ms);
    printf("fusenet %s copy_gbps %.1f\n", fn_math_name(b->o.math), gbps);
    return gbps;
}

/* The fused kernels and the transpose, against the bytes they move. */
static void report_kernels(bench *b, double gbps)
{
    const double N = b->o.batch, C = b->o.hidden, G = b->o.groups;
    /* Row chunks of the column sums, as the kernels' fn_row_chunks. */
    const double chunks = N / 32.0 < 1 ? 1 : N / 32.0 > 32 ? 32 : ceil(N / 32.0);
    /* z (read by both) and dz (written by backward) are bfloat16 in bf16
     * mode; y, dy, the statistics and the parameters are float. */
    const double zb = b->o.math == FN_MATH_BF16 ? 2.0 : 4.0;
    const double fwd_bytes = (4.0 + zb) * N * C + 4.0 * (2.0 * N * G + 3.0 * C);
    const double bwd_bytes = (4.0 + 2.0 * zb) * N * C +
                             4.0 * (2.0 * N * G + 3.0 * C + 6.0 * C + 2.0 * chunks * 3.0 * C);
    const double to_ms = 1e3 / (gbps * 1e9);
    check(op_forward(b), "forward");
    report(b, "norm_forward", time_op(b, op_norm_forward, INNER_KERNEL), fwd_bytes * to_ms);
    report(b, "norm_backward", time_op(b, op_norm_backward, INNER_KERNEL), bwd_bytes * to_ms);
    build_products(b);
    /* bf16 transposes nothing (its operands stay as stored; dzts holds
     * bf16 there, too small for an fp32 transpose); it rounds w instead:
     * 4 bytes read and 2 written a weight. */
    if (b->o.math == FN_MATH_BF16)
        report(b, "to_bf16_w", time_op(b, op_to_bf16_w, INNER_KERNEL),
               6.0 * C * b->o.in * to_ms);
    else
        report(b, "transpose_dz", time_op(b, op_transpose, INNER_KERNEL),
               4.0 * N * C * (b->o.math == FN_MATH_TF32X3 ? 3.0 : 2.0) * to_ms);
}

/* Medians of the bare products, ms. */
typedef struct product_times {
    double fwd, dx, dw, dw_t, dw_tn;
} product_times;

static product_times report_products(bench *b)
{
    product_times t = {
        .fwd = time_op(b, op_gemm_forward, INNER_PASS),
        .dx = time_op(b, op_gemm_dx, INNER_PASS),
        .dw = time_op(b, op_gemm_dw, INNER_PASS),
        .dw_t = time_op(b, op_gemm_dw_t, INNER_PASS),
        .dw_tn = time_op(b, op_gemm_dw_tn, INNER_PASS),
    };
    report(b, "gemm_forward", t.fwd, 0.0);
    report(b, "gemm_dx", t.dx, 0.0);
    report(b, "gemm_dw", t.dw, 0.0);
    report(b, "gemm_dw_t", t.dw_t, 0.0);
    report(b, "gemm_dw_tn", t.dw_tn, 0.0);
    report_errors(b);
    if (b->o.math == FN_MATH_BF16) {
        b->fast16bf = 1;
        report(b, "gemm_forward_fast16bf", time_op(b, op_gemm_forward, INNER_PASS), 0.0);
        report(b, "gemm_dx_fast16bf", time_op(b, op_gemm_dx, INNER_PASS), 0.0);
        report(b, "gemm_dw_fast16bf", time_op(b, op_gemm_dw, INNER_PASS), 0.0);
        report_errors(b);
        b->fast16bf = 0;
    }
    free_products(b);
    /* Floors: the bare products with dW in cuBLAS's default layout (what the
     * targets are stated against), and with the faster of the two layouts. */
    const double dw_best = fmin(t.dw, fmin(t.dw_t, t.dw_tn));
    printf("# floors: products with dx %.4f ms (best dW layout %.4f), without dx %.4f ms "
           "(best %.4f)\n",
           t.fwd + t.dx + t.dw, t.fwd + t.dx + dw_best, t.fwd + t.dw, t.fwd + dw_best);
    return t;
}

/* bf16: the forward as it runs where no owner keeps the weight's bfloat16
 * copy (param.h: a C API user writing W directly, Python's FusedBlock),
 * rounding W itself every time; the optimiser's copy released for it and
 * taken again after. */
static void report_forward_rounding_w(bench *b, const product_times *t)
{
    fn_param *w = &b->layer->params[FN_BLOCK_WEIGHT];
    if (!fn_param_bf16_kept(w))
        return;
    fn_param_release_bf16(w);
    report(b, "forward_rounding_w", time_op(b, op_forward, INNER_PASS), t->fwd);
    check(fn_param_keep_bf16(w, b->ctx), "the weight's bfloat16 copy");
}

/* The forward as `train` runs it: in bf16 the optimiser keeps the
 * weight's bfloat16 copy, so only x is rounded. */
static void report_passes(bench *b, const product_times *t)
{
    check(op_forward(b), "forward");
    report(b, "forward", time_op(b, op_forward, INNER_PASS), t->fwd);
    report_forward_rounding_w(b, t);
    report(b, "backward_dx", time_op(b, op_backward_dx, INNER_PASS), t->dx + t->dw);
    report(b, "backward_nodx", time_op(b, op_backward_nodx, INNER_PASS), t->dw);
}

/* One step, timed under a name that carries the optimiser as bench_torch.py
 * writes it: the momentum (%g) for SGD, "adamw" for AdamW; then suffix
 * ("_bf16buf": the momentum buffers in bfloat16) or nothing. */
static void report_step_as(bench *b, const char *what, const char *suffix, bench_op op,
                           double floor_ms)
{
    char name[96];
    if (b->o.adamw)
        snprintf(name, sizeof name, "%s_adamw%s", what, suffix);
    else
        snprintf(name, sizeof name, "%s_m%g%s", what, (double)b->o.momentum, suffix);
    report(b, name, time_op(b, op, INNER_PASS), floor_ms);
}

static void report_step(bench *b, const char *what, bench_op op, double floor_ms)
{
    report_step_as(b, what, "", op, floor_ms);
}

/* The optimiser's momentum folded into backward, or exit. */
static void fold(bench *b)
{
    int folded = 0;
    check(fn_optimizer_fold(b->opt, &folded), "fold");
    if (!folded) {
        fprintf(stderr, "bench: SGD with momentum %g did not fold\n", (double)b->o.momentum);
        exit(1);
    }
}

/* bf16 with momentum: the same steps again with the weight's momentum
 * buffer in bfloat16 (momentum_bf16, sgd.h), beside the float32 buffer's
 * rows of one run: a new SGD over the block, unfolded then folded. */
static void report_steps_bf16buf(bench *b, double floor_dx, double floor_nodx)
{
    fn_sgd_destroy(b->sgd); /* gives the block its gradients back */
    b->sgd = NULL;
    fn_param *params[FN_BLOCK_N_PARAMS];
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++)
        params[i] = &b->layer->params[i];
    fn_sgd_config sc = fn_sgd_config_default(b->o.lr);
    sc.momentum = b->o.momentum;
    sc.momentum_bf16 = 1;
    check(fn_sgd_create(&b->sgd, b->ctx, params, FN_BLOCK_N_PARAMS, &sc), "sgd, momentum_bf16");
    b->opt = fn_sgd_optimizer(b->sgd);
    report_step_as(b, "step_dx_unfolded", "_bf16buf", op_step_unfused_dx, floor_dx);
    report_step_as(b, "step_nodx_unfolded", "_bf16buf", op_step_unfused_nodx, floor_nodx);
    fold(b);
    report_step_as(b, "step_dx", "_bf16buf", op_step_unfused_dx, floor_dx);
    report_step_as(b, "step_nodx", "_bf16buf", op_step_unfused_nodx, floor_nodx);
}

static void report_steps(bench *b, const product_times *t)
{
    const double floor_dx = t->fwd + t->dx + t->dw, floor_nodx = t->fwd + t->dw;
    const int fused = !b->o.adamw && b->o.momentum == 0.0f;
    if (!b->o.adamw && b->o.momentum > 0.0f) {
        /* Unfolded first: only destroying the optimiser undoes the fold. */
        report_step(b, "step_dx_unfolded", op_step_unfused_dx, floor_dx);
        report_step(b, "step_nodx_unfolded", op_step_unfused_nodx, floor_nodx);
        fold(b);
    }
    report_step(b, "step_dx", fused ? op_step_fused_dx : op_step_unfused_dx, floor_dx);
    report_step(b, "step_nodx", fused ? op_step_fused_nodx : op_step_unfused_nodx, floor_nodx);
    if (fused) {
        report_step(b, "step_dx_unfused", op_step_unfused_dx, floor_dx);
        report_step(b, "step_nodx_unfused", op_step_unfused_nodx, floor_nodx);
    }
    if (!b->o.adamw && b->o.momentum > 0.0f && b->o.math == FN_MATH_BF16)
        report_steps_bf16buf(b, floor_dx, floor_nodx);
}

static void destroy(bench *b)
{
    fn_tensor_free(&b->x);
    fn_tensor_free(&b->y);
    fn_tensor_free(&b->dy);
    fn_tensor_free(&b->dx);
    if (b->sgd)
        fn_sgd_destroy(b->sgd);
    else
        fn_optimizer_destroy(b->opt);
    fn_layer_destroy(b->layer);
    cudaEventDestroy(b->start);
    cudaEventDestroy(b->stop);
    fn_context_destroy(b->ctx);
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    const options o = parse(argc, argv);
    bench b = {0};
    const char *math = fn_math_name(o.math);
    check_cuda(cudaFree(NULL), "CUDA start-up");

    /* Copy bandwidth first, on buffers freed before the block is built. */
    b.copy_bytes = (size_t)1 << 30;
    check_cuda(cudaMalloc(&b.copy_src, b.copy_bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&b.copy_dst, b.copy_bytes), "cudaMalloc");
    check_cuda(cudaMemset(b.copy_src, 1, b.copy_bytes), "cudaMemset");

    const double before = free_mib();
    build(&b, &o);
    check(fn_context_sync(b.ctx), "build");
    const double built = free_mib();
    printf("# fusenet bench: batch %d, in %d, hidden %d, groups %d, math %s, %s, momentum %g, "
           "lr %g; medians of %d samples after %d warm-up calls\n",
           o.batch, o.in, o.hidden, o.groups, math, o.adamw ? "adamw" : "sgd",
           (double)o.momentum, (double)o.lr, o.reps, o.warmup);
    const double gbps = measure_copy(&b);
    const double steady = free_mib(); /* the block and its data, nothing else */

    report_kernels(&b, gbps);
    const product_times t = report_products(&b);
    report_passes(&b, &t);
    report_steps(&b, &t);

    check(fn_context_sync(b.ctx), "steps");
    printf("fusenet %s memory_mib %.0f\n", math, before - built);
    printf("fusenet %s memory_growth_mib %.0f\n", math, steady - free_mib());
    destroy(&b);
    return 0;
}
