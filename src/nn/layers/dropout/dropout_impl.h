/* dropout_impl.h (private) — the dropout layer's state (dropout.h) and the
 * draw of its mask, shared by src/nn/layers/dropout/dropout.c, src/nn/layers/dropout/dropout_cpu.c and
 * kernels/nn/layers/dropout/dropout_cuda.cu, which compile the same fn_dropout_keeps. */
#ifndef FUSENET_SRC_DROPOUT_IMPL_H
#define FUSENET_SRC_DROPOUT_IMPL_H

#include "core/philox_rounds.h"
#include "fusenet/dropout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_dropout {
    fn_layer base;      /* first member; no parameters */
    double p;           /* in [0, 1) */
    float scale;        /* 1/(1 - p), rounded to float once */
    uint32_t threshold; /* an element is kept when its word >= this: floor(p 2^32) */
    uint64_t seed;      /* the run's seed ... */
    uint64_t key;       /* ... and the layer's (the rng offset at creation) */
    int masked;         /* the last forward drew a mask (training): backward applies it */
    fn_pass drawn;      /* the pass of that forward (CPU) */
    fn_tensor pass_dev; /* GPU: {step, row0} as two uint64 where the kernels read them */
} fn_dropout;

extern const fn_layer_ops fn_dropout_cpu_ops;
extern const fn_layer_ops fn_dropout_cuda_ops;

/* Whether element e (row * width + column, the row counted in the whole
 * batch) of step `step` is kept, for the layer of seed and key. One
 * Philox4x32-10 block gives the words of four consecutive elements:
 * counter {e / 4 (64 bits), step (64 bits)}, key seed + key * 2^64/phi. */
static inline FN_HOST_DEVICE int fn_dropout_keeps(uint64_t seed, uint64_t key, uint64_t step,
                                                  uint64_t e, uint32_t threshold)
{
    const uint64_t k = seed + key * 0x9E3779B97F4A7C15ull;
    const uint64_t block = e / 4;
    uint32_t c[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)step,
                     (uint32_t)(step >> 32)};
    fn_philox4x32_10(c, (uint32_t)k, (uint32_t)(k >> 32));
    return c[e % 4] >= threshold;
}

#ifdef __cplusplus
}
#endif
#endif
