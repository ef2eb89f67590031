/* reduce_cpu.h (private) — the column sums over the batch that the CPU
 * layers share (db of the block and of the linear layer), accumulated in
 * double in a fixed order, so results are deterministic. */
#ifndef FUSENET_SRC_REDUCE_CPU_H
#define FUSENET_SRC_REDUCE_CPU_H

#include <math.h>

/* Column sums over the batch run over this many columns at a time, so their
 * double accumulators live on the stack and rows are read contiguously. */
enum { FN_CPU_COLUMN_CHUNK = 256 };

/* A parameter gradient's value from this backward's term s, by its
 * grad_beta (param.h): s written when beta is 0 (the old value never
 * read), old + s when 1, else beta * old + s rounded once. */
static inline void fn_cpu_store_grad(float *g, float beta, float s)
{
    *g = beta == 0.0f ? s : beta == 1.0f ? *g + s : fmaf(beta, *g, s);
}

/* out[c] = beta * out[c] + sum_n a[n, c] (fn_cpu_store_grad), each
 * column's sum in double over the rows in order, rounded to float once. */
void fn_cpu_column_sums(float *out /* [cols] */, float beta, const float *a /* [rows, cols] */,
                        int rows, int cols);

#endif
