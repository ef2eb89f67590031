/* sgd_fold.c — fold_check (sgd_fold.h): one SGD step of a layer folded
 * and unfolded from one state, compared within their error bound.
 *
 * The bound, per element, with u = 2^-24 and g the gradient as the
 * unfolded backward computed it (within est(g) of the exact one, the kind's
 * error estimate, estimate.h; the folded backward's product is within
 * est(g) too, so the two differ by at most 2 est(g)):
 *   unfolded  buf' = mu buf + (g + wd p)   three roundings
 *   folded    buf' = (mu buf + g) + wd p   two or three (the product may
 *                                          fuse mu buf + g into one)
 * each rounding at most u of a partial sum bounded by s = |mu buf| + |g| +
 * |wd p|, so |buf'_f - buf'_u| <= 2 est(g) + 6 u s; then p' = p - lr buf'
 * adds lr times that and two roundings of at most u (|p| + lr |buf'|)
 * each side. The first step of a run has buf = 0 (torch: buf' = g + wd p;
 * folded: 0 mu + g + wd p), the same bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "estimate.h"
#include "expect.h"
#include "fusenet/sgd.h"
#include "optim/optimizer_paths.h"
#include "kind.h"
#include "problem.h"
#include "runner.h"
#include "sgd_fold.h"
#include "tensor_doubles.h"

static const float kMu = 0.9f, kLr = 0.1f;
static const double kU = 0x1p-24;

/* A case wide enough for the vector kernels and the threaded CPU passes. */
static const gc_case fold_case = {.batch = 33, .in = 64, .out = 64, .groups = 8,
                                  .slope = 0.01f, .eps = 1e-5f, .xscale = 1, .wscale = 1,
                                  .boffset = 0, .seed = 71, .why = "fold"};

static double *get(const fn_tensor *t)
{
    const size_t n = fn_tensor_count(t);
    float *f = tensor_to_host(t);
    double *d = chk_alloc(n);
    chk_to_double(d, f, n);
    free(f);
    return d;
}

/* The layer's values, buffers and the optimiser's count as the state:
 * values p->t[1..], buffers buf[i] (zero for a first step). */
typedef struct fold_run {
    fn_layer *layer;
    fn_sgd *sgd;
    fn_tensor x, y, dy, dx;
} fold_run;

static void run_open(fold_run *r, fn_context *ctx, const gc_problem *p, double *const *buf,
                     long long steps, float wd, int momentum_bf16)
{
    memset(r, 0, sizeof *r);
    EXPECT_OK(gc_layer(&r->layer, ctx, p));
    EXPECT_OK(run_set_params(r->layer, p->t + 1));
    fn_param *params[GC_MAX_TENSORS];
    for (int i = 0; i < r->layer->n_params; i++)
        params[i] = &r->layer->params[i];
    fn_sgd_config cfg = fn_sgd_config_default(kLr);
    cfg.momentum = kMu;
    cfg.weight_decay = wd;
    cfg.momentum_bf16 = momentum_bf16;
    EXPECT_OK(fn_sgd_create(&r->sgd, ctx, params, r->layer->n_params, &cfg));
    for (int i = 0; i < r->layer->n_params; i++)
        doubles_put(fn_sgd_momentum_buffer(r->sgd, i), buf[i]);
    EXPECT_OK(fn_optimizer_state_import(fn_sgd_optimizer(r->sgd))); /* bfloat16 buffers */
    fn_sgd_set_steps(r->sgd, steps);
    const int B = p->c->batch;
    r->x = doubles_upload(fn_context_device(ctx), p->t[0], B, p->c->in);
    r->dy = doubles_upload(fn_context_device(ctx), p->dy, B, p->c->out);
    EXPECT_OK(fn_tensor_alloc(&r->y, B, p->c->out, fn_context_device(ctx)));
    EXPECT_OK(fn_tensor_alloc(&r->dx, B, p->c->in, fn_context_device(ctx)));
}

/* How run_step folds and steps. */
enum { UNFOLDED, FOLDED, FOLDED_BY_RANGES, UNFOLDED_BY_RANGES };

/* Forward, backward, step (FOLDED_BY_RANGES: the step as one range of
 * parameters at a time, fn_optimizer_step_params: on the GPU the
 * one-tensor kernels, not the table's launch); then the new values and
 * buffers into val, buf (allocated here) and, unfolded, the gradients
 * into g. */
