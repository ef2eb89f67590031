/* bf16.h (private) — bfloat16 on the host: a float rounded to the nearest
 * bfloat16 (ties to even; a NaN stays a NaN, quieted; an Inf stays an Inf;
 * a float beyond the largest bfloat16, 3.3895e38, becomes an Inf of its
 * sign), and a bfloat16 widened to float, which is exact. The same
 * rounding as the GPU's __float2bfloat16_rn, so host and device sums in
 * bfloat16 agree bit for bit on the same order. A bfloat16 keeps 8
 * significant bits: the rounding's relative error is at most u = 2^-8
 * (with an absolute 2^-134 at most among the subnormals). */
#ifndef FUSENET_CORE_BF16_H
#define FUSENET_CORE_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t fn_bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep the sign and top bits, quieted */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u); /* to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

static inline float fn_bf16_widen(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif
