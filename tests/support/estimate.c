/* estimate.c — the float32 error model of estimate.h, propagated through
 * the block's forward and backward formulas, the linear layer and the
 * losses. Each estimate names the sum it comes from. */
#include "estimate.h"

#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "fusenet/device.h"

#define U32 CHK_U32
#define LAM EST_LAMBDA

double est_operand_roundoff(int math)
{
    switch (math) {
    case FN_MATH_TF32:
        return CHK_UTF32;
    case FN_MATH_TF32X3:
        return 0x1p-21;
    case FN_MATH_BF16:
        return CHK_UBF16;
    default:
        return 0;
    }
}

/* The rounding of a value the backend stores between kernels in a math
 * mode: bf16 mode keeps the block's z (x W^T) and dz in bfloat16
 * (block_products_cuda.h), each rounded once to nearest, 2^-8 relative;
 * the other modes store float32, whose rounding the sums already count. */
static double store_roundoff(double u_op)
{
    return u_op >= CHK_UBF16 ? u_op : 0;
}

/* A sum of n terms: sum|t| known; u_op for product operands (their error
 * is biased, so it adds up linearly: estimate.h). Both operands rounded:
 * (1 + u)^2 - 1 = 2u + u^2 relative per term. */
static double sum_error(int n, double abs_sum, double u_op)
{
    return LAM * sqrt((double)n) * U32 * abs_sum + (2 * u_op + u_op * u_op) * abs_sum;
}

/* Error of one element of the product a[rows, n] . b[n] given strides. */
static double dot_error(int n, const double *a, size_t sa, const double *b, size_t sb,
                        double u_op)
{
    double abs_sum = 0;
    for (int k = 0; k < n; k++)
        abs_sum += fabs(a[k * sa] * b[k * sb]);
    return sum_error(n, abs_sum, u_op);
}

/* Per (n, g): error of z - mean (ez_max plus the mean's own sum) and the
 * relative error of rstd: var = mean (z - mean)^2 moves by
 * 2 mean(|z - mean| ez) <= 2 sigma ez, i.e. rstd by rstd^2 sigma ez <= rstd ez
 * (sigma rstd <= 1), plus the variance sum and the sqrt / division. */
static void group_errors(int k_per_group, const double *z, const double *ez, double rstd,
                         double *ecentre, double *erel_rstd)
{
    if (k_per_group == 1) {
        /* The mean of one term is that term, exactly: z - mean = 0 and
         * zhat = 0 whatever the error of z; var = 0, rstd = 1/sqrt(eps). */
        *ecentre = 0;
        *erel_rstd = 3 * U32;
        return;
    }
    double ez_max = 0, z_max = 0;
    for (int j = 0; j < k_per_group; j++) {
        ez_max = ez[j] > ez_max ? ez[j] : ez_max;
        z_max = fabs(z[j]) > z_max ? fabs(z[j]) : z_max;
    }
    *ecentre = ez_max + LAM * sqrt((double)k_per_group) * U32 * z_max;
    *erel_rstd = rstd * *ecentre + LAM * (sqrt((double)k_per_group) + 2) * U32;
}

typedef struct block_fwd {
    double *z, *zhat, *u, *rstd; /* reference values */
    double *ezhat, *erel_rstd;   /* [batch, out], [batch, groups] */
} block_fwd;

