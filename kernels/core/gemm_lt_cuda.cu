/* gemm_lt_cuda.cu — products through cuBLASLt with the algorithm chosen by
 * a rule (gemm_lt_cuda.h), and the context's table of those choices.
 *
 * The rule: ask cuBLASLt's heuristic for its candidates, best first, and
 * take the first that does not split k so thin that each part sums fewer
 * than kMinSplitDepth of its terms. cuBLAS's own pick (what cublasGemmEx
 * runs) is the first candidate, and for small batches it often splits k
 * across the whole GPU and sums the parts in a second kernel: in a CUDA
 * graph on an H200, fp32, the forward product of a 32-row batch from 64 to
 * 128 features took 8.9 us split into 132 parts of k = 64, and 2.97 us in
 * the heuristic's first unsplit kernel; a 256-row batch's product onto 10
 * outputs 6.5 us split in 66 parts of k = 512 and 5.5 us in 33, the
 * gradient back through those 10 outputs (k = 10) 5.4 us split and 2.4 us
 * not. Splits of 8 terms and more (the products of 8192-wide layers split
 * in few parts of thousands) stay as cuBLAS picks them. Measured by
 * scripts/gemm_candidates.cu, which times every candidate of such shapes.
 * A bfloat16 C is rounded once, from the fp32 sum: a candidate that sums
 * the parts of a split k in the output's type (cuBLASLt's in-place or
 * output-type reduction) would round each part to bfloat16, so it is
 * skipped too (the bfloat16 momentum buffer's error bound, sgd.h, counts
 * one rounding a step). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/gemm_lt_cuda.h"

enum {
    kMinSplitDepth = 8, /* of k's terms a part of a split product must sum */
    kCandidates = 16,   /* the heuristic's candidates looked at */
    kCacheEntries = 64  /* shapes remembered a context */
};

/* What the choice depends on; all ints, so memcmp compares it. */
struct lt_key {
    int compute, ab_type, c_type, ta, tb, m, n, k, lda, ldb, ldc;
    int align_a, align_b, align_c; /* bytes: the pointers' largest power-of-two divisor, <= 256 */
};

struct lt_entry {
    lt_key key;
    cublasLtMatmulAlgo_t algo;
};

struct fn_gemm_lt_cache {
    int count;
    lt_entry entries[kCacheEntries];
};

fn_status fn_gemm_lt_cache_create(fn_gemm_lt_cache **out)
{
    *out = (fn_gemm_lt_cache *)calloc(1, sizeof **out);
    return *out ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory for cuBLASLt's choices");
}

void fn_gemm_lt_cache_destroy(fn_gemm_lt_cache *cache) { free(cache); }

static int alignment(const void *p)
{
    const uintptr_t a = (uintptr_t)p;
    const uintptr_t low = a & (~a + 1); /* the lowest set bit; 0 for NULL */
    return low == 0 || low > 256 ? 256 : (int)low;
}

static const cublasLtMatmulAlgo_t *remembered(const fn_gemm_lt_cache *cache, const lt_key *key)
{
    for (int i = 0; i < cache->count; i++)
        if (memcmp(&cache->entries[i].key, key, sizeof *key) == 0)
            return &cache->entries[i].algo;
    return NULL;
}

static void remember(fn_gemm_lt_cache *cache, const lt_key *key, const cublasLtMatmulAlgo_t *algo)
{
    if (cache->count < kCacheEntries)
        cache->entries[cache->count++] = lt_entry{*key, *algo};
}

/* The split parts of k each hold fewer than kMinSplitDepth terms. */
static bool split_too_thin(const cublasLtMatmulAlgo_t *algo, int k)
{
    int splits = 1;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                             sizeof splits, &written) != CUBLAS_STATUS_SUCCESS)
        return false;
    return splits > 1 && (long long)splits * kMinSplitDepth > (long long)k;
}

/* A split product whose parts are summed in C's type, C bfloat16. */
static bool parts_rounded(const cublasLtMatmulAlgo_t *algo, const lt_key *key)
{
    if (key->c_type != (int)CUDA_R_16BF)
        return false;
    int splits = 1;
    uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                             sizeof splits, &written) != CUBLAS_STATUS_SUCCESS ||
        splits <= 1)
        return false;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                             sizeof scheme, &written) != CUBLAS_STATUS_SUCCESS)
        return true; /* unknown: not trusted */
    return scheme == CUBLASLT_REDUCTION_SCHEME_INPLACE ||
           scheme == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
}

