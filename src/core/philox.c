/* philox.c — cuRAND's Philox4x32-10 uniforms on the CPU (philox.h).
 *
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11) maps a 128-bit counter and a 64-bit key (the seed) to four
 * 32-bit words in ten rounds. cuRAND's generators lay the stream out as
 * 65536 subsequences side by side: value p of the stream is word p % 4 of
 * block b = p / 4, whose counter is {b / 65536 (64 bits), b % 65536 (the
 * subsequence), 0}. A word x becomes the float x * 2^-32 + 2^-33, each
 * operation rounded on its own, as cuRAND's _curand_uniform. */
#include "core/philox.h"
#include "core/philox_rounds.h"

#define TWO_POW_MINUS_32 2.3283064e-10f
#define SUBSEQUENCES 65536u

/* The four words of block `block` of the stream of `seed`. */
static void philox_block(uint32_t c[4], uint64_t block, uint64_t seed)
{
    const uint64_t step = block / SUBSEQUENCES;
    c[0] = (uint32_t)step;
    c[1] = (uint32_t)(step >> 32);
    c[2] = (uint32_t)(block % SUBSEQUENCES);
    c[3] = 0;
    fn_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

static float word_to_uniform(uint32_t x)
{
    const float scaled = (float)x * TWO_POW_MINUS_32;
    return scaled + TWO_POW_MINUS_32 / 2.0f;
}

void fn_philox_uniform(float *out, size_t n, uint64_t seed, uint64_t offset)
{
    size_t i = 0;
    while (i < n) {
        const uint64_t p = offset + i;
        uint32_t words[4];
        philox_block(words, p / 4, seed);
        for (unsigned w = (unsigned)(p % 4); w < 4 && i < n; w++)
            out[i++] = word_to_uniform(words[w]);
    }
}
