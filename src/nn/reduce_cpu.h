/* reduce_cpu.h (private) — the column sums over the batch that the CPU
 * layers share (db of the block and of the linear layer), accumulated in
 * double in a fixed order, so results are deterministic. */
#ifndef FUSENET_SRC_REDUCE_CPU_H
#define FUSENET_SRC_REDUCE_CPU_H

/* Column sums over the batch run over this many columns at a time, so their
 * double accumulators live on the stack and rows are read contiguously. */
enum { FN_CPU_COLUMN_CHUNK = 256 };

/* out[c] += sum_n a[n, c], each column's sum in double over the rows in
 * order, rounded to float once. */
void fn_cpu_add_column_sums(float *out /* [cols] */, const float *a /* [rows, cols] */, int rows,
                            int cols);

#endif
