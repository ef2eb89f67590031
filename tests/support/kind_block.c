/* kind_block.c — the fused block's gradient-check descriptors (kind.h),
 * plain and residual: their float64 references and error models behind one
 * set of hooks, and the shapes each tier checks them at. The residual one
 * (ref_residual_*, est_residual_errors) adds the identity skip in forward
 * and copies dy into dx in backward, at shapes with in = out that reach each
 * CUDA kernel variant of the block (kernels/nn/layers/block/block_cuda.cu). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"
#include "kind.h"
#include "reference.h"
#include "fusenet/block.h"
#include "runner.h"

static ref_block_dims dims_of(const gc_case *c)
{
    return (ref_block_dims){.batch = c->batch, .in = c->in, .out = c->out, .groups = c->groups,
                            .eps = c->eps, .slope = c->slope};
}

static ref_block_params params_at(const gc_problem *p, double *const *t)
{
    return (ref_block_params){gc_named(p, t, "weight"), gc_named(p, t, "bias"),
                              gc_named(p, t, "gamma"), gc_named(p, t, "beta")};
}

/* The float64 reference and the error model of one variant. */
typedef struct {
    void (*forward)(const ref_block_dims *d, const ref_block_params *p, const double *x, double *y,
                    const ref_block_cache *cache);
    void (*backward)(const ref_block_dims *d, const ref_block_params *p, const double *x,
                     const double *dy, const ref_block_grads *g);
    void (*errors)(const ref_block_dims *d, const ref_block_params *p, const double *x,
                   const double *dy, double u_op, const est_block *e);
} block_math;

static const block_math plain_math = {ref_block_forward, ref_block_backward, est_block_errors};
static const block_math residual_math = {ref_residual_forward, ref_residual_backward,
                                         est_residual_errors};

static const block_math *math_of(const gc_problem *p)
{
    return p->kind == &gc_residual_kind ? &residual_math : &plain_math;
}

static fn_status block_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    ref_block_dims d = dims_of(c);
    return run_block_create(l, ctx, &d, c->batch);
}

/* gamma ~ U(0.5, 1.5) keeps every channel's scale away from 0; beta ~
 * U(-0.5, 0.5) moves u off the kink by varying amounts. */
static fn_status residual_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    fn_block_config cfg = fn_block_config_default(c->in, c->out, c->groups);
    cfg.eps = c->eps;
    cfg.negative_slope = c->slope;
    cfg.residual = 1;
    fn_rng rng = {.seed = 1, .offset = 0};
    return fn_block_create(l, ctx, &cfg, c->batch, &rng);
}

static void block_fill(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng)
{
    if (gc_fill_affine(c, param, a, n, rng))
        return;
    if (strcmp(param, "gamma") == 0)
        chk_fill(a, n, 0.5, 1.5, rng);
    else if (strcmp(param, "beta") == 0)
        chk_fill(a, n, -0.5, 0.5, rng);
    else
        gc_no_distribution("block", param);
}

static void block_forward(const gc_problem *p, double *const *t, double *y)
{
    ref_block_dims d = dims_of(p->c);
    ref_block_params q = params_at(p, t);
    math_of(p)->forward(&d, &q, t[0], y, NULL);
}

static void block_backward(const gc_problem *p, double *const *t, const double *dy,
                           double *const *g)
{
    ref_block_dims d = dims_of(p->c);
    ref_block_params q = params_at(p, t);
    math_of(p)->backward(&d, &q, t[0], dy,
                       &(ref_block_grads){.dx = g[0], .dweight = gc_named(p, g, "weight"),
                                          .dbias = gc_named(p, g, "bias"),
                                          .dgamma = gc_named(p, g, "gamma"),
                                          .dbeta = gc_named(p, g, "beta")});
}

static void block_estimate(const gc_problem *p, double *const *t, const double *dy, double u_op,
                           double *ey, double *const *eg)
{
    ref_block_dims d = dims_of(p->c);
    ref_block_params q = params_at(p, t);
    math_of(p)->errors(&d, &q, t[0], dy, u_op,
                       &(est_block){.y = ey, .dx = eg[0], .dweight = gc_named(p, eg, "weight"),
                                    .dbias = gc_named(p, eg, "bias"),
                                    .dgamma = gc_named(p, eg, "gamma"),
                                    .dbeta = gc_named(p, eg, "beta")});
}

