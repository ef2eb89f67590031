/* block_cuda.cu — the fused block on the GPU: the products through
 * gemm_cuda.h, and hand-written kernels for GroupNorm + LeakyReLU + x2 (bias
 * folded in) and for its backward (dz, db, dgamma, dbeta in one pass over dy
 * and z, column sums reduced deterministically).
 *
 * Two paths, chosen per shape at launch:
 *  - team path, K = out/groups <= 32 * 4 * kMaxReps channels (float4) or
 *    32 * kMaxReps (scalar): a team of 1..32 lanes of one warp owns one
 *    (sample, group) pair, keeps its values in registers between the
 *    reduction and the write, and reduces by shuffles. Several teams share a
 *    warp when K is small (K = 16: eight groups a warp, four lanes a group).
 *  - group path, larger K (up to the whole width in one group): one block per
 *    (sample, group), block-wide reductions, values re-read from L1/L2.
 * Backward column sums: each block writes partial sums of its chunk of rows
 * into scratch [chunks, 3, out]; a second kernel adds the chunks in order to
 * the gradients. No float atomics, so two runs give identical bits.
 * fn_block_cuda_backward_sgd is backward with plain SGD folded in: the
 * second kernel applies the update to bias, gamma, beta, and the dW product
 * accumulates -lr dz^T x into the weight itself (cuBLAS beta = 1) after the
 * dx product has read it. */
#include <limits.h>
#include <stdint.h>

#include "block_impl.h"
#include "cuda_backend.h"
#include "cuda_check.h"
#include "cuda_state.h"
#include "gemm_cuda.h"
#include "reduce_cuda.cuh"

static constexpr int kMaxReps = 4;          /* vectors a lane holds per group */
static constexpr int kForwardThreads = 256; /* team path, forward */
static constexpr int kBackwardWarps = 8;    /* team path, backward: warps sharing a column tile */
static constexpr int kGroupThreads = 256;   /* group path */
static constexpr int kColumnTile = 32;      /* group path column sums: columns x rows a block */
static constexpr int kColumnRows = 8;
static constexpr int kFinishThreads = 256;
static constexpr int kMaxChunks = 32;       /* row chunks of the column sums */
static constexpr int kRowsPerChunk = 32;    /* fewest rows a chunk, below kMaxChunks chunks */
static constexpr size_t kAlignFloats = 64;

/* ---- kernels ---- */

template <int V>
__device__ __forceinline__ void load_vec(float (&d)[V], const float *p /* [V], 16-byte aligned when V == 4 */)
{
    if constexpr (V == 4) {
        const float4 t = *reinterpret_cast<const float4 *>(p);
        d[0] = t.x;
        d[1] = t.y;
        d[2] = t.z;
        d[3] = t.w;
    } else {
#pragma unroll
        for (int e = 0; e < V; e++)
            d[e] = p[e];
    }
}

template <int V>
__device__ __forceinline__ void store_vec(float *p /* [V] */, const float (&s)[V])
{
    if constexpr (V == 4) {
        *reinterpret_cast<float4 *>(p) = make_float4(s[0], s[1], s[2], s[3]);
    } else {
#pragma unroll
        for (int e = 0; e < V; e++)
            p[e] = s[e];
    }
}

/* y = 2 * leaky_relu(u); 2 * (slope * u) is exact, as on the CPU. */
__device__ __forceinline__ float leaky2(float u, float slope) { return 2.0f * (u > 0.0f ? u : slope * u); }

/* du = 2 dy * (u > 0 ? 1 : slope): PyTorch takes the slope at exactly 0. */
__device__ __forceinline__ float dleaky2(float dy, float u, float slope)
{
    const float d2 = 2.0f * dy;
    return u > 0.0f ? d2 : d2 * slope;
}

/* One team of `team` lanes per (sample, group); lane t holds vectors
 * t, t + team, ... of the group (coalesced), V floats each, at most R. */