static void run_step(fold_run *r, int how, double **val, double **buf, double **g)
{
    const int fold = how == FOLDED || how == FOLDED_BY_RANGES;
    if (fold) {
        int folded = 0;
        EXPECT_OK(fn_optimizer_fold(fn_sgd_optimizer(r->sgd), &folded));
        assert_int_equal(folded, 1);
    }
    EXPECT_OK(fn_layer_forward(r->layer, &r->x, &r->y));
    EXPECT_OK(fn_layer_backward(r->layer, &r->dy, &r->dx));
    for (int i = 0; g && i < r->layer->n_params; i++)
        g[i] = get(&r->layer->params[i].grad);
    fn_optimizer *opt = fn_sgd_optimizer(r->sgd);
    if (how == FOLDED_BY_RANGES || how == UNFOLDED_BY_RANGES) {
        for (int i = 0; i < r->layer->n_params; i++)
            EXPECT_OK(fn_optimizer_step_params(opt, i, 1));
        fn_optimizer_step_done(opt);
    } else {
        EXPECT_OK(fn_sgd_step(r->sgd));
    }
    EXPECT_OK(fn_optimizer_state_export(opt)); /* bfloat16 buffers into the views */
    for (int i = 0; i < r->layer->n_params; i++) {
        val[i] = get(&r->layer->params[i].value);
        buf[i] = get(fn_sgd_momentum_buffer(r->sgd, i));
    }
}

static void run_close(fold_run *r)
{
    fn_sgd_destroy(r->sgd); /* before the layer: it gives the gradients back */
    fn_layer_destroy(r->layer);
    fn_tensor_free(&r->x);
    fn_tensor_free(&r->y);
    fn_tensor_free(&r->dy);
    fn_tensor_free(&r->dx);
}

/* Fails at the first element outside the bound of the file's header. */
static void compare(const char *kind, const char *name, float wd, size_t n, const double *p,
                    const double *buf0, const double *g, const double *eg, const double *val_u,
                    const double *buf_u, const double *val_f, const double *buf_f)
{
    for (size_t k = 0; k < n; k++) {
        const double s = fabs(kMu * buf0[k]) + fabs(g[k]) + fabs(wd * p[k]);
        const double tol_buf = 2.0 * eg[k] + 6.0 * kU * s;
        const double tol_val = kLr * tol_buf + 4.0 * kU * (fabs(p[k]) + kLr * fabs(buf_u[k]));
        if (!(fabs(buf_f[k] - buf_u[k]) <= tol_buf))
            fail_msg("%s %s [%zu]: folded buffer %.9g, unfolded %.9g, bound %.3g", kind, name, k,
                     buf_f[k], buf_u[k], tol_buf);
        if (!(fabs(val_f[k] - val_u[k]) <= tol_val))
            fail_msg("%s %s [%zu]: folded value %.9g, unfolded %.9g, bound %.3g", kind, name, k,
                     val_f[k], val_u[k], tol_val);
    }
}

static void free_all(double **a, int n)
{
    for (int i = 0; i < n; i++)
        free(a[i]);
}

static double to_float(double x) { return (double)(float)x; }

/* The momentum buffers a check starts from, one per parameter of p: zero
 * before a first step (steps 0), else uniform in [-0.5, 0.5) from seed;
 * each value as round_to leaves it (a float32 or a bfloat16 number). */
static void start_buffers(const gc_problem *p, long long steps, uint64_t seed,
                          double (*round_to)(double), double **buf0)
{
    chk_rng rng = chk_rng_seed(seed);
    for (int i = 0; i < p->n - 1; i++) {
        buf0[i] = chk_alloc(p->size[i + 1]);
        if (steps > 0)
            chk_fill(buf0[i], p->size[i + 1], -0.5, 0.5, &rng);
        for (size_t k = 0; k < p->size[i + 1]; k++)
            buf0[i][k] = round_to(buf0[i][k]);
    }
}

/* One kind from one state (steps 0: a first step, buffers ignored) with
 * weight decay wd (0: the folded update leaves the buffer as backward
 * made it). */
