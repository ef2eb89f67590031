/* philox_rounds.h (private) — the ten rounds of Philox4x32-10 on one
 * 128-bit counter and 64-bit key, as a function both the host C and the
 * CUDA kernels compile, so a counter-based draw gives the same bits on
 * the CPU and the GPU (philox.c lays cuRAND's stream out with it; dropout
 * keys its masks with it). */
#ifndef FUSENET_CORE_PHILOX_ROUNDS_H
#define FUSENET_CORE_PHILOX_ROUNDS_H

#include <stdint.h>

#ifdef __CUDACC__
#define FN_HOST_DEVICE __host__ __device__
#else
#define FN_HOST_DEVICE
#endif

/* c = Philox4x32-10(c, key {k0, k1}) (Salmon et al., SC'11). */
static inline FN_HOST_DEVICE void fn_philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
        const uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0;
        const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = (uint32_t)p1;
        c[2] = n2;
        c[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u; /* key schedule: golden ratio */
        k1 += 0xBB67AE85u; /* sqrt(3) - 1 */
    }
}

#endif
