/* gradcheck.c — tier-2 (backend vs float64 reference) and tier-3 (float32
 * finite differences through the backend) checks of the block, the linear
 * layer and the losses, for any context (see gradcheck.h).
 *
 * Tier-3 arithmetic, for L(theta) = sum_i r_i y_i(theta) evaluated through
 * the layer (the sum itself in float64 on the host):
 *   FD(h) = (L(theta + h d) - L(theta - h d)) / 2h
 *         = <grad L, d> + c h^2 + rounding,  |rounding| <= e_L / h,
 * where e_L = sum |r_i| est(y_i) bounds the float32 error of each L value.
 * The truncation c h^2 is measured, not guessed: FD(2h) - FD(h) = 3 c h^2
 * (Richardson), from the same backend. The test is
 *   |FD(h) - <g, d>| <= 2 |trunc| + 1.5 e_L / h + e_g,
 * with e_g = sum |d_i| est(g_i) the analytic side's own error and 1.5 e_L/h
 * covering FD(h)'s rounding plus the rounding inside the truncation estimate
 * ((e_L/h + e_L/2h) / 3). h trades rounding against truncation: the optimum
 * is h ~ (3 e_L / |L'''|)^(1/3). In fp32 e_L / |L| ~ 1e-6..1e-5, giving
 * h ~ 1e-2 (relative to each tensor's largest value, which scales d); in
 * TF32 e_L / |L| ~ 1e-3, giving h ~ 5e-2. Perturbed points are rounded to
 * float32 and the direction actually taken, (theta+ - theta-) / 2h, is used
 * on the analytic side, so that rounding is no error source.
 * Kinks: r_i is set to 0 where u_i comes within 4 est(u_i) of 0 at any of
 * the five points or changes sign between them (the reference says where). */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"
#include "fusenet/layer.h"
#include "reference.h"
#include "runner.h"

#define RTOL (4 * CHK_U32)
#define N_BLOCK_TENSORS 5

static const char *const block_params[4] = {"weight", "bias", "gamma", "beta"};
static const char *const block_grad_names[N_BLOCK_TENSORS] = {"dx", "dW", "db", "dgamma",
                                                               "dbeta"};

/* ---- the shapes every backend is checked at ---- */

/* batch, in, out, groups, slope, xscale, wscale, boffset, seed, why */
const gc_block_case gc_block_cases[] = {
    {1, 7, 12, 3, 0.01, 1, 1, 0, 1, "batch 1, odd input width"},
    {5, 9, 15, 5, 0.01, 1, 1, 0, 2, "odd widths, K = 3"},
    {4, 8, 24, 1, 0.01, 1, 1, 0, 3, "G = 1: one group of 24"},
    {6, 5, 10, 10, 0.01, 1, 1, 0, 4, "G = out: K = 1, zhat = 0, var = 0"},
    {3, 33, 64, 4, 0.01, 1, 1, 0, 5, "16 channels a group"},
    {8, 16, 32, 2, 0, 1, 1, 0, 6, "slope 0 (ReLU)"},
    {8, 16, 32, 8, 1, 1, 1, 0, 7, "slope 1 (identity)"},
    {4, 12, 16, 4, 0.2, 1000, 1, 0, 8, "large inputs, |x| up to 1e3"},
    {2, 10, 8, 2, 0.01, 1, 1e-3, 0, 9, "var << eps: eps must sit inside the sqrt"},
    {17, 31, 48, 3, 0.01, 1, 1, 0, 10, "odd batch, K = 16"},
    {3, 1, 6, 2, 0.01, 1, 1, 0, 11, "in = 1"},
    {5, 20, 16, 4, 0.01, 1, 1, 10, 12, "bias offset 10: mean >> spread"},
    {64, 128, 128, 8, 0.01, 1, 1, 0, 13, "larger: BLAS blocking"},
    {33, 257, 1040, 65, 0.01, 1, 1, 0, 14, "tiling: 1040 channels, 65 groups of 16, odd sizes"},
    /* One row per CUDA kernel variant (kernels/block_cuda.cu, make_plan:
     * float4 when K % 4 == 0 and the pointers are 16-byte aligned; team
     * path <vec, reps> while 32 lanes x vec x reps cover K, reps 1, 2, 4;
     * else the group path). The rows above reach <4,1> and <1,1>. */
    {40, 13, 150, 3, 0.01, 1, 1, 0, 15, "K = 50, scalar team <1,2>; 2 row chunks"},
    {4, 11, 132, 2, 0.01, 1, 1, 0, 16, "K = 66, scalar team <1,4>, lanes partly idle"},
    {7, 19, 400, 2, 0.01, 1, 1, 0, 17, "K = 200, float4 team <4,2>"},
    {70, 17, 800, 2, 0.01, 1, 1, 0, 18, "K = 400, float4 team <4,4>; 3 row chunks"},
    {3, 8, 1024, 2, 0.01, 1, 1, 0, 19, "K = 512, float4 team <4,4>, every lane full"},
    {37, 7, 260, 2, 0.01, 1, 1, 0, 20, "K = 130, scalar group path <1>; 2 row chunks"},
    {2, 9, 2048, 2, 0.01, 1, 1, 0, 21, "K = 1024, float4 group path <4>"},
    {2, 17, 8192, 1, 0.01, 1, 1, 0, 22, "G = 1 at width 8192, float4 group path <4>"},
    {3, 9, 8190, 1, 0.01, 1, 1, 0, 23, "G = 1 at width 8190, scalar group path <1>"},
};
const size_t gc_n_block_cases = sizeof gc_block_cases / sizeof gc_block_cases[0];

