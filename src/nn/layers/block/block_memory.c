/* block_memory.c — the fused block on caller-owned memory (block_memory.h):
 * a block described on the stack whose tensors are views of the caller's
 * arrays, run through its device's backend's own forward and backward (the
 * GPU's workspace, too, is the caller's). */
#include <math.h>
#include <string.h>

#include "fusenet/block_memory.h"
#include "nn/layers/block/block_impl.h"
#include "nn/layers/block/block_products_cuda.h"

static fn_status check_call(const char *call, fn_context *ctx, const fn_block_config *cfg, int rows,
                            const fn_block_memory *m)
{
    if (!ctx || !cfg || !m)
        return fn_fail(FN_ERR_INVALID, "%s: NULL context, config or memory", call);
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
    if (cfg->residual != 0 && (cfg->residual != 1 || cfg->in_features != cfg->out_features))
        return fn_fail(FN_ERR_INVALID,
                       "%s: residual %d: 0, or 1 with in_features equal to out_features (%d, %d)",
                       call, cfg->residual, cfg->in_features, cfg->out_features);
    if (rows < 1)
        return fn_fail(FN_ERR_INVALID, "%s: rows %d must be at least 1", call, rows);
    if (!m->x || !m->weight || !m->bias || !m->gamma || !m->beta || !m->z || !m->mean || !m->rstd)
        return fn_fail(FN_ERR_INVALID, "%s: an array of the block's memory is NULL", call);
    if (fn_context_device(ctx) == FN_CUDA && !m->scratch)
        return fn_fail(FN_ERR_INVALID,
                       "%s: the context is on a GPU and the scratch is NULL (its size: "
                       "fn_block_memory_scratch_floats)",
                       call);
    return FN_OK;
}

/* A view on the context's device; the backend writes only what its
 * contract says (never x or the parameters' values), so dropping const here
 * changes nothing. */
static fn_tensor view(fn_device device, const float *data, int rows, int cols)
{
    return fn_tensor_view((float *)data, rows, cols, device);
}

/* The block the backend sees: the caller's arrays under a block's names
 * (in bf16 on the GPU z and dz are the workspace's, as a layer's are). */
static void describe(fn_block *b, fn_context *ctx, const fn_block_config *cfg, int rows,
                     const fn_block_memory *m)
{
    const int in = cfg->in_features, out = cfg->out_features, groups = cfg->groups;
    const fn_device dev = fn_context_device(ctx);
    memset(b, 0, sizeof *b);
    b->cfg = *cfg;
    b->cfg.forward_only = 0;
    b->base = (fn_layer){.ops = dev == FN_CUDA ? &fn_block_cuda_ops : &fn_block_cpu_ops,
                         .ctx = ctx,
                         .device = dev,
                         .in_features = in,
                         .out_features = out,
                         .max_batch = rows,
                         .batch = rows,
                         .params = b->params,
                         .n_params = FN_BLOCK_N_PARAMS};
    b->params[FN_BLOCK_WEIGHT].value = view(dev, m->weight, out, in);
    b->params[FN_BLOCK_BIAS].value = view(dev, m->bias, 1, out);
    b->params[FN_BLOCK_GAMMA].value = view(dev, m->gamma, 1, out);
    b->params[FN_BLOCK_BETA].value = view(dev, m->beta, 1, out);
    b->x = view(dev, m->x, rows, in);
    b->z = view(dev, m->z, rows, out);
    b->mean = view(dev, m->mean, rows, groups);
    b->rstd = view(dev, m->rstd, rows, groups);
    if (dev != FN_CUDA)
        return;
    if (fn_math_policy_of(fn_context_math(ctx))->bf16_operands)
        b->z = (fn_tensor){0};
    fn_block_ws ws;
    const size_t floats = fn_block_ws_layout(b, NULL, &ws);
    b->scratch = view(dev, m->scratch, 1, (int)floats);
}

size_t fn_block_memory_scratch_floats(fn_context *ctx, const fn_block_config *cfg, int rows)
{
    static const float any = 0.0f; /* sizing reads no array */
    const fn_block_memory m = {&any, &any, &any, &any, &any, (float *)&any, (float *)&any,
                               (float *)&any, (float *)&any};
    if (check_call("fn_block_memory_scratch_floats", ctx, cfg, rows, &m) != FN_OK)
        return 0;
    if (fn_context_device(ctx) != FN_CUDA)
        return 0;
    fn_block b;
    describe(&b, ctx, cfg, rows, &m);
    return (size_t)b.scratch.cols;
}

fn_status fn_block_memory_forward(fn_context *ctx, const fn_block_config *cfg, int rows,
                                  const fn_block_memory *m, float *y)
{
    FN_TRY(check_call("fn_block_memory_forward", ctx, cfg, rows, m));
    if (!y)
        return fn_fail(FN_ERR_INVALID, "fn_block_memory_forward: y is NULL");
    fn_block b;
    describe(&b, ctx, cfg, rows, m);
    const fn_device dev = fn_context_device(ctx);
    const fn_tensor x = view(dev, m->x, rows, cfg->in_features);
    fn_tensor out = view(dev, y, rows, cfg->out_features);
    return b.base.ops->forward(&b.base, &x, &out);
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
    const fn_device dev = fn_context_device(ctx);
    if (dev != FN_CUDA || !fn_math_policy_of(fn_context_math(ctx))->bf16_operands)
        b.dz = view(dev, dz, rows, out);
    /* grad_beta 0 (describe's memset): the gradients are written. */
    b.params[FN_BLOCK_WEIGHT].grad = view(dev, dweight, out, in);
    b.params[FN_BLOCK_BIAS].grad = view(dev, dbias, 1, out);
    b.params[FN_BLOCK_GAMMA].grad = view(dev, dgamma, 1, out);
    b.params[FN_BLOCK_BETA].grad = view(dev, dbeta, 1, out);
    if (dev == FN_CUDA)
        FN_TRY(fn_block_cuda_clear_tickets(&b));
    const fn_tensor grad_out = view(dev, dy, rows, out);
    fn_tensor grad_in = view(dev, dx, rows, in);
    return b.base.ops->backward(&b.base, &grad_out, dx ? &grad_in : NULL);
}
