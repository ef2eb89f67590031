/* block_cuda.cu — the fused block on the GPU: hand-written kernels for
 * GroupNorm + LeakyReLU + x2 (bias folded in) and for its backward (dz, db,
 * dgamma, dbeta in one pass over dy and z, column sums reduced
 * deterministically), their launch plan, and the layer's ops, which put
 * them between the products of block_products_cuda.cu.
 *
 * Two paths, chosen per shape at launch (make_plan):
 *  - team path, K = out/groups <= 32 * 4 * kMaxReps channels (float4) or
 *    32 * kMaxReps (scalar): a team of 1..32 lanes of one warp owns one
 *    (sample, group) pair, keeps its values in registers between the
 *    reduction and the write, and reduces by shuffles. Several teams share a
 *    warp when K is small (K = 16: eight groups a warp, four lanes a group).
 *  - group path, larger K (up to the whole width in one group): one block per
 *    (sample, group), block-wide reductions, values re-read from L1/L2.
 * Backward column sums: each block writes partial sums of its chunk of rows
 * into scratch [chunks, 3, out]; the last block of a column tile to arrive
 * adds the chunks in order into the gradients (reduce_cuda.cuh), in the
 * same launch. No float atomics, so two runs give identical bits. The
 * backward_sgd hook is backward with plain SGD folded in: the column sums
 * are applied as the update to bias, gamma, beta (column_store), and
 * the dW product accumulates -lr dz^T x into the weight itself (cuBLAS
 * beta = 1) after the dx product has read it.
 *
 * A residual block (cfg.residual) passes its input as `skip` to the
 * forward kernels, which add it to y as they write it, and dx as `dskip`
 * to the backward kernels, which copy dy into it as they read it; the dx
 * product then adds dz W onto it (beta = 1): the identity path costs no
 * pass of its own.
 *
 * z and dz, the block's own caches, are float, or bfloat16 in bf16 mode
 * (block_products_cuda.h says why): every kernel below takes them as a
 * template type Z and computes in float either way; the statistics and
 * the column sums are always float. y is float, or bfloat16 (template type
 * Y, rounded once from its float value) where a net joins the block to a
 * layer that reads its input as bfloat16 (layer.h, forward_bf16). */
#include <cuda_bf16.h>
#include <limits.h>
#include <stdint.h>

#include "nn/layers/block/block_impl.h"
#include "nn/layers/block/block_products_cuda.h"
#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/gemm_cuda.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"
#include "core/reduce_cuda.cuh"

static constexpr int kMaxReps = 4;          /* vectors a lane holds per group */
static constexpr int kForwardThreads = 256; /* team path, forward */
static constexpr int kBackwardWarps = 8;    /* team path, backward: warps sharing a column tile */
static constexpr int kGroupThreads = 256;   /* group path */

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

/* The same for bfloat16 storage: V == 4 moves 8 bytes (8-byte aligned). */
template <int V>
__device__ __forceinline__ void load_vec(float (&d)[V],
                                         const __nv_bfloat16 *p /* [V], 8-byte aligned when V == 4 */)
{
    if constexpr (V == 4) {
        const uint2 t = *reinterpret_cast<const uint2 *>(p);
        const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&t.x));
        const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&t.y));
        d[0] = lo.x;
        d[1] = lo.y;
        d[2] = hi.x;
        d[3] = hi.y;
    } else {
#pragma unroll
        for (int e = 0; e < V; e++)
            d[e] = __bfloat162float(p[e]);
    }
}

/* Rounded to nearest bfloat16 once, from the float result. */
template <int V>
__device__ __forceinline__ void store_vec(__nv_bfloat16 *p /* [V] */, const float (&s)[V])
{
    if constexpr (V == 4) {
        const __nv_bfloat162 lo = __floats2bfloat162_rn(s[0], s[1]);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(s[2], s[3]);
        uint2 t;
        t.x = *reinterpret_cast<const unsigned *>(&lo);
        t.y = *reinterpret_cast<const unsigned *>(&hi);
        *reinterpret_cast<uint2 *>(p) = t;
    } else {
#pragma unroll
        for (int e = 0; e < V; e++)
            p[e] = __float2bfloat16_rn(s[e]);
    }
}