/* Run with y and dy one float past 16-byte alignment: the scalar kernels
 * at widths whose aligned rows take float4 ones. */
const gc_block_case gc_unaligned_cases[] = {
    {9, 20, 96, 6, 0.01, 1, 1, 0, 31, "unaligned, K = 16: scalar team <1,1> (aligned: <4,1>)"},
    {3, 10, 256, 2, 0.01, 1, 1, 0, 32, "unaligned, K = 128: scalar team <1,4>, every lane full"},
    {3, 11, 1024, 2, 0.01, 1, 1, 0, 33, "unaligned, K = 512: scalar group <1> (aligned: <4,4>)"},
};
const size_t gc_n_unaligned_cases = sizeof gc_unaligned_cases / sizeof gc_unaligned_cases[0];

/* Tier 3 runs on a subset: each case costs 6 directions x 5 forwards. */
const gc_block_case gc_fd_cases[] = {
    {4, 9, 12, 3, 0.01, 1, 1, 0, 21, "typical"},
    {1, 6, 16, 1, 0.2, 1, 1, 0, 22, "batch 1, G = 1, K = 16"},
    {6, 7, 8, 8, 0.01, 1, 1, 0, 23, "K = 1"},
    {8, 16, 32, 4, 0, 1, 1, 0, 24, "slope 0"},
    {3, 12, 16, 4, 1, 100, 1, 0, 25, "slope 1, large inputs"},
    {4, 9, 150, 3, 0.01, 1, 1, 0, 26, "K = 50, scalar team <1,2>"},
    {3, 8, 132, 2, 0.01, 1, 1, 0, 27, "K = 66, scalar team <1,4>"},
    {3, 7, 400, 2, 0.01, 1, 1, 0, 28, "K = 200, float4 team <4,2>"},
    {2, 6, 800, 2, 0.01, 1, 1, 0, 29, "K = 400, float4 team <4,4>"},
    {3, 5, 260, 2, 0.01, 1, 1, 0, 30, "K = 130, scalar group path <1>"},
    {2, 6, 2048, 2, 0.01, 1, 1, 0, 31, "K = 1024, float4 group path <4>"},
};
const size_t gc_n_fd_cases = sizeof gc_fd_cases / sizeof gc_fd_cases[0];

const char *gc_backend_name(fn_context *ctx)
{
    static char names[2][3][24];
    int d = fn_context_device(ctx) == FN_CUDA, m = (int)fn_context_math(ctx);
    snprintf(names[d][m], sizeof names[d][m], "%s %s", fn_device_name(fn_context_device(ctx)),
             fn_math_name(fn_context_math(ctx)));
    return names[d][m];
}

static int failed(fn_status st, const char *what)
{
    return run_report(st, what) != FN_OK;
}

/* ---- block data ---- */

typedef struct block_data {
    ref_block_dims d;
    int offset; /* floats by which y and dy start past their allocations */
    double *t[N_BLOCK_TENSORS]; /* x, weight, bias, gamma, beta */
    size_t size[N_BLOCK_TENSORS];
    int cols[N_BLOCK_TENSORS];
    double *dy; /* [batch, out] */
} block_data;

static ref_block_params params_of(const block_data *b)
{
    return (ref_block_params){b->t[1], b->t[2], b->t[3], b->t[4]};
}

/* Zeroes dy where |u| is within 4 est(u) of the kink: there float32 may
 * take the other side of leaky_relu, whose slopes differ by (1 - s). */
static void mask_kinks(const block_data *b, double u_op, double *dy)
{
    size_t count = (size_t)b->d.batch * b->d.out;
    double *u = chk_alloc(count), *eu = chk_alloc(count), *y = chk_alloc(count);
    ref_block_params p = params_of(b);
    ref_block_forward(&b->d, &p, b->t[0], y, &(ref_block_cache){.u = u});
    est_block_errors(&b->d, &p, b->t[0], NULL, u_op, &(est_block){.u = eu});
    for (size_t i = 0; i < count; i++)
        if (fabs(u[i]) <= 4 * eu[i])
            dy[i] = 0;
    free(u), free(eu), free(y);
}

