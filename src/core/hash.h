/* hash.h (private) — the 64-bit running hashes that compare what several
 * processes hold (their configs, data and weights): not cryptographic, only
 * sure to change when a value does. */
#ifndef FUSENET_SRC_HASH_H
#define FUSENET_SRC_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's offset basis: the state a hash starts from. */
#define FN_HASH_START 0xcbf29ce484222325ULL

/* FNV-1a over bytes, one at a time (short texts, parameter bits). */
uint64_t fn_hash_bytes(uint64_t h, const void *bytes, size_t n);

/* Eight bytes at a time, each step a bijection of the state, so one changed
 * word always changes the result; the tail byte by byte (whole data sets,
 * where a byte at a time would cost a pass of its own). */
uint64_t fn_hash_words(uint64_t h, const void *bytes, size_t n);

/* fn_hash_words over a stream that arrives in pieces of any length: the
 * end gives what one call over the pieces joined would, from
 * FN_HASH_START. */
typedef struct fn_hash_stream {
    uint64_t h;
    unsigned char pending[8]; /* the bytes after the last whole word */
    size_t n_pending;
} fn_hash_stream;
void fn_hash_stream_start(fn_hash_stream *s);
void fn_hash_stream_add(fn_hash_stream *s, const void *bytes, size_t n);
uint64_t fn_hash_stream_end(const fn_hash_stream *s);

#endif
