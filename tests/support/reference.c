/* reference.c — the float64 plain-loop reference of the block, the linear
 * layer and the two losses (see reference.h). Written for obviousness:
 * one loop per formula of DESIGN.md, statistics recomputed where needed. */
#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double *ref_alloc(size_t n)
{
    double *a = calloc(n ? n : 1, sizeof *a);
    if (!a) {
        fprintf(stderr, "reference: out of memory for %zu doubles\n", n);
        abort();
    }
    return a;
}

static double leaky_relu(double u, double slope) { return u > 0 ? u : slope * u; }

/* PyTorch's convention: at exactly u == 0 the slope is the negative slope. */
static double leaky_relu_slope(double u, double slope) { return u > 0 ? 1.0 : slope; }

void ref_block_forward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                       double *y, const ref_block_cache *cache)
{
    int k_per_group = d->out / d->groups;
    double *z = ref_alloc((size_t)d->out);
    for (int n = 0; n < d->batch; n++) {
        for (int c = 0; c < d->out; c++) {
            double s = p->bias[c];
            for (int k = 0; k < d->in; k++)
                s += x[(size_t)n * d->in + k] * p->weight[(size_t)c * d->in + k];
            z[c] = s;
        }
        for (int g = 0; g < d->groups; g++) {
            const double *zg = z + (size_t)g * k_per_group;
            double mean = 0, var = 0;
            for (int j = 0; j < k_per_group; j++)
                mean += zg[j];
            mean /= k_per_group;
            for (int j = 0; j < k_per_group; j++)
                var += (zg[j] - mean) * (zg[j] - mean);
            var /= k_per_group;
            double rstd = 1.0 / sqrt(var + d->eps);
            for (int j = 0; j < k_per_group; j++) {
                int c = g * k_per_group + j;
                size_t i = (size_t)n * d->out + c;
                double zhat = (zg[j] - mean) * rstd;
                double u = p->gamma[c] * zhat + p->beta[c];
                y[i] = 2.0 * leaky_relu(u, d->slope);
                if (cache && cache->z)
                    cache->z[i] = zg[j];
                if (cache && cache->zhat)
                    cache->zhat[i] = zhat;
                if (cache && cache->u)
                    cache->u[i] = u;
            }
            if (cache && cache->mean)
                cache->mean[(size_t)n * d->groups + g] = mean;
            if (cache && cache->rstd)
                cache->rstd[(size_t)n * d->groups + g] = rstd;
        }
    }
    free(z);
}

/* dz for every (n, c) from dy, by DESIGN.md's backward formulas. */
static void block_dz(const ref_block_dims *d, const ref_block_params *p, const double *dy,
                     const double *zhat, const double *u, const double *rstd, double *du,
                     double *dz)
{
    int k_per_group = d->out / d->groups;
    for (size_t i = 0; i < (size_t)d->batch * d->out; i++)
        du[i] = 2.0 * dy[i] * leaky_relu_slope(u[i], d->slope);
    for (int n = 0; n < d->batch; n++) {
        for (int g = 0; g < d->groups; g++) {
            size_t i0 = (size_t)n * d->out + (size_t)g * k_per_group;
            double mean_g = 0, mean_gz = 0;
            for (int j = 0; j < k_per_group; j++) {
                double ghat = du[i0 + j] * p->gamma[g * k_per_group + j];
                mean_g += ghat;
                mean_gz += ghat * zhat[i0 + j];
            }
            mean_g /= k_per_group;
            mean_gz /= k_per_group;
            double r = rstd[(size_t)n * d->groups + g];
            for (int j = 0; j < k_per_group; j++) {
                double ghat = du[i0 + j] * p->gamma[g * k_per_group + j];
                dz[i0 + j] = r * (ghat - mean_g - zhat[i0 + j] * mean_gz);
            }
        }
    }
}

void ref_block_backward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                        const double *dy, const ref_block_grads *g)
{
    size_t count = (size_t)d->batch * d->out;
    double *y = ref_alloc(count), *zhat = ref_alloc(count), *u = ref_alloc(count);
    double *rstd = ref_alloc((size_t)d->batch * d->groups);
    double *du = ref_alloc(count), *dz = ref_alloc(count);
    ref_block_forward(d, p, x, y, &(ref_block_cache){.zhat = zhat, .u = u, .rstd = rstd});
    block_dz(d, p, dy, zhat, u, rstd, du, dz);
    for (int c = 0; c < d->out; c++) {
        double dgamma = 0, dbeta = 0;
        for (int n = 0; n < d->batch; n++) {
            dgamma += du[(size_t)n * d->out + c] * zhat[(size_t)n * d->out + c];
            dbeta += du[(size_t)n * d->out + c];
        }
        if (g->dgamma)
            g->dgamma[c] = dgamma;
        if (g->dbeta)
            g->dbeta[c] = dbeta;
    }
    /* z = x W^T + b is a linear layer: its backward is the linear one. */
    ref_linear_backward(d->batch, d->in, d->out, p->weight, x, dz, g->dx, g->dweight, g->dbias);
    if (g->dz)
        for (size_t i = 0; i < count; i++)
            g->dz[i] = dz[i];
    free(y);
    free(zhat);
    free(u);
    free(rstd);
    free(du);
    free(dz);
}

