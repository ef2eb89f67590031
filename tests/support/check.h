/* check.h — comparison helpers of the gradient-check suite: seeded random
 * fill, float <-> double conversion, the tolerance rule
 * |a - r| <= atol + rtol |r| with its largest violation, and the table every
 * comparison prints one row of:
 *
 *   layer | shape (N,in,out,G,slope) | tensor | max err | at | tolerance | ok/FAIL
 *
 * Nothing here calls the library, so tier-1 tests link without a backend. */
#ifndef FN_TEST_CHECK_H
#define FN_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Unit roundoffs: float32 (24-bit significand), and what a TF32 tensor-core
 * product may do to an operand: keep 11 significant bits, by rounding (2^-11)
 * or by dropping the low 13 bits of the float (truncation, up to 2^-10). */
#define CHK_U32 0x1p-24
#define CHK_UTF32 0x1p-10
/* bfloat16 keeps 8 significant bits; the bf16 mode rounds operands to
 * nearest itself (to_bf16_kernel) before cuBLAS sees them: 2^-8. */
#define CHK_UBF16 0x1p-8

/* splitmix64: a tiny, well-mixed generator, enough for test data. */
typedef struct chk_rng {
    uint64_t state;
} chk_rng;

chk_rng chk_rng_seed(uint64_t seed);
uint64_t chk_rng_next(chk_rng *rng);
/* Uniform in [lo, hi), rounded to the nearest float32 so that the backend
 * (float32) and the reference (float64) see exactly the same numbers. */
double chk_uniform(chk_rng *rng, double lo, double hi);
void chk_fill(double *a, size_t n, double lo, double hi, chk_rng *rng);
/* chk_fill's draws, each rounded to float. */
void chk_fill_float(float *a, size_t n, double lo, double hi, chk_rng *rng);

/* calloc that aborts with a message: a test without memory cannot go on. */
double *chk_alloc(size_t n);
float *chk_alloc_float(size_t n);

void chk_to_float(float *dst, const double *src, size_t n);
void chk_to_double(double *dst, const float *src, size_t n);

/* |a - r| <= atol * (scale ? scale[i] : 1) + rtol |r|, element by element;
 * scale lets atol follow a per-element error estimate. */
typedef struct chk_tol {
    double atol, rtol;
    const double *scale; /* [count] or NULL */
} chk_tol;

/* What one comparison found. */
typedef struct chk_result {
    double max_err;   /* max |a - r| */
    size_t max_at;    /* where */
    double worst;     /* max |a - r| / bound: > 1 fails (NaN counts as fail) */
    size_t worst_at;
    double max_bound; /* the largest per-element bound, for the table */
    int ok;
} chk_result;

chk_result chk_measure(const double *a, const double *r, size_t count, chk_tol tol);

/* Prints the table header (once per test program is enough). */
void chk_table_header(const char *title);
/* "(N,in,out,G,slope)"; pass groups <= 0 or slope < 0 for "-". */
void chk_shape(char *buf, size_t size, int batch, int in, int out, int groups, double slope);
/* One free-form row. */
void chk_table_row(const char *layer, const char *shape, const char *tensor, double err,
                   const char *at, const char *tol, int ok);

/* Compares a (the backend) with r (the reference) over a [rows, cols]
 * tensor, prints one row, and on failure one more line with the worst
 * element: its place, both values and its bound. Returns 1 when ok. */
int chk_compare(const char *layer, const char *shape, const char *tensor, const double *a,
                const double *r, int rows, int cols, chk_tol tol);

/* A scalar comparison |a - r| <= tol, one row. Returns 1 when ok. */
int chk_compare_scalar(const char *layer, const char *shape, const char *what, double a,
                       double r, double tol);

double chk_max_abs(const double *a, size_t n);

/* ||a - r||_F / ||r||_F over n values (||a - r||_F when r is all zero),
 * summed in double; _f: of float arrays. */
double chk_relative_error(const double *a, const double *r, size_t n);
double chk_relative_error_f(const float *a, const float *r, size_t n);

#endif
