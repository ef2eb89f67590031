/* kind_residual.c — the residual block's gradient-check descriptor
 * (kind.h): the block's reference and error model with the identity skip
 * (ref_residual_*, est_residual_errors), at shapes with in = out that
 * reach each CUDA kernel variant of the block (kernels/block_cuda.cu), now
 * with the skip added in forward and dy copied into dx in backward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"
#include "kind.h"
#include "reference.h"
#include "fusenet/block.h"

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

static fn_status block_create(fn_layer **l, fn_context *ctx, const gc_case *c)
{
    fn_block_config cfg = fn_block_config_default(c->in, c->out, c->groups);
    cfg.eps = c->eps;
    cfg.negative_slope = c->slope;
    cfg.residual = 1;
    fn_rng rng = {.seed = 1, .offset = 0};
    return fn_block_create(l, ctx, &cfg, c->batch, &rng);
}

/* gamma ~ U(0.5, 1.5) keeps every channel's scale away from 0; beta ~
 * U(-0.5, 0.5) moves u off the kink by varying amounts. */
static void block_fill(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng)
{
    double bound = c->wscale / sqrt(c->in);
    if (strcmp(param, "weight") == 0)
        chk_fill(a, n, -bound, bound, rng);
    else if (strcmp(param, "bias") == 0)
        chk_fill(a, n, c->boffset - bound, c->boffset + bound, rng);
    else if (strcmp(param, "gamma") == 0)
        chk_fill(a, n, 0.5, 1.5, rng);
    else if (strcmp(param, "beta") == 0)
        chk_fill(a, n, -0.5, 0.5, rng);
    else {
        fprintf(stderr, "gradcheck: residual: no distribution for parameter '%s'\n", param);
        abort();
    }
}

static void block_forward(const gc_problem *p, double *const *t, double *y)
{
    ref_block_dims d = dims_of(p->c);
    ref_block_params q = params_at(p, t);
    ref_residual_forward(&d, &q, t[0], y, NULL);
}

static void block_backward(const gc_problem *p, double *const *t, const double *dy,
                           double *const *g)
{
    ref_block_dims d = dims_of(p->c);
    ref_block_params q = params_at(p, t);
    ref_residual_backward(&d, &q, t[0], dy,
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
    est_residual_errors(&d, &q, t[0], dy, u_op,
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

/* batch, in, out, groups, slope, eps, xscale, wscale, boffset, seed, why */
static const gc_case ref_cases[] = {
    {3, 6, 6, 2, 0.01, 1e-5, 1, 1, 0, 300, "typical"},
    {1, 9, 9, 3, 0.2, 1e-5, 1, 1, 0, 301, "batch 1, slope 0.2"},
    {2, 5, 5, 5, 0.01, 1e-5, 1, 1, 0, 302, "K = 1"},
    {2, 8, 8, 1, 0.01, 0.5, 1, 1, 0, 303, "G = 1, eps 0.5"},
};

/* Tier 2: one row per CUDA kernel variant, as the block's table. */
static const gc_case cases[] = {
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
static const gc_case unaligned_cases[] = {
    {9, 96, 96, 6, 0.01, 1e-5, 1, 1, 0, 331, "unaligned, K = 16: scalar team <1,1>"},
    {3, 1024, 1024, 2, 0.01, 1e-5, 1, 1, 0, 332, "unaligned, K = 512: scalar group <1>"},
};

/* Tier 3. */
static const gc_case fd_cases[] = {
    {4, 12, 12, 3, 0.01, 1e-5, 1, 1, 0, 341, "typical"},
    {1, 16, 16, 1, 0.2, 1e-5, 1, 1, 0, 342, "batch 1, G = 1, K = 16"},
    /* One group, so the input (= the output) is as narrow as the paths allow:
     * bf16's error of a product grows with its width, and at 150 or 260
     * inputs most units lie within it of the kink, which leaves the check
     * too few to test. */
    {3, 50, 50, 1, 0.01, 1e-5, 1, 1, 0, 343, "K = 50, scalar team <1,2>"},
    {2, 130, 130, 1, 0.01, 1e-5, 1, 1, 0, 344, "K = 130, scalar group path <1>"},
};

const gc_kind gc_residual_kind = {
    .name = "residual",
    .create = block_create,
    .fill = block_fill,
    .forward = block_forward,
    .backward = block_backward,
    .estimate = block_estimate,
    .kink_input = block_kink_input,
    .shape = block_shape,
    .ref_cases = ref_cases,
    .n_ref_cases = GC_COUNT(ref_cases),
    .cases = cases,
    .n_cases = GC_COUNT(cases),
    .unaligned_cases = unaligned_cases,
    .n_unaligned_cases = GC_COUNT(unaligned_cases),
    .fd_cases = fd_cases,
    .n_fd_cases = GC_COUNT(fd_cases),
};