void ref_linear_forward(int batch, int in, int out, const double *weight, const double *bias,
                        const double *x, double *y)
{
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < out; c++) {
            double s = bias[c];
            for (int k = 0; k < in; k++)
                s += x[(size_t)n * in + k] * weight[(size_t)c * in + k];
            y[(size_t)n * out + c] = s;
        }
}

/* The sum of a[i sa] b[i sb] over i < len, in order from i = 0. */
static double strided_dot(const double *a, size_t sa, const double *b, size_t sb, int len)
{
    double s = 0;
    for (int i = 0; i < len; i++)
        s += a[(size_t)i * sa] * b[(size_t)i * sb];
    return s;
}

void ref_linear_backward(int batch, int in, int out, const double *weight, const double *x,
                         const double *dy, double *dx, double *dweight, double *dbias)
{
    if (dx) /* dx [n, k] = sum over c of dy [n, c] w [c, k] */
        for (int n = 0; n < batch; n++)
            for (int k = 0; k < in; k++)
                dx[(size_t)n * in + k] =
                    strided_dot(dy + (size_t)n * out, 1, weight + k, (size_t)in, out);
    if (dweight) /* dw [c, k] = sum over n of dy [n, c] x [n, k] */
        for (int c = 0; c < out; c++)
            for (int k = 0; k < in; k++)
                dweight[(size_t)c * in + k] =
                    strided_dot(dy + c, (size_t)out, x + k, (size_t)in, batch);
    if (dbias)
        for (int c = 0; c < out; c++) {
            double s = 0;
            for (int n = 0; n < batch; n++)
                s += dy[(size_t)n * out + c];
            dbias[c] = s;
        }
}

double ref_mse(size_t count, const double *pred, const double *target, double *dpred)
{
    double s = 0;
    for (size_t i = 0; i < count; i++) {
        double e = pred[i] - target[i];
        s += e * e;
        if (dpred)
            dpred[i] = 2.0 * e / (double)count;
    }
    return s / (double)count;
}

double ref_huber(size_t count, const double *pred, const double *target, double delta,
                 double *dpred)
{
    double s = 0;
    for (size_t i = 0; i < count; i++) {
        const double e = pred[i] - target[i];
        s += fabs(e) < delta ? 0.5 * e * e : delta * (fabs(e) - 0.5 * delta);
        if (dpred)
            dpred[i] = (e < -delta ? -delta : e > delta ? delta : e) / (double)count;
    }
    return s / (double)count;
}

double ref_bce(int rows, int cols, const double *pred, const double *target,
               const double *pos_weight, double *dpred)
{
    const size_t count = (size_t)rows * (size_t)cols;
    double s = 0;
    for (size_t i = 0; i < count; i++) {
        const double x = pred[i], y = target[i];
        const double w = pos_weight ? 1 + (pos_weight[i % (size_t)cols] - 1) * y : 1;
        s += (1 - y) * x + w * (log1p(exp(-fabs(x))) + fmax(-x, 0));
        if (dpred)
            dpred[i] = ((1 - y) - w / (1 + exp(x))) / (double)count;
    }
    return s / (double)count;
}

double ref_cross_entropy_smoothed(int rows, int cols, const double *logits,
                                  const int32_t *labels, const double *w, double eps,
                                  double *dlogits)
{
    double total_w = 0, sum = 0, sw = 0;
    for (int n = 0; n < rows; n++)
        total_w += w ? w[labels[n]] : 1.0;
    for (int c = 0; c < cols; c++)
        sw += w ? w[c] : 1.0;
    for (int n = 0; n < rows; n++) {
        const double *l = logits + (size_t)n * cols;
        const double lse = ref_log_sum_exp(l, cols, NULL);
        const int y = labels[n];
        const double wy = w ? w[y] : 1.0;
        sum += (1 - eps) * wy * (lse - l[y]);
        for (int c = 0; c < cols; c++) {
            const double wc = w ? w[c] : 1.0, p = exp(l[c] - lse);
            sum += eps / cols * wc * (lse - l[c]);
            if (dlogits)
                dlogits[(size_t)n * cols + c] =
                    ((1 - eps) * wy * (p - (c == y)) + eps / cols * (sw * p - wc)) / total_w;
        }
    }
    return sum / total_w;
}

