/* gemm_candidates.cu — the measurement behind kernels/core/gemm_lt_cuda.cu's
 * rule: for the fp32 products of bench_small.sh's S and M networks, the time
 * of cublasGemmEx (cuBLAS's own pick) and of each of cuBLASLt's first eight
 * heuristic candidates, with its split of k (splitK) and the kernels it
 * launches; then, beyond the heuristic, every algorithm cuBLASLt has for the
 * types in every tile, stage, custom option and swizzle it accepts with k
 * whole (no second kernel), the fastest ten. Each is timed as products
 * captured in a CUDA graph (median of 7 replays: the way `train` replays a
 * step). Column-major m, n, k as gemm_cuda.cu passes them. A tool, not part
 * of the build:
 *
 *   nvcc -O2 -arch=sm_90 -o /tmp/gemm_candidates scripts/gemm_candidates.cu -lcublasLt -lcublas
 *   /tmp/gemm_candidates
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <vector>
#define CK(x)                                                                                      \
    do {                                                                                           \
        auto e_ = (x);                                                                             \
        if ((int)e_) {                                                                             \
            printf("err %d at %d\n", (int)e_, __LINE__);                                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
struct Shape {
    const char *name;
    cublasOperation_t ta, tb;
    int m, n, k;
};
struct Timed {
    float us;
    int algo, tile, stages, custom, swizzle;
};
static float time_graph(cudaStream_t s, cudaGraphExec_t ge) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 3; i++)
        cudaGraphLaunch(ge, s);
    std::vector<float> t;
    for (int r = 0; r < 7; r++) {
        cudaEventRecord(a, s);
        cudaGraphLaunch(ge, s);
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[3];
}
static const int kSurveyReps = 100;
static float *A, *B, *C;
static void *ws;
static const size_t wsb = 32 << 20;

/* Microseconds a product with `algo` takes, or -1 where it fails. */
static float time_algo(cublasLtHandle_t lt, cudaStream_t s, cublasLtMatmulDesc_t op,
                       cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                       cublasLtMatrixLayout_t lc, const cublasLtMatmulAlgo_t *algo)
{
    float one = 1, zero = 0;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    bool ok = true;
    for (int i = 0; i < kSurveyReps && ok; i++)
        ok = cublasLtMatmul(lt, op, &one, A, la, B, lb, &zero, C, lc, C, lc, algo, ws, wsb, s) ==
             CUBLAS_STATUS_SUCCESS;
    if (cudaStreamEndCapture(s, &g) != cudaSuccess || !ok) {
        cudaGetLastError();
        return -1;
    }
    if (cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
        cudaGetLastError();
        cudaGraphDestroy(g);
        return -1;
    }
    const float us = time_graph(s, ge) * 1000 / kSurveyReps;
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    return cudaGetLastError() == cudaSuccess ? us : -1;
}

/* The cuBLASLt description of a shape's fp32 product. */
struct Described {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
};
static Described describe(const Shape &sh)
{
    const int lda = sh.ta == CUBLAS_OP_N ? sh.m : sh.k, ldb = sh.tb == CUBLAS_OP_N ? sh.k : sh.n;
    Described d;
    CK(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &sh.ta, sizeof sh.ta));
    CK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &sh.tb, sizeof sh.tb));
    CK(cublasLtMatrixLayoutCreate(&d.la, CUDA_R_32F, sh.ta == CUBLAS_OP_N ? sh.m : sh.k,
                                  sh.ta == CUBLAS_OP_N ? sh.k : sh.m, lda));
    CK(cublasLtMatrixLayoutCreate(&d.lb, CUDA_R_32F, sh.tb == CUBLAS_OP_N ? sh.k : sh.n,
                                  sh.tb == CUBLAS_OP_N ? sh.n : sh.k, ldb));
    CK(cublasLtMatrixLayoutCreate(&d.lc, CUDA_R_32F, sh.m, sh.n, sh.m));
    return d;
}

