/* norm_candidates.cu — the measurement behind kernels/block_cuda.cu's
 * kLoadsAhead: the fused block's normalisation kernels on the team path
 * <float4, 1 vector a lane> (K <= 128, the benchmark shape's K = 16), in
 * fp32 and bf16 storage of z and dz, as they were (one (sample, group) pair
 * or row a lane at a time: the copies named old_* below) against today's
 * kernels with 1, 2, 4 or 8 pairs (forward; 4 also on a grid of one
 * iteration a warp, "4 uncapp") and 1, 2 or 4 rows (backward; 4 also
 * held to 85 registers, three blocks a multiprocessor, spilling a few:
 * "4, 3/SM") loaded at once. Batch 2048 at the default out and groups makes the library's
 * forward grid stride (more than one iteration a warp on 132
 * multiprocessors) and the backward take 8 rows a warp in each chunk. Every candidate's outputs (y, mean, rstd; dz, dgamma,
 * dbeta, dbias) are compared bit for bit with the old kernels'; each is
 * timed with CUDA events (median of 7 rounds of 50 launches) against a
 * device copy of the bytes it must move, as bench's copy floor. A tool, not
 * part of the build; it includes the library's kernel file and calls none
 * of its host functions, so it links without the library:
 *
 *   nvcc -std=c++20 -O3 -arch=sm_90 -Isrc -Iinclude -o /tmp/norm_candidates \
 *       scripts/norm_candidates.cu -Xcompiler -ffunction-sections,-fdata-sections \
 *       -Xlinker --gc-sections
 *   /tmp/norm_candidates [batch out groups]    # default 1024 8192 512
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../kernels/block_cuda.cu"

/* The tool's own check: print and stop (the library's returns a status). */
#undef FN_CUDA_CHECK_NAMED
#define FN_CUDA_CHECK_NAMED(call, what)                                                            \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e_));                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the kernels as they were (one pair or row a lane at a time) ---- */

/* The column sums' last step as it was: one load, one addition a chunk. */
__device__ __forceinline__ float old_column_chunks_sum(const float *partials, int q, int c,
                                                       int chunks, int C)
{
    float s = 0.0f;
    for (int k = 0; k < chunks; k++)
        s += __ldcg(partials + ((size_t)k * 3 + q) * C + c);
    return s;
}

/* One team of `team` lanes per (sample, group); lane t holds vectors
 * t, t + team, ... of the group (coalesced), V floats each, at most R. */
template <typename Z, int V, int R>
__global__ void __launch_bounds__(kForwardThreads)
old_forward_team_kernel(float *y /* [N, C] */, float *mean /* [N, G] */, float *rstd /* [N, G] */,
                          const Z *z /* [N, C], x W^T without bias */,
                          const float *skip /* [N, C] added to y, or NULL */,
                          const float *bias /* [C] */, const float *gamma /* [C] */,
                          const float *beta /* [C] */, int N, int C, int G, int team, float eps,
                          float slope)
{
    FN_GRID_WAIT();
    const int K = C / G;
    const int t = threadIdx.x % team;
    const size_t pair = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / team;
    /* Lanes past the last pair stay to take part in the shuffles. */
    const bool active = pair < (size_t)N * G;
    const size_t n = active ? pair / G : 0;
    const int c0 = active ? (int)(pair % G) * K : 0;
    const Z *zg = z + n * C + c0;

    float v[R][V];
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int j = (t + r * team) * V;
        if (active && j < K) {
            float b[V];
            load_vec<V>(v[r], zg + j);
            load_vec<V>(b, bias + c0 + j);
#pragma unroll
            for (int e = 0; e < V; e++) {
                v[r][e] += b[e];
                sum += v[r][e];
            }
        }
    }
    const float mu = team_sum(sum, team) / (float)K;
    /* Variance as the mean of squared deviations: no cancellation. */
    float sq = 0.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int j = (t + r * team) * V;
        if (active && j < K) {
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float d = v[r][e] - mu;
                sq += d * d;
            }
        }
    }
    const float var = team_sum(sq, team) / (float)K;
    const float rs = 1.0f / sqrtf(var + eps);
    if (active && t == 0) {
        mean[pair] = mu;
        rstd[pair] = rs;
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int j = (t + r * team) * V;
        if (active && j < K) {
            float g[V], b[V], out[V];
            load_vec<V>(g, gamma + c0 + j);
            load_vec<V>(b, beta + c0 + j);
#pragma unroll
            for (int e = 0; e < V; e++)
                out[e] = leaky2(g[e] * ((v[r][e] - mu) * rs) + b[e], slope);
            if (skip)
                add_vec<V>(out, skip + n * C + c0 + j);
            store_vec<V>(y + n * C + c0 + j, out);
        }
    }
}