template <int V, int R>
__global__ void __launch_bounds__(kForwardThreads)
block_forward_team_kernel(float *y /* [N, C] */, float *mean /* [N, G] */, float *rstd /* [N, G] */,
                          const float *z /* [N, C], x W^T without bias */,
                          const float *bias /* [C] */, const float *gamma /* [C] */,
                          const float *beta /* [C] */, int N, int C, int G, int team, float eps,
                          float slope)
{
    const int K = C / G;
    const int t = threadIdx.x % team;
    const size_t pair = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / team;
    /* Lanes past the last pair stay to take part in the shuffles. */
    const bool active = pair < (size_t)N * G;
    const size_t n = active ? pair / G : 0;
    const int c0 = active ? (int)(pair % G) * K : 0;
    const float *zg = z + n * C + c0;

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
            store_vec<V>(y + n * C + c0 + j, out);
        }
    }
}

/* One block per (sample, group), for groups too wide for a warp's registers. */
template <int V>
__global__ void __launch_bounds__(kGroupThreads)
block_forward_group_kernel(float *y /* [N, C] */, float *mean /* [N, G] */, float *rstd /* [N, G] */,
                           const float *z /* [N, C] */, const float *bias /* [C] */,
                           const float *gamma /* [C] */, const float *beta /* [C] */, int N, int C,
                           int G, float eps, float slope)
{
    __shared__ float smem[kWarpSize];
    const int K = C / G;
    const size_t pair = blockIdx.x;
    const size_t n = pair / G;
    const int c0 = (int)(pair % G) * K;
    const float *zg = z + n * C + c0;
    const int step = blockDim.x * V;
    (void)N;

    float sum = 0.0f;
    for (int j = threadIdx.x * V; j < K; j += step) {
        float a[V], b[V];
        load_vec<V>(a, zg + j);
        load_vec<V>(b, bias + c0 + j);
#pragma unroll
        for (int e = 0; e < V; e++)
            sum += a[e] + b[e];
    }
    const float mu = block_sum(sum, smem) / (float)K;
    float sq = 0.0f;
    for (int j = threadIdx.x * V; j < K; j += step) {
        float a[V], b[V];
        load_vec<V>(a, zg + j);
        load_vec<V>(b, bias + c0 + j);
#pragma unroll
        for (int e = 0; e < V; e++) {
            const float d = (a[e] + b[e]) - mu;
            sq += d * d;
        }
    }
    const float var = block_sum(sq, smem) / (float)K;
    const float rs = 1.0f / sqrtf(var + eps);
    if (threadIdx.x == 0) {
        mean[pair] = mu;
        rstd[pair] = rs;
    }
    for (int j = threadIdx.x * V; j < K; j += step) {
        float a[V], b[V], g[V], bt[V], out[V];
        load_vec<V>(a, zg + j);
        load_vec<V>(b, bias + c0 + j);
        load_vec<V>(g, gamma + c0 + j);
        load_vec<V>(bt, beta + c0 + j);
#pragma unroll
        for (int e = 0; e < V; e++)
            out[e] = leaky2(g[e] * (((a[e] + b[e]) - mu) * rs) + bt[e], slope);
        store_vec<V>(y + n * C + c0 + j, out);
    }
}

/* Writes one quantity's per-thread column accumulators of a team-path block
 * into partials[chunk, q, tile columns], summing the warps in warp order. */
template <int V, int R>
__device__ __forceinline__ void stage_column_partials(
    float *partials /* [chunks, 3, C] */, float (*smem)[kWarpSize * R * V] /* [kBackwardWarps] */,
    const float (&acc)[R][V], int q, bool active, int member, int t, int team, int K, int C,
    int tile0, int tile_cols)
{
    const int warp = threadIdx.x / kWarpSize;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int j = (t + r * team) * V;
        if (active && j < K) {
#pragma unroll
            for (int e = 0; e < V; e++)
                smem[warp][member * K + j + e] = acc[r][e];
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < tile_cols; c += blockDim.x) {
        float s = 0.0f;
        for (int w = 0; w < kBackwardWarps; w++)
            s += smem[w][c];
        partials[((size_t)blockIdx.y * 3 + q) * C + tile0 + c] = s;
    }
    __syncthreads();
}

