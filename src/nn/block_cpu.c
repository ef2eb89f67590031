/* block_cpu.c — the fused block on the CPU, float32: OpenBLAS for the three
 * products, plain loops for GroupNorm + LeakyReLU + x2 and their gradients.
 * Reductions accumulate in double in a fixed order, so results are
 * deterministic and close to the float64 reference; each (sample, group) is
 * one pass over its channels with the group's constants hoisted, so the
 * element-wise loops vectorise. */
#include <cblas.h>
#include <math.h>
#include <stddef.h>

#include "nn/block_impl.h"

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

/* ---- forward ---- */

/* z = x W^T, without the bias. */
static void forward_product(float *z /* [B, H] */, const float *x /* [B, in] */,
                            const float *w /* [H, in] */, int B, int in, int H)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, in, 1.0f, x, in, w, in, 0.0f, z,
                H);
}

/* Mean and 1/sqrt(var + eps) of one (sample, group)'s K values of z + b,
 * two passes in double. */
static void group_stats(float *mean, float *rstd, const float *zg /* [K] */,
                        const float *bg /* [K] */, int K, float eps)
{
    double sum = 0.0;
    for (int k = 0; k < K; k++)
        sum += (double)(zg[k] + bg[k]);
    const double mu = sum / K;
    double ss = 0.0;
    for (int k = 0; k < K; k++) {
        const double d = (double)(zg[k] + bg[k]) - mu;
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

/* Each (sample, group): its statistics, then its K outputs. */
static void forward_normalize(float *y /* [B, H] */, float *mean /* [B, G] */,
                              float *rstd /* [B, G] */, const float *z /* [B, H] */,
                              const float *bias /* [H] */, const float *gamma /* [H] */,
                              const float *beta /* [H] */, int B, int H, int G, float eps,
                              float slope)
{
    const int K = H / G;
    for (int n = 0; n < B; n++) {
        for (int g = 0; g < G; g++) {
            const size_t ng = (size_t)n * G + (size_t)g, i0 = (size_t)n * H + (size_t)g * K;
            const size_t c0 = (size_t)g * K;
            group_stats(&mean[ng], &rstd[ng], z + i0, bias + c0, K, eps);
            normalize_group(y + i0, z + i0, bias + c0, gamma + c0, beta + c0, K, mean[ng],
                            rstd[ng], slope);
        }
    }
}

static fn_status block_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_block *b = (fn_block *)l;
    const fn_block_config *c = &b->cfg;
    const int B = x->rows;
    const float *bias = b->params[FN_BLOCK_BIAS].value.data;
    forward_product(b->z.data, x->data, b->params[FN_BLOCK_WEIGHT].value.data, B,
                    c->in_features, c->out_features);
    forward_normalize(y->data, b->mean.data, b->rstd.data, b->z.data, bias,
                      b->params[FN_BLOCK_GAMMA].value.data, b->params[FN_BLOCK_BETA].value.data,
                      B, c->out_features, c->groups, c->eps, c->negative_slope);
    b->x = *x;
    return FN_OK;
}

/* ---- backward ---- */

/* What the backward pass reads, recomputing zhat and du instead of caching. */
typedef struct block_grad_inputs {
    const float *dy;    /* [B, H] */
    const float *z;     /* [B, H], without the bias */
    const float *mean;  /* [B, G] */
    const float *rstd;  /* [B, G] */
    const float *bias;  /* [H] */
    const float *gamma; /* [H] */
    const float *beta;  /* [H] */
    int B, H, G;
    float slope;
} block_grad_inputs;

/* The column sums over the batch, in double, each column's terms added in
 * sample order (the order fn_cpu_add_column_sums keeps), rounded to float once
 * at the end: the block's CPU workspace, [3, H] doubles. */
typedef struct column_sums {
    double *dgamma, *dbeta, *dbias; /* [H] each */
} column_sums;

/* A (sample, group)'s K channels, read by the three passes below. */
typedef struct group_view {
    const float *dy, *z, *bias, *gamma, *beta; /* [K] each */
    float mean, rstd, slope;
    int K;
} group_view;

/* ghat = du gamma into dz; dgamma += du zhat, dbeta += du. */
static void group_ghat(float *restrict dz /* [K] */, double *restrict dgamma /* [K] */,
                       double *restrict dbeta /* [K] */, const group_view *v)
{
    const float *restrict dy = v->dy, *restrict z = v->z, *restrict bias = v->bias;
    const float *restrict gamma = v->gamma, *restrict beta = v->beta;
    for (int k = 0; k < v->K; k++) {
        const float zh = zhat_of(z[k], bias[k], v->mean, v->rstd);
        const float du = du_of(dy[k], gamma[k] * zh + beta[k], v->slope);
        dz[k] = du * gamma[k];
        dgamma[k] += (double)du * (double)zh;
        dbeta[k] += (double)du;
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

/* dz = r (ghat - mean_g ghat - zhat mean_g(ghat zhat)) in place; dbias += dz. */
static void group_dz(float *restrict dz /* [K] */, double *restrict dbias /* [K] */,
                     const group_view *v, float mean_g, float mean_gz)
{
    const float *restrict z = v->z, *restrict bias = v->bias;
    for (int k = 0; k < v->K; k++) {
        const float zh = zhat_of(z[k], bias[k], v->mean, v->rstd);
        dz[k] = v->rstd * (dz[k] - mean_g - zh * mean_gz);
        dbias[k] += (double)dz[k];
    }
}

/* One (sample n, group g): dz = r (ghat - mean_g ghat - zhat mean_g(ghat
 * zhat)) and the terms of the column sums, in three passes over its
 * channels; only the middle one carries a sum from channel to channel. */
static void backward_group(float *dz /* [B, H] */, column_sums *sums, const block_grad_inputs *in,
                           int n, int g)
{
    const int K = in->H / in->G;
    const size_t c0 = (size_t)g * K, i0 = (size_t)n * in->H + c0;
    const size_t ng = (size_t)n * in->G + (size_t)g;
    const group_view v = {
        .dy = in->dy + i0,
        .z = in->z + i0,
        .bias = in->bias + c0,
        .gamma = in->gamma + c0,
        .beta = in->beta + c0,
        .mean = in->mean[ng],
        .rstd = in->rstd[ng],
        .slope = in->slope,
        .K = K,
    };
    float mean_g, mean_gz;
    group_ghat(dz + i0, sums->dgamma + c0, sums->dbeta + c0, &v);
    group_means(&mean_g, &mean_gz, dz + i0, &v);
    group_dz(dz + i0, sums->dbias + c0, &v, mean_g, mean_gz);
}

/* dz for the whole batch, and dgamma, dbeta, dbias += their column sums. */
static void backward_normalize(float *dz /* [B, H] */, float *dgamma /* [H] */,
                               float *dbeta /* [H] */, float *dbias /* [H] */,
                               double *workspace /* [3, H] */, const block_grad_inputs *in)
{
    const size_t H = (size_t)in->H;
    column_sums sums = {workspace, workspace + H, workspace + 2 * H};
    for (size_t c = 0; c < 3 * H; c++)
        workspace[c] = 0.0;
    for (int n = 0; n < in->B; n++)
        for (int g = 0; g < in->G; g++)
            backward_group(dz, &sums, in, n, g);
    for (size_t c = 0; c < H; c++) {
        dgamma[c] += (float)sums.dgamma[c];
        dbeta[c] += (float)sums.dbeta[c];
        dbias[c] += (float)sums.dbias[c];
    }
}

/* dW += dz^T x; dx = dz W when dx is wanted. */
static void backward_products(float *dx /* [B, in] or NULL */, float *dw /* [H, in] */,
                              const float *dz /* [B, H] */, const float *x /* [B, in] */,
                              const float *w /* [H, in] */, int B, int in, int H)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, in, B, 1.0f, dz, H, x, in, 1.0f, dw,
                in);
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, in, H, 1.0f, dz, H, w, in, 0.0f,
                    dx, in);
}

