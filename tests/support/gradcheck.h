/* gradcheck.h — the three tiers of the gradient checks, one generic driver
 * each, run for any layer kind by its descriptor (kind.h) and, for tiers 2
 * and 3, against whatever backend a context names, so that
 * test_gradcheck_reference.c, test_gradcheck_cpu.c and test_gradcheck_cuda.c
 * share them. Each check prints its table rows and returns 1 when every
 * comparison held (0 also when a library call failed: the failure is
 * printed). gc_kind_cases runs every row of a kind's table for a tier,
 * each after a line "-- <why>", and goes on past a failure.
 * Tolerances: tier 1 gradcheck_ref.c, tier 2 estimate.h, tier 3 fd.h. */
#ifndef FN_TEST_GRADCHECK_H
#define FN_TEST_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/device.h"
#include "kind.h"

/* Tier 1: central differences on the kind's float64 reference, element by
 * element, against its analytic gradients. ctx (a CPU one will do) serves
 * only to read the layer's parameter list. */
int gc_reference_fd(fn_context *ctx, const gc_kind *k, const gc_case *c);

/* Tier 1's central differences and its table row, for checks of what is
 * not a layer (the losses): fd[i] = dL/dtheta[i] of f, which reads theta;
 * then max_i |fd_i - an_i| / max(|an_i|, 1e-2 scale) <= 1e-6. */
typedef double (*gc_objective_fn)(void *arg);
void gc_central_differences(double *theta, size_t n, gc_objective_fn f, void *arg, double *fd);
int gc_compare_fd(const char *layer, const char *shape, const char *tensor, const double *fd,
                  const double *an, size_t n, int cols, double scale);

/* Tier 2: the layer on ctx against the float64 reference: y and the
 * gradient of x and of every parameter, with y and dy views `offset` floats
 * into their allocations (1: the GPU takes its scalar kernels). */
int gc_vs_reference(fn_context *ctx, const gc_kind *k, const gc_case *c, int offset);

/* The layer on ctx against the layer on base (same data): each within the
 * sum of both error estimates. */
int gc_cross(fn_context *ctx, fn_context *base, const gc_kind *k, const gc_case *c);

/* Tier 3: float32 finite differences through the layer on ctx along random
 * directions (x and each parameter alone, then all at once), against the
 * layer's own analytic directional derivative. */
int gc_fd(fn_context *ctx, const gc_kind *k, const gc_case *c);

/* The losses, tiers 2 and 3 (not layers: their input is the only tensor
 * and L is the loss value). pred and target ~ U(-scale, scale). */
typedef struct gc_loss_case {
    int rows, cols;
    double scale;
    uint64_t seed;
    const char *why;
} gc_loss_case;
/* MSE and cross-entropy: value and gradient against the reference. */
int gc_losses_vs_reference(fn_context *ctx, const gc_loss_case *c);
int gc_losses_vs_reference_cases(fn_context *ctx);
/* Finite differences through both losses along a direction in pred. */
int gc_losses_fd(fn_context *ctx, const gc_loss_case *c);
int gc_losses_fd_cases(fn_context *ctx);

/* Which check a case runs. */
typedef enum gc_tier {
    GC_REFERENCE_FD, /* tier 1: gc_reference_fd */
    GC_VS_REFERENCE, /* tier 2: gc_vs_reference */
    GC_FD,           /* tier 3: gc_fd */
    GC_CROSS,        /* gc_cross against base */
    GC_LOSSES_VS_REFERENCE, /* tier 2 of the losses (once, not a kind) */
    GC_LOSSES_FD            /* tier 3 of the losses (once, not a kind) */
} gc_tier;

/* Every case of k's table for the tier (tier 2: k->cases, then
 * k->unaligned_cases at offset 1; the losses' tiers ignore k). */
int gc_kind_cases(gc_tier tier, fn_context *ctx, fn_context *base, const gc_kind *k);

/* The tier's cases for every layer kind of gc_kinds (the losses' once),
 * each under a table header made from fmt with the kind's name ("losses"
 * for the losses) and then `mode` (fmt's second %s; NULL when it has
 * none); base: GC_CROSS's other context, else NULL. 1 when every one
 * held. */
int gc_kinds_run(gc_tier tier, fn_context *ctx, fn_context *base, const char *fmt,
                 const char *mode);

/* A tier and its tables' title (gc_kinds_run's fmt). */
typedef struct gc_tier_row {
    gc_tier tier;
    const char *title;
} gc_tier_row;

/* gc_kinds_run for every row, going on past a failure; each failed row is
 * named in a last line "failed: <title>". 1 when every one held. */
int gc_tiers_run(const gc_tier_row *rows, size_t n, fn_context *ctx, fn_context *base,
                 const char *mode);

/* "cpu fp32", "cuda tf32": the backend column of the table. */
const char *gc_backend_name(fn_context *ctx);

#endif