static void check_kind(fn_context *ctx, const gc_kind *kind, long long steps, float wd)
{
    gc_problem p;
    EXPECT_OK(gc_problem_init(&p, kind, &fold_case, ctx));
    const int np = p.n - 1;
    double *buf0[GC_MAX_TENSORS];
    start_buffers(&p, steps, 91, to_float, buf0);
    gc_out e;
    gc_out_alloc(&e, &p);
    gc_estimates(&p, p.dy, est_operand_roundoff(fn_context_math(ctx)), &e);

    double *g[GC_MAX_TENSORS], *val_u[GC_MAX_TENSORS], *buf_u[GC_MAX_TENSORS];
    double *val_f[GC_MAX_TENSORS], *buf_f[GC_MAX_TENSORS];
    double *val_f2[GC_MAX_TENSORS], *buf_f2[GC_MAX_TENSORS];
    fold_run r;
    run_open(&r, ctx, &p, buf0, steps, wd, 0);
    run_step(&r, UNFOLDED, val_u, buf_u, g);
    run_close(&r);
    run_open(&r, ctx, &p, buf0, steps, wd, 0);
    run_step(&r, FOLDED, val_f, buf_f, NULL);
    run_close(&r);
    run_open(&r, ctx, &p, buf0, steps, wd, 0);
    run_step(&r, FOLDED_BY_RANGES, val_f2, buf_f2, NULL);
    run_close(&r);

    for (int i = 0; i < np; i++) {
        const char *name = p.names[i + 1];
        const size_t n = p.size[i + 1];
        /* the estimate of the gradient is the kind's; the buffer 0 on a first step */
        compare(kind->name, name, wd, n, p.t[i + 1], buf0[i], g[i], e.g[i + 1], val_u[i],
                buf_u[i], val_f[i], buf_f[i]);
        if (memcmp(val_f[i], val_f2[i], n * sizeof(double)) != 0 ||
            memcmp(buf_f[i], buf_f2[i], n * sizeof(double)) != 0)
            fail_msg("%s %s: the folded step and the same by ranges of parameters, from one "
                     "state, differ", kind->name, name);
    }
    free_all(buf0, np);
    free_all(g, np);
    free_all(val_u, np);
    free_all(buf_u, np);
    free_all(val_f, np);
    free_all(buf_f, np);
    free_all(val_f2, np);
    free_all(buf_f2, np);
    gc_out_free(&e);
    gc_problem_free(&p);
}

int fold_check(fn_context *ctx)
{
    const gc_kind *kinds[] = {&gc_block_kind, &gc_residual_kind, &gc_linear_kind, &gc_relu_kind};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        check_kind(ctx, kinds[k], 0, 0.01f);
        check_kind(ctx, kinds[k], 3, 0.01f);
        check_kind(ctx, kinds[k], 3, 0.0f);
    }
    return (int)(sizeof kinds / sizeof kinds[0]);
}

/* --- momentum kept in bfloat16 (momentum_bf16) ------------------------------ */

static const double kUh = 0x1p-8; /* bfloat16's unit roundoff: 8 significant bits */

/* x (a finite float32 number) rounded to the nearest bfloat16, ties to
 * even: __float2bfloat16_rn's rounding. */