static void block_data_init(block_data *b, const gc_block_case *c, double u_op)
{
    chk_rng rng = chk_rng_seed(c->seed);
    double bound = c->wscale / sqrt(c->in);
    *b = (block_data){.d = {.batch = c->batch, .in = c->in, .out = c->out, .groups = c->groups,
                            .eps = (double)1e-5f, .slope = (double)(float)c->slope}};
    size_t sizes[N_BLOCK_TENSORS] = {(size_t)c->batch * c->in, (size_t)c->out * c->in, c->out,
                                     c->out, c->out};
    int cols[N_BLOCK_TENSORS] = {c->in, c->in, c->out, c->out, c->out};
    for (int i = 0; i < N_BLOCK_TENSORS; i++) {
        b->size[i] = sizes[i];
        b->cols[i] = cols[i];
        b->t[i] = chk_alloc(sizes[i]);
    }
    b->dy = chk_alloc((size_t)c->batch * c->out);
    chk_fill(b->t[0], sizes[0], -c->xscale, c->xscale, &rng);
    chk_fill(b->t[1], sizes[1], -bound, bound, &rng);
    chk_fill(b->t[2], sizes[2], c->boffset - bound, c->boffset + bound, &rng);
    chk_fill(b->t[3], sizes[3], 0.5, 1.5, &rng);
    chk_fill(b->t[4], sizes[4], -0.5, 0.5, &rng);
    chk_fill(b->dy, (size_t)c->batch * c->out, -1, 1, &rng);
    mask_kinks(b, u_op, b->dy);
}

static void block_data_free(block_data *b)
{
    for (int i = 0; i < N_BLOCK_TENSORS; i++)
        free(b->t[i]);
    free(b->dy);
}

static fn_status upload_block_params(fn_layer *l, double *const *t)
{
    for (int i = 0; i < 4; i++)
        FN_TRY(run_set_param(l, block_params[i], t[i + 1]));
    return FN_OK;
}

/* What a backend gives for one block case: y and the five gradients. */
typedef struct block_out {
    double *y;
    double *g[N_BLOCK_TENSORS];
} block_out;

static void block_out_alloc(block_out *o, const block_data *b)
{
    o->y = chk_alloc((size_t)b->d.batch * b->d.out);
    for (int i = 0; i < N_BLOCK_TENSORS; i++)
        o->g[i] = chk_alloc(b->size[i]);
}

static void block_out_free(block_out *o)
{
    free(o->y);
    for (int i = 0; i < N_BLOCK_TENSORS; i++)
        free(o->g[i]);
}

/* Runs forward + backward of the block case on ctx into o. */
static fn_status block_run(fn_context *ctx, const block_data *b, const double *dy, block_out *o)
{
    fn_layer *l = NULL;
    fn_status st = run_block_create(&l, ctx, &b->d, b->d.batch);
    if (st == FN_OK)
        st = upload_block_params(l, b->t);
    if (st == FN_OK)
        st = run_forward_backward_at(l, b->d.batch, b->t[0], dy, o->y, o->g[0], b->offset);
    for (int i = 0; st == FN_OK && i < 4; i++)
        st = run_get_grad(l, block_params[i], o->g[i + 1]);
    fn_layer_destroy(l);
    return st;
}

static void block_reference(const block_data *b, const double *dy, block_out *o)
{
    ref_block_params p = params_of(b);
    ref_block_forward(&b->d, &p, b->t[0], o->y, NULL);
    ref_block_backward(&b->d, &p, b->t[0], dy,
                       &(ref_block_grads){.dx = o->g[0], .dweight = o->g[1], .dbias = o->g[2],
                                          .dgamma = o->g[3], .dbeta = o->g[4]});
}

/* The estimates, in block_out's layout. */
static void block_estimates(const block_data *b, const double *dy, double u_op, block_out *e)
{
    ref_block_params p = params_of(b);
    est_block_errors(&b->d, &p, b->t[0], dy, u_op,
                     &(est_block){.y = e->y, .dx = e->g[0], .dweight = e->g[1],
                                  .dbias = e->g[2], .dgamma = e->g[3], .dbeta = e->g[4]});
}

static void block_shape(char *buf, size_t size, const block_data *b)
{
    chk_shape(buf, size, b->d.batch, b->d.in, b->d.out, b->d.groups, b->d.slope);
}

/* Compares y and the five gradients, est as per-element atol. */
static int compare_block(const char *layer, const block_data *b, const block_out *got,
                         const block_out *want, const block_out *est)
{
    char shape[64];
    block_shape(shape, sizeof shape, b);
    int ok = chk_compare(layer, shape, "y", got->y, want->y, b->d.batch, b->d.out,
                         (chk_tol){.atol = 1, .rtol = RTOL, .scale = est->y});
    for (int i = 0; i < N_BLOCK_TENSORS; i++)
        ok &= chk_compare(layer, shape, block_grad_names[i], got->g[i], want->g[i],
                          (int)(b->size[i] / (size_t)b->cols[i]), b->cols[i],
                          (chk_tol){.atol = 1, .rtol = RTOL, .scale = est->g[i]});
    return ok;
}