static void survey(cublasLtHandle_t lt, cudaStream_t s, const Shape &sh)
{
    const Described d = describe(sh);
    const cublasLtMatmulDesc_t op = d.op;
    const cublasLtMatrixLayout_t la = d.la, lb = d.lb, lc = d.lc;
    int ids[128], nids = 0;
    CK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                CUDA_R_32F, CUDA_R_32F, 128, ids, &nids));
    std::vector<Timed> all;
    for (int a = 0; a < nids; a++) {
        cublasLtMatmulAlgo_t algo;
        if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                   CUDA_R_32F, CUDA_R_32F, ids[a], &algo) != CUBLAS_STATUS_SUCCESS)
            continue;
        int tiles[128], stages[128], ntiles = 0, nstages = 0, custom_max = 0, swz = 0;
        size_t bytes = 0;
        if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles,
                                              sizeof tiles, &bytes) == CUBLAS_STATUS_SUCCESS)
            ntiles = (int)(bytes / sizeof(int));
        if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, stages,
                                              sizeof stages, &bytes) == CUBLAS_STATUS_SUCCESS)
            nstages = (int)(bytes / sizeof(int));
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_max,
                                          sizeof custom_max, &bytes);
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swz,
                                          sizeof swz, &bytes);
        if (ntiles == 0) {
            tiles[0] = CUBLASLT_MATMUL_TILE_UNDEFINED;
            ntiles = 1;
        }
        if (nstages == 0) {
            stages[0] = 0;
            nstages = 1;
        }
        for (int t = 0; t < ntiles; t++)
            for (int st = 0; st < nstages; st++)
                for (int c = 0; c <= std::min(custom_max, 3); c++)
                    for (int z = 0; z <= (swz ? 1 : 0); z++) {
                        const int one_split = 1;
                        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID,
                                                             &tiles[t], sizeof tiles[t]);
                        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                                             &stages[st], sizeof stages[st]);
                        cublasLtMatmulAlgoConfigSetAttribute(
                            &algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c, sizeof c);
                        cublasLtMatmulAlgoConfigSetAttribute(
                            &algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &z, sizeof z);
                        cublasLtMatmulAlgoConfigSetAttribute(
                            &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one_split, sizeof one_split);
                        cublasLtMatmulHeuristicResult_t check;
                        if (cublasLtMatmulAlgoCheck(lt, op, la, lb, lc, lc, &algo, &check) !=
                                CUBLAS_STATUS_SUCCESS ||
                            check.workspaceSize > wsb)
                            continue;
                        const float us = time_algo(lt, s, op, la, lb, lc, &algo);
                        if (us > 0)
                            all.push_back({us, ids[a], tiles[t], stages[st], c, z});
                    }
    }
    std::sort(all.begin(), all.end(), [](const Timed &x, const Timed &y) { return x.us < y.us; });
    printf("%-22s %zu unsplit configurations timed; fastest:\n", sh.name, all.size());
    for (size_t i = 0; i < all.size() && i < 10; i++)
        printf("%-22s   algo %d tile %d stages %d custom %d swizzle %d: %6.2f us\n", "",
               all[i].algo, all[i].tile, all[i].stages, all[i].custom, all[i].swizzle, all[i].us);
    fflush(stdout);
}