static void block_forward_errors(const ref_block_dims *d, const ref_block_params *p,
                                 const double *x, double u_op, block_fwd *f, const est_block *e)
{
    size_t count = (size_t)d->batch * d->out;
    int k_per_group = d->out / d->groups;
    double *y = chk_alloc(count), *ez = chk_alloc(count);
    ref_block_forward(d, p, x, y,
                      &(ref_block_cache){.z = f->z, .zhat = f->zhat, .u = f->u, .rstd = f->rstd});
    /* A stored z (without the bias) is rounded once more: at most
     * u |computed| <= u (|z| + its error) <= u (1 + 3u) sum|t|, as
     * |z| <= sum|t| and the product's error is below 3u sum|t|. */
    const double us = store_roundoff(u_op);
    for (int n = 0; n < d->batch; n++)
        for (int c = 0; c < d->out; c++) {
            const double *xr = x + (size_t)n * d->in, *wr = p->weight + (size_t)c * d->in;
            double abs_sum = 0;
            for (int k = 0; k < d->in; k++)
                abs_sum += fabs(xr[k] * wr[k]);
            ez[(size_t)n * d->out + c] = dot_error(d->in, xr, 1, wr, 1, u_op) +
                                         us * (1 + 3 * u_op) * abs_sum +
                                         LAM * U32 * fabs(p->bias[c]);
        }
    for (int n = 0; n < d->batch; n++)
        for (int g = 0; g < d->groups; g++) {
            size_t i0 = (size_t)n * d->out + (size_t)g * k_per_group;
            double r = f->rstd[(size_t)n * d->groups + g], ecentre, erel;
            group_errors(k_per_group, f->z + i0, ez + i0, r, &ecentre, &erel);
            f->erel_rstd[(size_t)n * d->groups + g] = erel;
            for (int j = 0; j < k_per_group; j++) {
                size_t i = i0 + j;
                int c = g * k_per_group + j;
                double zhat = fabs(f->zhat[i]);
                f->ezhat[i] = k_per_group == 1 ? 0 : r * (ez[i] + ecentre) + zhat * (erel + 2 * U32);
                double eu = fabs(p->gamma[c]) * f->ezhat[i] +
                            2 * U32 * (fabs(p->gamma[c]) * zhat + fabs(f->u[i]));
                /* Within eu of the kink the computed u may lie on the other
                 * side, where the slope differs: leaky_relu is Lipschitz
                 * with constant max(1, slope), so that bounds y's error. */
                double side = fabs(f->u[i]) > eu ? (f->u[i] > 0 ? 1.0 : d->slope)
                                                 : fmax(1.0, d->slope);
                if (e->u)
                    e->u[i] = eu;
                if (e->y)
                    e->y[i] = 2 * side * eu + 2 * U32 * fabs(y[i]);
            }
        }
    free(y);
    free(ez);
}

/* dz and its error per element, by the backward formulas of DESIGN.md. */
static void block_dz_errors(const ref_block_dims *d, const ref_block_params *p,
                            const double *dy, const block_fwd *f, double *du, double *dz,
                            double *edz)
{
    int k = d->out / d->groups;
    for (int n = 0; n < d->batch; n++)
        for (int g = 0; g < d->groups; g++) {
            size_t i0 = (size_t)n * d->out + (size_t)g * k;
            double m1 = 0, m2 = 0, abs_g = 0, abs_gz = 0, eg_m2 = 0;
            for (int j = 0; j < k; j++) {
                size_t i = i0 + j;
                du[i] = 2 * dy[i] * (f->u[i] > 0 ? 1.0 : d->slope);
                double ghat = du[i] * p->gamma[g * k + j];
                m1 += ghat / k;
                m2 += ghat * f->zhat[i] / k;
                abs_g += fabs(ghat) / k;
                abs_gz += fabs(ghat * f->zhat[i]) / k;
                eg_m2 += fabs(ghat) * f->ezhat[i] / k;
            }
            double e_m1 = LAM * sqrt((double)k) * U32 * abs_g + 2 * U32 * abs_g;
            double e_m2 = eg_m2 + LAM * sqrt((double)k) * U32 * abs_gz + 2 * U32 * abs_gz;
            double r = f->rstd[(size_t)n * d->groups + g];
            double erel = f->erel_rstd[(size_t)n * d->groups + g];
            for (int j = 0; j < k; j++) {
                size_t i = i0 + j;
                double ghat = du[i] * p->gamma[g * k + j], zhat = f->zhat[i];
                dz[i] = r * (ghat - m1 - zhat * m2);
                double e_inner = 2 * U32 * fabs(ghat) + e_m1 + fabs(zhat) * e_m2 +
                                 f->ezhat[i] * fabs(m2) +
                                 2 * U32 * (fabs(ghat) + fabs(m1) + fabs(zhat * m2));
                edz[i] = r * e_inner + fabs(dz[i]) * (erel + U32);
            }
        }
}

