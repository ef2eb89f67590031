/* infer_product.c — the CPU's batch-invariant product (infer_product.h).
 *
 * The eight partial sums of an element are two 4-float vectors (GCC's
 * vector extension, which Clang shares: element-wise IEEE operations, so
 * lane j computes exactly the scalar sequence s_j += x[k] w[k] and a
 * vector holds four such sequences side by side). A micro-kernel keeps the
 * partials of 2 rows x 2 outputs in registers and reads each x and w
 * vector once for two products; the rows and outputs a tile leaves over go
 * through the one-element kernel, whose lanes do the same operations, so
 * an element's bits do not depend on which kernel computes it. */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/infer_product.h"
#include "core/workers.h"

typedef float v4 __attribute__((vector_size(16)));

_Static_assert(FN_INFER_LANES == 8, "the partial sums are two 4-float vectors");

/* Tiles the threads share out: TILE_ROWS rows x TILE_OUTS outputs, the
 * rows of x and of w a tile reads staying in cache while it runs. */
enum { TILE_ROWS = 32, TILE_OUTS = 32 };
/* A thread's share is at least this many multiply-adds, so a small product
 * is not spread over threads that cost more to wake than they save. */
enum { MIN_TERMS_PER_PART = 1 << 18 };

static inline v4 load4(const float *p)
{
    v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* One element's eight partials, lanes 0-3 in lo and 4-7 in hi. */
typedef struct partials {
    v4 lo, hi;
} partials;

/* The partials' fixed combination, then the bias. */
static inline float finish(partials s, const float *bias, int o)
{
    const float sum = ((s.lo[0] + s.lo[1]) + (s.lo[2] + s.lo[3])) +
                      ((s.hi[0] + s.hi[1]) + (s.hi[2] + s.hi[3]));
    return bias ? sum + bias[o] : sum;
}

/* The terms past the last whole group of eight, each into its lane. */
static inline void tail(partials *s, const float *x, const float *w, int k0, int in)
{
    for (int k = k0; k < in; k++) {
        const int j = k - k0;
        const float t = x[k] * w[k];
        if (j < 4)
            s->lo[j] += t;
        else
            s->hi[j - 4] += t;
    }
}

/* y[0][0] of one row x and one output w. */
static float dot1(const float *x, const float *w, int in, const float *bias, int o)
{
    partials s = {{0}, {0}};
    int k = 0;
    for (; k + FN_INFER_LANES <= in; k += FN_INFER_LANES) {
        s.lo += load4(x + k) * load4(w + k);
        s.hi += load4(x + k + 4) * load4(w + k + 4);
    }
    tail(&s, x, w, k, in);
    return finish(s, bias, o);
}

/* y [2, 2 of out] for rows x0, x1 and outputs w0, w1 (o, o + 1). */
static void dot2x2(float *y, int out, const float *x0, const float *x1, const float *w0,
                   const float *w1, int in, const float *bias, int o)
{
    partials s00 = {{0}, {0}}, s01 = s00, s10 = s00, s11 = s00;
    int k = 0;
    for (; k + FN_INFER_LANES <= in; k += FN_INFER_LANES) {
        const v4 a0 = load4(x0 + k), a1 = load4(x1 + k);
        const v4 b0 = load4(w0 + k), b1 = load4(w1 + k);
        s00.lo += a0 * b0;
        s01.lo += a0 * b1;
        s10.lo += a1 * b0;
        s11.lo += a1 * b1;
        const v4 c0 = load4(x0 + k + 4), c1 = load4(x1 + k + 4);
        const v4 d0 = load4(w0 + k + 4), d1 = load4(w1 + k + 4);
        s00.hi += c0 * d0;
        s01.hi += c0 * d1;
        s10.hi += c1 * d0;
        s11.hi += c1 * d1;
    }
    tail(&s00, x0, w0, k, in);
    tail(&s01, x0, w1, k, in);
    tail(&s10, x1, w0, k, in);
    tail(&s11, x1, w1, k, in);
    y[0] = finish(s00, bias, o);
    y[1] = finish(s01, bias, o + 1);
    y[out] = finish(s10, bias, o);
    y[out + 1] = finish(s11, bias, o + 1);
}

typedef struct product {
    float *y;          /* [n, out] */
    const float *x;    /* [n, in] */
    const float *w;    /* [out, in] */
    const float *bias; /* [out] or NULL */
    int n, in, out, out_tiles;
    int first_row_tile; /* the tile numbers of this job start here */
} product;

static void tile(const product *p, int r0, int r1, int o0, int o1)
{
    const size_t in = (size_t)p->in, out = (size_t)p->out;
    int r = r0;
    for (; r + 2 <= r1; r += 2) {
        const float *x0 = p->x + (size_t)r * in, *x1 = x0 + in;
        float *y = p->y + (size_t)r * out;
        int o = o0;
        for (; o + 2 <= o1; o += 2)
            dot2x2(y + o, p->out, x0, x1, p->w + (size_t)o * in, p->w + (size_t)(o + 1) * in,
                   p->in, p->bias, o);
        for (; o < o1; o++) {
            y[o] = dot1(x0, p->w + (size_t)o * in, p->in, p->bias, o);
            y[out + (size_t)o] = dot1(x1, p->w + (size_t)o * in, p->in, p->bias, o);
        }
    }
    for (; r < r1; r++)
        for (int o = o0; o < o1; o++)
            p->y[(size_t)r * out + (size_t)o] =
                dot1(p->x + (size_t)r * in, p->w + (size_t)o * in, p->in, p->bias, o);
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* Tiles [t0, t1), numbered row tile by row tile. */
static void tiles(void *arg, int t0, int t1)
{
    const product *p = arg;
    for (int t = t0; t < t1; t++) {
        const int r0 = (p->first_row_tile + t / p->out_tiles) * TILE_ROWS;
        const int o0 = (t % p->out_tiles) * TILE_OUTS;
        tile(p, r0, min_int(r0 + TILE_ROWS, p->n), o0, min_int(o0 + TILE_OUTS, p->out));
    }
}

void fn_infer_product(fn_context *ctx, float *y, const float *x, const float *w,
                      const float *bias, int n, int in, int out)
{
    if (n <= 0 || out <= 0)
        return;
    product p = {.y = y, .x = x, .w = w, .bias = bias, .n = n, .in = in, .out = out,
                 .out_tiles = (out + TILE_OUTS - 1) / TILE_OUTS};
    const int row_tiles = (n + TILE_ROWS - 1) / TILE_ROWS;
    /* A tile's multiply-adds: a batch of one row has tiles of one row. */
    const double terms =
        (double)min_int(n, TILE_ROWS) * min_int(out, TILE_OUTS) * (in > 0 ? in : 1);
    const int grain = terms >= MIN_TERMS_PER_PART ? 1 : (int)(MIN_TERMS_PER_PART / terms) + 1;
    /* Jobs of whole row tiles, their tiles counted in an int. */
    const int per_job = INT_MAX / p.out_tiles;
    for (int r = 0, rows; r < row_tiles; r += rows) {
        rows = min_int(per_job, row_tiles - r);
        p.first_row_tile = r;
        fn_workers_for(ctx ? ctx->workers : NULL, rows * p.out_tiles, grain, tiles, &p);
    }
}
