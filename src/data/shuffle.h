/* shuffle.h (private) — the seeded permutations behind fn_data's epochs:
 * a splitmix64 stream for each (seed, epoch, stream), so any epoch's order
 * can be made again from those numbers alone (a resumed run's, a test's).
 * The numbers are part of the checkpoint format in effect: a change here
 * would make a resumed run see other batches than the run it continues. */
#ifndef FUSENET_SRC_SHUFFLE_H
#define FUSENET_SRC_SHUFFLE_H

#include <stdint.h>

/* The generator's state for (seed, epoch, stream); fn_data uses stream 0
 * for the order of its slabs and stream k + 1 for the rows of slab k. */
uint64_t fn_shuffle_stream(uint64_t seed, long long epoch, int64_t stream);

/* p[0, n) = 0, 1, ..., n - 1, then (shuffle != 0) a Fisher-Yates shuffle
 * drawn from state. */
void fn_shuffle_permutation(int64_t *p, int64_t n, int shuffle, uint64_t state);

#endif
