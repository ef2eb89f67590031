/* fd.h — the arithmetic of tier 3, float32 finite differences through a
 * backend along one direction d, shared by the layer driver
 * (gradcheck_fd.c) and the losses (gradcheck_loss.c).
 *
 * For L(theta) evaluated through the backend (a layer's sum_i r_i y_i, the
 * sum itself in float64 on the host, or a loss value):
 *   FD(h) = (L(theta + h d) - L(theta - h d)) / 2h
 *         = <grad L, d> + c h^2 + rounding,  |rounding| <= e_L / h,
 * where e_L bounds the float32 error of each L value (for a layer
 * sum |r_i| est(y_i)). The truncation c h^2 is measured, not guessed:
 * FD(2h) - FD(h) = 3 c h^2 (Richardson), from the same backend. The test is
 *   |FD(h) - <g, d>| <= 2 |trunc| + 1.5 e_L / h + e_g,
 * with e_g = sum |d_i| est(g_i) the analytic side's own error and 1.5 e_L/h
 * covering FD(h)'s rounding plus the rounding inside the truncation estimate
 * ((e_L/h + e_L/2h) / 3). h trades rounding against truncation: the optimum
 * is h ~ (3 e_L / |L'''|)^(1/3). In fp32 e_L / |L| ~ 1e-6..1e-5, giving
 * h ~ 1e-2 (relative to each tensor's largest value, which scales d); in
 * TF32 e_L / |L| ~ 1e-3, giving h ~ 5e-2; in bf16 e_L / |L| ~ 2^-7 ~ 8e-3
 * per product term (estimate.h), giving h ~ 0.3 by the formula, of which
 * 1e-1 is taken: the points at +-2h stay nearer the kinks' masks
 * (gc_mask_kinks) and the rounding term 1.5 e_L / h is then ~ 0.1 |L|,
 * still well below a wrong gradient's O(|L|)... in the formula's terms;
 * measured on a host emulation of the bf16 block
 * (test_gradcheck_bf16_model), the worst-case e_L and e_g make the bound
 * 10 to 100 times the directional derivative itself, so bf16's tier-3 rows
 * only catch non-finite values and errors beyond that: bf16's accuracy is
 * carried by tier 2 (the emulation stays within 0.28 of its bounds).
 * Perturbed points are rounded to
 * float32 and the direction actually taken, (theta+ - theta-) / 2h, is used
 * on the analytic side, so that rounding is no error source. */
#ifndef FN_TEST_FD_H
#define FN_TEST_FD_H

#include <stddef.h>

#include "fusenet/device.h"

/* The four points, as multiples of h: +h, -h, +2h, -2h. */
extern const double fd_steps[4];

/* One directional check: values of L at the four points, the analytic
 * derivative along both effective directions, and the error budget. */
typedef struct fd_sample {
    double l[4];     /* L at +h, -h, +2h, -2h */
    double an1, an2; /* <g, d_eff(h)>, <g, d_eff(2h)> */
    double e_l, e_g; /* error of one L value; of <g, d_eff(h)> */
} fd_sample;

/* dst = theta + s dir, rounded to float32 as the backend will hold it. */
void fd_perturb(double *dst, const double *theta, const double *dir, double s, size_t n);

/* Adds one tensor's share to s->an1, s->an2 and s->e_g: its gradient g,
 * g's error estimate eg and its four points pts[0..4) (fd_steps order),
 * n values each. */
void fd_accumulate(fd_sample *s, const double *g, const double *eg, double *const *pts,
                   size_t n, double h);

/* Prints one table row (and the terms on failure); 1 when the bound of
 * the header holds and FD(h) is finite. */
int fd_verdict(const char *layer, const char *shape, const char *what, double h,
               const fd_sample *s);

/* h for a layer on ctx's math mode (see the header). */
double fd_step(fn_context *ctx);

#endif