/* Backward, team path. Block (tile, chunk): every warp covers the same tile
 * of 32/team whole groups, for rows chunk*rows_per_chunk + warp, + 8, ...;
 * it writes dz and accumulates dgamma, dbeta, dbias per column in registers,
 * then the block sums its warps into partials[chunk]; the tile's last
 * block adds the chunks into out (dgamma, dbeta, dbias; column_store). */
template <typename Z, int V, int R>
__global__ void __launch_bounds__(kBackwardWarps * kWarpSize)
old_backward_team_kernel(Z *dz /* [N, C] */, column_outputs<3> out,
                           float *partials /* [chunks, 3, C] */, int *tickets /* [tiles], 0 */,
                           float *dskip /* [N, C] gets dy, or NULL */,
                           const float *mean /* [N, G] */, const float *rstd /* [N, G] */,
                           const Z *z /* [N, C] */, const float *dy /* [N, C] */,
                           const float *bias /* [C] */, const float *gamma /* [C] */,
                           const float *beta /* [C] */, int N, int C, int G, int team,
                           int rows_per_chunk, float slope, float lr)
{
    FN_GRID_WAIT();
    __shared__ float smem[kBackwardWarps][kWarpSize * R * V];
    const int K = C / G;
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const int t = lane % team;
    const int groups_per_warp = kWarpSize / team;
    const int member = lane / team;
    const int g = blockIdx.x * groups_per_warp + member;
    const bool active = g < G;
    const int c0 = active ? g * K : 0;
    const int row0 = blockIdx.y * rows_per_chunk;
    const int row1 = min(N, row0 + rows_per_chunk);

    float gam[R][V], bet[R][V], bia[R][V];
    float acc_dgamma[R][V], acc_dbeta[R][V], acc_dbias[R][V];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int j = (t + r * team) * V;
        if (active && j < K) {
            load_vec<V>(gam[r], gamma + c0 + j);
            load_vec<V>(bet[r], beta + c0 + j);
            load_vec<V>(bia[r], bias + c0 + j);
        }
#pragma unroll
        for (int e = 0; e < V; e++) {
            acc_dgamma[r][e] = 0.0f;
            acc_dbeta[r][e] = 0.0f;
            acc_dbias[r][e] = 0.0f;
        }
    }

    /* Every lane of a warp runs the same rows, so the shuffles below see
     * the whole warp. */
    for (int n = row0 + warp; n < row1; n += kBackwardWarps) {
        const size_t row = (size_t)n * C + c0;
        const float mu = active ? mean[(size_t)n * G + g] : 0.0f;
        const float rs = active ? rstd[(size_t)n * G + g] : 0.0f;
        float zh[R][V], gh[R][V];
        float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int j = (t + r * team) * V;
            if (active && j < K) {
                float a[V], d[V];
                load_vec<V>(a, z + row + j);
                load_vec<V>(d, dy + row + j);
                if (dskip)
                    store_vec<V>(dskip + row + j, d);
#pragma unroll
                for (int e = 0; e < V; e++) {
                    zh[r][e] = ((a[e] + bia[r][e]) - mu) * rs;
                    const float du = dleaky2(d[e], gam[r][e] * zh[r][e] + bet[r][e], slope);
                    gh[r][e] = du * gam[r][e];
                    s1 += gh[r][e];
                    s2 += gh[r][e] * zh[r][e];
                    acc_dgamma[r][e] += du * zh[r][e];
                    acc_dbeta[r][e] += du;
                }
            }
        }
        const float m1 = team_sum(s1, team) / (float)K;
        const float m2 = team_sum(s2, team) / (float)K;
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int j = (t + r * team) * V;
            if (active && j < K) {
                float out[V];
#pragma unroll
                for (int e = 0; e < V; e++) {
                    out[e] = rs * (gh[r][e] - m1 - zh[r][e] * m2);
                    acc_dbias[r][e] += out[e];
                }
                store_vec<V>(dz + row + j, out);
            }
        }
    }

    const int tile0 = blockIdx.x * groups_per_warp * K;
    const int tile_cols = min(groups_per_warp * K, C - tile0);
    stage_column_partials<V, R>(partials, smem, acc_dgamma, 0, active, member, t, team, K, C,
                                tile0, tile_cols);
    stage_column_partials<V, R>(partials, smem, acc_dbeta, 1, active, member, t, team, K, C, tile0,
                                tile_cols);
    stage_column_partials<V, R>(partials, smem, acc_dbias, 2, active, member, t, team, K, C, tile0,
                                tile_cols);
    if (!block_arrived_last(&tickets[blockIdx.x], (int)gridDim.y))
        return;
    for (int c = threadIdx.x; c < tile_cols; c += blockDim.x)
        for (int q = 0; q < 3; q++)
            column_store(out.out[q] + tile0 + c,
                         old_column_chunks_sum(partials, q, tile0 + c, gridDim.y, C),
                         out.beta[q], lr);
}