int gc_block_vs_reference(fn_context *ctx, const gc_block_case *c)
{
    return gc_block_vs_reference_at(ctx, c, 0);
}

int gc_block_vs_reference_at(fn_context *ctx, const gc_block_case *c, int offset)
{
    double u_op = est_operand_roundoff(fn_context_math(ctx));
    block_data b;
    block_data_init(&b, c, u_op);
    b.offset = offset;
    block_out got, want, est;
    block_out_alloc(&got, &b), block_out_alloc(&want, &b), block_out_alloc(&est, &b);
    char layer[40];
    snprintf(layer, sizeof layer, "block %s", gc_backend_name(ctx));
    int ok = !failed(block_run(ctx, &b, b.dy, &got), layer);
    if (ok) {
        block_reference(&b, b.dy, &want);
        block_estimates(&b, b.dy, u_op, &est);
        ok = compare_block(layer, &b, &got, &want, &est);
    }
    block_out_free(&got), block_out_free(&want), block_out_free(&est);
    block_data_free(&b);
    return ok;
}

int gc_block_cases_vs_reference(fn_context *ctx)
{
    int ok = 1;
    for (size_t i = 0; i < gc_n_block_cases; i++) {
        printf("-- %s\n", gc_block_cases[i].why);
        ok &= gc_block_vs_reference(ctx, &gc_block_cases[i]);
    }
    for (size_t i = 0; i < gc_n_unaligned_cases; i++) {
        printf("-- %s\n", gc_unaligned_cases[i].why);
        ok &= gc_block_vs_reference_at(ctx, &gc_unaligned_cases[i], 1);
    }
    return ok;
}

int gc_block_cross(fn_context *ctx, fn_context *base, const gc_block_case *c)
{
    double u_ctx = est_operand_roundoff(fn_context_math(ctx));
    double u_base = est_operand_roundoff(fn_context_math(base));
    block_data b;
    block_data_init(&b, c, u_ctx > u_base ? u_ctx : u_base);
    block_out got, want, est, est_base;
    block_out_alloc(&got, &b), block_out_alloc(&want, &b);
    block_out_alloc(&est, &b), block_out_alloc(&est_base, &b);
    char layer[40];
    snprintf(layer, sizeof layer, "%s/%s", fn_device_name(fn_context_device(ctx)),
             gc_backend_name(base));
    int ok = !failed(block_run(ctx, &b, b.dy, &got), layer) &&
             !failed(block_run(base, &b, b.dy, &want), layer);
    if (ok) {
        /* Both sides carry their own error: the bound is the sum. */
        block_estimates(&b, b.dy, u_ctx, &est);
        block_estimates(&b, b.dy, u_base, &est_base);
        for (size_t i = 0; i < (size_t)b.d.batch * b.d.out; i++)
            est.y[i] += est_base.y[i];
        for (int t = 0; t < N_BLOCK_TENSORS; t++)
            for (size_t i = 0; i < b.size[t]; i++)
                est.g[t][i] += est_base.g[t][i];
        ok = compare_block(layer, &b, &got, &want, &est);
    }
    block_out_free(&got), block_out_free(&want);
    block_out_free(&est), block_out_free(&est_base);
    block_data_free(&b);
    return ok;
}

/* ---- linear and losses, tier 2 ---- */

int gc_linear_vs_reference(fn_context *ctx, int batch, int in, int out, uint64_t seed)
{
    double u_op = est_operand_roundoff(fn_context_math(ctx));
    chk_rng rng = chk_rng_seed(seed);
    size_t nx = (size_t)batch * in, nw = (size_t)out * in, ny = (size_t)batch * out;
    double *x = chk_alloc(nx), *w = chk_alloc(nw), *b = chk_alloc(out), *dy = chk_alloc(ny);
    double *got[4] = {chk_alloc(ny), chk_alloc(nx), chk_alloc(nw), chk_alloc(out)};
    double *want[4] = {chk_alloc(ny), chk_alloc(nx), chk_alloc(nw), chk_alloc(out)};
    double *est[4] = {chk_alloc(ny), chk_alloc(nx), chk_alloc(nw), chk_alloc(out)};
    double bound = 1 / sqrt(in);
    chk_fill(x, nx, -1, 1, &rng);
    chk_fill(w, nw, -bound, bound, &rng);
    chk_fill(b, out, -bound, bound, &rng);
    chk_fill(dy, ny, -1, 1, &rng);
    char layer[40], shape[64];
    snprintf(layer, sizeof layer, "linear %s", gc_backend_name(ctx));
    chk_shape(shape, sizeof shape, batch, in, out, 0, -1);
    fn_layer *l = NULL;
    fn_status st = run_linear_create(&l, ctx, in, out, batch);
    if (st == FN_OK)
        st = run_set_param(l, "weight", w);
    if (st == FN_OK)
        st = run_set_param(l, "bias", b);
    if (st == FN_OK)
        st = run_forward_backward(l, batch, x, dy, got[0], got[1]);
    if (st == FN_OK)
        st = run_get_grad(l, "weight", got[2]);
    if (st == FN_OK)
        st = run_get_grad(l, "bias", got[3]);
    fn_layer_destroy(l);
    int ok = !failed(st, layer);
    if (ok) {
        static const char *const names[4] = {"y", "dx", "dW", "db"};
        int rows[4] = {batch, batch, out, 1}, cols[4] = {out, in, in, out};
        ref_linear_forward(batch, in, out, w, b, x, want[0]);
        ref_linear_backward(batch, in, out, w, x, dy, want[1], want[2], want[3]);
        est_linear_errors(batch, in, out, w, b, x, dy, u_op, est[0], est[1], est[2], est[3]);
        for (int i = 0; i < 4; i++)
            ok &= chk_compare(layer, shape, names[i], got[i], want[i], rows[i], cols[i],
                              (chk_tol){.atol = 1, .rtol = RTOL, .scale = est[i]});
    }
    for (int i = 0; i < 4; i++)
        free(got[i]), free(want[i]), free(est[i]);
    free(x), free(w), free(b), free(dy);
    return ok;
}