/* u = gamma zhat + beta, the leaky_relu input. */
static void block_kink_input(const gc_problem *p, double *const *t, double u_op, double *u,
                             double *eu)
{
    ref_block_dims d = dims_of(p->c);
    ref_block_params q = params_at(p, t);
    double *y = chk_alloc(p->ny);
    ref_block_forward(&d, &q, t[0], y, &(ref_block_cache){.u = u});
    if (eu)
        est_block_errors(&d, &q, t[0], NULL, u_op, &(est_block){.u = eu});
    free(y);
}

static void block_shape(char *buf, size_t size, const gc_case *c)
{
    ref_block_dims d = dims_of(c);
    chk_shape(buf, size, d.batch, d.in, d.out, d.groups, d.slope);
}

/* Tier 1: small shapes (each element is perturbed alone), every slope
 * regime, and an eps large enough to matter. */
static const gc_case ref_cases[] = {
    /* batch, in, out, groups, slope, eps, xscale, wscale, boffset, seed, why */
    {3, 5, 6, 2, 0.01, 1e-5, 1, 1, 0, 100, "typical"},
    {1, 7, 9, 3, 0.2, 1e-5, 1, 1, 0, 101, "batch 1, slope 0.2"},
    {4, 3, 8, 1, 0.01, 1e-5, 1, 1, 0, 102, "G = 1"},
    {2, 4, 5, 5, 0.01, 1e-5, 1, 1, 0, 103, "K = 1"},
    {3, 6, 16, 1, 0, 1e-5, 1, 1, 0, 104, "K = 16, slope 0"},
    {2, 5, 12, 3, 1, 1e-5, 1, 1, 0, 105, "slope 1"},
    {2, 4, 6, 2, 0.01, 0.5, 1, 1, 0, 106, "eps 0.5: its derivative matters"},
};

/* Tier 2: the shapes every backend is checked at. */
static const gc_case cases[] = {
    /* batch, in, out, groups, slope, eps, xscale, wscale, boffset, seed, why */
    {1, 7, 12, 3, 0.01, 1e-5, 1, 1, 0, 1, "batch 1, odd input width"},
    {5, 9, 15, 5, 0.01, 1e-5, 1, 1, 0, 2, "odd widths, K = 3"},
    {4, 8, 24, 1, 0.01, 1e-5, 1, 1, 0, 3, "G = 1: one group of 24"},
    {6, 5, 10, 10, 0.01, 1e-5, 1, 1, 0, 4, "G = out: K = 1, zhat = 0, var = 0"},
    {3, 33, 64, 4, 0.01, 1e-5, 1, 1, 0, 5, "16 channels a group"},
    {8, 16, 32, 2, 0, 1e-5, 1, 1, 0, 6, "slope 0 (ReLU)"},
    {8, 16, 32, 8, 1, 1e-5, 1, 1, 0, 7, "slope 1 (identity)"},
    {4, 12, 16, 4, 0.2, 1e-5, 1000, 1, 0, 8, "large inputs, |x| up to 1e3"},
    {2, 10, 8, 2, 0.01, 1e-5, 1, 1e-3, 0, 9, "var << eps: eps must sit inside the sqrt"},
    {17, 31, 48, 3, 0.01, 1e-5, 1, 1, 0, 10, "odd batch, K = 16"},
    {3, 1, 6, 2, 0.01, 1e-5, 1, 1, 0, 11, "in = 1"},
    {5, 20, 16, 4, 0.01, 1e-5, 1, 1, 10, 12, "bias offset 10: mean >> spread"},
    {64, 128, 128, 8, 0.01, 1e-5, 1, 1, 0, 13, "larger: BLAS blocking"},
    {33, 257, 1040, 65, 0.01, 1e-5, 1, 1, 0, 14, "tiling: 1040 channels, 65 groups of 16, odd sizes"},
    /* One row per CUDA kernel variant (kernels/nn/layers/block/block_cuda.cu, make_plan:
     * float4 when K % 4 == 0 and the pointers are 16-byte aligned; team
     * path <vec, reps> while 32 lanes x vec x reps cover K, reps 1, 2, 4;
     * else the group path). The rows above reach <4,1> and <1,1>. */
    {40, 13, 150, 3, 0.01, 1e-5, 1, 1, 0, 15, "K = 50, scalar team <1,2>; 2 row chunks"},
    {4, 11, 132, 2, 0.01, 1e-5, 1, 1, 0, 16, "K = 66, scalar team <1,4>, lanes partly idle"},
    {7, 19, 400, 2, 0.01, 1e-5, 1, 1, 0, 17, "K = 200, float4 team <4,2>"},
    {70, 17, 800, 2, 0.01, 1e-5, 1, 1, 0, 18, "K = 400, float4 team <4,4>; 3 row chunks"},
    {3, 8, 1024, 2, 0.01, 1e-5, 1, 1, 0, 19, "K = 512, float4 team <4,4>, every lane full"},
    {37, 7, 260, 2, 0.01, 1e-5, 1, 1, 0, 20, "K = 130, scalar group path <1>; 2 row chunks"},
    {2, 9, 2048, 2, 0.01, 1e-5, 1, 1, 0, 21, "K = 1024, float4 group path <4>"},
    {2, 17, 8192, 1, 0.01, 1e-5, 1, 1, 0, 22, "G = 1 at width 8192, float4 group path <4>"},
    {3, 9, 8190, 1, 0.01, 1e-5, 1, 1, 0, 23, "G = 1 at width 8190, scalar group path <1>"},
};