/* Backward, team path. Block (tile, chunk): every warp covers the same tile
 * of 32/team whole groups, for rows chunk*rows_per_chunk + warp, + 8, ...;
 * it writes dz and accumulates dgamma, dbeta, dbias per column in registers,
 * then the block sums its warps into partials[chunk]. */
template <int V, int R>
__global__ void __launch_bounds__(kBackwardWarps * kWarpSize)
block_backward_team_kernel(float *dz /* [N, C] */, float *partials /* [chunks, 3, C] */,
                           const float *mean /* [N, G] */, const float *rstd /* [N, G] */,
                           const float *z /* [N, C] */, const float *dy /* [N, C] */,
                           const float *bias /* [C] */, const float *gamma /* [C] */,
                           const float *beta /* [C] */, int N, int C, int G, int team,
                           int rows_per_chunk, float slope)
{
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
}

/* Backward, group path: dz for one (sample, group) per block. */
template <int V>
__global__ void __launch_bounds__(kGroupThreads)
block_backward_group_kernel(float *dz /* [N, C] */, const float *mean /* [N, G] */,
                            const float *rstd /* [N, G] */, const float *z /* [N, C] */,
                            const float *dy /* [N, C] */, const float *bias /* [C] */,
                            const float *gamma /* [C] */, const float *beta /* [C] */, int N,
                            int C, int G, float slope)
{
    __shared__ float smem[kWarpSize];
    const int K = C / G;
    const size_t pair = blockIdx.x;
    const size_t n = pair / G;
    const int c0 = (int)(pair % G) * K;
    const size_t row = n * C + c0;
    const float mu = mean[pair];
    const float rs = rstd[pair];
    const int step = blockDim.x * V;
    (void)N;

    float s1 = 0.0f, s2 = 0.0f;
    for (int j = threadIdx.x * V; j < K; j += step) {
        float a[V], d[V], b[V], g[V], bt[V];
        load_vec<V>(a, z + row + j);
        load_vec<V>(d, dy + row + j);
        load_vec<V>(b, bias + c0 + j);
        load_vec<V>(g, gamma + c0 + j);
        load_vec<V>(bt, beta + c0 + j);
#pragma unroll
        for (int e = 0; e < V; e++) {
            const float zh = ((a[e] + b[e]) - mu) * rs;
            const float gh = dleaky2(d[e], g[e] * zh + bt[e], slope) * g[e];
            s1 += gh;
            s2 += gh * zh;
        }
    }
    const float m1 = block_sum(s1, smem) / (float)K;
    const float m2 = block_sum(s2, smem) / (float)K;
    for (int j = threadIdx.x * V; j < K; j += step) {
        float a[V], d[V], b[V], g[V], bt[V], out[V];
        load_vec<V>(a, z + row + j);
        load_vec<V>(d, dy + row + j);
        load_vec<V>(b, bias + c0 + j);
        load_vec<V>(g, gamma + c0 + j);
        load_vec<V>(bt, beta + c0 + j);
#pragma unroll
        for (int e = 0; e < V; e++) {
            const float zh = ((a[e] + b[e]) - mu) * rs;
            const float gh = dleaky2(d[e], g[e] * zh + bt[e], slope) * g[e];
            out[e] = rs * (gh - m1 - zh * m2);
        }
        store_vec<V>(dz + row + j, out);
    }
}

/* Column partial sums of dgamma, dbeta, dbias for the group path: a block
 * owns kColumnTile columns (coalesced) of one chunk of rows, its thread rows
 * take every kColumnRows-th row, and row y == 0 adds them in order. */
