/* check.c — seeded data, conversions, the tolerance rule and the comparison
 * table of the gradient-check suite (see check.h). */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

chk_rng chk_rng_seed(uint64_t seed) { return (chk_rng){.state = seed}; }

uint64_t chk_rng_next(chk_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double chk_uniform(chk_rng *rng, double lo, double hi)
{
    double u = (double)(chk_rng_next(rng) >> 11) * 0x1p-53;
    return (double)(float)(lo + (hi - lo) * u);
}

void chk_fill(double *a, size_t n, double lo, double hi, chk_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        a[i] = chk_uniform(rng, lo, hi);
}

void chk_fill_float(float *a, size_t n, double lo, double hi, chk_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        a[i] = (float)chk_uniform(rng, lo, hi);
}

static void *alloc_or_abort(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "check: out of memory for %zu elements\n", n);
        abort();
    }
    return p;
}

double *chk_alloc(size_t n) { return alloc_or_abort(n, sizeof(double)); }
float *chk_alloc_float(size_t n) { return alloc_or_abort(n, sizeof(float)); }

void chk_to_float(float *dst, const double *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

void chk_to_double(double *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

double chk_max_abs(const double *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

chk_result chk_measure(const double *a, const double *r, size_t count, chk_tol tol)
{
    chk_result res = {.ok = 1};
    for (size_t i = 0; i < count; i++) {
        double err = fabs(a[i] - r[i]);
        double bound = tol.atol * (tol.scale ? tol.scale[i] : 1.0) + tol.rtol * fabs(r[i]);
        double ratio = bound > 0 ? err / bound : (err == 0 ? 0 : INFINITY);
        if (isnan(err))
            ratio = INFINITY;
        if (!(err <= res.max_err)) {
            res.max_err = err;
            res.max_at = i;
        }
        if (ratio > res.worst) {
            res.worst = ratio;
            res.worst_at = i;
        }
        res.max_bound = bound > res.max_bound ? bound : res.max_bound;
        if (!(err <= bound))
            res.ok = 0;
    }
    return res;
}

void chk_table_header(const char *title)
{
    printf("\n== %s\n", title);
    printf("%-14s | %-26s | %-14s | %-9s | %-9s | %-22s | %s\n", "layer",
           "shape (N,in,out,G,slope)", "tensor", "max err", "at", "tolerance", "ok/FAIL");
    printf("---------------+----------------------------+----------------+-----------+"
           "-----------+------------------------+--------\n");
}

void chk_shape(char *buf, size_t size, int batch, int in, int out, int groups, double slope)
{
    char g[16] = "-", s[16] = "-";
    if (groups > 0)
        snprintf(g, sizeof g, "%d", groups);
    if (slope >= 0)
        snprintf(s, sizeof s, "%g", slope);
    snprintf(buf, size, "(%d,%d,%d,%s,%s)", batch, in, out, g, s);
}

void chk_table_row(const char *layer, const char *shape, const char *tensor, double err,
                   const char *at, const char *tol, int ok)
{
    printf("%-14s | %-26s | %-14s | %9.2e | %-9s | %-22s | %s\n", layer, shape, tensor, err, at,
           tol, ok ? "ok" : "FAIL");
    fflush(stdout);
}

static void place(char *buf, size_t size, size_t i, int cols)
{
    snprintf(buf, size, "[%zu,%zu]", i / (size_t)cols, i % (size_t)cols);
}

int chk_compare(const char *layer, const char *shape, const char *tensor, const double *a,
                const double *r, int rows, int cols, chk_tol tol)
{
    size_t count = (size_t)rows * (size_t)cols;
    chk_result res = chk_measure(a, r, count, tol);
    char at[48], tol_text[48];
    place(at, sizeof at, res.max_at, cols);
    /* With a per-element estimate, the largest atol is shown. */
    if (tol.scale)
        snprintf(tol_text, sizeof tol_text, "<=%.1e+%.1e|r|",
                 tol.atol * chk_max_abs(tol.scale, count), tol.rtol);
    else
        snprintf(tol_text, sizeof tol_text, "%.1e+%.1e|r|", tol.atol, tol.rtol);
    chk_table_row(layer, shape, tensor, res.max_err, at, tol_text, res.ok);
    if (!res.ok) {
        size_t i = res.worst_at;
        char worst_at[48];
        place(worst_at, sizeof worst_at, i, cols);
        double bound = tol.atol * (tol.scale ? tol.scale[i] : 1.0) + tol.rtol * fabs(r[i]);
        printf("    worst %s %s: got %.9g, reference %.9g, |diff| %.3e > bound %.3e "
               "(%.3g x)\n",
               tensor, worst_at, a[i], r[i], fabs(a[i] - r[i]), bound, res.worst);
    }
    return res.ok;
}

int chk_compare_scalar(const char *layer, const char *shape, const char *what, double a,
                       double r, double tol)
{
    double err = fabs(a - r);
    int ok = err <= tol;
    char tol_text[32];
    snprintf(tol_text, sizeof tol_text, "%.2e", tol);
    chk_table_row(layer, shape, what, err, "-", tol_text, ok);
    if (!ok)
        printf("    %s: got %.12g, expected %.12g, |diff| %.3e > %.3e\n", what, a, r, err, tol);
    return ok;
}

/* One body for both element types. */
#define RELATIVE_ERROR(name, T)                                   \
    double name(const T *a, const T *r, size_t n)                 \
    {                                                             \
        double num = 0.0, den = 0.0;                              \
        for (size_t i = 0; i < n; i++) {                          \
            const double d = (double)a[i] - (double)r[i];         \
            num += d * d;                                         \
            den += (double)r[i] * (double)r[i];                   \
        }                                                         \
        return den > 0.0 ? sqrt(num / den) : sqrt(num);           \
    }
RELATIVE_ERROR(chk_relative_error, double)
RELATIVE_ERROR(chk_relative_error_f, float)
