/* rmsprop.c — RMSprop as torch.optim.RMSprop (rmsprop.h): option checks
 * with torch's rules, the scalars of a step, the checked one-tensor update,
 * and the optimiser that owns the square_avg, momentum_buffer and grad_avg
 * tensors. The backend (optim/optimizers/rmsprop/rmsprop_cpu.c, kernels/optim/optimizers/rmsprop/rmsprop_cuda.cu) is
 * picked once by device; on the GPU a step is the split step
 * (optimizer_paths.h): its scalars written to the device, then one launch for
 * every parameter (multi_tensor.h). */
#include <math.h>
#include <stdlib.h>

#include "optim/optimizer_paths.h"
#include "optim/optimizers/rmsprop/rmsprop_backends.h"

typedef struct fn_rmsprop {
    fn_optimizer base;                 /* first: the parameters and the step count */
    const fn_rmsprop_backend *backend; /* of the context's device */
    fn_tensor *square_avg;             /* [n_params], each the parameter's shape */
    fn_tensor *momentum_buffer;        /* [n_params], or NULL without momentum */
    fn_tensor *grad_avg;               /* [n_params], or NULL unless centered */
    fn_rmsprop_config cfg;
    fn_multi_tensor all;      /* GPU: value, grad, square_avg, momentum_buffer */
    fn_multi_tensor averages; /* GPU, centered: grad_avg, entry for entry */
    fn_rmsprop_step prepared; /* the step prepare wrote (split step) */
} fn_rmsprop;

static const char *const state_names[] = {"square_avg", "momentum_buffer", "grad_avg"};
static const unsigned char state_nonnegative[] = {1, 0, 0}; /* square_avg: squares */

fn_rmsprop_config fn_rmsprop_config_default(float lr)
{
    return (fn_rmsprop_config){.lr = lr, .alpha = 0.99f, .eps = 1e-8f};
}

fn_status fn_rmsprop_config_check(const fn_rmsprop_config *cfg)
{
    if (!cfg)
        return fn_fail(FN_ERR_INVALID, "rmsprop: config is NULL");
    if (!(cfg->lr > 0.0f) || !isfinite(cfg->lr))
        return fn_fail(FN_ERR_INVALID, "rmsprop: lr %g must be positive and finite",
                       (double)cfg->lr);
    if (!(cfg->alpha >= 0.0f && cfg->alpha <= 1.0f))
        return fn_fail(FN_ERR_INVALID, "rmsprop: alpha %g must be in [0, 1]", (double)cfg->alpha);
    /* torch allows 0, but then a parameter whose gradient is 0 so far is
     * updated by 0 / 0. */
    if (!(cfg->eps > 0.0f) || !isfinite(cfg->eps))
        return fn_fail(FN_ERR_INVALID,
                       "rmsprop: eps %g must be > 0 and finite (with 0, a parameter whose "
                       "gradient is 0 gets the update 0 / 0)",
                       (double)cfg->eps);
    if (!(cfg->weight_decay >= 0.0f) || !isfinite(cfg->weight_decay))
        return fn_fail(FN_ERR_INVALID, "rmsprop: weight_decay %g must be >= 0 and finite",
                       (double)cfg->weight_decay);
    if (!(cfg->momentum >= 0.0f) || !isfinite(cfg->momentum))
        return fn_fail(FN_ERR_INVALID, "rmsprop: momentum %g must be >= 0 and finite",
                       (double)cfg->momentum);
    return FN_OK;
}

/* A step's scalars: 1 - alpha in double, as torch's Python computes it,
 * then rounded to float. */
static fn_rmsprop_step step_scalars(const fn_rmsprop_config *cfg)
{
    return (fn_rmsprop_step){
        .l2 = cfg->weight_decay,
        .alpha = cfg->alpha,
        .one_minus_alpha = (float)(1.0 - (double)cfg->alpha),
        .eps = cfg->eps,
        .momentum = cfg->momentum,
        .neg_lr = -cfg->lr,
        .has_momentum = cfg->momentum > 0.0f,
        .centered = cfg->centered != 0,
    };
}