__global__ void __launch_bounds__(kColumnTile * kColumnRows)
block_column_partials_kernel(float *partials /* [chunks, 3, C] */, const float *mean /* [N, G] */,
                             const float *rstd /* [N, G] */, const float *z /* [N, C] */,
                             const float *dz /* [N, C] */, const float *dy /* [N, C] */,
                             const float *bias /* [C] */, const float *gamma /* [C] */,
                             const float *beta /* [C] */, int N, int C, int G, int rows_per_chunk,
                             float slope)
{
    __shared__ float smem[3][kColumnRows][kColumnTile];
    const int c = blockIdx.x * kColumnTile + threadIdx.x;
    const bool active = c < C;
    const int g = active ? c / (C / G) : 0;
    const int row0 = blockIdx.y * rows_per_chunk;
    const int row1 = min(N, row0 + rows_per_chunk);
    float dgamma = 0.0f, dbeta = 0.0f, dbias = 0.0f;
    if (active) {
        const float b = bias[c], gm = gamma[c], bt = beta[c];
        for (int n = row0 + threadIdx.y; n < row1; n += kColumnRows) {
            const size_t i = (size_t)n * C + c;
            const size_t s = (size_t)n * G + g;
            const float zh = ((z[i] + b) - mean[s]) * rstd[s];
            const float du = dleaky2(dy[i], gm * zh + bt, slope);
            dgamma += du * zh;
            dbeta += du;
            dbias += dz[i];
        }
    }
    smem[0][threadIdx.y][threadIdx.x] = dgamma;
    smem[1][threadIdx.y][threadIdx.x] = dbeta;
    smem[2][threadIdx.y][threadIdx.x] = dbias;
    __syncthreads();
    if (threadIdx.y == 0 && active) {
        for (int q = 0; q < 3; q++) {
            float s = 0.0f;
            for (int r = 0; r < kColumnRows; r++)
                s += smem[q][r][threadIdx.x];
            partials[((size_t)blockIdx.y * 3 + q) * C + c] = s;
        }
    }
}

/* Adds the chunks' partial sums, in chunk order, to the gradients (lr == 0:
 * out += s), or applies plain SGD with them (lr > 0: out -= lr * s, rounded
 * as sgd_cuda.cu rounds, so the bits equal a backward from zeroed gradients
 * followed by an SGD step). out_* are the gradients or the values. */
__global__ void block_column_finish_kernel(float *out_gamma /* [C] */, float *out_beta /* [C] */,
                                           float *out_bias /* [C] */,
                                           const float *partials /* [chunks, 3, C] */, float lr,
                                           int chunks, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    float s[3] = {0.0f, 0.0f, 0.0f};
    for (int k = 0; k < chunks; k++) {
#pragma unroll
        for (int q = 0; q < 3; q++)
            s[q] += partials[((size_t)k * 3 + q) * C + c];
    }
    float *out[3] = {out_gamma, out_beta, out_bias};
#pragma unroll
    for (int q = 0; q < 3; q++) {
        const float v = out[q][c];
        out[q][c] = lr > 0.0f ? __fsub_rn(v, __fmul_rn(lr, s[q])) : __fadd_rn(v, s[q]);
    }
}

/* ---- launchers ---- */

/* How a shape is launched: float4 or scalar, vectors per lane, team size. */
typedef struct block_plan {
    int vec;  /* 4 or 1 */
    int reps; /* 1, 2 or 4 on the team path; 0 on the group path */
    int team; /* lanes per group, a power of two <= 32 */
} block_plan;

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

static block_plan make_plan(int C, int G, bool aligned)
{
    const int K = C / G;
    block_plan p = {.vec = (K % 4 == 0 && aligned) ? 4 : 1, .reps = 0, .team = 0};
    for (int reps = 1; reps <= kMaxReps; reps *= 2) {
        if (kWarpSize * p.vec * reps >= K) {
            const int lanes = (K + p.vec * reps - 1) / (p.vec * reps);
            p.reps = reps;
            p.team = 1;
            while (p.team < lanes)
                p.team *= 2;
            break;
        }
    }
    return p;
}

static int row_chunks(int n)
{
    const int c = (n + kRowsPerChunk - 1) / kRowsPerChunk;
    return c < 1 ? 1 : c > kMaxChunks ? kMaxChunks : c;
}

