/* block.c — the fused block's device-independent code: its configuration,
 * creation (parameters, caches, initialisation as PyTorch) and release. The
 * arithmetic lives in src/nn/layers/block/block_cpu.c and kernels/nn/layers/block/block_cuda.cu. */
#include <math.h>
#include <stdlib.h>

#include "nn/layers/block/block_impl.h"
#include "nn/layers/block/block_products_cuda.h"

static const char *const param_names[FN_BLOCK_N_PARAMS] = {
    [FN_BLOCK_WEIGHT] = "weight",
    [FN_BLOCK_BIAS] = "bias",
    [FN_BLOCK_GAMMA] = "gamma",
    [FN_BLOCK_BETA] = "beta",
};

/* At least 2 channels a group: GroupNorm makes a group of one channel 0,
 * so such a channel's output is the constant 2·LeakyReLU(beta) whatever
 * the input (a dead layer). Widths of 1 and primes from 5 on take 1. */
int fn_block_auto_groups(int width)
{
    for (int g = 8; g > 1; g--)
        if (width >= 2 * g && width % g == 0)
            return g;
    return 1;
}

fn_block_config fn_block_config_default(int in_features, int out_features, int groups)
{
    return (fn_block_config){
        .in_features = in_features,
        .out_features = out_features,
        .groups = groups,
        .eps = 1e-5f,
        .negative_slope = 0.01f,
    };
}

static fn_status check_config(const fn_block_config *cfg, int max_batch)
{
    if (cfg->in_features < 1 || cfg->out_features < 1)
        return fn_fail(FN_ERR_INVALID, "block: sizes in %d, out %d must be at least 1",
                       cfg->in_features, cfg->out_features);
    if (cfg->groups < 1)
        return fn_fail(FN_ERR_INVALID, "block: groups %d must be at least 1", cfg->groups);
    if (cfg->out_features % cfg->groups != 0)
        return fn_fail(FN_ERR_INVALID, "block: groups %d does not divide out_features %d",
                       cfg->groups, cfg->out_features);
    if (!(cfg->eps > 0.0f) || !isfinite(cfg->eps))
        return fn_fail(FN_ERR_INVALID, "block: eps %g must be positive and finite",
                       (double)cfg->eps);
    if (!(cfg->negative_slope >= 0.0f) || !isfinite(cfg->negative_slope))
        return fn_fail(FN_ERR_INVALID, "block: negative_slope %g must be >= 0 and finite",
                       (double)cfg->negative_slope);
    if (max_batch < 1)
        return fn_fail(FN_ERR_INVALID, "block: max_batch %d must be at least 1", max_batch);
    if (cfg->residual && cfg->in_features != cfg->out_features)
        return fn_fail(FN_ERR_INVALID,
                       "residual %d takes inputs of %d columns: a residual layer adds its input "
                       "to its output, so its width must equal its input's (the width of the "
                       "layer before it, or the data's columns for the first layer)",
                       cfg->out_features, cfg->in_features);
    return FN_OK;
}

static fn_status alloc_params(fn_block *b, fn_device dev)
{
    const int in = b->cfg.in_features, out = b->cfg.out_features;
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++) {
        fn_param *p = &b->params[i];
        const int cols = i == FN_BLOCK_WEIGHT ? in : out;
        const int rows = i == FN_BLOCK_WEIGHT ? out : 1;
        p->name = param_names[i];
        p->grad_beta = 0.0f; /* backward writes the gradients (param.h) */
        FN_TRY(fn_tensor_alloc(&p->value, rows, cols, dev));
        if (!b->cfg.forward_only)
            FN_TRY(fn_tensor_alloc(&p->grad, rows, cols, dev));
    }
    return FN_OK;
}

/* In bf16 mode on the GPU z and dz are bfloat16 in the backend's workspace
 * (block_products_cuda.h): no float copies of them are made. */
static fn_status alloc_caches(fn_block *b, fn_device dev, int max_batch)
{
    const int half =
        dev == FN_CUDA && fn_math_policy_of(fn_context_math(b->base.ctx))->bf16_operands;
    if (!half)
        FN_TRY(fn_tensor_alloc(&b->z, max_batch, b->cfg.out_features, dev));
    FN_TRY(fn_tensor_alloc(&b->mean, max_batch, b->cfg.groups, dev));
    FN_TRY(fn_tensor_alloc(&b->rstd, max_batch, b->cfg.groups, dev));
    if (!half && !b->cfg.forward_only)
        FN_TRY(fn_tensor_alloc(&b->dz, max_batch, b->cfg.out_features, dev));
    return FN_OK;
}

/* As nn.Linear's reset_parameters: U(-1/sqrt(in), 1/sqrt(in)), weight first;
 * as nn.GroupNorm: gamma 1, beta 0 (already zero from the allocation). */
static fn_status init_params(fn_block *b, fn_rng *rng)
{
    const float bound = (float)(1.0 / sqrt((double)b->cfg.in_features));
    FN_TRY(fn_init_uniform(&b->params[FN_BLOCK_WEIGHT].value, -bound, bound, rng));
    FN_TRY(fn_init_uniform(&b->params[FN_BLOCK_BIAS].value, -bound, bound, rng));
    return fn_init_constant(&b->params[FN_BLOCK_GAMMA].value, 1.0f);
}