static const fn_rmsprop_backend *backend_for(fn_device device)
{
    return device == FN_CUDA ? &fn_rmsprop_cuda_backend : &fn_rmsprop_cpu_backend;
}

static fn_status check_update(fn_context *ctx, const fn_tensor *value, const fn_tensor *grad,
                              const fn_tensor *square_avg, const fn_tensor *momentum_buffer,
                              const fn_tensor *grad_avg, const fn_rmsprop_config *cfg)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "ctx is NULL");
    FN_TRY(fn_rmsprop_config_check(cfg));
    if (!value || !value->data)
        return fn_fail(FN_ERR_INVALID, "value is NULL");
    const fn_device dev = fn_context_device(ctx);
    const int rows = value->rows, cols = value->cols;
    FN_TRY(fn_tensor_check_on(value, "value", dev, rows, cols));
    FN_TRY(fn_tensor_check_on(grad, "grad", dev, rows, cols));
    FN_TRY(fn_tensor_check_on(square_avg, "square_avg", dev, rows, cols));
    if (cfg->momentum > 0.0f)
        FN_TRY(fn_tensor_check_on(momentum_buffer, "momentum_buffer", dev, rows, cols));
    if (cfg->centered)
        FN_TRY(fn_tensor_check_on(grad_avg, "grad_avg", dev, rows, cols));
    return FN_OK;
}

fn_status fn_rmsprop_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                            fn_tensor *square_avg, fn_tensor *momentum_buffer,
                            fn_tensor *grad_avg, const fn_rmsprop_config *cfg)
{
    fn_status st = check_update(ctx, value, grad, square_avg, momentum_buffer, grad_avg, cfg);
    if (st != FN_OK) {
        fn_error_prefix("fn_rmsprop_update: ");
        return st;
    }
    const fn_rmsprop_step s = step_scalars(cfg);
    return backend_for(fn_context_device(ctx))
        ->update(ctx, value, grad, square_avg, momentum_buffer, grad_avg, &s);
}

/* --- the optimiser ------------------------------------------------------------ */

static fn_tensor *state_of(fn_rmsprop *opt, int kind, int param)
{
    fn_tensor *list[] = {opt->square_avg, opt->momentum_buffer, opt->grad_avg};
    return list[kind] ? &list[kind][param] : NULL;
}

/* A first step (a new optimiser, or its count set back to 0) starts from
 * zero state, as torch's lazily created state does. */
static fn_status zero_state(fn_rmsprop *opt, int from, int count)
{
    for (int i = from; i < from + count; i++)
        for (int k = 0; k < 3; k++)
            if (state_of(opt, k, i))
                FN_TRY(fn_tensor_zero(state_of(opt, k, i)));
    return FN_OK;
}

/* Parameters [from, from + count)'s one-tensor updates with scalars s. */
static fn_status update_range(fn_rmsprop *opt, const fn_rmsprop_step *s, int from, int count)
{
    fn_optimizer *base = &opt->base;
    for (int i = from; i < from + count; i++) {
        fn_param *p = base->params[i];
        fn_status st = opt->backend->update(base->ctx, &p->value, &p->grad, state_of(opt, 0, i),
                                            state_of(opt, 1, i), state_of(opt, 2, i), s);
        if (st == FN_OK)
            st = fn_param_refresh_bf16(p, base->ctx);
        if (st != FN_OK) {
            fn_error_prefix("rmsprop step %lld, parameter %d (%s): ", base->steps + 1, i,
                            p->name ? p->name : "(unnamed)");
            return st;
        }
    }
    return FN_OK;
}

