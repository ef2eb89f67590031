/* estimate.h — a priori float32 error estimates, element by element, for
 * what the backends compute: the tolerances of the tier-2 and tier-3 checks.
 *
 * The model (written once here, used by every comparison):
 *  - A float32 sum of n terms t_k (a dot product, a mean, a column sum) has
 *    error at most  LAMBDA sqrt(n) u32 sum|t_k|  with u32 = 2^-24 ~ 6e-8:
 *    the probabilistic bound of Higham & Mary (SISC 2019) for independent
 *    rounding errors, which holds for each element with probability
 *    >= 1 - 2 exp(-LAMBDA^2 / 2) = 1 - 6.7e-4 at LAMBDA = 4 (the worst-case
 *    bound n u32 sum|t| is sqrt(n) times larger and never approached by
 *    round-to-nearest; a real bug moves values by O(1), far beyond either).
 *  - Matrix products in TF32 keep 11 significant bits of each operand. The
 *    tensor cores may truncate rather than round (they ignore the low 13
 *    bits of a float), so u_op = 2^-10 ~ 9.8e-4 and the errors are not
 *    zero-mean: truncation shrinks every operand's magnitude, the errors of
 *    x_k w_k share a sign pattern and do not cancel. So the sum carries the
 *    worst case 2 u_op sum|t_k| more, not a sqrt(n) Hoeffding bound, which
 *    assumes independent zero-mean errors. tf32x3
 *    keeps the remainder of each operand too: u_op = 2^-21. In fp32 mode
 *    u_op = 0.
 *  - bf16 mode rounds each operand to nearest bfloat16 (8 significant
 *    bits: |x_h - x| <= 2^-8 |x|) before an fp32-accumulating product, so
 *    a term x_k w_k becomes x_k w_k (1 + d1)(1 + d2), |d1|, |d2| <= 2^-8:
 *    at most (2 u_op + u_op^2) |x_k w_k| with u_op = 2^-8, summed linearly
 *    as for TF32 (round to nearest is zero-mean, but the worst case costs
 *    little: 2^-7 per term is still far below what an O(1) bug moves). The
 *    u_op^2 term (2^-16, exact arithmetic rather than first order) is kept
 *    for every mode; for TF32 it adds 2^-20, 0.1 % of its 2 u_op.
 *    Normalisation, losses and every sum outside the products stay fp32
 *    in bf16 mode; what bf16 mode stores in bfloat16 between kernels (the
 *    block's z and dz) adds one rounding of 2^-8 relative to z's error and
 *    to each term of db (estimate.c: store_roundoff); dz's rounding is
 *    otherwise the dx and dW products' operand rounding, already counted.
 *  - Elementwise operations (scaling, leaky_relu, sqrt, division) add a few
 *    u32 relative each.
 *  - Errors are propagated to first order with absolute values, through the
 *    formulas of DESIGN.md "The mathematics"; GroupNorm amplifies an error
 *    of z into zhat by rstd (its Jacobian is rstd times a projection), which
 *    is why inputs with a large spread-to-mean ratio are harder.
 * The estimates are per element, so a comparison checks |a - r| <= est +
 * rtol |r| with rtol = 4 u32 (the final roundings of the value itself). */
#ifndef FN_TEST_ESTIMATE_H
#define FN_TEST_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "reference.h"

#define EST_LAMBDA 4.0

/* Per-element error estimates for the block; all arrays caller-allocated,
 * shapes as the tensors they describe. */
typedef struct est_block {
    double *u;      /* [batch, out] the leaky_relu input (for kink margins) */
    double *y;      /* [batch, out] */
    double *dx;     /* [batch, in] */
    double *dweight; /* [out, in] */
    double *dbias, *dgamma, *dbeta; /* [out] */
} est_block;

/* u_op: the operand rounding of the matrix products (0 for fp32). */
void est_block_errors(const ref_block_dims *d, const ref_block_params *p, const double *x,
                      const double *dy, double u_op, const est_block *e);

/* For the linear layer: y [batch, out], dx [batch, in], dW [out, in], db [out]. */
void est_linear_errors(int batch, int in, int out, const double *weight, const double *bias,
                       const double *x, const double *dy, double u_op, double *ey, double *edx,
                       double *edw, double *edb);

/* For the residual block: the block's estimates, plus the skip's one
 * rounding in y (y = x + block) and in dx (the product added onto dy). */
void est_residual_errors(const ref_block_dims *d, const ref_block_params *p, const double *x,
                         const double *dy, double u_op, const est_block *e);

/* For the dense layer (ref_dense_forward): ez [batch, out] the error of z
 * (may be NULL; the kink margin of ReLU), y, and from dy (may be NULL)
 * dx, dW and db. f and f' of float32 (erff, expf) add a few u32 of the
 * terms they round, absolutely for GELU's 1 + erf, which cancels for
 * z << 0. */
void est_dense_errors(int batch, int in, int out, int act, const double *weight,
                      const double *bias, const double *x, const double *dy, double u_op,
                      double *ez, double *ey, double *edx, double *edw, double *edb);

/* The losses: the value's error and, per element, the gradient's. */
double est_mse_errors(size_t count, const double *pred, const double *target, double *edpred);
double est_huber_errors(size_t count, const double *pred, const double *target, double delta,
                        double *edpred);
/* Binary cross-entropy on logits (ref_bce): pred and target reach the loss
 * rounded to float32 (a u32 of each, through dl/dx and dl/dy), the terms
 * are computed and added in double, the result rounded to float32. */
double est_bce_errors(int rows, int cols, const double *pred, const double *target,
                      const double *pos_weight, double *edpred);
/* The weighted and smoothed cross-entropy (ref_cross_entropy_smoothed):
 * the plain one's errors times 2 max(w) rows / W, plus the smoothing
 * term's, each as the plain row's terms. */
double est_cross_entropy_smoothed_errors(int rows, int cols, const double *logits,
                                         const int32_t *labels, const double *w, double eps,
                                         double *edlogits);
double est_cross_entropy_errors(int rows, int cols, const double *logits, const int32_t *labels,
                                double *edlogits);

/* The unit roundoff of matrix-product operands in a math mode (fn_math):
 * 0 for fp32, 2^-11 for tf32, 2^-21 for tf32x3 (the dropped lo*lo product
 * and the remainder's own TF32 rounding are both ~2^-22 relative), 2^-8
 * for bf16. */
double est_operand_roundoff(int math);

#endif