static fn_status choose(const fn_cuda_state *s, cublasLtMatmulDesc_t op,
                        cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                        cublasLtMatrixLayout_t lc, const lt_key *key, cublasLtMatmulAlgo_t *algo)
{
    cublasLtMatmulPreferenceOpaque_t pref_storage;
    cublasLtMatmulPreference_t pref = &pref_storage;
    FN_CUBLAS_CHECK(cublasLtMatmulPreferenceInit(pref));
    const uint64_t workspace = s->cublas_workspace_bytes;
    const uint32_t align[3] = {(uint32_t)key->align_a, (uint32_t)key->align_b,
                               (uint32_t)key->align_c};
    FN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
    FN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align[0], sizeof align[0]));
    FN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align[1], sizeof align[1]));
    FN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align[2], sizeof align[2]));
    FN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align[2], sizeof align[2]));

    cublasLtMatmulHeuristicResult_t found[kCandidates];
    int count = 0;
    FN_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(s->lt, op, la, lb, lc, lc, pref, kCandidates,
                                                   found, &count));
    int pick = -1;
    for (int i = 0; i < count && pick < 0; i++)
        if (found[i].state == CUBLAS_STATUS_SUCCESS && !split_too_thin(&found[i].algo, key->k) &&
            !parts_rounded(&found[i].algo, key))
            pick = i;
    /* Every candidate splits thin: the first that does not add its parts
     * rounded to C's type, else cuBLAS's own pick. */
    for (int i = 0; i < count && pick < 0; i++)
        if (found[i].state == CUBLAS_STATUS_SUCCESS && !parts_rounded(&found[i].algo, key))
            pick = i;
    if (pick < 0 && count > 0 && found[0].state == CUBLAS_STATUS_SUCCESS)
        pick = 0;
    if (pick < 0)
        return fn_fail(FN_ERR_CUDA, "cuBLASLt has no algorithm for the product [%d x %d x %d]",
                       key->m, key->n, key->k);
    *algo = found[pick].algo;
    return FN_OK;
}

fn_status fn_gemm_lt(fn_context *ctx, cublasComputeType_t compute, cudaDataType_t ab_type,
                     cudaDataType_t c_type, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, float alpha, const void *a, int lda, const void *b, int ldb,
                     float beta, void *c, int ldc)
{
    fn_cuda_state *s = ctx->cuda;
    cublasLtMatmulDescOpaque_t op_storage;
    cublasLtMatrixLayoutOpaque_t la_storage, lb_storage, lc_storage;
    cublasLtMatmulDesc_t op = &op_storage;
    cublasLtMatrixLayout_t la = &la_storage, lb = &lb_storage, lc = &lc_storage;
    FN_CUBLAS_CHECK(cublasLtMatmulDescInit(op, compute, CUDA_R_32F));
    FN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    FN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    /* Layouts as stored: op(A) is [m, k], op(B) [k, n]. */
    const bool a_n = ta == CUBLAS_OP_N, b_n = tb == CUBLAS_OP_N;
    FN_CUBLAS_CHECK(cublasLtMatrixLayoutInit(la, ab_type, a_n ? m : k, a_n ? k : m, lda));
    FN_CUBLAS_CHECK(cublasLtMatrixLayoutInit(lb, ab_type, b_n ? k : n, b_n ? n : k, ldb));
    FN_CUBLAS_CHECK(cublasLtMatrixLayoutInit(lc, c_type, m, n, ldc));

    const lt_key key = {(int)compute, (int)ab_type, (int)c_type, (int)ta, (int)tb, m, n, k,
                        lda, ldb, ldc, alignment(a), alignment(b), alignment(c)};
    const cublasLtMatmulAlgo_t *algo = remembered(s->gemm_algos, &key);
    cublasLtMatmulAlgo_t chosen;
    if (!algo) {
        FN_TRY(choose(s, op, la, lb, lc, &key, &chosen));
        remember(s->gemm_algos, &key, &chosen);
        algo = &chosen;
    }
    FN_CUBLAS_CHECK(cublasLtMatmul(s->lt, op, &alpha, a, la, b, lb, &beta, c, lc, c, lc, algo,
                                   fn_ctx_cublas_workspace(ctx), s->cublas_workspace_bytes,
                                   fn_ctx_stream(ctx)));
    return FN_OK;
}
