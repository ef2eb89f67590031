/* reduce_cpu.c — column sums over the batch for the CPU layers (see
 * reduce_cpu.h). */
#include "nn/reduce_cpu.h"

#include <stddef.h>

void fn_cpu_column_sums(float *out /* [cols] */, float beta, const float *a /* [rows, cols] */,
                        int rows, int cols)
{
    for (int c0 = 0; c0 < cols; c0 += FN_CPU_COLUMN_CHUNK) {
        const int c1 = c0 + FN_CPU_COLUMN_CHUNK < cols ? c0 + FN_CPU_COLUMN_CHUNK : cols;
        double s[FN_CPU_COLUMN_CHUNK] = {0};
        for (int n = 0; n < rows; n++)
            for (int c = c0; c < c1; c++)
                s[c - c0] += (double)a[(size_t)n * cols + (size_t)c];
        for (int c = c0; c < c1; c++)
            fn_cpu_store_grad(&out[c], beta, (float)s[c - c0]);
    }
}