/* The parameter and input gradients from dz, du and their errors. */
static void block_grad_errors(const ref_block_dims *d, const ref_block_params *p,
                              const double *x, const block_fwd *f, const double *du,
                              const double *dz, const double *edz, double u_op,
                              const est_block *e)
{
    int N = d->batch, in = d->in, out = d->out;
    for (int n = 0; e->dx && n < N; n++)
        for (int kk = 0; kk < in; kk++) {
            double prop = 0;
            for (int c = 0; c < out; c++)
                prop += edz[(size_t)n * out + c] * fabs(p->weight[(size_t)c * in + kk]);
            e->dx[(size_t)n * in + kk] =
                prop + dot_error(out, dz + (size_t)n * out, 1, p->weight + kk, (size_t)in, u_op);
        }
    for (int c = 0; e->dweight && c < out; c++)
        for (int kk = 0; kk < in; kk++) {
            double prop = 0;
            for (int n = 0; n < N; n++)
                prop += edz[(size_t)n * out + c] * fabs(x[(size_t)n * in + kk]);
            e->dweight[(size_t)c * in + kk] =
                prop + dot_error(N, dz + c, (size_t)out, x + kk, (size_t)in, u_op);
        }
    for (int c = 0; c < out; c++) {
        double prop_b = 0, abs_b = 0, prop_g = 0, abs_g = 0, abs_be = 0;
        for (int n = 0; n < N; n++) {
            size_t i = (size_t)n * out + c;
            prop_b += edz[i];
            abs_b += fabs(dz[i]);
            prop_g += fabs(du[i]) * f->ezhat[i] + U32 * fabs(du[i] * f->zhat[i]);
            abs_g += fabs(du[i] * f->zhat[i]);
            abs_be += fabs(du[i]);
        }
        double root_n = sqrt((double)N);
        /* A stored dz (bf16 mode) may be what db sums (the group path reads
         * it back): each term rounded once, u |computed dz| <= u (|dz| +
         * est(dz)). */
        double stored = store_roundoff(u_op) * (abs_b + prop_b);
        if (e->dbias)
            e->dbias[c] = prop_b + LAM * root_n * U32 * abs_b + stored;
        if (e->dgamma)
            e->dgamma[c] = prop_g + LAM * root_n * U32 * abs_g;
        if (e->dbeta)
            e->dbeta[c] = (LAM * root_n + 1) * U32 * abs_be;
    }
}

void est_block_errors(const ref_block_dims *d, const ref_block_params *p, const double *x,
                      const double *dy, double u_op, const est_block *e)
{
    size_t count = (size_t)d->batch * d->out, stats = (size_t)d->batch * d->groups;
    block_fwd f = {
        .z = chk_alloc(count), .zhat = chk_alloc(count), .u = chk_alloc(count),
        .rstd = chk_alloc(stats), .ezhat = chk_alloc(count), .erel_rstd = chk_alloc(stats),
    };
    block_forward_errors(d, p, x, u_op, &f, e);
    if (dy) {
        double *du = chk_alloc(count), *dz = chk_alloc(count), *edz = chk_alloc(count);
        block_dz_errors(d, p, dy, &f, du, dz, edz);
        block_grad_errors(d, p, x, &f, du, dz, edz, u_op, e);
        free(du), free(dz), free(edz);
    }
    free(f.z), free(f.zhat), free(f.u), free(f.rstd), free(f.ezhat), free(f.erel_rstd);
}

void est_linear_errors(int batch, int in, int out, const double *weight, const double *bias,
                       const double *x, const double *dy, double u_op, double *ey, double *edx,
                       double *edw, double *edb)
{
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < out; c++)
            ey[(size_t)n * out + c] = dot_error(in, x + (size_t)n * in, 1, weight + (size_t)c * in,
                                                1, u_op) + LAM * U32 * fabs(bias[c]);
    for (int n = 0; n < batch; n++)
        for (int k = 0; k < in; k++)
            edx[(size_t)n * in + k] = dot_error(out, dy + (size_t)n * out, 1, weight + k,
                                                (size_t)in, u_op);
    for (int c = 0; c < out; c++)
        for (int k = 0; k < in; k++)
            edw[(size_t)c * in + k] = dot_error(batch, dy + c, (size_t)out, x + k, (size_t)in, u_op);
    for (int c = 0; c < out; c++) {
        double abs_sum = 0;
        for (int n = 0; n < batch; n++)
            abs_sum += fabs(dy[(size_t)n * out + c]);
        edb[c] = sum_error(batch, abs_sum, 0);
    }
}

void est_residual_errors(const ref_block_dims *d, const ref_block_params *p, const double *x,
                         const double *dy, double u_op, const est_block *e)
{
    est_block_errors(d, p, x, dy, u_op, e);
    const size_t count = (size_t)d->batch * d->out;
    double *y = chk_alloc(count);
    ref_residual_forward(d, p, x, y, NULL);
    if (e->y)
        for (size_t i = 0; i < count; i++)
            e->y[i] += U32 * fabs(y[i]);
    if (dy && e->dx) {
        double *dx = chk_alloc(count);
        ref_residual_backward(d, p, x, dy, &(ref_block_grads){.dx = dx});
        for (size_t i = 0; i < count; i++)
            e->dx[i] += U32 * (fabs(dx[i]) + fabs(dy[i]));
        free(dx);
    }
    free(y);
}

/* Few u32: the roundings of f and f' in float32 (erff, expf, the
 * products), relative to the terms they touch. */