static size_t pad_floats(size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

/* Where the parts of b->scratch live; a part a mode does not use is NULL.
 * The TF32 splits of x and w that forward makes are kept for backward (the
 * dx product reuses w's), so tf32x3 splits w once a step. In the TF32 modes
 * the dW product takes x^T and dz^T: Hopper's TF32 tensor-core instructions
 * read operands with the reduced dimension contiguous, which x and dz as
 * stored do not have for dW (their rows are the batch); with both
 * transposed dW has the forward product's layout (DESIGN.md: the default
 * layout reaches 0.57 ms where the forward shape takes 0.33 ms). */
typedef struct block_ws {
    float *partials;          /* [chunks, 3, out]: column partial sums */
    float *dzt, *dzt_small;   /* [out, max_batch]: dz^T (tf32, tf32x3), its remainder (tf32x3) */
    float *xt, *xt_small;     /* [in, max_batch]: x^T (tf32, tf32x3), its remainder (tf32x3) */
    float *x_big, *x_small;   /* [max_batch, in] (tf32x3) */
    float *w_big, *w_small;   /* [out, in] (tf32x3) */
    float *dz_big, *dz_small; /* [max_batch, out] (tf32x3) */
} block_ws;

static float *carve(float *base, size_t *at, size_t n)
{
    float *p = base ? base + *at : NULL;
    *at += pad_floats(n);
    return p;
}

/* Fills ws from base (NULL: sizes only) and returns the floats it spans. */
static size_t layout(const fn_block *b, float *base, block_ws *ws)
{
    const fn_layer *l = &b->base;
    const fn_math math = fn_context_math(l->ctx);
    const size_t nx = (size_t)l->max_batch * (size_t)l->in_features;
    const size_t nw = (size_t)l->out_features * (size_t)l->in_features;
    const size_t nz = (size_t)l->max_batch * (size_t)l->out_features;
    size_t at = 0;
    *ws = block_ws{};
    ws->partials = carve(base, &at, (size_t)row_chunks(l->max_batch) * 3 * (size_t)l->out_features);
    if (math == FN_MATH_FP32)
        return at;
    ws->dzt = carve(base, &at, nz);
    ws->xt = carve(base, &at, nx);
    if (math == FN_MATH_TF32)
        return at;
    ws->dzt_small = carve(base, &at, nz);
    ws->xt_small = carve(base, &at, nx);
    ws->x_big = carve(base, &at, nx);
    ws->x_small = carve(base, &at, nx);
    ws->w_big = carve(base, &at, nw);
    ws->w_small = carve(base, &at, nw);
    ws->dz_big = carve(base, &at, nz);
    ws->dz_small = carve(base, &at, nz);
    return at;
}

template <int V, int R>
static void launch_forward_team(cudaStream_t s, unsigned blocks, float *y, fn_block *b, int N,
                                int team)
{
    const int C = b->base.out_features;
    block_forward_team_kernel<V, R><<<blocks, kForwardThreads, 0, s>>>(
        y, b->mean.data, b->rstd.data, b->z.data, b->params[FN_BLOCK_BIAS].value.data,
        b->params[FN_BLOCK_GAMMA].value.data, b->params[FN_BLOCK_BETA].value.data, N, C,
        b->cfg.groups, team, b->cfg.eps, b->cfg.negative_slope);
}

template <int V>
static void launch_forward_group(cudaStream_t s, unsigned blocks, float *y, fn_block *b, int N)
{
    block_forward_group_kernel<V><<<blocks, kGroupThreads, 0, s>>>(
        y, b->mean.data, b->rstd.data, b->z.data, b->params[FN_BLOCK_BIAS].value.data,
        b->params[FN_BLOCK_GAMMA].value.data, b->params[FN_BLOCK_BETA].value.data, N,
        b->base.out_features, b->cfg.groups, b->cfg.eps, b->cfg.negative_slope);
}

extern "C" fn_status fn_block_cuda_normalize_forward(fn_block *b, float *y /* [N, C] */, int N)
{
    const int C = b->base.out_features, G = b->cfg.groups;
    cudaStream_t s = fn_ctx_stream(b->base.ctx);
    const bool aligned = aligned16(y) && aligned16(b->z.data) &&
                         aligned16(b->params[FN_BLOCK_BIAS].value.data) &&
                         aligned16(b->params[FN_BLOCK_GAMMA].value.data) &&
                         aligned16(b->params[FN_BLOCK_BETA].value.data);
    const block_plan p = make_plan(C, G, aligned);
    const size_t pairs = (size_t)N * G;
    if (p.reps == 0) {
        if (pairs > (size_t)INT_MAX)
            return fn_fail(FN_ERR_INVALID, "block forward: %zu (sample, group) pairs", pairs);
        if (p.vec == 4)
            launch_forward_group<4>(s, (unsigned)pairs, y, b, N);
        else
            launch_forward_group<1>(s, (unsigned)pairs, y, b, N);
        FN_CUDA_CHECK_LAUNCH(block_forward_group_kernel);
        return FN_OK;
    }
    const size_t per_block = (size_t)(kForwardThreads / p.team);
    const size_t blocks = (pairs + per_block - 1) / per_block;
    if (blocks > (size_t)INT_MAX)
        return fn_fail(FN_ERR_INVALID, "block forward: %zu (sample, group) pairs", pairs);
    const unsigned nb = (unsigned)blocks;
    switch (p.vec * 10 + p.reps) {
    case 41: launch_forward_team<4, 1>(s, nb, y, b, N, p.team); break;
    case 42: launch_forward_team<4, 2>(s, nb, y, b, N, p.team); break;
    case 44: launch_forward_team<4, 4>(s, nb, y, b, N, p.team); break;
    case 11: launch_forward_team<1, 1>(s, nb, y, b, N, p.team); break;
    case 12: launch_forward_team<1, 2>(s, nb, y, b, N, p.team); break;
    default: launch_forward_team<1, 4>(s, nb, y, b, N, p.team); break;
    }
    FN_CUDA_CHECK_LAUNCH(block_forward_team_kernel);
    return FN_OK;
}

template <int V, int R>
static void launch_backward_team(cudaStream_t s, dim3 grid, const float *dy, fn_block *b,
                                 float *partials, int N, int team, int rows_per_chunk)
{
    block_backward_team_kernel<V, R><<<grid, kBackwardWarps * kWarpSize, 0, s>>>(
        b->dz.data, partials, b->mean.data, b->rstd.data, b->z.data, dy,
        b->params[FN_BLOCK_BIAS].value.data, b->params[FN_BLOCK_GAMMA].value.data,
        b->params[FN_BLOCK_BETA].value.data, N, b->base.out_features, b->cfg.groups, team,
        rows_per_chunk, b->cfg.negative_slope);
}

template <int V>
static void launch_backward_group(cudaStream_t s, unsigned blocks, const float *dy, fn_block *b,
                                  int N)
{
    block_backward_group_kernel<V><<<blocks, kGroupThreads, 0, s>>>(
        b->dz.data, b->mean.data, b->rstd.data, b->z.data, dy,
        b->params[FN_BLOCK_BIAS].value.data, b->params[FN_BLOCK_GAMMA].value.data,
        b->params[FN_BLOCK_BETA].value.data, N, b->base.out_features, b->cfg.groups,
        b->cfg.negative_slope);
}

/* dz into b->dz; dgamma, dbeta, dbias added to the gradients (lr == 0) or
 * applied to gamma, beta, bias by plain SGD (lr > 0). */
static fn_status norm_backward(fn_block *b, const float *dy /* [N, C] */, int N, float lr)
{
    const int C = b->base.out_features, G = b->cfg.groups;
    cudaStream_t s = fn_ctx_stream(b->base.ctx);
    block_ws ws;
    layout(b, b->scratch.data, &ws);
    float *partials = ws.partials;
    const int chunks = row_chunks(N);
    const int rows_per_chunk = (N + chunks - 1) / chunks;
    const bool aligned = aligned16(dy) && aligned16(b->z.data) && aligned16(b->dz.data) &&
                         aligned16(b->params[FN_BLOCK_BIAS].value.data) &&
                         aligned16(b->params[FN_BLOCK_GAMMA].value.data) &&
                         aligned16(b->params[FN_BLOCK_BETA].value.data);
    const block_plan p = make_plan(C, G, aligned);
    if (p.reps == 0) {
        const size_t pairs = (size_t)N * G;
        if (pairs > (size_t)INT_MAX)
            return fn_fail(FN_ERR_INVALID, "block backward: %zu (sample, group) pairs", pairs);
        if (p.vec == 4)
            launch_backward_group<4>(s, (unsigned)pairs, dy, b, N);
        else
            launch_backward_group<1>(s, (unsigned)pairs, dy, b, N);
        FN_CUDA_CHECK_LAUNCH(block_backward_group_kernel);
        const dim3 grid((unsigned)((C + kColumnTile - 1) / kColumnTile), (unsigned)chunks);
        block_column_partials_kernel<<<grid, dim3(kColumnTile, kColumnRows), 0, s>>>(
            partials, b->mean.data, b->rstd.data, b->z.data, b->dz.data, dy,
            b->params[FN_BLOCK_BIAS].value.data, b->params[FN_BLOCK_GAMMA].value.data,
            b->params[FN_BLOCK_BETA].value.data, N, C, G, rows_per_chunk, b->cfg.negative_slope);
        FN_CUDA_CHECK_LAUNCH(block_column_partials_kernel);
    } else {
        const int groups_per_warp = kWarpSize / p.team;
        const dim3 grid((unsigned)((G + groups_per_warp - 1) / groups_per_warp), (unsigned)chunks);
        switch (p.vec * 10 + p.reps) {
        case 41: launch_backward_team<4, 1>(s, grid, dy, b, partials, N, p.team, rows_per_chunk); break;
        case 42: launch_backward_team<4, 2>(s, grid, dy, b, partials, N, p.team, rows_per_chunk); break;
        case 44: launch_backward_team<4, 4>(s, grid, dy, b, partials, N, p.team, rows_per_chunk); break;
        case 11: launch_backward_team<1, 1>(s, grid, dy, b, partials, N, p.team, rows_per_chunk); break;
        case 12: launch_backward_team<1, 2>(s, grid, dy, b, partials, N, p.team, rows_per_chunk); break;
        default: launch_backward_team<1, 4>(s, grid, dy, b, partials, N, p.team, rows_per_chunk); break;
        }
        FN_CUDA_CHECK_LAUNCH(block_backward_team_kernel);
    }
    fn_tensor *out_gamma = lr > 0.0f ? &b->params[FN_BLOCK_GAMMA].value : &b->params[FN_BLOCK_GAMMA].grad;
    fn_tensor *out_beta = lr > 0.0f ? &b->params[FN_BLOCK_BETA].value : &b->params[FN_BLOCK_BETA].grad;
    fn_tensor *out_bias = lr > 0.0f ? &b->params[FN_BLOCK_BIAS].value : &b->params[FN_BLOCK_BIAS].grad;
    block_column_finish_kernel<<<(unsigned)((C + kFinishThreads - 1) / kFinishThreads),
                                 kFinishThreads, 0, s>>>(out_gamma->data, out_beta->data,
                                                         out_bias->data, partials, lr, chunks, C);
    FN_CUDA_CHECK_LAUNCH(block_column_finish_kernel);
    return FN_OK;
}

extern "C" fn_status fn_block_cuda_normalize_backward(fn_block *b, const float *dy /* [N, C] */,
                                                      int N)
{
    return norm_backward(b, dy, N, 0.0f);
}

static fn_status block_cuda_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_block *b = (fn_block *)l;
    const int N = x->rows, in = l->in_features, C = l->out_features;
    const float *w = b->params[FN_BLOCK_WEIGHT].value.data;
    block_ws ws;
    layout(b, b->scratch.data, &ws);
    if (ws.x_big)
        FN_TRY(fn_cuda_split_tf32(l->ctx, ws.x_big, ws.x_small, x->data, (size_t)N * in, ws.w_big,
                                  ws.w_small, w, (size_t)C * in));
    /* Row-major z [N, C] = x w^T is column-major z^T [C, N] = (w^T)^T x^T. */
    FN_TRY(fn_cuda_gemm_split(l->ctx, 1, 0, C, N, in, 1.0f, ws.w_big ? ws.w_big : w, ws.w_small,
                              in, ws.x_big ? ws.x_big : x->data, ws.x_small, in, 0.0f, b->z.data,
                              C));
    FN_TRY(fn_block_cuda_normalize_forward(b, y->data, N));
    b->x = *x;
    b->batch = N;
    return FN_OK;
}

