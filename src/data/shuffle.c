/* shuffle.c — splitmix64 streams and the Fisher-Yates permutations drawn
 * from them, without modulo bias. */
#include "data/shuffle.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t fn_shuffle_stream(uint64_t seed, long long epoch, int64_t stream)
{
    uint64_t s = seed;
    uint64_t a = splitmix64(&s) ^ (uint64_t)epoch;
    uint64_t b = splitmix64(&a) ^ (uint64_t)stream;
    return splitmix64(&b);
}

/* Uniform in [0, n), by rejection so there is no modulo bias. */
static uint64_t below(uint64_t *state, uint64_t n)
{
    uint64_t threshold = (0 - n) % n;
    uint64_t r;
    do
        r = splitmix64(state);
    while (r < threshold);
    return r % n;
}

void fn_shuffle_permutation(int64_t *p, int64_t n, int shuffle, uint64_t state)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = i;
    if (!shuffle)
        return;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)below(&state, (uint64_t)i + 1);
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}