/* d += p[0, V): the residual block's skip. */
template <int V>
__device__ __forceinline__ void add_vec(float (&d)[V], const float *p /* [V] */)
{
    float s[V];
    load_vec<V>(s, p);
#pragma unroll
    for (int e = 0; e < V; e++)
        d[e] += s[e];
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

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
template <typename Z, typename Y, int V, int R>
__global__ void __launch_bounds__(kForwardThreads)
block_forward_team_kernel(Y *y /* [N, C] */, float *mean /* [N, G] */, float *rstd /* [N, G] */,
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

/* One block per (sample, group), for groups too wide for a warp's registers. */
template <typename Z, typename Y, int V>
__global__ void __launch_bounds__(kGroupThreads)
block_forward_group_kernel(Y *y /* [N, C] */, float *mean /* [N, G] */, float *rstd /* [N, G] */,
                           const Z *z /* [N, C] */, const float *skip /* [N, C] or NULL */,
                           const float *bias /* [C] */,
                           const float *gamma /* [C] */, const float *beta /* [C] */, int C, int G,
                           float eps, float slope)
{
    FN_GRID_WAIT();
    __shared__ float smem[kWarpSize];
    const int K = C / G;
    const size_t pair = blockIdx.x;
    const size_t n = pair / G;
    const int c0 = (int)(pair % G) * K;
    const Z *zg = z + n * C + c0;
    const int step = blockDim.x * V;

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
        if (skip)
            add_vec<V>(out, skip + n * C + c0 + j);
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
 * then the block sums its warps into partials[chunk]; the tile's last
 * block adds the chunks into out (dgamma, dbeta, dbias; column_store). */
template <typename Z, int V, int R>
__global__ void __launch_bounds__(kBackwardWarps * kWarpSize)
block_backward_team_kernel(Z *dz /* [N, C] */, column_outputs<3> out,
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
    /* One (quantity, column) a thread: the whole block waits on L2 at once. */
    for (int i = threadIdx.x; i < 3 * tile_cols; i += blockDim.x) {
        const int q = i / tile_cols, c = tile0 + i % tile_cols;
        column_store(out.out[q] + c, column_chunks_sum<3>(partials, q, c, gridDim.y, C),
                     out.beta[q], lr);
    }
}

/* What the group path's backward reads of V channels of a group: z, dy and
 * the parameters (each pointer at the first of the V; `at` the channel
 * offset of z and dy, `c` that of the parameters). */
template <int V>
struct group_vec {
    float z[V], dy[V], bias[V], gamma[V], beta[V];
};

template <typename Z, int V>
__device__ __forceinline__ void load_group_vec(group_vec<V> &v, const Z *z, const float *dy,
                                               const float *bias, const float *gamma,
                                               const float *beta, size_t at, int c)
{
    load_vec<V>(v.z, z + at);
    load_vec<V>(v.dy, dy + at);
    load_vec<V>(v.bias, bias + c);
    load_vec<V>(v.gamma, gamma + c);
    load_vec<V>(v.beta, beta + c);
}

/* zhat of channel e of v, and ghat = du gamma into *gh. */
template <int V>
__device__ __forceinline__ float zhat_ghat(float *gh, const group_vec<V> &v, int e, float mu,
                                           float rs, float slope)
{
    const float zh = ((v.z[e] + v.bias[e]) - mu) * rs;
    *gh = dleaky2(v.dy[e], v.gamma[e] * zh + v.beta[e], slope) * v.gamma[e];
    return zh;
}

/* Backward, group path: dz for one (sample, group) per block. */
template <typename Z, int V>
__global__ void __launch_bounds__(kGroupThreads)
block_backward_group_kernel(Z *dz /* [N, C] */, float *dskip /* [N, C] gets dy, or NULL */,
                            const float *mean /* [N, G] */,
                            const float *rstd /* [N, G] */, const Z *z /* [N, C] */,
                            const float *dy /* [N, C] */, const float *bias /* [C] */,
                            const float *gamma /* [C] */, const float *beta /* [C] */, int C,
                            int G, float slope)
{
    FN_GRID_WAIT();
    __shared__ float smem[kWarpSize];
    const int K = C / G;
    const size_t pair = blockIdx.x;
    const size_t n = pair / G;
    const int c0 = (int)(pair % G) * K;
    const size_t row = n * C + c0;
    const float mu = mean[pair];
    const float rs = rstd[pair];
    const int step = blockDim.x * V;

    float s1 = 0.0f, s2 = 0.0f;
    for (int j = threadIdx.x * V; j < K; j += step) {
        group_vec<V> v;
        load_group_vec<Z, V>(v, z, dy, bias, gamma, beta, row + j, c0 + j);
#pragma unroll
        for (int e = 0; e < V; e++) {
            float gh;
            const float zh = zhat_ghat<V>(&gh, v, e, mu, rs, slope);
            s1 += gh;
            s2 += gh * zh;
        }
    }
    const float m1 = block_sum(s1, smem) / (float)K;
    const float m2 = block_sum(s2, smem) / (float)K;
    for (int j = threadIdx.x * V; j < K; j += step) {
        group_vec<V> v;
        float out[V];
        load_group_vec<Z, V>(v, z, dy, bias, gamma, beta, row + j, c0 + j);
#pragma unroll
        for (int e = 0; e < V; e++) {
            float gh;
            const float zh = zhat_ghat<V>(&gh, v, e, mu, rs, slope);
            out[e] = rs * (gh - m1 - zh * m2);
        }
        store_vec<V>(dz + row + j, out);
        if (dskip)
            store_vec<V>(dskip + row + j, v.dy);
    }
}

/* The group path's column quantities of (n, c) for the partial sums of
 * reduce_cuda.cuh: dgamma (du zhat), dbeta (du), dbias (dz, as stored: in
 * bf16 mode the rounded value). */
template <typename Z>
struct norm_column_op {
    const float *mean, *rstd;         /* [N, G] */
    const Z *z, *dz;                  /* [N, C] */
    const float *dy;                  /* [N, C] */
    const float *bias, *gamma, *beta; /* [C] */
    int C, G;
    float slope;
    struct column {
        float b, gm, bt;
        int g;
    };
    __device__ column column_at(int c) const { return {bias[c], gamma[c], beta[c], c / (C / G)}; }
    __device__ void accumulate(float (&acc)[3], const column &k, int n, int c) const
    {
        const size_t i = (size_t)n * C + c;
        const size_t s = (size_t)n * G + k.g;
        const float zh = ((to_float(z[i]) + k.b) - mean[s]) * rstd[s];
        const float du = dleaky2(dy[i], k.gm * zh + k.bt, slope);
        acc[0] += du * zh;
        acc[1] += du;
        acc[2] += to_float(dz[i]);
    }
};

/* ---- launchers ---- */

/* How a shape is launched: float4 or scalar, vectors per lane, team size. */
typedef struct block_plan {
    int vec;  /* 4 or 1 */
    int reps; /* 1, 2 or 4 on the team path; 0 on the group path */
    int team; /* lanes per group, a power of two <= 32 */
} block_plan;

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* float4 when K and every pointer allow it; then the fewest reps (1, 2, 4)
 * whose 32 lanes cover K, and the smallest power-of-two team that does:
 *   float4: K <= 128 <4,1>, <= 256 <4,2>, <= 512 <4,4>, else group <4>;
 *   scalar: K <= 32 <1,1>, <= 64 <1,2>, <= 128 <1,4>, else group <1>. */
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

/* The team path's instantiations: f(team_shape<V, R>{}) for the plan's. */
template <int V, int R>
struct team_shape {
    static constexpr int vec = V, reps = R;
};

template <typename F>
static void with_team_shape(const block_plan &p, F &&f)
{
    switch (p.vec * 10 + p.reps) {
    case 41: f(team_shape<4, 1>{}); break;
    case 42: f(team_shape<4, 2>{}); break;
    case 44: f(team_shape<4, 4>{}); break;
    case 11: f(team_shape<1, 1>{}); break;
    case 12: f(team_shape<1, 2>{}); break;
    default: f(team_shape<1, 4>{}); break; /* 14 */
    }
}

static const float *param(const fn_block *b, int which) { return b->params[which].value.data; }

/* Where z and dz live: b->z, b->dz (float), or in bf16 mode the bfloat16
 * copies in the workspace; f(z, dz) with the typed pointers. */
template <typename F>
static fn_status with_caches(fn_block *b, F &&f)
{
    fn_block_ws ws;
    fn_block_ws_layout(b, b->scratch.data, &ws);
    if (ws.z_h)
        return f(reinterpret_cast<__nv_bfloat16 *>(ws.z_h),
                 reinterpret_cast<__nv_bfloat16 *>(ws.dz_h));
    return f(b->z.data, b->dz.data);
}

/* float4 loads of float need 16-byte alignment; 4 bfloat16 need 8. */
template <typename Z>
static bool aligned_vec(const Z *p)
{
    return ((uintptr_t)p & (4 * sizeof(Z) - 1)) == 0;
}

template <typename Z, typename Y>
static fn_status normalize_forward(fn_block *b, Y *y /* [N, C] */, const Z *z /* [N, C] */,
                                   int N)
{
    const int C = b->base.out_features, G = b->cfg.groups;
    const float eps = b->cfg.eps, slope = b->cfg.negative_slope;
    const float *bias = param(b, FN_BLOCK_BIAS), *gamma = param(b, FN_BLOCK_GAMMA),
                *beta = param(b, FN_BLOCK_BETA);
    cudaStream_t s = fn_ctx_stream(b->base.ctx);
    const float *skip = b->cfg.residual ? b->x.data : NULL;
    const bool aligned = aligned_vec(y) && aligned_vec(z) && aligned16(bias) && aligned16(gamma) &&
                         aligned16(beta) && aligned16(skip);
    const block_plan p = make_plan(C, G, aligned);
    const size_t pairs = (size_t)N * G;
    if (p.reps == 0) {
        if (pairs > (size_t)INT_MAX)
            return fn_fail(FN_ERR_INVALID, "block forward: %zu (sample, group) pairs", pairs);
        if (p.vec == 4)
            fn_launch(b->base.ctx, block_forward_group_kernel<Z, Y, 4>, (unsigned)pairs,
                      kGroupThreads, 0, s, y, b->mean.data, b->rstd.data, z, skip, bias, gamma,
                      beta, C, G, eps, slope);
        else
            fn_launch(b->base.ctx, block_forward_group_kernel<Z, Y, 1>, (unsigned)pairs,
                      kGroupThreads, 0, s, y, b->mean.data, b->rstd.data, z, skip, bias, gamma,
                      beta, C, G, eps, slope);
        FN_CUDA_CHECK_LAUNCH(block_forward_group_kernel);
        return FN_OK;
    }
    const size_t per_block = (size_t)(kForwardThreads / p.team);
    const size_t blocks = (pairs + per_block - 1) / per_block;
    if (blocks > (size_t)INT_MAX)
        return fn_fail(FN_ERR_INVALID, "block forward: %zu (sample, group) pairs", pairs);
    with_team_shape(p, [&](auto shape) {
        using S = decltype(shape);
        fn_launch(b->base.ctx, block_forward_team_kernel<Z, Y, S::vec, S::reps>, (unsigned)blocks,
                  kForwardThreads, 0, s, y, b->mean.data, b->rstd.data, z, skip, bias, gamma, beta,
                  N, C, G, p.team, eps, slope);
    });
    FN_CUDA_CHECK_LAUNCH(block_forward_team_kernel);
    return FN_OK;
}

extern "C" fn_status fn_block_cuda_normalize_forward(fn_block *b, float *y /* [N, C] */, int N)
{
    return with_caches(b, [&](auto *z, auto *) { return normalize_forward(b, y, z, N); });
}

static fn_status normalize_forward_bf16(fn_block *b, __nv_bfloat16 *y /* [N, C] */, int N)
{
    return with_caches(b, [&](auto *z, auto *) { return normalize_forward(b, y, z, N); });
}

/* dz into the dz cache; dgamma, dbeta, dbias into the gradients by their
 * grad_beta (lr == 0) or applied to gamma, beta, bias by plain SGD (lr >
 * 0); dskip (the residual block's dx, or NULL) gets dy. Two launches on
 * the group path (dz, then the column sums), one on the team path. */
template <typename Z>
static fn_status norm_backward_into(fn_block *b, Z *dz /* [N, C] */, float *dskip /* [N, C] */,
                                    const Z *z /* [N, C] */, const float *dy /* [N, C] */, int N,
                                    float lr)
{
    const int C = b->base.out_features, G = b->cfg.groups;
    const float slope = b->cfg.negative_slope;
    const float *bias = param(b, FN_BLOCK_BIAS), *gamma = param(b, FN_BLOCK_GAMMA),
                *beta = param(b, FN_BLOCK_BETA);
    cudaStream_t s = fn_ctx_stream(b->base.ctx);
    fn_block_ws ws;
    fn_block_ws_layout(b, b->scratch.data, &ws);
    float *partials = ws.partials;
    const int chunks = fn_row_chunks(N);
    /* In the partials' order: dgamma, dbeta, dbias; to the values when the
     * step is folded in, else to the gradients by their grad_beta. */
    auto to = [&](int which) {
        return lr > 0.0f ? b->params[which].value.data : b->params[which].grad.data;
    };
    auto beta_of = [&](int which) { return b->params[which].grad_beta; };
    const column_outputs<3> out = {{to(FN_BLOCK_GAMMA), to(FN_BLOCK_BETA), to(FN_BLOCK_BIAS)},
                                   {beta_of(FN_BLOCK_GAMMA), beta_of(FN_BLOCK_BETA),
                                    beta_of(FN_BLOCK_BIAS)}};
    const bool aligned = aligned16(dy) && aligned_vec(z) && aligned_vec(dz) && aligned16(bias) &&
                         aligned16(gamma) && aligned16(beta) && aligned16(dskip);
    const block_plan p = make_plan(C, G, aligned);
    if (p.reps == 0) {
        const size_t pairs = (size_t)N * G;
        if (pairs > (size_t)INT_MAX)
            return fn_fail(FN_ERR_INVALID, "block backward: %zu (sample, group) pairs", pairs);
        if (p.vec == 4)
            fn_launch(b->base.ctx, block_backward_group_kernel<Z, 4>, (unsigned)pairs,
                      kGroupThreads, 0, s, dz, dskip, b->mean.data, b->rstd.data, z, dy, bias,
                      gamma, beta, C, G, slope);
        else
            fn_launch(b->base.ctx, block_backward_group_kernel<Z, 1>, (unsigned)pairs,
                      kGroupThreads, 0, s, dz, dskip, b->mean.data, b->rstd.data, z, dy, bias,
                      gamma, beta, C, G, slope);
        FN_CUDA_CHECK_LAUNCH(block_backward_group_kernel);
        const norm_column_op<Z> op = {b->mean.data, b->rstd.data, z, dz, dy,
                                      bias, gamma, beta, C, G, slope};
        return fn_column_sums<3>(b->base.ctx, out, partials, ws.tickets, op, N, C, chunks, lr);
    }
    const int groups_per_warp = kWarpSize / p.team;
    const dim3 grid((unsigned)((G + groups_per_warp - 1) / groups_per_warp), (unsigned)chunks);
    const int rows_per_chunk = fn_chunk_rows(N, chunks);
    with_team_shape(p, [&](auto shape) {
        using S = decltype(shape);
        fn_launch(b->base.ctx, block_backward_team_kernel<Z, S::vec, S::reps>, grid,
                  kBackwardWarps * kWarpSize, 0, s, dz, out, partials, ws.tickets, dskip,
                  b->mean.data, b->rstd.data, z, dy, bias, gamma, beta, N, C, G, p.team,
                  rows_per_chunk, slope, lr);
    });
    FN_CUDA_CHECK_LAUNCH(block_backward_team_kernel);
    return FN_OK;
}

/* dx: the residual block's, which starts as dy (NULL otherwise). */
static fn_status norm_backward(fn_block *b, const float *dy /* [N, C] */, fn_tensor *dx, int N,
                               float lr)
{
    float *dskip = b->cfg.residual && dx ? dx->data : NULL;
    return with_caches(b, [&](auto *z, auto *dz) {
        return norm_backward_into(b, dz, dskip, z, dy, N, lr);
    });
}

extern "C" fn_status fn_block_cuda_normalize_backward(fn_block *b, const float *dy /* [N, C] */,
                                                      int N)
{
    return norm_backward(b, dy, NULL, N, 0.0f);
}

static fn_status block_cuda_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    fn_block *b = (fn_block *)l;
    b->x = *x; /* the residual block's skip, read by the normalisation */
    FN_TRY(fn_block_cuda_forward_product(b, x));
    return fn_block_cuda_normalize_forward(b, y->data, x->rows);
}

/* The ops' forward_bf16 hook (layer.h): x NULL reads the input from the
 * workspace's x_h, where the layer before wrote it; y_h takes y as
 * bfloat16. Backward reads dy, z and the statistics, never y. */
static fn_status block_cuda_forward_bf16(fn_layer *l, const fn_tensor *x, int rows, fn_tensor *y,
                                         void *y_h)
{
    fn_block *b = (fn_block *)l;
    b->x = x ? *x : fn_tensor_view(NULL, rows, l->in_features, l->device);
    FN_TRY(fn_block_cuda_forward_product(b, &b->x));
    if (y_h)
        return normalize_forward_bf16(b, static_cast<__nv_bfloat16 *>(y_h), rows);
    return fn_block_cuda_normalize_forward(b, y->data, rows);
}

/* The ops' bf16_input hook: the workspace's x_h, which the forward product
 * reads; none for a residual block, whose skip reads the float input. */
static void *block_cuda_bf16_input(fn_layer *l)
{
    fn_block *b = (fn_block *)l;
    if (b->cfg.residual)
        return nullptr;
    fn_block_ws ws;
    fn_block_ws_layout(b, b->scratch.data, &ws);
    return ws.x_h;
}

static fn_status block_cuda_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    fn_block *b = (fn_block *)l;
    const fn_param *w = &b->params[FN_BLOCK_WEIGHT];
    FN_TRY(norm_backward(b, dy->data, dx, l->batch, 0.0f));
    /* the weight's gradient in bfloat16 where an optimiser asks (param.h) */
    void *dw = w->grad_bf16 ? w->grad_bf16 : static_cast<void *>(w->grad.data);
    return fn_block_cuda_backward_products(b, dx, dw, w->grad_bf16 != nullptr, 1.0f,
                                           w->grad_beta);
}

/* The ops' backward_sgd hook (layer.h): the same passes as backward, with
 * the values as the outputs of the updates. */
static fn_status block_cuda_backward_sgd(fn_layer *l, const fn_tensor *dy, fn_tensor *dx,
                                         float lr)
{
    fn_block *b = (fn_block *)l;
    FN_TRY(norm_backward(b, dy->data, dx, l->batch, lr));
    return fn_block_cuda_backward_products(b, dx, b->params[FN_BLOCK_WEIGHT].value.data, 0, -lr,
                                           1.0f);
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
    .backward_sgd = block_cuda_backward_sgd,
    .set_pass = nullptr,
    .forward_unbiased = nullptr,
    .bf16_input = block_cuda_bf16_input,
    .forward_bf16 = block_cuda_forward_bf16,
};

extern "C" const fn_layer_ops fn_residual_cuda_ops = {
    .kind = "residual",
    .forward = block_cuda_forward,
    .backward = block_cuda_backward,
    .destroy = block_cuda_destroy,
    .backward_sgd = block_cuda_backward_sgd,
    .set_pass = nullptr,
    .forward_unbiased = nullptr,
    .bf16_input = block_cuda_bf16_input,
    .forward_bf16 = block_cuda_forward_bf16,
};

extern "C" fn_status fn_block_cuda_clear_tickets(fn_block *b)
{
    fn_block_ws ws;
    fn_block_ws_layout(b, b->scratch.data, &ws);
    FN_CUDA_CHECK(cudaMemsetAsync(ws.tickets, 0, (size_t)b->base.out_features * sizeof(int),
                                  fn_ctx_stream(b->base.ctx)));
    return FN_OK;
}

/* The workspace; in bf16 mode its w_h is the weight's bfloat16 copy
 * (param.h), which the forward reads as it is while an owner keeps it. */
extern "C" fn_status fn_block_cuda_setup(fn_block *b)
{
    fn_block_ws ws;
    FN_TRY(fn_cuda_workspace_alloc(&b->scratch, fn_block_ws_layout(b, NULL, &ws)));
    fn_block_ws_layout(b, b->scratch.data, &ws);
    b->params[FN_BLOCK_WEIGHT].value_bf16 = ws.w_h;
    return FN_OK;
}