/* ---- the measurement ---- */

struct bufs {
    int N, C, G, team, chunks, rows_per_chunk, sms;
    float *y, *mean, *rstd, *bias, *gamma, *beta, *dy, *partials, *grads /* [3, C] */;
    float *zf, *dzf;
    __nv_bfloat16 *zh, *dzh;
    int *tickets;
    float *copy_src, *copy_dst;
    bool backward; /* the statistics are the backward's input, not cleared */
};

template <typename Z> Z *z_of(bufs &b);
template <> float *z_of<float>(bufs &b) { return b.zf; }
template <> __nv_bfloat16 *z_of<__nv_bfloat16>(bufs &b) { return b.zh; }
template <typename Z> Z *dz_of(bufs &b);
template <> float *dz_of<float>(bufs &b) { return b.dzf; }
template <> __nv_bfloat16 *dz_of<__nv_bfloat16>(bufs &b) { return b.dzh; }

static float *device_floats(size_t n)
{
    float *p;
    FN_CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
    return p;
}

/* Deterministic values in [-scale, scale) + offset. */
static void fill(float *d, size_t n, unsigned seed, float scale, float offset)
{
    std::vector<float> h(n);
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = offset + scale * ((float)(s >> 8) / 8388608.0f - 1.0f);
    }
    FN_CUDA_CHECK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

__global__ void to_bf16_kernel(__nv_bfloat16 *d, const float *s, size_t n)
{
    FN_GRID_WAIT();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        d[i] = __float2bfloat16_rn(s[i]);
}

/* Today's forward with P pairs a lane, on the library's grid (at most
 * kStrideBlocksPerSm blocks a multiprocessor, then grid-stride) or, not
 * capped, one iteration a warp. */
template <typename Z, int P, bool capped = true>
static void forward_new(bufs &b)
{
    const size_t pairs = (size_t)b.N * b.G;
    const size_t per_warp = (size_t)P * (size_t)(kWarpSize / b.team);
    const size_t warps = (pairs + per_warp - 1) / per_warp;
    const size_t need = (warps * kWarpSize + kForwardThreads - 1) / kForwardThreads;
    const size_t blocks = capped ? std::min(need, kStrideBlocksPerSm * (size_t)b.sms) : need;
    fn_launch(nullptr, block_forward_team_kernel<Z, float, 4, 1, P>, (unsigned)blocks, kForwardThreads,
              0, 0, b.y, b.mean, b.rstd, z_of<Z>(b), nullptr, b.bias, b.gamma, b.beta, b.N, b.C,
              b.G, b.team, 1e-5f, 0.01f);
    FN_CUDA_CHECK(cudaGetLastError());
}

template <typename Z>
static void forward_old(bufs &b)
{
    const size_t pairs = (size_t)b.N * b.G;
    const size_t per_block = (size_t)(kForwardThreads / b.team);
    const size_t blocks = (pairs + per_block - 1) / per_block;
    fn_launch(nullptr, old_forward_team_kernel<Z, 4, 1>, (unsigned)blocks, kForwardThreads, 0, 0,
              b.y, b.mean, b.rstd, z_of<Z>(b), nullptr, b.bias, b.gamma, b.beta, b.N, b.C, b.G,
              b.team, 1e-5f, 0.01f);
    FN_CUDA_CHECK(cudaGetLastError());
}

