/* philox.h (private) — the uniforms of cuRAND's Philox4x32-10 host
 * generator in plain C, so the CPU draws the numbers the GPU draws
 * (kernels/core/init_cuda.cu, cuRAND) in a build with or without the CUDA
 * toolkit. tests/test_init_curand.c compares them with cuRAND's host
 * generator bit for bit. */
#ifndef FUSENET_CORE_PHILOX_H
#define FUSENET_CORE_PHILOX_H

#include <stddef.h>
#include <stdint.h>

/* out[i] = the uniform in (0, 1] at position offset + i of the stream of
 * `seed`, as curandGenerateUniform gives after
 * curandSetPseudoRandomGeneratorSeed(seed) and curandSetGeneratorOffset(offset). */
void fn_philox_uniform(float *out /* [n] */, size_t n, uint64_t seed, uint64_t offset);

#endif