double ref_log_sum_exp(const double *l, int cols, double *max)
{
    double m = l[0];
    for (int c = 1; c < cols; c++)
        m = l[c] > m ? l[c] : m;
    double s = 0;
    for (int c = 0; c < cols; c++)
        s += exp(l[c] - m);
    if (max)
        *max = m;
    return m + log(s);
}

double ref_cross_entropy(int rows, int cols, const double *logits, const int32_t *labels,
                         double *dlogits)
{
    double total = 0;
    for (int n = 0; n < rows; n++) {
        const double *l = logits + (size_t)n * cols;
        double lse = ref_log_sum_exp(l, cols, NULL);
        total += lse - l[labels[n]];
        if (dlogits)
            for (int c = 0; c < cols; c++)
                dlogits[(size_t)n * cols + c] =
                    (exp(l[c] - lse) - (c == labels[n] ? 1.0 : 0.0)) / rows;
    }
    return total / rows;
}

void ref_residual_forward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                          double *y, const ref_block_cache *cache)
{
    ref_block_forward(d, p, x, y, cache);
    for (size_t i = 0; i < (size_t)d->batch * d->out; i++)
        y[i] += x[i];
}

void ref_residual_backward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                           const double *dy, const ref_block_grads *g)
{
    ref_block_backward(d, p, x, dy, g);
    if (g->dx)
        for (size_t i = 0; i < (size_t)d->batch * d->out; i++)
            g->dx[i] += dy[i];
}

static const double kInvSqrt2 = 0.70710678118654752440;
static const double kInvSqrt2Pi = 0.39894228040143267794;

double ref_activation(int act, double z)
{
    return act == REF_RELU ? (z > 0 ? z : 0) : 0.5 * z * (1 + erf(z * kInvSqrt2));
}

double ref_activation_slope(int act, double z)
{
    if (act == REF_RELU)
        return z > 0 ? 1 : 0;
    return 0.5 * (1 + erf(z * kInvSqrt2)) + z * kInvSqrt2Pi * exp(-0.5 * z * z);
}

double ref_activation_curve(int act, double z)
{
    return act == REF_RELU ? 0 : kInvSqrt2Pi * exp(-0.5 * z * z) * (2 - z * z);
}

void ref_dense_forward(int batch, int in, int out, int act, const double *weight,
                       const double *bias, const double *x, double *y, double *z)
{
    const size_t count = (size_t)batch * out;
    double *pre = z ? z : malloc(count * sizeof *pre);
    ref_linear_forward(batch, in, out, weight, bias, x, pre);
    for (size_t i = 0; i < count; i++)
        y[i] = ref_activation(act, pre[i]);
    if (!z)
        free(pre);
}

void ref_dense_backward(int batch, int in, int out, int act, const double *weight,
                        const double *bias, const double *x, const double *dy, double *dx,
                        double *dweight, double *dbias)
{
    const size_t count = (size_t)batch * out;
    double *z = malloc(count * sizeof *z), *dz = malloc(count * sizeof *dz);
    ref_linear_forward(batch, in, out, weight, bias, x, z);
    for (size_t i = 0; i < count; i++)
        dz[i] = dy[i] * ref_activation_slope(act, z[i]);
    ref_linear_backward(batch, in, out, weight, x, dz, dx, dweight, dbias);
    free(z), free(dz);
}

/* Philox4x32-10, Salmon et al. SC'11, Figure 2's constants. */
static void ref_philox(uint32_t ctr[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        const uint64_t a = (uint64_t)0xD2511F53u * ctr[0], b = (uint64_t)0xCD9E8D57u * ctr[2];
        const uint32_t out[4] = {(uint32_t)(b >> 32) ^ ctr[1] ^ k0, (uint32_t)b,
                                 (uint32_t)(a >> 32) ^ ctr[3] ^ k1, (uint32_t)a};
        for (int i = 0; i < 4; i++)
            ctr[i] = out[i];
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

void ref_dropout_mask(int batch, int width, double p, uint64_t seed, uint64_t layer,
                      uint64_t step, uint64_t row0, double *mask)
{
    const uint64_t key = seed + layer * 0x9E3779B97F4A7C15ull;
    const uint32_t threshold = (uint32_t)floor(p * 4294967296.0);
    for (size_t i = 0; i < (size_t)batch * width; i++) {
        const uint64_t e = row0 * (uint64_t)width + i;
        uint32_t ctr[4] = {(uint32_t)(e / 4), (uint32_t)(e / 4 >> 32), (uint32_t)step,
                           (uint32_t)(step >> 32)};
        ref_philox(ctr, (uint32_t)key, (uint32_t)(key >> 32));
        mask[i] = ctr[e % 4] >= threshold ? 1.0 : 0.0;
    }
}