/* The products of backward after the normalisation's: dx = dz w (when dx is
 * given), then dW = dz^T x added to the weight's gradient (alpha 1), or
 * with alpha = -lr to the weight itself, after dx has read it. */
static fn_status backward_products(fn_block *b, fn_tensor *dx, float *dw_out /* [C, in] */,
                                   float alpha)
{
    fn_layer *l = &b->base;
    const int N = b->batch, in = l->in_features, C = l->out_features;
    const fn_math math = fn_context_math(l->ctx);
    const float *dz = b->dz.data;
    block_ws ws;
    layout(b, b->scratch.data, &ws);
    if (math == FN_MATH_TF32X3)
        FN_TRY(fn_cuda_split_tf32(l->ctx, ws.dz_big, ws.dz_small, dz, (size_t)N * C, NULL, NULL,
                                  NULL, 0));
    if (math != FN_MATH_FP32) {
        FN_TRY(fn_cuda_transpose(l->ctx, ws.dzt, ws.dzt_small, dz, N, C));
        FN_TRY(fn_cuda_transpose(l->ctx, ws.xt, ws.xt_small, b->x.data, N, in));
    }
    const float *w = ws.w_big ? ws.w_big : b->params[FN_BLOCK_WEIGHT].value.data;
    const float *dz_a = ws.dz_big ? ws.dz_big : dz;
    /* Row-major dx [N, in] = dz w is column-major dx^T = w^T dz^T, both as stored. */
    if (dx)
        FN_TRY(fn_cuda_gemm_split(l->ctx, 0, 0, in, N, C, 1.0f, w, ws.w_small, in, dz_a,
                                  ws.dz_small, C, 0.0f, dx->data, in));
    /* Row-major dW [C, in] = dz^T x is column-major dW^T [in, C] = x^T dz:
     * in fp32 with x and dz as stored (x^T, op N; dz, op T), in the TF32
     * modes with x^T and dz^T as stored (op T, op N). */
    if (math == FN_MATH_FP32)
        return fn_cuda_gemm_split(l->ctx, 0, 1, in, C, N, alpha, b->x.data, NULL, in, dz, NULL, C,
                                  1.0f, dw_out, in);
    return fn_cuda_gemm_split(l->ctx, 1, 0, in, C, N, alpha, ws.xt, ws.xt_small, N, ws.dzt,
                              ws.dzt_small, N, 1.0f, dw_out, in);
}

