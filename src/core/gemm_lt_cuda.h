/* gemm_lt_cuda.h (private, CUDA only) — one column-major product
 *   C [m, n] = alpha op(A) op(B) + beta C
 * through cuBLASLt, with its algorithm chosen once for each shape, layout,
 * type and pointer alignment by a fixed rule (kernels/core/gemm_lt_cuda.cu) and
 * kept in the context: cuBLAS's own first choice, unless that splits the
 * inner dimension k into parts too thin to pay for the second kernel that
 * sums them. A rule, not a timing, so every run picks the same algorithm
 * and gets the same bits. gemm_cuda.cu's products all come through here. */
#ifndef FUSENET_CORE_GEMM_LT_CUDA_H
#define FUSENET_CORE_GEMM_LT_CUDA_H

#include <cublasLt.h>

#include "core/device_impl.h"

/* The algorithms chosen so far on a context (a small table; shapes beyond
 * it are chosen on every call, correct but slower on the host). */
typedef struct fn_gemm_lt_cache fn_gemm_lt_cache;

fn_status fn_gemm_lt_cache_create(fn_gemm_lt_cache **out);
void fn_gemm_lt_cache_destroy(fn_gemm_lt_cache *cache); /* NULL is fine */

/* A and B of ab_type, C of c_type, scaled and accumulated in fp32 by
 * `compute` (CUBLAS_COMPUTE_32F or _32F_FAST_TF32), on the context's
 * current stream (fn_ctx_stream: the side one between fn_cuda_side_begin
 * and _end) with that stream's cuBLAS workspace. */
fn_status fn_gemm_lt(fn_context *ctx, cublasComputeType_t compute, cudaDataType_t ab_type,
                     cudaDataType_t c_type, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, float alpha, const void *a, int lda, const void *b, int ldb,
                     float beta, void *c, int ldc);

#endif