static fn_status block_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_block *b = (fn_block *)l;
    const fn_block_config *c = &b->cfg;
    fn_param *p = b->params;
    const block_grad_inputs in = {
        .dy = dy->data,
        .z = b->z.data,
        .mean = b->mean.data,
        .rstd = b->rstd.data,
        .bias = p[FN_BLOCK_BIAS].value.data,
        .gamma = p[FN_BLOCK_GAMMA].value.data,
        .beta = p[FN_BLOCK_BETA].value.data,
        .B = l->batch,
        .H = c->out_features,
        .G = c->groups,
        .slope = c->negative_slope,
    };
    backward_normalize(b->dz.data, p[FN_BLOCK_GAMMA].grad.data, p[FN_BLOCK_BETA].grad.data,
                       p[FN_BLOCK_BIAS].grad.data, (double *)b->scratch.data, &in);
    backward_products(dx ? dx->data : NULL, p[FN_BLOCK_WEIGHT].grad.data, b->dz.data, b->x.data,
                      p[FN_BLOCK_WEIGHT].value.data, in.B, c->in_features, in.H);
    return FN_OK;
}

/* The column sums' double accumulators, [3, H], in the scratch tensor (two
 * floats a double; fn_tensor_alloc's alignment suits doubles). */
fn_status fn_block_cpu_setup(fn_block *b)
{
    return fn_tensor_alloc(&b->scratch, 1, 6 * b->cfg.out_features, FN_CPU);
}

static void block_destroy(fn_layer *l) { fn_block_release((fn_block *)l); }

const fn_layer_ops fn_block_cpu_ops = {
    .kind = "block",
    .forward = block_forward,
    .backward = block_backward,
    .destroy = block_destroy,
};