static fn_status block_cuda_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_block *b = (fn_block *)l;
    FN_TRY(norm_backward(b, dy->data, b->batch, 0.0f));
    return backward_products(b, dx, b->params[FN_BLOCK_WEIGHT].grad.data, 1.0f);
}

extern "C" fn_status fn_block_cuda_backward_sgd(fn_block *b, const fn_tensor *dy, fn_tensor *dx,
                                                float lr)
{
    FN_TRY(norm_backward(b, dy->data, b->batch, lr));
    return backward_products(b, dx, b->params[FN_BLOCK_WEIGHT].value.data, -lr);
}

static void block_cuda_destroy(fn_layer *l)
{
    fn_block *b = (fn_block *)l;
    /* fn_tensor_free clears the descriptor, so a release that frees the
     * scratch as well finds nothing left to free. */
    fn_tensor_free(&b->scratch);
    fn_block_release(b);
}

extern "C" const fn_layer_ops fn_block_cuda_ops = {
    .kind = "block",
    .forward = block_cuda_forward,
    .backward = block_cuda_backward,
    .destroy = block_cuda_destroy,
};

extern "C" fn_status fn_block_cuda_setup(fn_block *b)
{
    block_ws ws;
    return fn_cuda_workspace_alloc(&b->scratch, layout(b, NULL, &ws));
}