static double to_bf16(double x)
{
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void expect_same(const char *kind, const char *name, const char *what, size_t n,
                        const double *a, const double *b)
{
    for (size_t k = 0; k < n; k++)
        if (memcmp(&a[k], &b[k], sizeof a[k]) != 0)
            fail_msg("%s %s [%zu]: %s: %.9g, expected the same bits as %.9g", kind, name, k, what,
                     a[k], b[k]);
}

/* The bfloat16 buffer's folded step against the float32 buffer's unfolded
 * one from one state: this file's header's bound tol_buf, plus the
 * roundings to bfloat16 of the new buffer, each at most 2^-8 of what it
 * rounds: the product's result mu buf + g, within
 * |buf_u| + |wd p| + tol_buf (r), and with weight decay the stored sum
 * (that result + wd p, within |buf_u| + tol_buf + r: r2). The new value
 * takes the product's rounding only (the update reads the rounded
 * buffer, adds wd p in fp32 and uses that sum before it is stored). */
static void compare_bf16(const char *kind, const char *name, float wd, size_t n, const double *p,
                         const double *buf0, const double *g, const double *eg,
                         const double *val_u, const double *buf_u, const double *val_h,
                         const double *buf_h)
{
    for (size_t k = 0; k < n; k++) {
        const double s = fabs(kMu * buf0[k]) + fabs(g[k]) + fabs(wd * p[k]);
        const double tol_buf = 2.0 * eg[k] + 6.0 * kU * s;
        const double r = kUh * (fabs(buf_u[k]) + fabs(wd * p[k]) + tol_buf);
        const double r2 = wd != 0.0f ? kUh * (fabs(buf_u[k]) + tol_buf + r) : 0.0;
        const double tol_bufh = tol_buf + r + r2;
        const double tol_val =
            kLr * (tol_buf + r) + 4.0 * kU * (fabs(p[k]) + kLr * fabs(buf_u[k]));
        if (!(fabs(buf_h[k] - buf_u[k]) <= tol_bufh))
            fail_msg("%s %s [%zu]: bfloat16 folded buffer %.9g, float32 unfolded %.9g, bound "
                     "%.3g", kind, name, k, buf_h[k], buf_u[k], tol_bufh);
        if (!(fabs(val_h[k] - val_u[k]) <= tol_val))
            fail_msg("%s %s [%zu]: bfloat16 folded value %.9g, float32 unfolded %.9g, bound %.3g",
                     kind, name, k, val_h[k], val_u[k], tol_val);
    }
}

/* One kind from one state whose buffers are bfloat16 numbers (so both
 * formats start from it exactly). A weight with a bfloat16 copy: folded
 * within compare_bf16's bound of the float32 unfolded step; unfolded
 * (update in fp32, the buffer rounded once when stored) the float32
 * step's value bit for bit and its buffer rounded to bfloat16; by ranges
 * (the one-tensor path through the float32 view) the same bits as the
 * table. Every other parameter keeps a float32 buffer: the same bits as
 * without the option. */
static void check_kind_bf16(fn_context *ctx, const gc_kind *kind, long long steps, float wd)
{
    gc_problem p;
    EXPECT_OK(gc_problem_init(&p, kind, &fold_case, ctx));
    const int np = p.n - 1;
    double *buf0[GC_MAX_TENSORS];
    start_buffers(&p, steps, 93, to_bf16, buf0);
    gc_out e;
    gc_out_alloc(&e, &p);
    gc_estimates(&p, p.dy, est_operand_roundoff(fn_context_math(ctx)), &e);

    enum { U, F, HU, HF, HFR, HUR, RUNS };
    static const int how[RUNS] = {UNFOLDED, FOLDED, UNFOLDED, FOLDED, FOLDED_BY_RANGES,
                                  UNFOLDED_BY_RANGES};
    static const int bf16[RUNS] = {0, 0, 1, 1, 1, 1};
    double *val[RUNS][GC_MAX_TENSORS], *buf[RUNS][GC_MAX_TENSORS], *g[GC_MAX_TENSORS];
    int kept[GC_MAX_TENSORS] = {0};
    for (int run = 0; run < RUNS; run++) {
        fold_run r;
        run_open(&r, ctx, &p, buf0, steps, wd, bf16[run]);
        for (int i = 0; i < np; i++)
            kept[i] = r.layer->params[i].value_bf16 != NULL;
        run_step(&r, how[run], val[run], buf[run], run == U ? g : NULL);
        run_close(&r);
    }

    for (int i = 0; i < np; i++) {
        const char *name = p.names[i + 1];
        const size_t n = p.size[i + 1];
        expect_same(kind->name, name, "folded by ranges, value", n, val[HFR][i], val[HF][i]);
        expect_same(kind->name, name, "folded by ranges, buffer", n, buf[HFR][i], buf[HF][i]);
        expect_same(kind->name, name, "unfolded by ranges, value", n, val[HUR][i], val[HU][i]);
        expect_same(kind->name, name, "unfolded by ranges, buffer", n, buf[HUR][i], buf[HU][i]);
        expect_same(kind->name, name, "unfolded value", n, val[HU][i], val[U][i]);
        if (!kept[i]) {
            expect_same(kind->name, name, "float32 buffer, unfolded", n, buf[HU][i], buf[U][i]);
            expect_same(kind->name, name, "float32 buffer, folded", n, buf[HF][i], buf[F][i]);
            expect_same(kind->name, name, "float32 buffer, folded value", n, val[HF][i],
                        val[F][i]);
            continue;
        }
        for (size_t k = 0; k < n; k++)
            buf[U][i][k] = to_bf16(buf[U][i][k]);
        expect_same(kind->name, name, "unfolded buffer (float32's rounded)", n, buf[HU][i],
                    buf[U][i]);
        free(buf[U][i]);
        buf[U][i] = NULL;
    }
    /* the float32 unfolded buffers again, unrounded, for the bound */
    fold_run r;
    run_open(&r, ctx, &p, buf0, steps, wd, 0);
    double *val_u[GC_MAX_TENSORS], *buf_u[GC_MAX_TENSORS];
    run_step(&r, UNFOLDED, val_u, buf_u, NULL);
    run_close(&r);
    int weights = 0;
    for (int i = 0; i < np; i++) {
        if (!kept[i])
            continue;
        weights++;
        compare_bf16(kind->name, p.names[i + 1], wd, p.size[i + 1], p.t[i + 1], buf0[i], g[i],
                     e.g[i + 1], val_u[i], buf_u[i], val[HF][i], buf[HF][i]);
    }
    if (kind == &gc_block_kind || kind == &gc_residual_kind)
        assert_int_equal(weights, 1); /* the weight's buffer is the one in bfloat16 */
    for (int run = 0; run < RUNS; run++) {
        free_all(val[run], np);
        free_all(buf[run], np);
    }
    free_all(g, np);
    free_all(val_u, np);
    free_all(buf_u, np);
    free_all(buf0, np);
    gc_out_free(&e);
    gc_problem_free(&p);
}

int fold_check_bf16(fn_context *ctx)
{
    const gc_kind *kinds[] = {&gc_block_kind, &gc_residual_kind, &gc_linear_kind};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        check_kind_bf16(ctx, kinds[k], 0, 0.01f);
        check_kind_bf16(ctx, kinds[k], 3, 0.01f);
        check_kind_bf16(ctx, kinds[k], 3, 0.0f);
    }
    return (int)(sizeof kinds / sizeof kinds[0]);
}