#define ACT_ULPS 4.0

void est_dense_errors(int batch, int in, int out, int act, const double *weight,
                      const double *bias, const double *x, const double *dy, double u_op,
                      double *ez, double *ey, double *edx, double *edw, double *edb)
{
    const size_t count = (size_t)batch * out;
    double *z = chk_alloc(count), *ezz = chk_alloc(count);
    double *scratch_dx = chk_alloc((size_t)batch * in), *scratch_dw = chk_alloc((size_t)out * in);
    double *scratch_db = chk_alloc((size_t)out), *zero = chk_alloc(count);
    ref_linear_forward(batch, in, out, weight, bias, x, z);
    est_linear_errors(batch, in, out, weight, bias, x, zero, u_op, ezz, scratch_dx, scratch_dw,
                      scratch_db);
    for (size_t i = 0; i < count; i++) {
        if (ez)
            ez[i] = ezz[i];
        if (!ey)
            continue;
        const double f = ref_activation(act, z[i]);
        /* GELU's 1 + erf(z / sqrt 2), each rounded: 0.5 |z| (1 + |erf|) u. */
        const double cancel = act == REF_GELU ? 0.5 * fabs(z[i]) * 2 : 0;
        /* The computed z lies within ezz of z, where the slope may differ
         * (ReLU's kink: 0 on one side, 1 on the other): the largest slope
         * over that interval bounds f's change (f is Lipschitz there). */
        const double slope = fmax(fabs(ref_activation_slope(act, z[i])),
                                  fmax(fabs(ref_activation_slope(act, z[i] - ezz[i])),
                                       fabs(ref_activation_slope(act, z[i] + ezz[i]))));
        ey[i] = slope * ezz[i] + ACT_ULPS * U32 * (fabs(f) + cancel);
    }
    if (dy) {
        double *dz = chk_alloc(count), *edz = chk_alloc(count);
        for (size_t i = 0; i < count; i++) {
            const double slope = ref_activation_slope(act, z[i]);
            dz[i] = dy[i] * slope;
            const double rounding =
                act == REF_GELU ? ACT_ULPS * U32 * (1 + fabs(z[i]) * exp(-0.5 * z[i] * z[i])) : 0;
            edz[i] = fabs(dy[i]) * (fabs(ref_activation_curve(act, z[i])) * ezz[i] + rounding) +
                     U32 * fabs(dz[i]);
        }
        est_linear_errors(batch, in, out, weight, bias, x, dz, u_op, ezz, edx, edw, edb);
        /* dz's own error through the products and the column sum. */
        for (int n = 0; n < batch; n++)
            for (int k = 0; k < in; k++) {
                double s = 0;
                for (int c = 0; c < out; c++)
                    s += edz[(size_t)n * out + c] * fabs(weight[(size_t)c * in + k]);
                edx[(size_t)n * in + k] += s;
            }
        for (int c = 0; c < out; c++) {
            double sb = 0;
            for (int n = 0; n < batch; n++)
                sb += edz[(size_t)n * out + c];
            edb[c] += sb;
            for (int k = 0; k < in; k++) {
                double s = 0;
                for (int n = 0; n < batch; n++)
                    s += edz[(size_t)n * out + c] * fabs(x[(size_t)n * in + k]);
                edw[(size_t)c * in + k] += s;
            }
        }
        free(dz), free(edz);
    }
    free(z), free(ezz), free(scratch_dx), free(scratch_dw), free(scratch_db), free(zero);
}

/* loss = sum e^2 / M: a sum of M positive terms plus the division;
 * dpred = 2 e / M: a subtraction, a product and a division, 3 u32. */
double est_mse_errors(size_t count, const double *pred, const double *target, double *edpred)
{
    double abs_sum = 0;
    for (size_t i = 0; i < count; i++) {
        double e = pred[i] - target[i];
        abs_sum += e * e;
        if (edpred)
            edpred[i] = 3 * U32 * fabs(2 * e / (double)count);
    }
    return LAM * (sqrt((double)count) + 2) * U32 * abs_sum / (double)count;
}

/* loss = sum l / M with l = e^2/2 or delta (|e| - delta/2): a sum of M
 * positive terms, each within a few u32 of its value (the float32
 * difference e, a product or a subtraction); dpred = clamp(e) / M: the
 * subtraction and the division, 2 u32. */