/* Run with y and dy one float past 16-byte alignment: the scalar kernels
 * at widths whose aligned rows take float4 ones. */
static const gc_case unaligned_cases[] = {
    {9, 20, 96, 6, 0.01, 1e-5, 1, 1, 0, 31, "unaligned, K = 16: scalar team <1,1> (aligned: <4,1>)"},
    {3, 10, 256, 2, 0.01, 1e-5, 1, 1, 0, 32, "unaligned, K = 128: scalar team <1,4>, every lane full"},
    {3, 11, 1024, 2, 0.01, 1e-5, 1, 1, 0, 33, "unaligned, K = 512: scalar group <1> (aligned: <4,4>)"},
};

/* Tier 3 runs on a subset: each case costs 6 directions x 5 forwards. */
static const gc_case fd_cases[] = {
    {4, 9, 12, 3, 0.01, 1e-5, 1, 1, 0, 21, "typical"},
    {1, 6, 16, 1, 0.2, 1e-5, 1, 1, 0, 22, "batch 1, G = 1, K = 16"},
    {6, 7, 8, 8, 0.01, 1e-5, 1, 1, 0, 23, "K = 1"},
    {8, 16, 32, 4, 0, 1e-5, 1, 1, 0, 24, "slope 0"},
    {3, 12, 16, 4, 1, 1e-5, 100, 1, 0, 25, "slope 1, large inputs"},
    {4, 9, 150, 3, 0.01, 1e-5, 1, 1, 0, 26, "K = 50, scalar team <1,2>"},
    {3, 8, 132, 2, 0.01, 1e-5, 1, 1, 0, 27, "K = 66, scalar team <1,4>"},
    {3, 7, 400, 2, 0.01, 1e-5, 1, 1, 0, 28, "K = 200, float4 team <4,2>"},
    {2, 6, 800, 2, 0.01, 1e-5, 1, 1, 0, 29, "K = 400, float4 team <4,4>"},
    {3, 5, 260, 2, 0.01, 1e-5, 1, 1, 0, 30, "K = 130, scalar group path <1>"},
    {2, 6, 2048, 2, 0.01, 1e-5, 1, 1, 0, 31, "K = 1024, float4 group path <4>"},
};

const gc_kind gc_block_kind = {
    .name = "block",
    .create = block_create,
    GC_HOOKS(block),
    .kink_input = block_kink_input,
    GC_CASE_TABLES(ref_cases, cases, fd_cases),
    GC_TABLE(unaligned_cases, unaligned_cases),
};