static column_outputs<3> outputs(bufs &b)
{
    return {{b.grads, b.grads + b.C, b.grads + 2 * (size_t)b.C}, {0.0f, 0.0f, 0.0f}};
}

static dim3 backward_grid(const bufs &b)
{
    const int per_warp = kWarpSize / b.team;
    return dim3((unsigned)((b.G + per_warp - 1) / per_warp), (unsigned)b.chunks);
}

/* Today's backward with P rows a lane, MinBlocks blocks a multiprocessor
 * at least (0: ptxas chooses, as the library; 3: at most 85 registers). */
template <typename Z, int P, int MinBlocks = 0>
static void backward_new(bufs &b)
{
    fn_launch(nullptr, block_backward_team_kernel<Z, 4, 1, P, MinBlocks>, backward_grid(b),
              kBackwardWarps * kWarpSize, 0, 0, dz_of<Z>(b), outputs(b), b.partials, b.tickets,
              nullptr, b.mean, b.rstd, z_of<Z>(b), b.dy, b.bias, b.gamma, b.beta, b.N, b.C, b.G,
              b.team, b.rows_per_chunk, 0.01f, 0.0f);
    FN_CUDA_CHECK(cudaGetLastError());
}

template <typename Z>
static void backward_old(bufs &b)
{
    fn_launch(nullptr, old_backward_team_kernel<Z, 4, 1>, backward_grid(b),
              kBackwardWarps * kWarpSize, 0, 0, dz_of<Z>(b), outputs(b), b.partials, b.tickets,
              nullptr, b.mean, b.rstd, z_of<Z>(b), b.dy, b.bias, b.gamma, b.beta, b.N, b.C, b.G,
              b.team, b.rows_per_chunk, 0.01f, 0.0f);
    FN_CUDA_CHECK(cudaGetLastError());
}

/* Median ms of one launch: 7 rounds of 50. */
template <typename F>
static float time_ms(F &&launch)
{
    cudaEvent_t a, e;
    FN_CUDA_CHECK(cudaEventCreate(&a));
    FN_CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < 10; i++)
        launch();
    std::vector<float> t;
    for (int r = 0; r < 7; r++) {
        FN_CUDA_CHECK(cudaEventRecord(a, 0));
        for (int i = 0; i < 50; i++)
            launch();
        FN_CUDA_CHECK(cudaEventRecord(e, 0));
        FN_CUDA_CHECK(cudaEventSynchronize(e));
        float ms;
        FN_CUDA_CHECK(cudaEventElapsedTime(&ms, a, e));
        t.push_back(ms / 50.0f);
    }
    std::sort(t.begin(), t.end());
    FN_CUDA_CHECK(cudaEventDestroy(a));
    FN_CUDA_CHECK(cudaEventDestroy(e));
    return t[3];
}

/* The bytes of one buffer, to compare bit for bit. */
static std::vector<unsigned char> bytes_of(const void *d, size_t n)
{
    std::vector<unsigned char> h(n);
    FN_CUDA_CHECK(cudaMemcpy(h.data(), d, n, cudaMemcpyDeviceToHost));
    return h;
}

template <typename Z>
static std::vector<unsigned char> forward_result(bufs &b)
{
    std::vector<unsigned char> r = bytes_of(b.y, (size_t)b.N * b.C * sizeof(float));
    const std::vector<unsigned char> m = bytes_of(b.mean, (size_t)b.N * b.G * sizeof(float));
    const std::vector<unsigned char> s = bytes_of(b.rstd, (size_t)b.N * b.G * sizeof(float));
    r.insert(r.end(), m.begin(), m.end());
    r.insert(r.end(), s.begin(), s.end());
    return r;
}

template <typename Z>
static std::vector<unsigned char> backward_result(bufs &b)
{
    std::vector<unsigned char> r = bytes_of(dz_of<Z>(b), (size_t)b.N * b.C * sizeof(Z));
    const std::vector<unsigned char> g = bytes_of(b.grads, 3 * (size_t)b.C * sizeof(float));
    r.insert(r.end(), g.begin(), g.end());
    return r;
}