double est_huber_errors(size_t count, const double *pred, const double *target, double delta,
                        double *edpred)
{
    const double abs_sum = ref_huber(count, pred, target, delta, edpred) * (double)count;
    for (size_t i = 0; edpred && i < count; i++)
        edpred[i] = 2 * U32 * fabs(edpred[i]) + U32 * fabs(pred[i] - target[i]) / (double)count;
    return LAM * (sqrt((double)count) + 4) * U32 * abs_sum / (double)count;
}

/* A term l(x, y): dl/dx = (1 - y) - w s(-x), dl/dy = -x + (p - 1) sp with
 * sp = log(1 + exp(-x)), s the sigmoid; the gradient g = dl/dx / M moves
 * by w s(x) s(-x) / M per unit of x and (-1 - (p - 1) s(-x)) / M per unit
 * of y. Each input carries a u32 of itself; the double arithmetic adds a
 * few u32 of the term (its exp and log1p); the float32 result one more. */
double est_bce_errors(int rows, int cols, const double *pred, const double *target,
                      const double *pos_weight, double *edpred)
{
    const size_t count = (size_t)rows * (size_t)cols;
    const double m = (double)count;
    double err = 0, loss = 0;
    for (size_t i = 0; i < count; i++) {
        const double x = pred[i], y = target[i];
        const double p = pos_weight ? pos_weight[i % (size_t)cols] : 1;
        const double w = 1 + (p - 1) * y, sneg = 1 / (1 + exp(x)), spos = 1 - sneg;
        const double sp = log1p(exp(-fabs(x))) + fmax(-x, 0);
        const double l = (1 - y) * x + w * sp;
        loss += l;
        err += fabs(x) * fabs((1 - y) - w * sneg) + fabs(y) * (fabs(x) + fabs(p - 1) * sp) +
               4 * fabs(l);
        if (edpred) {
            const double g = ((1 - y) - w * sneg) / m;
            edpred[i] = 2 * U32 *
                        (fabs(x) * w * spos * sneg / m + fabs(y) * (1 + fabs(p - 1) * sneg) / m +
                         4 * fabs(g));
        }
    }
    return LAM * U32 * err / m + U32 * loss / m;
}

/* Per row: m = max, s = sum_c exp(l_c - m) (C terms, each exp a few u32),
 * lse = m + log s, loss_n = lse - l_label; the mean over N rows.
 * dlogits = (exp(l - lse) - onehot) / N: exp(l - lse) has relative error
 * |l - lse| u32 from its argument plus the exp and the division. */
double est_cross_entropy_errors(int rows, int cols, const double *logits, const int32_t *labels,
                                double *edlogits)
{
    double row_errors = 0, loss_abs = 0, per_term = LAM * (sqrt((double)cols) + 4) * U32;
    for (int n = 0; n < rows; n++) {
        const double *l = logits + (size_t)n * cols;
        double m;
        double lse = ref_log_sum_exp(l, cols, &m);
        row_errors += per_term * (fabs(m) + fabs(lse - m) + fabs(l[labels[n]]) + 1);
        loss_abs += fabs(lse - l[labels[n]]);
        for (int c = 0; edlogits && c < cols; c++) {
            double prob = exp(l[c] - lse);
            double arg = fabs(l[c]) + fabs(lse) + 1;
            edlogits[(size_t)n * cols + c] = per_term * (prob * arg + (c == labels[n])) / rows;
        }
    }
    return row_errors / rows + LAM * sqrt((double)rows) * U32 * loss_abs / rows;
}

double est_cross_entropy_smoothed_errors(int rows, int cols, const double *logits,
                                         const int32_t *labels, const double *w, double eps,
                                         double *edlogits)
{
    const double plain = est_cross_entropy_errors(rows, cols, logits, labels, edlogits);
    const double per_term = LAM * (sqrt((double)cols) + 4) * U32;
    double wmax = 0, total_w = 0, extra = 0;
    for (int c = 0; c < cols; c++)
        wmax = fmax(wmax, w ? w[c] : 1.0);
    for (int n = 0; n < rows; n++)
        total_w += w ? w[labels[n]] : 1.0;
    const double f = 2 * wmax * rows / total_w;
    for (int n = 0; n < rows; n++) {
        const double *l = logits + (size_t)n * cols;
        const double lse = ref_log_sum_exp(l, cols, NULL);
        for (int c = 0; c < cols; c++) {
            const double arg = fabs(l[c]) + fabs(lse) + 1, p = exp(l[c] - lse);
            extra += per_term * eps * wmax * arg / cols;
            if (edlogits)
                edlogits[(size_t)n * cols + c] = edlogits[(size_t)n * cols + c] * f +
                                                 per_term * eps * wmax * (p * arg + 1) / total_w;
        }
    }
    return plain * f + extra / total_w;
}
