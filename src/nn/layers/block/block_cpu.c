/* block_cpu.c — the fused block on the CPU, float32: OpenBLAS for the three
 * products, loops for GroupNorm + LeakyReLU + x2 and their gradients.
 *
 * The element-wise work runs on the context's threads (core/workers.h) in
 * two kinds of pass: over samples (each (sample, group) in one pass over
 * its channels, the group's constants hoisted so the loops vectorise) and,
 * for the column sums over the batch (dgamma, dbeta, dbias), over chunks
 * of channels, each channel's sum taken in double over the samples in
 * order. No item's arithmetic depends on which thread computes it, so the
 * results are the same bits on any number of threads, deterministic, and
 * close to the float64 reference. A residual block adds its input to y as
 * it is written, and backward starts dx from dy, onto which the dx product
 * adds. A network built for inference (fn_layer.forward_only) takes the
 * forward product from core/infer_product.h instead of BLAS, so that a
 * row's outputs do not depend on the batch it is predicted in. */
#include <cblas.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/infer_product.h"
#include "core/workers.h"
#include "nn/layers/block/block_impl.h"
#include "nn/reduce_cpu.h"

/* A part of a pass gets at least this many elements, so a small layer is
 * not spread over threads that cost more to wake than they save. */
enum { MIN_ELEMENTS_PER_PART = 16384 };

/* Channels of one column-sum item: its three double sums stay on the stack. */
enum { CHANNEL_CHUNK = 32 };

/* ---- element-wise pieces shared by forward and backward ---- */

/* The bias is folded in here rather than in the product, as on the GPU. */
static inline float zhat_of(float z, float bias, float mean, float rstd)
{
    return (z + bias - mean) * rstd;
}

/* du = d loss / du for u = gamma zhat + beta; PyTorch takes the slope at 0. */
static inline float du_of(float dy, float u, float slope)
{
    return 2.0f * dy * (u > 0.0f ? 1.0f : slope);
}

/* Runs a pass over `items` items of `per_item` elements on ctx's threads. */
static void run_pass(fn_context *ctx, int items, int per_item, fn_range_work pass, void *arg)
{
    const int grain = per_item >= MIN_ELEMENTS_PER_PART ? 1 : MIN_ELEMENTS_PER_PART / per_item;
    fn_workers_for(ctx->workers, items, grain, pass, arg);
}

/* What both directions read; the backward's fields are NULL in forward. */
typedef struct block_pass {
    float *y;           /* [B, H] forward's output */
    float *mean;        /* [B, G] of z + b */
    float *rstd;        /* [B, G] */
    float *dz;          /* [B, H] backward's output */
    float *dgamma;      /* [H], by grad_beta (param.h) */
    float *dbeta;       /* [H], by grad_beta */
    float *dbias;       /* [H], by grad_beta */
    float beta_dgamma, beta_dbeta, beta_dbias; /* their grad_beta */
    const float *dy;    /* [B, H] */
    const float *z;     /* [B, H], without the bias */
    const float *bias;  /* [H] */
    const float *gamma; /* [H] */
    const float *beta;  /* [H] */
    const float *skip;  /* [B, H] forward's input added to y (residual), or NULL */
    int B, H, G;
    float eps, slope;
} block_pass;

/* ---- forward ---- */

/* z = x W^T, without the bias: in a network built for inference the
 * batch-invariant product (core/infer_product.h), a row's z the same bits
 * in any batch; in training BLAS's. */
static void forward_product(const fn_layer *l, float *z /* [B, H] */, const float *x /* [B, in] */,
                            const float *w /* [H, in] */, int B, int in, int H)
{
    if (l->forward_only)
        fn_infer_product(l->ctx, z, x, w, NULL, B, in, H);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, in, 1.0f, x, in, w, in, 0.0f,
                    z, H);
}

/* Mean and 1/sqrt(var + eps) of one (sample, group)'s K values of z + b,
 * two passes in double. */
