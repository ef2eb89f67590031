/* block_memory.c — the fused block on caller-owned memory (block_memory.h):
 * a block described on the stack whose tensors are views of the caller's
 * arrays, run through the CPU backend's own forward and backward. */
#include <math.h>
#include <string.h>

#include "fusenet/block_memory.h"
#include "nn/block_impl.h"

static fn_status check_call(const char *call, fn_context *ctx, const fn_block_config *cfg, int rows,
                            const fn_block_memory *m)
{
    if (!ctx || !cfg || !m)
        return fn_fail(FN_ERR_INVALID, "%s: NULL context, config or memory", call);
    if (fn_context_device(ctx) != FN_CPU)
        return fn_fail(FN_ERR_INVALID,
                       "%s: the context is on a GPU; only the CPU backend runs on caller "
                       "memory (use a CPU context)",
                       call);
    if (cfg->in_features < 1 || cfg->out_features < 1 || cfg->groups < 1 ||
        cfg->out_features % cfg->groups != 0)
        return fn_fail(FN_ERR_INVALID,
                       "%s: in %d, out %d, groups %d: sizes must be at least 1 and groups "
                       "must divide out",
                       call, cfg->in_features, cfg->out_features, cfg->groups);
    if (!(cfg->eps > 0.0f) || !isfinite(cfg->eps) || !(cfg->negative_slope >= 0.0f) ||
        !isfinite(cfg->negative_slope))
        return fn_fail(FN_ERR_INVALID, "%s: eps %g must be > 0 and negative_slope %g >= 0", call,
                       (double)cfg->eps, (double)cfg->negative_slope);
    if (rows < 1)
        return fn_fail(FN_ERR_INVALID, "%s: rows %d must be at least 1", call, rows);
    if (!m->x || !m->weight || !m->bias || !m->gamma || !m->beta || !m->z || !m->mean || !m->rstd)
        return fn_fail(FN_ERR_INVALID, "%s: an array of the block's memory is NULL", call);
    return FN_OK;
}

/* A view; the backend writes only what its contract says (never x or the
 * parameters' values), so dropping const here changes nothing. */
static fn_tensor view(const float *data, int rows, int cols)
{
    return fn_tensor_view((float *)data, rows, cols, FN_CPU);
}

/* The block the backend sees: the caller's arrays under a block's names. */
static void describe(fn_block *b, fn_context *ctx, const fn_block_config *cfg, int rows,
                     const fn_block_memory *m)
{
    const int in = cfg->in_features, out = cfg->out_features, groups = cfg->groups;
    memset(b, 0, sizeof *b);
    b->cfg = *cfg;
    b->cfg.forward_only = 0;
    b->base = (fn_layer){.ops = &fn_block_cpu_ops,
                         .ctx = ctx,
                         .device = FN_CPU,
                         .in_features = in,
                         .out_features = out,
                         .max_batch = rows,
                         .batch = rows,
                         .params = b->params,
                         .n_params = FN_BLOCK_N_PARAMS};
    b->params[FN_BLOCK_WEIGHT].value = view(m->weight, out, in);
    b->params[FN_BLOCK_BIAS].value = view(m->bias, 1, out);
    b->params[FN_BLOCK_GAMMA].value = view(m->gamma, 1, out);
    b->params[FN_BLOCK_BETA].value = view(m->beta, 1, out);
    b->x = view(m->x, rows, in);
    b->z = view(m->z, rows, out);
    b->mean = view(m->mean, rows, groups);
    b->rstd = view(m->rstd, rows, groups);
}

fn_status fn_block_memory_forward(fn_context *ctx, const fn_block_config *cfg, int rows,
                                  const fn_block_memory *m, float *y)
{
    FN_TRY(check_call("fn_block_memory_forward", ctx, cfg, rows, m));
    if (!y)
        return fn_fail(FN_ERR_INVALID, "fn_block_memory_forward: y is NULL");
    fn_block b;
    describe(&b, ctx, cfg, rows, m);
    const fn_tensor x = view(m->x, rows, cfg->in_features);
    fn_tensor out = view(y, rows, cfg->out_features);
    return fn_block_cpu_ops.forward(&b.base, &x, &out);
}

fn_status fn_block_memory_backward(fn_context *ctx, const fn_block_config *cfg, int rows,
                                   const fn_block_memory *m, const float *dy, float *dz, float *dx,
                                   float *dweight, float *dbias, float *dgamma, float *dbeta)
{
    FN_TRY(check_call("fn_block_memory_backward", ctx, cfg, rows, m));
    if (!dy || !dz || !dweight || !dbias || !dgamma || !dbeta)
        return fn_fail(FN_ERR_INVALID,
                       "fn_block_memory_backward: dy, dz or a parameter gradient is NULL");
    fn_block b;
    describe(&b, ctx, cfg, rows, m);
    const int in = cfg->in_features, out = cfg->out_features;
    b.dz = view(dz, rows, out);
    b.params[FN_BLOCK_WEIGHT].grad = view(dweight, out, in);
    b.params[FN_BLOCK_BIAS].grad = view(dbias, 1, out);
    b.params[FN_BLOCK_GAMMA].grad = view(dgamma, 1, out);
    b.params[FN_BLOCK_BETA].grad = view(dbeta, 1, out);
    const fn_tensor grad_out = view(dy, rows, out);
    fn_tensor grad_in = view(dx, rows, in);
    return fn_block_cpu_ops.backward(&b.base, &grad_out, dx ? &grad_in : NULL);
}