int main() {
    Shape shapes[] = {
        {"S fwd 32x64->128", CUBLAS_OP_T, CUBLAS_OP_N, 128, 32, 64},
        {"S fwd 32x128->128", CUBLAS_OP_T, CUBLAS_OP_N, 128, 32, 128},
        {"S fwd 32x128->10", CUBLAS_OP_T, CUBLAS_OP_N, 10, 32, 128},
        {"S dW 128x128 k32", CUBLAS_OP_N, CUBLAS_OP_T, 128, 128, 32},
        {"S dx 32x128 <-128", CUBLAS_OP_N, CUBLAS_OP_N, 128, 32, 128},
        {"S dx 32x128 <-10", CUBLAS_OP_N, CUBLAS_OP_N, 128, 32, 10},
        {"M fwd 256x256->512", CUBLAS_OP_T, CUBLAS_OP_N, 512, 256, 256},
        {"M fwd 256x512->512", CUBLAS_OP_T, CUBLAS_OP_N, 512, 256, 512},
        {"M fwd 256x512->10", CUBLAS_OP_T, CUBLAS_OP_N, 10, 256, 512},
        {"M dW 512x512 k256", CUBLAS_OP_N, CUBLAS_OP_T, 512, 512, 256},
        {"M dW 512x256 k256", CUBLAS_OP_N, CUBLAS_OP_T, 256, 512, 256},
        {"M dx 256x512 <-512", CUBLAS_OP_N, CUBLAS_OP_N, 512, 256, 512},
        {"M dx 256x512 <-10", CUBLAS_OP_N, CUBLAS_OP_N, 512, 256, 10},
    };
    CK(cudaMalloc(&A, 4 << 20));
    CK(cudaMalloc(&B, 4 << 20));
    CK(cudaMalloc(&C, 4 << 20));
    CK(cudaMalloc(&ws, wsb));
    cudaMemset(A, 0, 4 << 20);
    cudaMemset(B, 0, 4 << 20);
    cudaMemset(C, 0, 4 << 20);
    cudaStream_t s;
    cudaStreamCreate(&s);
    cublasHandle_t h;
    CK(cublasCreate(&h));
    CK(cublasSetStream(h, s));
    CK(cublasSetWorkspace(h, ws, wsb));
    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt));
    const int reps = 200; /* of the heuristic's candidates */
    float one = 1, zero = 0;
    for (auto &sh : shapes) {
        int lda = sh.ta == CUBLAS_OP_N ? sh.m : sh.k, ldb = sh.tb == CUBLAS_OP_N ? sh.k : sh.n;
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < reps; i++)
            CK(cublasGemmEx(h, sh.ta, sh.tb, sh.m, sh.n, sh.k, &one, A, CUDA_R_32F, lda, B,
                            CUDA_R_32F, ldb, &zero, C, CUDA_R_32F, sh.m, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        CK(cudaStreamEndCapture(s, &g));
        size_t nodes;
        cudaGraphGetNodes(g, NULL, &nodes);
        CK(cudaGraphInstantiate(&ge, g, 0));
        printf("%-22s gemmEx: %6.2f us/op (%zu kernels/op)\n", sh.name,
               time_graph(s, ge) * 1000 / reps, nodes / reps);
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
        const Described d = describe(sh);
        const cublasLtMatmulDesc_t op = d.op;
        const cublasLtMatrixLayout_t la = d.la, lb = d.lb, lc = d.lc;
        cublasLtMatmulPreference_t pref;
        CK(cublasLtMatmulPreferenceCreate(&pref));
        CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsb, sizeof wsb));
        cublasLtMatmulHeuristicResult_t res[16];
        int nres = 0;
        CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 16, res, &nres));
        for (int r = 0; r < nres && r < 8; r++) {
            int splitk = 0, tile = 0, algo = 0;
            size_t w;
            cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                 &splitk, sizeof splitk, &w);
            cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                 sizeof tile, &w);
            cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_ID, &algo,
                                                 sizeof algo, &w);
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            for (int i = 0; i < reps; i++)
                CK(cublasLtMatmul(lt, op, &one, A, la, B, lb, &zero, C, lc, C, lc, &res[r].algo, ws,
                                  wsb, s));
            CK(cudaStreamEndCapture(s, &g));
            cudaGraphGetNodes(g, NULL, &nodes);
            CK(cudaGraphInstantiate(&ge, g, 0));
            printf(
                "%-22s   lt[%d] algo %d tile %d splitK %d ws %zu: %6.2f us/op (%zu kernels/op)\n",
                "", r, algo, tile, splitk, res[r].workspaceSize, time_graph(s, ge) * 1000 / reps,
                nodes / reps);
            cudaGraphExecDestroy(ge);
            cudaGraphDestroy(g);
        }
    }
    printf("\nbeyond the heuristic, k whole:\n");
    for (auto &sh : shapes)
        survey(lt, s, sh);
    return 0;
}