static void group_stats(float *mean, float *rstd, const float *restrict z /* [K] */,
                        const float *restrict bias /* [K] */, int K, float eps)
{
    double sum = 0.0;
    for (int k = 0; k < K; k++)
        sum += (double)(z[k] + bias[k]);
    const double mu = sum / K;
    double ss = 0.0;
    for (int k = 0; k < K; k++) {
        const double d = (double)(z[k] + bias[k]) - mu;
        ss += d * d;
    }
    *mean = (float)mu;
    *rstd = (float)(1.0 / sqrt(ss / K + (double)eps));
}

/* y = 2 leaky(gamma zhat + beta) over one (sample, group)'s K channels. */
static void normalize_group(float *restrict y /* [K] */, const float *restrict z /* [K] */,
                            const float *restrict bias /* [K] */,
                            const float *restrict gamma /* [K] */,
                            const float *restrict beta /* [K] */, int K, float mean, float rstd,
                            float slope)
{
    for (int k = 0; k < K; k++) {
        const float u = gamma[k] * zhat_of(z[k], bias[k], mean, rstd) + beta[k];
        y[k] = 2.0f * (u * (u > 0.0f ? 1.0f : slope));
    }
}

/* y += skip over K channels: the residual block's identity path. */
static void add_skip(float *restrict y /* [K] */, const float *restrict skip /* [K] */, int K)
{
    for (int k = 0; k < K; k++)
        y[k] += skip[k];
}

/* Samples [n0, n1): each group's statistics, then its K outputs. */
static void forward_rows(void *arg, int n0, int n1)
{
    const block_pass *p = arg;
    const int H = p->H, G = p->G, K = H / G;
    for (int n = n0; n < n1; n++) {
        for (int g = 0; g < G; g++) {
            const size_t ng = (size_t)n * G + (size_t)g, c0 = (size_t)g * K;
            const size_t i0 = (size_t)n * H + c0;
            group_stats(&p->mean[ng], &p->rstd[ng], p->z + i0, p->bias + c0, K, p->eps);
            normalize_group(p->y + i0, p->z + i0, p->bias + c0, p->gamma + c0, p->beta + c0, K,
                            p->mean[ng], p->rstd[ng], p->slope);
            if (p->skip)
                add_skip(p->y + i0, p->skip + i0, K);
        }
    }
}

static fn_status block_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_block *b = (fn_block *)l;
    const fn_block_config *c = &b->cfg;
    const int B = x->rows;
    forward_product(l, b->z.data, x->data, b->params[FN_BLOCK_WEIGHT].value.data, B,
                    c->in_features, c->out_features);
    block_pass p = {
        .y = y->data,
        .mean = b->mean.data,
        .rstd = b->rstd.data,
        .z = b->z.data,
        .bias = b->params[FN_BLOCK_BIAS].value.data,
        .gamma = b->params[FN_BLOCK_GAMMA].value.data,
        .beta = b->params[FN_BLOCK_BETA].value.data,
        .B = B,
        .H = c->out_features,
        .G = c->groups,
        .skip = c->residual ? x->data : NULL,
        .eps = c->eps,
        .slope = c->negative_slope,
    };
    run_pass(l->ctx, B, p.H, forward_rows, &p);
    b->x = *x;
    return FN_OK;
}

/* ---- backward ---- */

/* One (sample, group)'s K channels and its statistics. */
typedef struct group_view {
    const float *dy, *z, *bias, *gamma, *beta; /* [K] each */
    float mean, rstd, slope;
    int K;
} group_view;

/* ghat = du gamma into dz. */
static void group_ghat(float *restrict dz /* [K] */, const group_view *v)
{
    const float *restrict dy = v->dy, *restrict z = v->z, *restrict bias = v->bias;
    const float *restrict gamma = v->gamma, *restrict beta = v->beta;
    for (int k = 0; k < v->K; k++) {
        const float zh = zhat_of(z[k], bias[k], v->mean, v->rstd);
        dz[k] = du_of(dy[k], gamma[k] * zh + beta[k], v->slope) * gamma[k];
    }
}