/* NaN in every output before a candidate runs. */
static void clear_outputs(bufs &b)
{
    if (!b.backward) {
        FN_CUDA_CHECK(cudaMemset(b.mean, 0xff, (size_t)b.N * b.G * sizeof(float)));
        FN_CUDA_CHECK(cudaMemset(b.rstd, 0xff, (size_t)b.N * b.G * sizeof(float)));
    }
    FN_CUDA_CHECK(cudaMemset(b.y, 0xff, (size_t)b.N * b.C * sizeof(float)));
    FN_CUDA_CHECK(cudaMemset(b.grads, 0xff, 3 * (size_t)b.C * sizeof(float)));
    FN_CUDA_CHECK(cudaMemset(b.dzf, 0xff, (size_t)b.N * b.C * sizeof(float)));
    FN_CUDA_CHECK(cudaMemset(b.dzh, 0xff, (size_t)b.N * b.C * sizeof(__nv_bfloat16)));
}

static int failures = 0;

/* One row of the report: time, ratio to the copy floor, and whether the
 * outputs equal the reference's bit for bit. */
template <typename Launch, typename Result>
static void candidate(bufs &b, const char *what, const char *name, double floor_ms,
                      const std::vector<unsigned char> &ref, Launch &&launch, Result &&result)
{
    clear_outputs(b);
    launch();
    FN_CUDA_CHECK(cudaDeviceSynchronize());
    const bool same = result() == ref;
    failures += !same;
    const float ms = time_ms(launch);
    printf("%-9s %-8s %9.4f ms  %5.2fx copy floor  %s\n", what, name, ms, ms / floor_ms,
           same ? "bits equal the old kernel's" : "BITS DIFFER from the old kernel's");
}

template <typename Z>
static void run_math(bufs &b, const char *math, double gbps)
{
    const double N = b.N, C = b.C, G = b.G, zb = sizeof(Z);
    /* As bench's report_kernels counts them. */
    const double fwd_bytes = (4.0 + zb) * N * C + 4.0 * (2.0 * N * G + 3.0 * C);
    const double bwd_bytes = (4.0 + 2.0 * zb) * N * C +
                             4.0 * (2.0 * N * G + 3.0 * C + 6.0 * C + 2.0 * b.chunks * 3.0 * C);
    const double fwd_floor = fwd_bytes / (gbps * 1e9) * 1e3;
    const double bwd_floor = bwd_bytes / (gbps * 1e9) * 1e3;
    printf("# %s: forward floor %.4f ms, backward floor %.4f ms\n", math, fwd_floor, bwd_floor);

    char what[32];
    snprintf(what, sizeof what, "%s fwd", math);
    b.backward = false;
    clear_outputs(b);
    forward_old<Z>(b);
    FN_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<unsigned char> fref = forward_result<Z>(b);
    auto fres = [&] { return forward_result<Z>(b); };
    candidate(b, what, "old", fwd_floor, fref, [&] { forward_old<Z>(b); }, fres);
    candidate(b, what, "ahead 1", fwd_floor, fref, [&] { forward_new<Z, 1>(b); }, fres);
    candidate(b, what, "ahead 2", fwd_floor, fref, [&] { forward_new<Z, 2>(b); }, fres);
    candidate(b, what, "ahead 4", fwd_floor, fref, [&] { forward_new<Z, 4>(b); }, fres);
    candidate(b, what, "4 uncapp", fwd_floor, fref, [&] { forward_new<Z, 4, false>(b); }, fres);
    candidate(b, what, "ahead 8", fwd_floor, fref, [&] { forward_new<Z, 8>(b); }, fres);

    /* The backward reads the statistics the forward wrote. */
    forward_old<Z>(b);
    b.backward = true;
    snprintf(what, sizeof what, "%s bwd", math);
    clear_outputs(b);
    backward_old<Z>(b);
    FN_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<unsigned char> bref = backward_result<Z>(b);
    auto bres = [&] { return backward_result<Z>(b); };
    candidate(b, what, "old", bwd_floor, bref, [&] { backward_old<Z>(b); }, bres);
    candidate(b, what, "ahead 1", bwd_floor, bref, [&] { backward_new<Z, 1>(b); }, bres);
    candidate(b, what, "ahead 2", bwd_floor, bref, [&] { backward_new<Z, 2>(b); }, bres);
    candidate(b, what, "ahead 4", bwd_floor, bref, [&] { backward_new<Z, 4>(b); }, bres);
    candidate(b, what, "4, 3/SM", bwd_floor, bref, [&] { backward_new<Z, 4, 3>(b); }, bres);
}