static void random_labels(int32_t *labels, int rows, int cols, chk_rng *rng)
{
    for (int i = 0; i < rows; i++)
        labels[i] = (int32_t)(chk_rng_next(rng) % (uint64_t)cols);
}

int gc_losses_vs_reference(fn_context *ctx, int rows, int cols, double scale, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    size_t n = (size_t)rows * cols;
    double *pred = chk_alloc(n), *target = chk_alloc(n), *got = chk_alloc(n), *want = chk_alloc(n),
           *est = chk_alloc(n);
    int32_t *labels = calloc((size_t)rows, sizeof *labels);
    if (!labels)
        abort();
    chk_fill(pred, n, -scale, scale, &rng);
    chk_fill(target, n, -scale, scale, &rng);
    random_labels(labels, rows, cols, &rng);
    char layer[40], shape[64];
    chk_shape(shape, sizeof shape, rows, cols, cols, 0, -1);
    double loss = 0;

    snprintf(layer, sizeof layer, "mse %s", gc_backend_name(ctx));
    int ok = !failed(run_mse(ctx, rows, cols, pred, target, &loss, got), layer);
    if (ok) {
        double e_loss = est_mse_errors(n, pred, target, est);
        double ref = ref_mse(n, pred, target, want);
        ok &= chk_compare_scalar(layer, shape, "loss", loss, ref, e_loss + RTOL * fabs(ref));
        ok &= chk_compare(layer, shape, "dpred", got, want, rows, cols,
                          (chk_tol){.atol = 1, .rtol = RTOL, .scale = est});
    }
    snprintf(layer, sizeof layer, "xent %s", gc_backend_name(ctx));
    int ok2 = !failed(run_cross_entropy(ctx, rows, cols, pred, labels, &loss, got), layer);
    if (ok2) {
        double e_loss = est_cross_entropy_errors(rows, cols, pred, labels, est);
        double ref = ref_cross_entropy(rows, cols, pred, labels, want);
        ok2 &= chk_compare_scalar(layer, shape, "loss", loss, ref, e_loss + RTOL * fabs(ref));
        ok2 &= chk_compare(layer, shape, "dlogits", got, want, rows, cols,
                           (chk_tol){.atol = 1, .rtol = RTOL, .scale = est});
    }
    free(pred), free(target), free(got), free(want), free(est), free(labels);
    return ok && ok2;
}

/* ---- tier 3: finite differences through the backend ---- */

