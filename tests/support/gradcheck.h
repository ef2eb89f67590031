/* gradcheck.h — the bodies of the tier-2 and tier-3 gradient checks, run
 * against whatever backend a context names, so test_gradcheck_cpu.c and
 * test_gradcheck_cuda.c share them. Each prints its table rows and returns 1
 * when every comparison held (0 also when a library call failed: the
 * failure is printed). Tolerances: estimate.h. */
#ifndef FN_TEST_GRADCHECK_H
#define FN_TEST_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/device.h"

/* One block shape and its data. x ~ U(-xscale, xscale); weight and bias ~
 * U(-wscale/sqrt(in), wscale/sqrt(in)) + boffset on the bias; gamma ~
 * U(0.5, 1.5), beta ~ U(-0.5, 0.5), dy ~ U(-1, 1). */
typedef struct gc_block_case {
    int batch, in, out, groups;
    double slope;
    double xscale, wscale, boffset;
    uint64_t seed;
    const char *why; /* what the shape is there to catch */
} gc_block_case;

/* The shapes every backend is checked at (tier 2), and the subset tier 3
 * runs (each tier-3 case costs 6 directions x 5 forwards). */
extern const gc_block_case gc_block_cases[];
extern const size_t gc_n_block_cases;
extern const gc_block_case gc_fd_cases[];
extern const size_t gc_n_fd_cases;
/* Tier-2 shapes run with y and dy misaligned (gc_block_vs_reference_at,
 * offset 1), so the GPU takes its scalar kernels. */
extern const gc_block_case gc_unaligned_cases[];
extern const size_t gc_n_unaligned_cases;

/* Tier 2: the block on ctx against the float64 reference: y and all five
 * gradients. */
int gc_block_vs_reference(fn_context *ctx, const gc_block_case *c);
/* The same with y and dy as views `offset` floats into their allocations. */
int gc_block_vs_reference_at(fn_context *ctx, const gc_block_case *c, int offset);
/* Every case of gc_block_cases, then of gc_unaligned_cases at offset 1,
 * each after a line "-- <why>"; 1 when all held (all run whatever fails). */
int gc_block_cases_vs_reference(fn_context *ctx);
/* Tier 2: the linear layer (y, dx, dW, db) and the two losses (value and
 * gradient). */
int gc_linear_vs_reference(fn_context *ctx, int batch, int in, int out, uint64_t seed);
int gc_losses_vs_reference(fn_context *ctx, int rows, int cols, double scale, uint64_t seed);

/* Tier 3: float32 finite differences through the layer on ctx along random
 * directions (each tensor alone, then all at once), against the layer's own
 * analytic directional derivative. */
int gc_block_fd(fn_context *ctx, const gc_block_case *c);
/* gc_block_fd on every case of gc_fd_cases, each after "-- <why>". */
int gc_block_cases_fd(fn_context *ctx);
int gc_linear_fd(fn_context *ctx, int batch, int in, int out, uint64_t seed);
int gc_losses_fd(fn_context *ctx, int rows, int cols, uint64_t seed);

/* The block on ctx against the block on base (same data): each within the
 * sum of both error estimates. */
int gc_block_cross(fn_context *ctx, fn_context *base, const gc_block_case *c);

/* "cpu fp32", "cuda tf32": the backend column of the table. */
const char *gc_backend_name(fn_context *ctx);

#endif
