/* infer_product.h (private) — the matrix product of a network built for
 * inference (fn_layer.forward_only: a weights file's or an export's
 * network, which predict, export --check and fn_infer run), on the CPU:
 *
 *   y[n][o] = (sum_k x[n][k] w[o][k]) + b[o]
 *
 * with every output element reduced in one fixed order that depends on the
 * width `in` alone: never on the number of rows, a row's place among them,
 * the threads or the blocking. So a row's outputs are the same bits in any
 * batch (BLAS's sgemm picks its kernels, edges and splits by the shape, and
 * its bits change with the batch). The order: FN_INFER_LANES partial sums,
 * partial j taking the terms k = j, j + 8, j + 16, ... in increasing k,
 * each term rounded to float32 and added in float32, then the partials
 * added as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), then the
 * bias. Strict IEEE float32 (no contraction into FMA: ISO C, no
 * -ffast-math), so the bits are the same on every x86-64 or other IEEE
 * machine as well. Threads (the context's workers) split rows and outputs,
 * never k. The GPU's counterpart is infer_product_cuda.h. */
#ifndef FUSENET_CORE_INFER_PRODUCT_H
#define FUSENET_CORE_INFER_PRODUCT_H

#include "fusenet/device.h"

/* The partial sums over k each output element keeps. */
enum { FN_INFER_LANES = 8 };

/* y = x w^T (+ bias when bias is not NULL) on a CPU context's threads. */
void fn_infer_product(fn_context *ctx, float *y /* [n, out] */, const float *x /* [n, in] */,
                      const float *w /* [out, in] */, const float *bias /* [out] or NULL */,
                      int n, int in, int out);

#endif
