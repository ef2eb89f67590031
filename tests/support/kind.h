/* kind.h — what the generic gradient-check drivers know of a layer kind:
 * one static const descriptor per kind (kind_block.c, kind_linear.c, ...), in
 * the style of the library's ops tables. It says how to create the layer,
 * how to draw its parameters, how to call its float64 reference and its
 * float32 error model, where its activation has a kink, and at which shapes
 * each tier runs. Everything else (which tensors there are, uploading,
 * running, comparing, finite differences) the drivers take from the layer's
 * fn_param list, so a new kind is a descriptor and table rows, added to
 * gc_kinds. Hooks take a point t in the problem's tensors (problem.h) and
 * find their parameters by name with gc_named. */
#ifndef FN_TEST_KIND_H
#define FN_TEST_KIND_H

#include <stddef.h>

#include "check.h"
#include "fusenet/layer.h"
#include "problem.h"

#define GC_COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* The hooks a kind names <prefix>_fill, <prefix>_forward, <prefix>_backward,
 * <prefix>_estimate and <prefix>_shape; create and kink_input stay explicit. */
#define GC_HOOKS(prefix)                                                                   \
    .fill = prefix##_fill, .forward = prefix##_forward, .backward = prefix##_backward,     \
    .estimate = prefix##_estimate, .shape = prefix##_shape
/* One case table in a descriptor: `GC_TABLE(cases, rows)` sets .cases and
 * .n_cases from the static array rows. */
#define GC_TABLE(field, rows) .field = rows, .n_##field = GC_COUNT(rows)
/* The three tables every kind has: against the reference, the checks, the
 * finite differences. */
#define GC_CASE_TABLES(ref_rows, rows, fd_rows)                                             \
    GC_TABLE(ref_cases, ref_rows), GC_TABLE(cases, rows), GC_TABLE(fd_cases, fd_rows)

struct gc_kind {
    const char *name; /* "block": the table's layer column */
    /* A layer for case c holding up to c->batch rows; its parameter values
     * are then whatever the driver uploads. */
    fn_status (*create)(fn_layer **l, fn_context *ctx, const gc_case *c);
    /* Draws parameter `param` [n] for case c. */
    void (*fill)(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng);
    /* The float64 reference at point t: y [batch, out]; then from dy the
     * gradient of every tensor, g[i] shaped as t[i] (assigned). */
    void (*forward)(const gc_problem *p, double *const *t, double *y);
    void (*backward)(const gc_problem *p, double *const *t, const double *dy, double *const *g);
    /* Per-element float32 error estimates of y (ey) and of the gradients
     * from dy (eg[i] shaped as t[i]); u_op as estimate.h. */
    void (*estimate)(const gc_problem *p, double *const *t, const double *dy, double u_op,
                     double *ey, double *const *eg);
    /* Optional, NULL for a smooth kind: u [batch, out], the input of the
     * activation whose derivative jumps at u = 0, at point t, and, when eu
     * is not NULL, its float32 error estimate. */
    void (*kink_input)(const gc_problem *p, double *const *t, double u_op, double *u, double *eu);
    /* The table's shape column, "(N,in,out,G,slope)". */
    void (*shape)(char *buf, size_t size, const gc_case *c);

    const gc_case *ref_cases; /* tier 1: central differences on the reference */
    size_t n_ref_cases;
    const gc_case *cases; /* tier 2 against the reference, and GPU vs CPU */
    size_t n_cases;
    const gc_case *unaligned_cases; /* tier 2 with y, dy one float off alignment */
    size_t n_unaligned_cases;
    const gc_case *fd_cases; /* tier 3: each costs (tensors + 1) x 5 forwards */
    size_t n_fd_cases;
};

/* The affine parameters every kind with a weight shares (kind_fill.c):
 * weight ~ U(-b, b) and bias ~ U(boffset - b, boffset + b), b = wscale /
 * sqrt(in). Returns 1 when `param` is one of them (and fills a), else 0. */
int gc_fill_affine(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng);
/* Aborts naming the kind and a parameter it has no distribution for. */
_Noreturn void gc_no_distribution(const char *kind, const char *param);

extern const gc_kind gc_block_kind;
extern const gc_kind gc_linear_kind;
extern const gc_kind gc_relu_kind;
extern const gc_kind gc_gelu_kind;
extern const gc_kind gc_residual_kind;
extern const gc_kind gc_dropout_kind;

/* Every kind the tests check, in table order. */
extern const gc_kind *const gc_kinds[];
extern const size_t gc_n_kinds;

#endif