/* The residual variant: tier 1.
 * batch, in, out, groups, slope, eps, xscale, wscale, boffset, seed, why */
static const gc_case residual_ref_cases[] = {
    {3, 6, 6, 2, 0.01, 1e-5, 1, 1, 0, 300, "typical"},
    {1, 9, 9, 3, 0.2, 1e-5, 1, 1, 0, 301, "batch 1, slope 0.2"},
    {2, 5, 5, 5, 0.01, 1e-5, 1, 1, 0, 302, "K = 1"},
    {2, 8, 8, 1, 0.01, 0.5, 1, 1, 0, 303, "G = 1, eps 0.5"},
};

/* Tier 2: one row per CUDA kernel variant, as the block's table. */
static const gc_case residual_cases[] = {
    {1, 12, 12, 3, 0.01, 1e-5, 1, 1, 0, 311, "batch 1"},
    {5, 15, 15, 5, 0.01, 1e-5, 1, 1, 0, 312, "odd width, K = 3, scalar team <1,1>"},
    {6, 10, 10, 10, 0.01, 1e-5, 1, 1, 0, 313, "G = out: K = 1"},
    {3, 64, 64, 4, 0.01, 1e-5, 1, 1, 0, 314, "16 channels a group, float4 team <4,1>"},
    {4, 16, 16, 4, 0.2, 1e-5, 1000, 1, 0, 315, "large inputs: the skip dominates y"},
    {64, 128, 128, 8, 0.01, 1e-5, 1, 1, 0, 316, "larger: BLAS blocking"},
    {40, 150, 150, 3, 0.01, 1e-5, 1, 1, 0, 317, "K = 50, scalar team <1,2>; 2 row chunks"},
    {4, 132, 132, 2, 0.01, 1e-5, 1, 1, 0, 318, "K = 66, scalar team <1,4>"},
    {7, 400, 400, 2, 0.01, 1e-5, 1, 1, 0, 319, "K = 200, float4 team <4,2>"},
    {5, 800, 800, 2, 0.01, 1e-5, 1, 1, 0, 320, "K = 400, float4 team <4,4>"},
    {9, 260, 260, 2, 0.01, 1e-5, 1, 1, 0, 321, "K = 130, scalar group path <1>"},
    {2, 2048, 2048, 2, 0.01, 1e-5, 1, 1, 0, 322, "K = 1024, float4 group path <4>"},
};

/* y, dy one float past 16-byte alignment: the scalar kernels. */
static const gc_case residual_unaligned_cases[] = {
    {9, 96, 96, 6, 0.01, 1e-5, 1, 1, 0, 331, "unaligned, K = 16: scalar team <1,1>"},
    {3, 1024, 1024, 2, 0.01, 1e-5, 1, 1, 0, 332, "unaligned, K = 512: scalar group <1>"},
};

/* Tier 3 of the residual variant: narrow cases only. A residual layer's
 * input is as wide as its output, and at the wide kernel paths (K = 50 or
 * 130: 50 inputs and more) bf16's error of the product puts most units
 * within reach of the kink, which leaves finite differences too few to test
 * (measured: 11 to 61 of 150 or 260). Those paths are proven for the
 * residual by tier 2 in every math mode (residual_cases, against the
 * float64 reference that tier 1 checks by finite differences) and for the
 * block by its own tier 3. */
static const gc_case residual_fd_cases[] = {
    {4, 12, 12, 3, 0.01, 1e-5, 1, 1, 0, 341, "typical"},
    {1, 16, 16, 1, 0.2, 1e-5, 1, 1, 0, 342, "batch 1, G = 1, K = 16"},
};

const gc_kind gc_residual_kind = {
    .name = "residual",
    .create = residual_create,
    GC_HOOKS(block),
    .kink_input = block_kink_input,
    GC_CASE_TABLES(residual_ref_cases, residual_cases, residual_fd_cases),
    GC_TABLE(unaligned_cases, residual_unaligned_cases),
};