/* The options checked, naming the step. */
static fn_status check_step(const fn_rmsprop *opt)
{
    fn_status st = fn_rmsprop_config_check(&opt->cfg);
    if (st != FN_OK)
        fn_error_prefix("rmsprop step %lld: ", opt->base.steps + 1);
    return st;
}

static fn_status rmsprop_step_params(fn_optimizer *base, int from, int count)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    FN_TRY(check_step(opt));
    if (base->steps == 0)
        FN_TRY(zero_state(opt, from, count));
    const fn_rmsprop_step s = step_scalars(&opt->cfg);
    return update_range(opt, &s, from, count);
}

/* The split step's host half: a first step's zero state, the options
 * checked, the step's scalars kept (and, on the GPU, queued to the device). */
static fn_status rmsprop_prepare(fn_optimizer *base)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    FN_TRY(check_step(opt));
    if (base->steps == 0)
        FN_TRY(zero_state(opt, 0, base->n_params));
    opt->prepared = step_scalars(&opt->cfg);
    return opt->all.table ? fn_multi_tensor_set_scalars(&opt->all, &opt->prepared) : FN_OK;
}

/* The split step's device half; on the CPU the one-tensor updates with the
 * prepared scalars, unless *skip. */
static fn_status rmsprop_apply(fn_optimizer *base, const int *skip)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    if (opt->all.table)
        return opt->backend->update_all(&opt->all, opt->averages.table ? &opt->averages : NULL,
                                        skip);
    if (skip && *skip)
        return FN_OK;
    return update_range(opt, &opt->prepared, 0, base->n_params);
}

/* The split step in parts (optimizer_paths.h): on the GPU a table a part, the
 * averages' cut alike. */
static fn_status rmsprop_split(fn_optimizer *base)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    if (opt->all.table)
        FN_TRY(fn_multi_tensor_split(&opt->all, base->part_first, base->n_parts));
    if (opt->averages.table)
        FN_TRY(fn_multi_tensor_split(&opt->averages, base->part_first, base->n_parts));
    return FN_OK;
}

/* rmsprop_apply for part k's parameters alone. */
static fn_status rmsprop_apply_part(fn_optimizer *base, int k, const int *skip)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    if (opt->all.table) {
        const fn_multi_tensor *part = &opt->all.parts[k];
        return part->n ? opt->backend->update_all(
                             part, opt->averages.table ? &opt->averages.parts[k] : NULL, skip)
                       : FN_OK;
    }
    if (skip && *skip)
        return FN_OK;
    return update_range(opt, &opt->prepared, base->part_first[k],
                        base->part_first[k + 1] - base->part_first[k]);
}

/* On the GPU the split step; on the CPU the checked one-tensor updates. */
static fn_status rmsprop_step(fn_optimizer *base)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    if (!opt->all.table)
        return rmsprop_step_params(base, 0, base->n_params);
    FN_TRY(rmsprop_prepare(base));
    return rmsprop_apply(base, NULL);
}

/* One launch on the GPU (the multi-tensor table), else tensor by tensor. */
static fn_status rmsprop_zero_grad(fn_optimizer *base)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    return opt->all.table ? fn_multi_tensor_zero_grad(&opt->all) : fn_optimizer_zero_each(base);
}

/* An invalid lr is kept and reported by the next step. */
static void rmsprop_set_lr(fn_optimizer *base, float lr) { ((fn_rmsprop *)base)->cfg.lr = lr; }

static fn_tensor *rmsprop_state(fn_optimizer *base, int kind, int param)
{
    return state_of((fn_rmsprop *)base, kind, param);
}

static void free_list(fn_tensor *t, int n)
{
    for (int i = 0; t && i < n; i++)
        fn_tensor_free(&t[i]);
    free(t);
}

