/* reference.h — the float64 plain-loop reference of everything the gradient
 * checks compare against: the fused block (forward with its per-(sample,
 * group) statistics, backward giving dx, dW, db, dgamma, dbeta), the linear
 * layer, MSE and softmax cross-entropy. No BLAS, no cleverness: each function
 * is the formula of DESIGN.md "The mathematics" written as loops.
 *
 * Gradients here are ASSIGNED (=), unlike the library's parameter gradients,
 * which accumulate; the tests zero the library's gradients first. */
#ifndef FN_TEST_REFERENCE_H
#define FN_TEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ref_block_dims {
    int batch, in, out, groups; /* K = out / groups channels a group */
    double eps, slope;
} ref_block_dims;

typedef struct ref_block_params {
    const double *weight; /* [out, in] */
    const double *bias;   /* [out] */
    const double *gamma;  /* [out] */
    const double *beta;   /* [out] */
} ref_block_params;

/* What the forward pass can hand out besides y; every pointer may be NULL. */
typedef struct ref_block_cache {
    double *z;    /* [batch, out]   x W^T + b */
    double *zhat; /* [batch, out]   (z - mean) * rstd */
    double *u;    /* [batch, out]   gamma * zhat + beta, the leaky_relu input */
    double *mean; /* [batch, groups] */
    double *rstd; /* [batch, groups] 1 / sqrt(var + eps), var biased */
} ref_block_cache;

/* Every pointer may be NULL (not computed), except that dz is needed by
 * nothing else: the function computes it internally either way. */
typedef struct ref_block_grads {
    double *dx;     /* [batch, in] */
    double *dweight; /* [out, in] */
    double *dbias;  /* [out] */
    double *dgamma; /* [out] */
    double *dbeta;  /* [out] */
    double *dz;     /* [batch, out] d loss / d (x W^T + b) */
} ref_block_grads;

/* y: [batch, out]; cache may be NULL. */
void ref_block_forward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                       double *y, const ref_block_cache *cache);
/* From dy [batch, out] at input x [batch, in]: the gradients in g. */
void ref_block_backward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                        const double *dy, const ref_block_grads *g);

/* y = x W^T + b: x [batch, in], weight [out, in], bias [out], y [batch, out]. */
void ref_linear_forward(int batch, int in, int out, const double *weight, const double *bias,
                        const double *x, double *y);
/* dx = dy W, dW = dy^T x, db = sum_n dy; any output may be NULL. */
void ref_linear_backward(int batch, int in, int out, const double *weight, const double *x,
                         const double *dy, double *dx, double *dweight, double *dbias);

/* The residual block: y = x + block(x) (in == out), dx = dy + the block's
 * dx; the other gradients are the block's. */
void ref_residual_forward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                          double *y, const ref_block_cache *cache);
void ref_residual_backward(const ref_block_dims *d, const ref_block_params *p, const double *x,
                           const double *dy, const ref_block_grads *g);

/* The dense layer y = f(x W^T + b), f = ReLU (REF_RELU) or exact GELU,
 * z/2 (1 + erf(z / sqrt 2)) (REF_GELU), as torch.nn.ReLU and nn.GELU().
 * z [batch, out] (may be NULL) gets x W^T + b. */
enum { REF_RELU, REF_GELU };
double ref_activation(int act, double z);
double ref_activation_slope(int act, double z);  /* f'(z); ReLU's is 0 at z = 0 */
double ref_activation_curve(int act, double z);  /* f''(z), 0 for ReLU */
void ref_dense_forward(int batch, int in, int out, int act, const double *weight,
                       const double *bias, const double *x, double *y, double *z);
/* dx (may be NULL), dW and db from dy [batch, out]. */
void ref_dense_backward(int batch, int in, int out, int act, const double *weight,
                        const double *bias, const double *x, const double *dy, double *dx,
                        double *dweight, double *dbias);

/* Dropout in training (torch.nn.Dropout's y = x * mask / (1 - p)) with
 * the mask of fusenet's counter-based generator, written here again from
 * its definition (dropout.h): element e = (row0 + n) * width + c of step
 * `step` is kept when word e % 4 of Philox4x32-10 at counter {e / 4 (64
 * bits), step (64 bits)}, key seed + layer * 0x9E3779B97F4A7C15, is at
 * least floor(p 2^32). mask [batch, width] gets 1 or 0. */
void ref_dropout_mask(int batch, int width, double p, uint64_t seed, uint64_t layer,
                      uint64_t step, uint64_t row0, double *mask);

/* sum (pred - target)^2 / count, as torch.nn.MSELoss; dpred (may be NULL)
 * gets 2 (pred - target) / count. */
double ref_mse(size_t count, const double *pred, const double *target, double *dpred);

/* mean over the elements of e^2/2 where |e| < delta, else
 * delta (|e| - delta/2), e = pred - target, as torch.nn.HuberLoss; dpred
 * (may be NULL) gets clamp(e, -delta, delta) / count. */
double ref_huber(size_t count, const double *pred, const double *target, double delta,
                 double *dpred);

/* Binary cross-entropy on logits, as torch.nn.BCEWithLogitsLoss (mean):
 * x = pred, y = target [rows, cols] in [0, 1], p = pos_weight[col] (NULL:
 * 1), w = 1 + (p - 1) y; the mean of (1 - y) x + w (log(1 + exp(-|x|)) +
 * max(-x, 0)); dpred (may be NULL) gets ((1 - y) - w sigmoid(-x)) / count. */
double ref_bce(int rows, int cols, const double *pred, const double *target,
               const double *pos_weight, double *dpred);

/* log sum_c exp(l[c]) over one row, shifted by its maximum (stored in *max
 * when max is not NULL) so that it cannot overflow. */
double ref_log_sum_exp(const double *l, int cols, double *max);

/* mean over rows of -log softmax(logits[n])[labels[n]], as
 * torch.nn.CrossEntropyLoss; dlogits (may be NULL) gets
 * (softmax - onehot) / rows. logits [rows, cols]. */
double ref_cross_entropy(int rows, int cols, const double *logits, const int32_t *labels,
                         double *dlogits);

/* torch.nn.CrossEntropyLoss(weight, label_smoothing = eps), mean
 * reduction (the weighted mean: divided by W = sum_n w[labels[n]]); w
 * [cols] or NULL (all 1); dlogits may be NULL. */
double ref_cross_entropy_smoothed(int rows, int cols, const double *logits,
                                  const int32_t *labels, const double *w, double eps,
                                  double *dlogits);

#endif
