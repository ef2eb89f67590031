/* block_cpu.c — the fused block on the CPU, float32: OpenBLAS for the three
 * products, plain loops for GroupNorm + LeakyReLU + x2 and their gradients.
 * Reductions accumulate in double in a fixed order, so results are
 * deterministic and close to the float64 reference. */
#include <cblas.h>
#include <math.h>
#include <stddef.h>

#include "nn/block_impl.h"
#include "nn/reduce_cpu.h"

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

/* Mean and biased variance of z + b over each (sample, group), two passes. */
static void forward_stats(float *mean /* [B, G] */, float *rstd /* [B, G] */,
                          const float *z /* [B, H] */, const float *bias /* [H] */, int B, int H,
                          int G, float eps)
{
    const int K = H / G;
    for (int n = 0; n < B; n++) {
        for (int g = 0; g < G; g++) {
            const float *zg = z + (size_t)n * H + (size_t)g * K; /* [K] */
            const float *bg = bias + (size_t)g * K;             /* [K] */
            double sum = 0.0;
            for (int k = 0; k < K; k++)
                sum += (double)(zg[k] + bg[k]);
            const double mu = sum / K;
            double ss = 0.0;
            for (int k = 0; k < K; k++) {
                const double d = (double)(zg[k] + bg[k]) - mu;
                ss += d * d;
            }
            mean[(size_t)n * G + g] = (float)mu;
            rstd[(size_t)n * G + g] = (float)(1.0 / sqrt(ss / K + (double)eps));
        }
    }
}

/* y = 2 leaky(gamma zhat + beta). */
static void forward_normalize(float *y /* [B, H] */, const float *z /* [B, H] */,
                              const float *mean /* [B, G] */, const float *rstd /* [B, G] */,
                              const float *bias /* [H] */, const float *gamma /* [H] */,
                              const float *beta /* [H] */, int B, int H, int G, float slope)
{
    const int K = H / G;
    for (int n = 0; n < B; n++) {
        for (int c = 0; c < H; c++) {
            const size_t ng = (size_t)n * G + (size_t)(c / K);
            const size_t i = (size_t)n * H + (size_t)c;
            const float u = gamma[c] * zhat_of(z[i], bias[c], mean[ng], rstd[ng]) + beta[c];
            y[i] = 2.0f * (u > 0.0f ? u : slope * u);
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
    forward_stats(b->mean.data, b->rstd.data, b->z.data, bias, B, c->out_features, c->groups,
                  c->eps);
    forward_normalize(y->data, b->z.data, b->mean.data, b->rstd.data, bias,
                      b->params[FN_BLOCK_GAMMA].value.data, b->params[FN_BLOCK_BETA].value.data,
                      B, c->out_features, c->groups, c->negative_slope);
    b->x = *x;
    return FN_OK;
}

/* ---- backward ---- */

/* What the backward passes read, recomputing zhat and du instead of caching. */
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

/* zhat and du of element (n, c). */
static inline void du_zhat_at(const block_grad_inputs *in, int n, int c, float *du, float *zh)
{
    const size_t ng = (size_t)n * in->G + (size_t)(c / (in->H / in->G));
    const size_t i = (size_t)n * in->H + (size_t)c;
    *zh = zhat_of(in->z[i], in->bias[c], in->mean[ng], in->rstd[ng]);
    *du = du_of(in->dy[i], in->gamma[c] * *zh + in->beta[c], in->slope);
}

/* dgamma_c += sum_n du zhat, dbeta_c += sum_n du, for channels [c0, c1),
 * in double as fn_cpu_add_column_sums sums. */
static void backward_affine_chunk(float *dgamma /* [H] */, float *dbeta /* [H] */,
                                  const block_grad_inputs *in, int c0, int c1)
{
    double sg[FN_CPU_COLUMN_CHUNK] = {0}, sb[FN_CPU_COLUMN_CHUNK] = {0};
    for (int n = 0; n < in->B; n++) {
        for (int c = c0; c < c1; c++) {
            float du, zh;
            du_zhat_at(in, n, c, &du, &zh);
            sg[c - c0] += (double)du * (double)zh;
            sb[c - c0] += (double)du;
        }
    }
    for (int c = c0; c < c1; c++) {
        dgamma[c] += (float)sg[c - c0];
        dbeta[c] += (float)sb[c - c0];
    }
}

static void backward_affine(float *dgamma /* [H] */, float *dbeta /* [H] */,
                            const block_grad_inputs *in)
{
    for (int c0 = 0; c0 < in->H; c0 += FN_CPU_COLUMN_CHUNK) {
        const int c1 = c0 + FN_CPU_COLUMN_CHUNK < in->H ? c0 + FN_CPU_COLUMN_CHUNK : in->H;
        backward_affine_chunk(dgamma, dbeta, in, c0, c1);
    }
}

/* dz = r (ghat - mean_g ghat - zhat mean_g(ghat zhat)), ghat = du gamma,
 * for sample n and group g. */
static void backward_dz_group(float *dz /* [B, H] */, const block_grad_inputs *in, int n, int g)
{
    const int K = in->H / in->G;
    double sum_g = 0.0, sum_gz = 0.0;
    for (int c = g * K; c < (g + 1) * K; c++) {
        float du, zh;
        du_zhat_at(in, n, c, &du, &zh);
        const float gh = du * in->gamma[c];
        sum_g += (double)gh;
        sum_gz += (double)gh * (double)zh;
    }
    const float mean_g = (float)(sum_g / K), mean_gz = (float)(sum_gz / K);
    const float r = in->rstd[(size_t)n * in->G + (size_t)g];
    for (int c = g * K; c < (g + 1) * K; c++) {
        float du, zh;
        du_zhat_at(in, n, c, &du, &zh);
        const float gh = du * in->gamma[c];
        dz[(size_t)n * in->H + (size_t)c] = r * (gh - mean_g - zh * mean_gz);
    }
}

static void backward_dz(float *dz /* [B, H] */, const block_grad_inputs *in)
{
    for (int n = 0; n < in->B; n++)
        for (int g = 0; g < in->G; g++)
            backward_dz_group(dz, in, n, g);
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
    backward_affine(p[FN_BLOCK_GAMMA].grad.data, p[FN_BLOCK_BETA].grad.data, &in);
    backward_dz(b->dz.data, &in);
    fn_cpu_add_column_sums(p[FN_BLOCK_BIAS].grad.data, b->dz.data, in.B, in.H);
    backward_products(dx ? dx->data : NULL, p[FN_BLOCK_WEIGHT].grad.data, b->dz.data, b->x.data,
                      p[FN_BLOCK_WEIGHT].value.data, in.B, c->in_features, in.H);
    return FN_OK;
}

static void block_destroy(fn_layer *l) { fn_block_release((fn_block *)l); }

const fn_layer_ops fn_block_cpu_ops = {
    .kind = "block",
    .forward = block_forward,
    .backward = block_backward,
    .destroy = block_destroy,
};