/* The group's means of ghat and of ghat zhat, summed in double in order. */
static void group_means(float *mean_g, float *mean_gz, const float *restrict ghat /* [K] */,
                        const group_view *v)
{
    const float *restrict z = v->z, *restrict bias = v->bias;
    double sum_g = 0.0, sum_gz = 0.0;
    for (int k = 0; k < v->K; k++) {
        sum_g += (double)ghat[k];
        sum_gz += (double)ghat[k] * (double)zhat_of(z[k], bias[k], v->mean, v->rstd);
    }
    *mean_g = (float)(sum_g / v->K);
    *mean_gz = (float)(sum_gz / v->K);
}

/* dz = r (ghat - mean_g ghat - zhat mean_g(ghat zhat)), in place. */
static void group_dz(float *restrict dz /* [K] */, const group_view *v, float mean_g,
                     float mean_gz)
{
    const float *restrict z = v->z, *restrict bias = v->bias;
    for (int k = 0; k < v->K; k++) {
        const float zh = zhat_of(z[k], bias[k], v->mean, v->rstd);
        dz[k] = v->rstd * (dz[k] - mean_g - zh * mean_gz);
    }
}

/* Samples [n0, n1): dz of each (sample, group) in three passes over its
 * channels; only the middle one carries a sum from channel to channel. */
static void backward_rows(void *arg, int n0, int n1)
{
    const block_pass *p = arg;
    const int H = p->H, G = p->G, K = H / G;
    for (int n = n0; n < n1; n++) {
        for (int g = 0; g < G; g++) {
            const size_t ng = (size_t)n * G + (size_t)g, c0 = (size_t)g * K;
            const size_t i0 = (size_t)n * H + c0;
            const group_view v = {
                .dy = p->dy + i0,
                .z = p->z + i0,
                .bias = p->bias + c0,
                .gamma = p->gamma + c0,
                .beta = p->beta + c0,
                .mean = p->mean[ng],
                .rstd = p->rstd[ng],
                .slope = p->slope,
                .K = K,
            };
            float mean_g, mean_gz;
            group_ghat(p->dz + i0, &v);
            group_means(&mean_g, &mean_gz, p->dz + i0, &v);
            group_dz(p->dz + i0, &v, mean_g, mean_gz);
        }
    }
}

/* The column sums' terms of sample n over channels [c0, c1), all of one
 * group: du zhat, du and dz, recomputed exactly as backward_rows does. */
static void add_column_terms(double *restrict sg, double *restrict sb, double *restrict sdb,
                             const block_pass *p, int n, int c0, int c1)
{
    const size_t ng = (size_t)n * p->G + (size_t)(c0 / (p->H / p->G));
    const size_t row = (size_t)n * p->H;
    const float m = p->mean[ng], r = p->rstd[ng];
    const float *restrict dy = p->dy + row, *restrict z = p->z + row, *restrict dz = p->dz + row;
    const float *restrict bias = p->bias, *restrict gamma = p->gamma, *restrict beta = p->beta;
    for (int c = c0; c < c1; c++) {
        const float zh = zhat_of(z[c], bias[c], m, r);
        const float du = du_of(dy[c], gamma[c] * zh + beta[c], p->slope);
        sg[c - c0] += (double)du * (double)zh;
        sb[c - c0] += (double)du;
        sdb[c - c0] += (double)dz[c];
    }
}

/* Chunks [k0, k1) of CHANNEL_CHUNK channels: dgamma gets sum_n du zhat,
 * dbeta sum_n du, dbias sum_n dz, each in double over the samples in order
 * (as fn_cpu_column_sums sums), rounded to float once, then stored by the
 * parameter's grad_beta (fn_cpu_store_grad). */