/* theta +- s d, rounded to float32 as the backend will hold them. */
static void perturb(double *dst, const double *theta, const double *dir, double s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (double)(float)(theta[i] + s * dir[i]);
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* One directional check: values of L at +-h, +-2h, the analytic derivative
 * along both effective directions, and the error budget (see the header). */
typedef struct fd_sample {
    double l[4];       /* L at +h, -h, +2h, -2h */
    double an1, an2;   /* <g, d_eff(h)>, <g, d_eff(2h)> */
    double e_l, e_g;   /* error of one L value; of <g, d_eff(h)> */
} fd_sample;

static int fd_verdict(const char *layer, const char *shape, const char *what, double h,
                      const fd_sample *s)
{
    double fd1 = (s->l[0] - s->l[1]) / (2 * h), fd2 = (s->l[2] - s->l[3]) / (4 * h);
    double trunc = ((fd2 - s->an2) - (fd1 - s->an1)) / 3;
    double tol = 2 * fabs(trunc) + 1.5 * s->e_l / h + s->e_g;
    double err = fabs(fd1 - s->an1);
    int ok = err <= tol;
    char tol_text[48];
    snprintf(tol_text, sizeof tol_text, "%.1e (%.0e rel)", tol,
             fabs(s->an1) > 0 ? tol / fabs(s->an1) : 0);
    chk_table_row(layer, shape, what, err, "-", tol_text, ok);
    if (!ok || !isfinite(fd1))
        printf("    %s: finite difference %.9g, analytic %.9g, truncation estimate %.3g, "
               "rounding %.3g, analytic error %.3g\n",
               what, fd1, s->an1, trunc, 1.5 * s->e_l / h, s->e_g);
    return ok && isfinite(fd1);
}

/* Step for tier 3 in a math mode (see the header). */
static double fd_step(fn_context *ctx)
{
    return est_operand_roundoff(fn_context_math(ctx)) > 0x1p-16 ? 5e-2 : 1e-2;
}

typedef struct block_fd {
    block_data *b;
    double *dir[N_BLOCK_TENSORS];     /* the direction, per tensor (0 outside it) */
    double *pts[4][N_BLOCK_TENSORS];  /* the perturbed points */
    double *r;                        /* the objective weights, kinks masked */
} block_fd;

/* Masks r where any of the five points is near or across the kink. */
static void block_fd_mask(block_fd *f, double u_op)
{
    block_data *b = f->b;
    size_t count = (size_t)b->d.batch * b->d.out;
    double *u0 = chk_alloc(count), *u = chk_alloc(count), *eu = chk_alloc(count),
           *y = chk_alloc(count);
    ref_block_params p = params_of(b);
    ref_block_forward(&b->d, &p, b->t[0], y, &(ref_block_cache){.u = u0});
    est_block_errors(&b->d, &p, b->t[0], NULL, u_op, &(est_block){.u = eu});
    for (size_t i = 0; i < count; i++)
        if (fabs(u0[i]) <= 4 * eu[i])
            f->r[i] = 0;
    for (int k = 0; k < 4; k++) {
        double *const *q = f->pts[k];
        ref_block_params pk = {q[1], q[2], q[3], q[4]};
        ref_block_forward(&b->d, &pk, q[0], y, &(ref_block_cache){.u = u});
        for (size_t i = 0; i < count; i++)
            if ((u[i] > 0) != (u0[i] > 0) || fabs(u[i]) <= 4 * eu[i])
                f->r[i] = 0;
    }
    free(u0), free(u), free(eu), free(y);
}

static fn_status block_objective(fn_layer *l, const block_data *b, double *const *q,
                                 const double *r, double *value)
{
    double *y = chk_alloc((size_t)b->d.batch * b->d.out);
    fn_status st = upload_block_params(l, q);
    if (st == FN_OK)
        st = run_forward(l, b->d.batch, q[0], y);
    *value = dot(y, r, (size_t)b->d.batch * b->d.out);
    free(y);
    return st;
}

/* One direction: fills s from the backend. */
static fn_status block_fd_sample(fn_context *ctx, block_fd *f, double h, fd_sample *s)
{
    block_data *b = f->b;
    double u_op = est_operand_roundoff(fn_context_math(ctx));
    block_out g, est;
    block_out_alloc(&g, b), block_out_alloc(&est, b);
    fn_layer *l = NULL;
    fn_status st = block_run(ctx, b, f->r, &g);
    if (st == FN_OK)
        st = run_block_create(&l, ctx, &b->d, b->d.batch);
    for (int k = 0; st == FN_OK && k < 4; k++)
        st = block_objective(l, b, f->pts[k], f->r, &s->l[k]);
    fn_layer_destroy(l);
    block_estimates(b, f->r, u_op, &est);
    s->an1 = s->an2 = s->e_g = 0;
    for (int t = 0; t < N_BLOCK_TENSORS; t++)
        for (size_t i = 0; i < b->size[t]; i++) {
            double d1 = (f->pts[0][t][i] - f->pts[1][t][i]) / (2 * h);
            double d2 = (f->pts[2][t][i] - f->pts[3][t][i]) / (4 * h);
            s->an1 += g.g[t][i] * d1;
            s->an2 += g.g[t][i] * d2;
            s->e_g += fabs(d1) * est.g[t][i];
        }
    s->e_l = 0;
    for (size_t i = 0; i < (size_t)b->d.batch * b->d.out; i++)
        s->e_l += fabs(f->r[i]) * est.y[i];
    block_out_free(&g), block_out_free(&est);
    return st;
}

/* Directions: tensor `which` alone, or all five when which < 0; each entry
 * scaled by its tensor's largest value so that h is a relative step. */
static void block_fd_init(block_fd *f, block_data *b, int which, double h, double u_op,
                          chk_rng *rng)
{
    *f = (block_fd){.b = b, .r = chk_alloc((size_t)b->d.batch * b->d.out)};
    memcpy(f->r, b->dy, (size_t)b->d.batch * b->d.out * sizeof *f->r);
    static const double steps[4] = {1, -1, 2, -2};
    for (int t = 0; t < N_BLOCK_TENSORS; t++) {
        f->dir[t] = chk_alloc(b->size[t]);
        if (which < 0 || which == t)
            chk_fill(f->dir[t], b->size[t], -1, 1, rng);
        double scale = chk_max_abs(b->t[t], b->size[t]);
        for (size_t i = 0; i < b->size[t]; i++)
            f->dir[t][i] *= scale;
        for (int k = 0; k < 4; k++) {
            f->pts[k][t] = chk_alloc(b->size[t]);
            perturb(f->pts[k][t], b->t[t], f->dir[t], steps[k] * h, b->size[t]);
        }
    }
    block_fd_mask(f, u_op);
}

static void block_fd_free(block_fd *f)
{
    for (int t = 0; t < N_BLOCK_TENSORS; t++) {
        free(f->dir[t]);
        for (int k = 0; k < 4; k++)
            free(f->pts[k][t]);
    }
    free(f->r);
}

/* At least half of the objective must survive the kink mask, or the check
 * would test little. */
static int enough_weights(const double *r, size_t n)
{
    size_t live = 0;
    for (size_t i = 0; i < n; i++)
        live += r[i] != 0;
    if (2 * live < n)
        printf("    only %zu of %zu objective weights left after the kink mask\n", live, n);
    return 2 * live >= n;
}

int gc_block_fd(fn_context *ctx, const gc_block_case *c)
{
    double u_op = est_operand_roundoff(fn_context_math(ctx)), h = fd_step(ctx);
    block_data b;
    block_data_init(&b, c, u_op);
    chk_rng rng = chk_rng_seed(c->seed ^ 0xfdULL);
    char layer[40], shape[64];
    snprintf(layer, sizeof layer, "block %s fd", gc_backend_name(ctx));
    block_shape(shape, sizeof shape, &b);
    static const char *const what[N_BLOCK_TENSORS + 1] = {"<g,d> x", "<g,d> W", "<g,d> b",
                                                          "<g,d> gamma", "<g,d> beta",
                                                          "<g,d> all"};
    int ok = 1;
    for (int which = 0; which <= N_BLOCK_TENSORS; which++) {
        block_fd f;
        block_fd_init(&f, &b, which < N_BLOCK_TENSORS ? which : -1, h, u_op, &rng);
        fd_sample s;
        if (failed(block_fd_sample(ctx, &f, h, &s), layer))
            ok = 0;
        else
            ok &= enough_weights(f.r, (size_t)b.d.batch * b.d.out) &
                  fd_verdict(layer, shape, what[which], h, &s);
        block_fd_free(&f);
    }
    block_data_free(&b);
    return ok;
}

int gc_block_cases_fd(fn_context *ctx)
{
    int ok = 1;
    for (size_t i = 0; i < gc_n_fd_cases; i++) {
        printf("-- %s\n", gc_fd_cases[i].why);
        ok &= gc_block_fd(ctx, &gc_fd_cases[i]);
    }
    return ok;
}

/* The linear layer: L = sum r y, smooth, so only rounding and truncation. */
static fn_status linear_objective(fn_layer *l, int batch, double *const *q, const double *r,
                                  double *value)
{
    double *y = chk_alloc((size_t)batch * l->out_features);
    fn_status st = run_set_param(l, "weight", q[1]);
    if (st == FN_OK)
        st = run_set_param(l, "bias", q[2]);
    if (st == FN_OK)
        st = run_forward(l, batch, q[0], y);
    *value = dot(y, r, (size_t)batch * l->out_features);
    free(y);
    return st;
}

int gc_linear_fd(fn_context *ctx, int batch, int in, int out, uint64_t seed)
{
    double u_op = est_operand_roundoff(fn_context_math(ctx)), h = fd_step(ctx);
    chk_rng rng = chk_rng_seed(seed);
    size_t size[3] = {(size_t)batch * in, (size_t)out * in, out}, ny = (size_t)batch * out;
    double *t[3], *dir[3], *pts[4][3], *g[3], *est[3];
    double *r = chk_alloc(ny), *ey = chk_alloc(ny);
    static const double steps[4] = {1, -1, 2, -2};
    double bound = 1 / sqrt(in);
    double lo[3] = {-1, -bound, -bound}, hi[3] = {1, bound, bound};
    for (int k = 0; k < 3; k++) {
        t[k] = chk_alloc(size[k]), dir[k] = chk_alloc(size[k]);
        g[k] = chk_alloc(size[k]), est[k] = chk_alloc(size[k]);
        chk_fill(t[k], size[k], lo[k], hi[k], &rng);
        chk_fill(dir[k], size[k], lo[k], hi[k], &rng);
        for (int p = 0; p < 4; p++) {
            pts[p][k] = chk_alloc(size[k]);
            perturb(pts[p][k], t[k], dir[k], steps[p] * h, size[k]);
        }
    }
    chk_fill(r, ny, -1, 1, &rng);
    char layer[40], shape[64];
    snprintf(layer, sizeof layer, "linear %s fd", gc_backend_name(ctx));
    chk_shape(shape, sizeof shape, batch, in, out, 0, -1);
    fn_layer *l = NULL;
    fd_sample s = {0};
    fn_status st = run_linear_create(&l, ctx, in, out, batch);
    for (int p = 0; st == FN_OK && p < 4; p++)
        st = linear_objective(l, batch, pts[p], r, &s.l[p]);
    if (st == FN_OK)
        st = run_set_param(l, "weight", t[1]);
    if (st == FN_OK)
        st = run_set_param(l, "bias", t[2]);
    if (st == FN_OK)
        st = run_forward_backward(l, batch, t[0], r, NULL, g[0]);
    if (st == FN_OK)
        st = run_get_grad(l, "weight", g[1]);
    if (st == FN_OK)
        st = run_get_grad(l, "bias", g[2]);
    fn_layer_destroy(l);
    int ok = !failed(st, layer);
    if (ok) {
        est_linear_errors(batch, in, out, t[1], t[2], t[0], r, u_op, ey, est[0], est[1], est[2]);
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < size[k]; i++) {
                double d1 = (pts[0][k][i] - pts[1][k][i]) / (2 * h);
                s.an1 += g[k][i] * d1;
                s.an2 += g[k][i] * (pts[2][k][i] - pts[3][k][i]) / (4 * h);
                s.e_g += fabs(d1) * est[k][i];
            }
        for (size_t i = 0; i < ny; i++)
            s.e_l += fabs(r[i]) * ey[i];
        ok = fd_verdict(layer, shape, "<g,d> all", h, &s);
    }
    for (int k = 0; k < 3; k++) {
        free(t[k]), free(dir[k]), free(g[k]), free(est[k]);
        for (int p = 0; p < 4; p++)
            free(pts[p][k]);
    }
    free(r), free(ey);
    return ok;
}