int main(int argc, char **argv)
{
    bufs b = {};
    b.N = argc > 1 ? atoi(argv[1]) : 1024;
    b.C = argc > 2 ? atoi(argv[2]) : 8192;
    b.G = argc > 3 ? atoi(argv[3]) : 512;
    if (b.N < 1 || b.C < 1 || b.G < 1 || b.C % b.G != 0) {
        fprintf(stderr, "usage: norm_candidates [batch out groups], groups dividing out\n");
        return 2;
    }
    const block_plan p = make_plan(b.C, b.G, true);
    if (p.vec != 4 || p.reps != 1) {
        fprintf(stderr, "norm_candidates: K = %d takes the team path <%d,%d>; this tool times "
                        "<4,1> (K a multiple of 4, at most 128)\n", b.C / b.G, p.vec, p.reps);
        return 2;
    }
    b.team = p.team;
    b.chunks = fn_row_chunks(b.N);
    b.rows_per_chunk = fn_chunk_rows(b.N, b.chunks);
    FN_CUDA_CHECK(cudaDeviceGetAttribute(&b.sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t NC = (size_t)b.N * b.C, NG = (size_t)b.N * b.G;
    b.y = device_floats(NC);
    b.dy = device_floats(NC);
    b.zf = device_floats(NC);
    b.dzf = device_floats(NC);
    FN_CUDA_CHECK(cudaMalloc(&b.zh, NC * sizeof(__nv_bfloat16)));
    FN_CUDA_CHECK(cudaMalloc(&b.dzh, NC * sizeof(__nv_bfloat16)));
    b.mean = device_floats(NG);
    b.rstd = device_floats(NG);
    b.bias = device_floats(b.C);
    b.gamma = device_floats(b.C);
    b.beta = device_floats(b.C);
    b.grads = device_floats(3 * (size_t)b.C);
    b.partials = device_floats((size_t)b.chunks * 3 * b.C);
    FN_CUDA_CHECK(cudaMalloc(&b.tickets, (size_t)b.C * sizeof(int)));
    FN_CUDA_CHECK(cudaMemset(b.tickets, 0, (size_t)b.C * sizeof(int)));
    fill(b.zf, NC, 1, 2.0f, 0.0f);
    fill(b.dy, NC, 2, 1.0f, 0.0f);
    fill(b.bias, b.C, 3, 0.5f, 0.0f);
    fill(b.gamma, b.C, 4, 0.5f, 1.0f);
    fill(b.beta, b.C, 5, 0.5f, 0.0f);
    fn_launch(nullptr, to_bf16_kernel, 1024, 256, 0, 0, b.zh, b.zf, NC);
    FN_CUDA_CHECK(cudaGetLastError());

    /* Copy bandwidth, as bench measures it: 256 MiB read and written. */
    const size_t copy_bytes = (size_t)256 << 20;
    FN_CUDA_CHECK(cudaMalloc(&b.copy_src, copy_bytes));
    FN_CUDA_CHECK(cudaMalloc(&b.copy_dst, copy_bytes));
    const float copy_ms = time_ms([&] {
        FN_CUDA_CHECK(cudaMemcpyAsync(b.copy_dst, b.copy_src, copy_bytes,
                                      cudaMemcpyDeviceToDevice, 0));
    });
    const double gbps = 2.0 * (double)copy_bytes / (copy_ms * 1e-3) / 1e9;
    FN_CUDA_CHECK(cudaFree(b.copy_src));
    FN_CUDA_CHECK(cudaFree(b.copy_dst));
    cudaDeviceProp prop;
    FN_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, %d SMs; batch %d, out %d, groups %d (K = %d, team %d); copy %.0f GB/s\n",
           prop.name, b.sms, b.N, b.C, b.G, b.C / b.G, b.team, gbps);
    run_math<float>(b, "fp32", gbps);
    run_math<__nv_bfloat16>(b, "bf16", gbps);
    printf(failures ? "# %d candidates differ from the old kernels\n"
                    : "# every candidate's bits equal the old kernels'\n",
           failures);
    return failures ? 1 : 0;
}
