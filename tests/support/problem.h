/* problem.h — one gradient-check case as data, whatever the layer kind: the
 * layer input x and one tensor per entry of the kind's fn_param list (names,
 * shapes and order read from a layer of that kind, so nothing here knows a
 * kind's parameters), and the upstream gradient dy; every value a float32
 * number held in float64. Running a layer of the kind over such a point on
 * any context, and asking the kind's descriptor (kind.h) for its reference
 * and error estimates there. All three tiers' drivers work on this. */
#ifndef FN_TEST_PROBLEM_H
#define FN_TEST_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/layer.h"

/* x plus the parameters of any kind the checks know (the block has four). */
#define GC_MAX_TENSORS 8

typedef struct gc_kind gc_kind;

/* One shape and its data. x ~ U(-xscale, xscale); the kind's fill hook
 * draws each parameter (weight and bias ~ U(-wscale/sqrt(in),
 * wscale/sqrt(in)), + boffset on the bias, for both kinds); dy ~ U(-1, 1). */
typedef struct gc_case {
    int batch, in, out;
    int groups;   /* the block's; unused by kinds without groups */
    /* The block's leaky_relu slope and GroupNorm eps, float32 as the
     * library holds them (and no double -> float -> double round trip at
     * run time, which GCC 12's SLP vectorizer drops at -O3). */
    float slope, eps;
    double xscale, wscale, boffset;
    uint64_t seed;
    const char *why; /* what the shape is there to catch */
} gc_case;

/* A point in the problem's tensors: t[i] has p->size[i] values. */
typedef struct gc_problem {
    const gc_kind *kind;
    const gc_case *c;
    int n;                            /* tensors: x, then the layer's parameters */
    char names[GC_MAX_TENSORS][16];   /* "x", then each fn_param's name */
    int rows[GC_MAX_TENSORS], cols[GC_MAX_TENSORS];
    size_t size[GC_MAX_TENSORS];      /* rows * cols */
    double *t[GC_MAX_TENSORS];        /* the point: x [batch, in], then params[i].value */
    double *dy;                       /* [batch, out] */
    size_t ny;                        /* batch * out */
} gc_problem;

/* What one run, the reference or the error estimate gives: y and one
 * gradient (or estimate) per tensor, in the problem's order. */
typedef struct gc_out {
    double *y;                 /* [batch, out] */
    double *g[GC_MAX_TENSORS]; /* g[i] shaped as t[i] */
} gc_out;

/* Reads the parameter list from a layer of kind k created on ctx, then
 * draws x, the parameters (k's fill, in the list's order) and dy from
 * c->seed. c must outlive p. */
fn_status gc_problem_init(gc_problem *p, const gc_kind *k, const gc_case *c, fn_context *ctx);
void gc_problem_free(gc_problem *p);
/* gc_problem_init for a check reported as `layer`: 1 when p is ready, else
 * 0 with the failure printed (run_report) and p freed. */
int gc_problem_open(gc_problem *p, const gc_kind *k, const gc_case *c, fn_context *ctx,
                    const char *layer);

/* The index of the tensor called `name`; aborts when there is none (a
 * descriptor asking for a parameter its layer lacks is a test bug). */
int gc_index(const gc_problem *p, const char *name);
/* t[gc_index(p, name)]: for descriptors mapping a point to their reference. */
double *gc_named(const gc_problem *p, double *const *t, const char *name);

void gc_out_alloc(gc_out *o, const gc_problem *p);
void gc_out_free(gc_out *o);

/* A layer of p's kind on ctx, its parameter list checked against p's. */
fn_status gc_layer(fn_layer **l, fn_context *ctx, const gc_problem *p);
/* On l: the parameters from point t, then forward from t[0] and backward
 * from dy (y and dy `offset` floats into their allocations: runner.h);
 * o gets y, dx and every parameter's gradient. */
fn_status gc_run(fn_layer *l, const gc_problem *p, double *const *t, const double *dy,
                 int offset, gc_out *o);
/* gc_run at p's own point on a fresh layer of ctx. */
fn_status gc_problem_run(fn_context *ctx, const gc_problem *p, const double *dy, int offset,
                         gc_out *o);
/* L = sum_i r_i y_i(t) through l, the sum in float64 on the host. */
fn_status gc_objective(fn_layer *l, const gc_problem *p, double *const *t, const double *r,
                       double *value);

/* The kind's float64 reference at p's point from dy, and the float32 error
 * estimates of what a backend computes there (u_op: estimate.h). */
void gc_reference(const gc_problem *p, const double *dy, gc_out *o);
void gc_estimates(const gc_problem *p, const double *dy, double u_op, gc_out *e);

/* Zeroes r [batch, out] where the kind's kink input u comes within 4 est(u)
 * of 0 at p's point, or, at any of points[0..n_points), comes within that
 * margin or lies on the other side: there float32 may take the other branch
 * of the activation, whose slopes differ. Nothing for smooth kinds. */
void gc_mask_kinks(const gc_problem *p, double u_op, double *(*points)[GC_MAX_TENSORS],
                   int n_points, double *r);

/* The table's shape column for p's case. */
void gc_shape(char *buf, size_t size, const gc_problem *p);

#endif
