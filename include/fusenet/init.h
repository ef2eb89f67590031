/* init.h — seeded initialisation with cuRAND's Philox generator.
 *
 * cuRAND's host API drives both: a host generator fills CPU tensors, a
 * device generator (numbers generated on the GPU, into its memory) fills GPU
 * tensors. Both draw the same uniforms for the same (seed, offset), and the
 * transform to [lo, hi) is the same float arithmetic on both sides, so one
 * seed gives bit-identical initial weights on either device. */
#ifndef FUSENET_INIT_H
#define FUSENET_INIT_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A position in one Philox stream. Each draw advances `offset` by the number
 * of values drawn, so successive tensors get successive, disjoint numbers. */
typedef struct fn_rng {
    uint64_t seed;
    uint64_t offset;
} fn_rng;

/* t <- lo + (hi - lo) * u, u uniform in (0, 1], drawn from rng. */
FN_API fn_status fn_init_uniform(fn_tensor *t, float lo, float hi, fn_rng *rng);
/* t <- value everywhere. */
FN_API fn_status fn_init_constant(fn_tensor *t, float value);

#ifdef __cplusplus
}
#endif
#endif
