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

void fn_hash_stream_start(fn_hash_stream *s)
{
    s->h = FN_HASH_START;
    s->n_pending = 0;
}

void fn_hash_stream_add(fn_hash_stream *s, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    if (s->n_pending) {
        size_t take = 8 - s->n_pending < n ? 8 - s->n_pending : n;
        memcpy(s->pending + s->n_pending, p, take);
        s->n_pending += take;
        p += take;
        n -= take;
        if (s->n_pending < 8)
            return;
        s->h = fn_hash_words(s->h, s->pending, 8);
        s->n_pending = 0;
    }
    const size_t whole = n / 8 * 8;
    s->h = fn_hash_words(s->h, p, whole);
    memcpy(s->pending, p + whole, n - whole);
    s->n_pending = n - whole;
}

uint64_t fn_hash_stream_end(const fn_hash_stream *s)
{
    return fn_hash_words(s->h, s->pending, s->n_pending);
}