static fn_status setup(fn_block *b, fn_rng *rng, int max_batch)
{
    const fn_device dev = b->base.device;
    FN_TRY(alloc_params(b, dev));
    FN_TRY(alloc_caches(b, dev, max_batch));
    if (dev == FN_CUDA)
        FN_TRY(fn_block_cuda_setup(b));
    return init_params(b, rng);
}

fn_status fn_block_create(fn_layer **layer, fn_context *ctx, const fn_block_config *cfg,
                          int max_batch, fn_rng *rng)
{
    if (!layer)
        return fn_fail(FN_ERR_INVALID, "fn_block_create: layer is NULL");
    *layer = NULL;
    if (!ctx || !cfg || !rng)
        return fn_fail(FN_ERR_INVALID, "fn_block_create: %s is NULL",
                       !ctx ? "ctx" : !cfg ? "cfg" : "rng");
    FN_TRY(check_config(cfg, max_batch));
    fn_block *b = calloc(1, sizeof *b);
    if (!b)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a block");
    const fn_device dev = fn_context_device(ctx);
    b->cfg = *cfg;
    b->base = (fn_layer){
        .ops = dev == FN_CUDA ? (cfg->residual ? &fn_residual_cuda_ops : &fn_block_cuda_ops)
                              : (cfg->residual ? &fn_residual_cpu_ops : &fn_block_cpu_ops),
        .ctx = ctx,
        .device = dev,
        .in_features = cfg->in_features,
        .out_features = cfg->out_features,
        .max_batch = max_batch,
        .forward_only = cfg->forward_only != 0,
        .params = b->params,
        .n_params = FN_BLOCK_N_PARAMS,
    };
    fn_status st = setup(b, rng, max_batch);
    if (st != FN_OK) {
        fn_error_prefix("%s [%d -> %d]: ", cfg->residual ? "residual" : "block",
                        cfg->in_features, cfg->out_features);
        fn_block_release(b);
        return st;
    }
    *layer = &b->base;
    return FN_OK;
}

/* The caches alloc_caches made and the backend's workspace (scratch, sized
 * by fn_block_cuda_setup; empty on the CPU), without the weight's copy,
 * which the summary counts with the weights. */
int fn_is_block(const fn_layer *l)
{
    return l && (l->ops == &fn_block_cpu_ops || l->ops == &fn_block_cuda_ops ||
                 l->ops == &fn_residual_cpu_ops || l->ops == &fn_residual_cuda_ops);
}

size_t fn_block_buffer_bytes(const fn_layer *l)
{
    if (!fn_is_block(l))
        return 0;
    const fn_block *b = (const fn_block *)l;
    const fn_tensor *t[] = {&b->z, &b->mean, &b->rstd, &b->dz, &b->scratch};
    size_t n = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        n += fn_tensor_count(t[i]);
    const size_t copy = fn_block_weight_copy_bytes(l);
    return n * sizeof(float) > copy ? n * sizeof(float) - copy : 0;
}

/* w_h in the scratch (block_products_cuda.h): only a GPU block has one. */
size_t fn_block_weight_copy_bytes(const fn_layer *l)
{
    if (!fn_is_block(l) || l->device != FN_CUDA || !((const fn_block *)l)->scratch.data)
        return 0;
    return fn_block_ws_weight_floats((const fn_block *)l) * sizeof(float);
}

fn_status fn_block_get_config(const fn_layer *l, fn_block_config *cfg)
{
    if (!l || !cfg)
        return fn_fail(FN_ERR_INVALID, "fn_block_get_config: %s is NULL", !l ? "layer" : "cfg");
    if (!fn_is_block(l))
        return fn_fail(FN_ERR_INVALID, "fn_block_get_config: layer is a %s, not a block",
                       l->ops && l->ops->kind ? l->ops->kind : "(unknown)");
    *cfg = ((const fn_block *)l)->cfg;
    return FN_OK;
}

fn_status fn_block_backward_sgd(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, float lr)
{
    if (!fn_is_block(l) || l->device != FN_CUDA)
        return fn_fail(FN_ERR_INVALID, "fn_block_backward_sgd: %s",
                       !l ? "layer is NULL" : "the layer is not a block on the GPU");
    fn_status st = fn_layer_backward_sgd(l, dy, dx, lr);
    if (st != FN_OK)
        fn_error_prefix("fn_block_backward_sgd: ");
    return st;
}

void fn_block_release(fn_block *b)
{
    if (!b)
        return;
    for (int i = 0; i < FN_BLOCK_N_PARAMS; i++) {
        fn_tensor_free(&b->params[i].value);
        fn_tensor_free(&b->params[i].grad);
    }
    fn_tensor_free(&b->z);
    fn_tensor_free(&b->mean);
    fn_tensor_free(&b->rstd);
    fn_tensor_free(&b->dz);
    fn_tensor_free(&b->scratch);
    free(b);
}