static void rmsprop_destroy(fn_optimizer *base)
{
    fn_rmsprop *opt = (fn_rmsprop *)base;
    free_list(opt->square_avg, base->n_params);
    free_list(opt->momentum_buffer, base->n_params);
    free_list(opt->grad_avg, base->n_params);
    fn_multi_tensor_release(&opt->all);
    fn_multi_tensor_release(&opt->averages);
    fn_optimizer_release(base);
    free(opt);
}

/* The performance paths (optim/optimizer_paths.h). */
static const fn_optimizer_paths rmsprop_paths = {
    .step_params = rmsprop_step_params,
    .prepare = rmsprop_prepare,
    .apply = rmsprop_apply,
    .zero_grad = rmsprop_zero_grad,
    .split = rmsprop_split,
    .apply_part = rmsprop_apply_part,
};

static const fn_optimizer_ops rmsprop_ops = {
    .name = "rmsprop",
    .step = rmsprop_step,
    .set_lr = rmsprop_set_lr,
    .n_state = 3,
    .state_names = state_names,
    .state_nonnegative = state_nonnegative,
    .state = rmsprop_state,
    .destroy = rmsprop_destroy,
    .paths = &rmsprop_paths,
};

/* A list of tensors shaped like the parameters. */
static fn_status alloc_list(fn_rmsprop *opt, fn_tensor **list)
{
    const int n = opt->base.n_params;
    if (!(*list = calloc((size_t)n, sizeof **list)))
        return fn_fail(FN_ERR_NOMEM, "out of host memory for RMSprop's state");
    for (int i = 0; i < n; i++) {
        const fn_tensor *v = &opt->base.params[i]->value;
        FN_TRY(fn_tensor_alloc(&(*list)[i], v->rows, v->cols, v->device));
    }
    return FN_OK;
}

static fn_status alloc_state(fn_rmsprop *opt)
{
    FN_TRY(alloc_list(opt, &opt->square_avg));
    if (opt->cfg.momentum > 0.0f)
        FN_TRY(alloc_list(opt, &opt->momentum_buffer));
    if (opt->cfg.centered)
        FN_TRY(alloc_list(opt, &opt->grad_avg));
    return zero_state(opt, 0, opt->base.n_params);
}

/* The GPU's tables: the step's, and the averages' when centered. */
static fn_status make_tables(fn_rmsprop *opt, fn_context *ctx)
{
    FN_TRY(fn_multi_tensor_create(&opt->all, ctx, opt->base.params, opt->base.n_params,
                                  opt->square_avg, opt->momentum_buffer, sizeof(fn_rmsprop_step)));
    if (!opt->grad_avg)
        return FN_OK;
    return fn_multi_tensor_create(&opt->averages, ctx, opt->base.params, opt->base.n_params,
                                  opt->grad_avg, NULL, sizeof(int));
}

fn_status fn_rmsprop_create(fn_optimizer **out, fn_context *ctx, fn_param *const *params,
                            int n_params, const fn_rmsprop_config *cfg)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_rmsprop_create: out is NULL");
    *out = NULL;
    FN_TRY(fn_rmsprop_config_check(cfg));
    fn_rmsprop *opt = calloc(1, sizeof *opt);
    if (!opt)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for an RMSprop optimiser");
    opt->cfg = *cfg;
    opt->backend = backend_for(ctx ? fn_context_device(ctx) : FN_CPU);
    fn_status st = fn_optimizer_init(&opt->base, &rmsprop_ops, ctx, params, n_params,
                                     "fn_rmsprop_create");
    if (st == FN_OK)
        st = alloc_state(opt);
    if (st == FN_OK && opt->backend->update_all)
        st = make_tables(opt, ctx);
    if (st != FN_OK) {
        rmsprop_destroy(&opt->base);
        return st;
    }
    *out = &opt->base;
    return FN_OK;
}

const fn_rmsprop_config *fn_rmsprop_get_config(const fn_optimizer *opt)
{
    if (!opt || opt->ops != &rmsprop_ops)
        return NULL;
    return &((const fn_rmsprop *)opt)->cfg;
}
