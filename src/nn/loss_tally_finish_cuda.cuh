/* loss_tally_finish_cuda.cuh (private) — a loss tally's count of one step
 * on the device, shared by the tally's finish kernel
 * (kernels/nn/loss_tally_cuda.cu) and the losses' kernels that finish their
 * own partial sums in their last block (kernels/nn/loss_cuda.cu): the partial
 * sums added in one fixed order by a block of kTallyFinishThreads, the
 * value rounded once, a finite value counted and the first non-finite one
 * recorded, so either way gives the same bits. */
#ifndef FUSENET_NN_LOSS_TALLY_FINISH_CUDA_CUH
#define FUSENET_NN_LOSS_TALLY_FINISH_CUDA_CUH

#include <math.h>

#include "fusenet/loss_kind.h"
#include "nn/loss_tally.h"
#include "core/reduce_cuda.cuh"

/* The block size of a finish: it fixes the order of the additions. */
inline constexpr int kTallyFinishThreads = 256;

/* Every thread of a block of kTallyFinishThreads calls it. loss[0] = (sum
 * of the partials, in order) * scale, as the losses' own finish, counted in
 * the tally: a finite loss adds (double)loss * rows to the sum (rounded as
 * the host's loss_sum += loss * rows: no fused multiply-add), the counts and
 * the rows; the first non-finite one is recorded and raises the bad flag;
 * once it is raised, nothing is counted. The partials are read through L2
 * (other blocks of the same launch may have written them). */
__device__ __forceinline__ void tally_finish_block(float *loss /* [1] */,
                                                   fn_loss_tally_value *tally,
                                                   const double *partials /* [count] */,
                                                   const int *counts /* [count] or NULL */,
                                                   int count, double scale, int rows)
{
    __shared__ double smem[kWarpSize];
    double s = 0.0, c = 0.0; /* c: a sum of ints below 2^31, exact in double */
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        s += __ldcg(partials + i);
        if (counts)
            c += (double)__ldcg(counts + i);
    }
    s = block_sum(s, smem);
    if (counts)
        c = block_sum(c, smem);
    if (threadIdx.x != 0)
        return;
    const float value = (float)(s * scale);
    loss[0] = value;
    if (tally->bad)
        return;
    if (!isfinite(value)) {
        tally->bad = 1;
        tally->bad_step = tally->base_step + tally->steps;
        tally->bad_loss = value;
        return;
    }
    tally->loss_sum = __dadd_rn(tally->loss_sum, __dmul_rn((double)value, (double)rows));
    tally->correct += (long long)c;
    tally->seen += rows;
    tally->steps++;
    tally->last_loss = value;
}

/* A loss kernel's end, in every thread of each of its gridDim.x blocks of
 * kTallyFinishThreads, once the block's partials[blockIdx.x] (and counts)
 * are written: with into, the last block to arrive finishes them all
 * there. */
__device__ __forceinline__ void tally_finish_last(const fn_loss_tally_into &into,
                                                  const double *partials /* [gridDim.x] */,
                                                  const int *counts /* [gridDim.x] or NULL */,
                                                  double scale)
{
    if (into.sums && block_arrived_last(into.ticket, (int)gridDim.x))
        tally_finish_block(into.loss, into.sums, partials, counts, (int)gridDim.x, scale,
                           into.rows);
}

#endif
