/* gradcheck.h — the three tiers of the gradient checks, one generic driver
 * each, run for any layer kind by its descriptor (kind.h) and, for tiers 2
 * and 3, against whatever backend a context names, so that
 * test_gradcheck_reference.c, test_gradcheck_cpu.c and test_gradcheck_cuda.c
 * share them. Each check prints its table rows and returns 1 when every
 * comparison held (0 also when a library call failed: the failure is
 * printed). The `_cases` forms run every row of the kind's table for that
 * tier, each after a line "-- <why>", and go on past a failure.
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
int gc_reference_fd_cases(fn_context *ctx, const gc_kind *k);

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
/* Every case of k->cases, then of k->unaligned_cases at offset 1. */
int gc_vs_reference_cases(fn_context *ctx, const gc_kind *k);

/* The layer on ctx against the layer on base (same data): each within the
 * sum of both error estimates. */
int gc_cross(fn_context *ctx, fn_context *base, const gc_kind *k, const gc_case *c);
int gc_cross_cases(fn_context *ctx, fn_context *base, const gc_kind *k);

/* Tier 3: float32 finite differences through the layer on ctx along random
 * directions (x and each parameter alone, then all at once), against the
 * layer's own analytic directional derivative. */
int gc_fd(fn_context *ctx, const gc_kind *k, const gc_case *c);
int gc_fd_cases(fn_context *ctx, const gc_kind *k);

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

/* "cpu fp32", "cuda tf32": the backend column of the table. */
const char *gc_backend_name(fn_context *ctx);

#endif