/* The losses: L is the loss value itself, along a direction in pred. */
static int loss_fd(fn_context *ctx, int rows, int cols, int is_mse, chk_rng *rng)
{
    size_t n = (size_t)rows * cols;
    double h = 1e-2;
    static const double steps[4] = {1, -1, 2, -2};
    double *pred = chk_alloc(n), *target = chk_alloc(n), *dir = chk_alloc(n), *g = chk_alloc(n),
           *est = chk_alloc(n), *pts[4];
    int32_t *labels = calloc((size_t)rows, sizeof *labels);
    if (!labels)
        abort();
    chk_fill(pred, n, -3, 3, rng);
    chk_fill(target, n, -3, 3, rng);
    chk_fill(dir, n, -3, 3, rng);
    random_labels(labels, rows, cols, rng);
    fd_sample s = {0};
    fn_status st = FN_OK;
    double e_l_max = 0;
    for (int p = 0; p < 4; p++) {
        pts[p] = chk_alloc(n);
        perturb(pts[p], pred, dir, steps[p] * h, n);
        if (st == FN_OK)
            st = is_mse ? run_mse(ctx, rows, cols, pts[p], target, &s.l[p], NULL)
                        : run_cross_entropy(ctx, rows, cols, pts[p], labels, &s.l[p], NULL);
        double e = is_mse ? est_mse_errors(n, pts[p], target, NULL)
                          : est_cross_entropy_errors(rows, cols, pts[p], labels, NULL);
        e_l_max = e > e_l_max ? e : e_l_max;
    }
    double loss;
    if (st == FN_OK)
        st = is_mse ? run_mse(ctx, rows, cols, pred, target, &loss, g)
                    : run_cross_entropy(ctx, rows, cols, pred, labels, &loss, g);
    char layer[40], shape[64];
    snprintf(layer, sizeof layer, "%s %s fd", is_mse ? "mse" : "xent", gc_backend_name(ctx));
    chk_shape(shape, sizeof shape, rows, cols, cols, 0, -1);
    int ok = !failed(st, layer);
    if (ok) {
        if (is_mse)
            est_mse_errors(n, pred, target, est);
        else
            est_cross_entropy_errors(rows, cols, pred, labels, est);
        s.e_l = e_l_max;
        for (size_t i = 0; i < n; i++) {
            double d1 = (pts[0][i] - pts[1][i]) / (2 * h);
            s.an1 += g[i] * d1;
            s.an2 += g[i] * (pts[2][i] - pts[3][i]) / (4 * h);
            s.e_g += fabs(d1) * est[i];
        }
        ok = fd_verdict(layer, shape, is_mse ? "<g,d> pred" : "<g,d> logits", h, &s);
    }
    for (int p = 0; p < 4; p++)
        free(pts[p]);
    free(pred), free(target), free(dir), free(g), free(est), free(labels);
    return ok;
}

int gc_losses_fd(fn_context *ctx, int rows, int cols, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    int ok = loss_fd(ctx, rows, cols, 1, &rng);
    return loss_fd(ctx, rows, cols, 0, &rng) && ok;
}