static void backward_columns(void *arg, int k0, int k1)
{
    const block_pass *p = arg;
    const int K = p->H / p->G;
    for (int k = k0; k < k1; k++) {
        const int c0 = k * CHANNEL_CHUNK;
        const int c1 = c0 + CHANNEL_CHUNK < p->H ? c0 + CHANNEL_CHUNK : p->H;
        double sg[CHANNEL_CHUNK] = {0}, sb[CHANNEL_CHUNK] = {0}, sdb[CHANNEL_CHUNK] = {0};
        for (int n = 0; n < p->B; n++) {
            for (int c = c0; c < c1;) { /* one group's channels at a time */
                const int end = (c / K + 1) * K < c1 ? (c / K + 1) * K : c1;
                add_column_terms(sg + (c - c0), sb + (c - c0), sdb + (c - c0), p, n, c, end);
                c = end;
            }
        }
        for (int c = c0; c < c1; c++) {
            fn_cpu_store_grad(&p->dgamma[c], p->beta_dgamma, (float)sg[c - c0]);
            fn_cpu_store_grad(&p->dbeta[c], p->beta_dbeta, (float)sb[c - c0]);
            fn_cpu_store_grad(&p->dbias[c], p->beta_dbias, (float)sdb[c - c0]);
        }
    }
}

/* dW = beta_dw dW + dz^T x (BLAS's beta 0 never reads dW); dx = dz W when
 * dx is wanted, or dx += dz W when dx already holds the skip's gradient
 * (add_to_dx). */
static void backward_products(float *dx /* [B, in] or NULL */, float *dw /* [H, in] */,
                              const float *dz /* [B, H] */, const float *x /* [B, in] */,
                              const float *w /* [H, in] */, int B, int in, int H, int add_to_dx,
                              float beta_dw)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, in, B, 1.0f, dz, H, x, in, beta_dw,
                dw, in);
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, in, H, 1.0f, dz, H, w, in,
                    add_to_dx ? 1.0f : 0.0f, dx, in);
}

static fn_status block_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_block *b = (fn_block *)l;
    const fn_block_config *c = &b->cfg;
    fn_param *p = b->params;
    block_pass pass = {
        .mean = b->mean.data,
        .rstd = b->rstd.data,
        .dz = b->dz.data,
        .dgamma = p[FN_BLOCK_GAMMA].grad.data,
        .dbeta = p[FN_BLOCK_BETA].grad.data,
        .dbias = p[FN_BLOCK_BIAS].grad.data,
        .beta_dgamma = p[FN_BLOCK_GAMMA].grad_beta,
        .beta_dbeta = p[FN_BLOCK_BETA].grad_beta,
        .beta_dbias = p[FN_BLOCK_BIAS].grad_beta,
        .dy = dy->data,
        .z = b->z.data,
        .bias = p[FN_BLOCK_BIAS].value.data,
        .gamma = p[FN_BLOCK_GAMMA].value.data,
        .beta = p[FN_BLOCK_BETA].value.data,
        .B = l->batch,
        .H = c->out_features,
        .G = c->groups,
        .slope = c->negative_slope,
    };
    run_pass(l->ctx, pass.B, pass.H, backward_rows, &pass);
    const int chunks = (pass.H + CHANNEL_CHUNK - 1) / CHANNEL_CHUNK;
    run_pass(l->ctx, chunks, CHANNEL_CHUNK * pass.B, backward_columns, &pass);
    /* The skip's gradient is dy itself (in == out). */
    if (dx && c->residual)
        memcpy(dx->data, dy->data, (size_t)pass.B * (size_t)pass.H * sizeof(float));
    backward_products(dx ? dx->data : NULL, p[FN_BLOCK_WEIGHT].grad.data, b->dz.data, b->x.data,
                      p[FN_BLOCK_WEIGHT].value.data, pass.B, c->in_features, pass.H,
                      c->residual, p[FN_BLOCK_WEIGHT].grad_beta);
    return FN_OK;
}

static void block_destroy(fn_layer *l) { fn_block_release((fn_block *)l); }

const fn_layer_ops fn_block_cpu_ops = {
    .kind = "block",
    .forward = block_forward,
    .backward = block_backward,
    .destroy = block_destroy,
};

const fn_layer_ops fn_residual_cpu_ops = {
    .kind = "residual",
    .forward = block_forward,
    .backward = block_backward,
    .destroy = block_destroy,
};
