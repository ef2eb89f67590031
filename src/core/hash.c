/* hash.c — the running hashes of hash.h. */
#include "core/hash.h"

#include <string.h>

uint64_t fn_hash_bytes(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t fn_hash_words(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    for (; n > 0; n--, p++)
        h = ((h ^ *p) * 0x100000001b3ULL) ^ (h >> 31);
    return h;
}
