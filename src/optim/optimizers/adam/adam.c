/* adam.c — Adam and AdamW as torch.optim (adam.h): option checks with
 * torch's rules, the scalars of a step (in double, as PyTorch's Python
 * code computes them), the checked one-tensor update, and the optimiser
 * that owns the exp_avg and exp_avg_sq tensors. The backend
 * (optim/optimizers/adam/adam_cpu.c, kernels/optim/optimizers/adam/adam_cuda.cu) is picked once by device; on
 * the GPU a step is the split step (optimizer_paths.h): its scalars written to
 * the device, then one launch for every parameter (multi_tensor.h). */
#include <math.h>
#include <stdlib.h>

#include "optim/optimizer_paths.h"
#include "optim/optimizers/adam/adam_backends.h"

typedef struct fn_adam {
    fn_optimizer base;              /* first: the parameters and the step count */
    const fn_adam_backend *backend; /* of the context's device */
    fn_tensor *exp_avg;             /* [n_params], each the parameter's shape */
    fn_tensor *exp_avg_sq;          /* [n_params] */
    fn_adam_config cfg;
    fn_multi_tensor all;            /* GPU: every parameter in one launch; else zeroed */
    fn_adam_step prepared;          /* the step prepare wrote (split step) */
} fn_adam;

static const char *const adam_state_names[] = {"exp_avg", "exp_avg_sq"};
static const unsigned char adam_state_nonnegative[] = {0, 1}; /* exp_avg_sq: squares */

fn_adam_config fn_adam_config_default(float lr, int decoupled)
{
    return (fn_adam_config){.lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                            .weight_decay = decoupled ? 1e-2f : 0.0f, .decoupled = decoupled};
}

static const char *adam_name(const fn_adam_config *cfg) { return cfg->decoupled ? "adamw" : "adam"; }

fn_status fn_adam_config_check(const fn_adam_config *cfg)
{
    if (!cfg)
        return fn_fail(FN_ERR_INVALID, "adam: config is NULL");
    const char *who = adam_name(cfg);
    if (!(cfg->lr > 0.0f) || !isfinite(cfg->lr))
        return fn_fail(FN_ERR_INVALID, "%s: lr %g must be positive and finite", who,
                       (double)cfg->lr);
    if (!(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f))
        return fn_fail(FN_ERR_INVALID, "%s: beta1 %g must be in [0, 1)", who, (double)cfg->beta1);
    if (!(cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f))
        return fn_fail(FN_ERR_INVALID, "%s: beta2 %g must be in [0, 1)", who, (double)cfg->beta2);
    /* torch allows 0, but then a parameter whose gradient is 0 so far
     * (a column of zeros in the inputs) is updated by 0 / 0. */
    if (!(cfg->eps > 0.0f) || !isfinite(cfg->eps))
        return fn_fail(FN_ERR_INVALID,
                       "%s: eps %g must be > 0 and finite (with 0, a parameter whose gradient "
                       "is 0 gets the update 0 / 0)",
                       who, (double)cfg->eps);
    if (!(cfg->weight_decay >= 0.0f) || !isfinite(cfg->weight_decay))
        return fn_fail(FN_ERR_INVALID, "%s: weight_decay %g must be >= 0 and finite", who,
                       (double)cfg->weight_decay);
    return FN_OK;
}

/* Step t's scalars, as torch.optim's _single_tensor_adam(w) computes them
 * in Python (double) before the tensor operations round them to float. */
static fn_adam_step step_scalars(const fn_adam_config *cfg, long long t)
{
    const double lr = cfg->lr, b1 = cfg->beta1, b2 = cfg->beta2, wd = cfg->weight_decay;
    const double bc1 = 1.0 - pow(b1, (double)t), bc2 = 1.0 - pow(b2, (double)t);
    return (fn_adam_step){
        .decay = cfg->decoupled && wd != 0.0 ? (float)(1.0 - lr * wd) : 1.0f,
        .l2 = cfg->decoupled ? 0.0f : cfg->weight_decay,
        .lerp_weight = (float)(1.0 - b1),
        .beta2 = cfg->beta2,
        .one_minus_beta2 = (float)(1.0 - b2),
        .step_size = (float)(lr / bc1),
        .bc2_sqrt = (float)sqrt(bc2),
        .eps = cfg->eps,
    };
}

static const fn_adam_backend *backend_for(fn_device device)
{
    return device == FN_CUDA ? &fn_adam_cuda_backend : &fn_adam_cpu_backend;
}

static fn_status check_update(fn_context *ctx, const fn_tensor *value, const fn_tensor *grad,
                              const fn_tensor *exp_avg, const fn_tensor *exp_avg_sq,
                              const fn_adam_config *cfg, long long t)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "ctx is NULL");
    FN_TRY(fn_adam_config_check(cfg));
    if (t < 1)
        return fn_fail(FN_ERR_INVALID, "step %lld: the first step is 1", t);
    if (!value || !value->data)
        return fn_fail(FN_ERR_INVALID, "value is NULL");
    const fn_device dev = fn_context_device(ctx);
    FN_TRY(fn_tensor_check_on(value, "value", dev, value->rows, value->cols));
    FN_TRY(fn_tensor_check_on(grad, "grad", dev, value->rows, value->cols));
    FN_TRY(fn_tensor_check_on(exp_avg, "exp_avg", dev, value->rows, value->cols));
    return fn_tensor_check_on(exp_avg_sq, "exp_avg_sq", dev, value->rows, value->cols);
}

static fn_status checked_update(const fn_adam_backend *backend, fn_context *ctx, fn_tensor *value,
                                const fn_tensor *grad, fn_tensor *exp_avg, fn_tensor *exp_avg_sq,
                                const fn_adam_config *cfg, long long t)
{
    fn_status st = check_update(ctx, value, grad, exp_avg, exp_avg_sq, cfg, t);
    if (st != FN_OK) {
        fn_error_prefix("fn_adam_update: ");
        return st;
    }
    const fn_adam_step s = step_scalars(cfg, t);
    return backend->update(ctx, value, grad, exp_avg, exp_avg_sq, &s);
}

fn_status fn_adam_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                         fn_tensor *exp_avg, fn_tensor *exp_avg_sq, const fn_adam_config *cfg,
                         long long t)
{
    const fn_adam_backend *backend = backend_for(ctx ? fn_context_device(ctx) : FN_CPU);
    return checked_update(backend, ctx, value, grad, exp_avg, exp_avg_sq, cfg, t);
}

/* --- the optimiser ------------------------------------------------------------ */

/* A first step (a new optimiser, or its count set back to 0) starts from
 * zero moments, as torch's lazily created state does. */
static fn_status zero_state(fn_adam *opt, int from, int count)
{
    for (int i = from; i < from + count; i++) {
        FN_TRY(fn_tensor_zero(&opt->exp_avg[i]));
        FN_TRY(fn_tensor_zero(&opt->exp_avg_sq[i]));
    }
    return FN_OK;
}

/* Parameters [from, from + count)'s one-tensor updates with step t's
 * scalars s. */
static fn_status update_range(fn_adam *opt, const fn_adam_step *s, long long t, int from,
                              int count)
{
    fn_optimizer *base = &opt->base;
    for (int i = from; i < from + count; i++) {
        fn_param *p = base->params[i];
        fn_status st = opt->backend->update(base->ctx, &p->value, &p->grad, &opt->exp_avg[i],
                                            &opt->exp_avg_sq[i], s);
        if (st == FN_OK)
            st = fn_param_refresh_bf16(p, base->ctx);
        if (st != FN_OK) {
            fn_error_prefix("%s step %lld, parameter %d (%s): ", adam_name(&opt->cfg), t, i,
                            p->name ? p->name : "(unnamed)");
            return st;
        }
    }
    return FN_OK;
}

static fn_status adam_step_params(fn_optimizer *base, int from, int count)
{
    fn_adam *opt = (fn_adam *)base;
    if (base->steps == 0)
        FN_TRY(zero_state(opt, from, count));
    const long long t = base->steps + 1;
    for (int i = from; i < from + count; i++) {
        fn_param *p = base->params[i];
        fn_status st = checked_update(opt->backend, base->ctx, &p->value, &p->grad,
                                      &opt->exp_avg[i], &opt->exp_avg_sq[i], &opt->cfg, t);
        if (st == FN_OK)
            st = fn_param_refresh_bf16(p, base->ctx);
        if (st != FN_OK) {
            fn_error_prefix("%s step %lld, parameter %d (%s): ", adam_name(&opt->cfg), t, i,
                            p->name ? p->name : "(unnamed)");
            return st;
        }
    }
    return FN_OK;
}

static fn_status adam_step(fn_optimizer *base)
{
    return adam_step_params(base, 0, base->n_params);
}

/* The split step's host half: a first step's zero moments, the options
 * checked, step t's scalars kept (and, on the GPU, queued to the device). */
static fn_status adam_prepare(fn_optimizer *base)
{
    fn_adam *opt = (fn_adam *)base;
    const long long t = base->steps + 1;
    fn_status st = fn_adam_config_check(&opt->cfg);
    if (st != FN_OK) {
        fn_error_prefix("%s step %lld: ", adam_name(&opt->cfg), t);
        return st;
    }
    if (base->steps == 0)
        FN_TRY(zero_state(opt, 0, base->n_params));
    opt->prepared = step_scalars(&opt->cfg, t);
    return opt->all.table ? fn_multi_tensor_set_scalars(&opt->all, &opt->prepared) : FN_OK;
}

/* The split step's device half; on the CPU the one-tensor updates with the
 * prepared scalars, unless *skip. */
static fn_status adam_apply(fn_optimizer *base, const int *skip)
{
    fn_adam *opt = (fn_adam *)base;
    if (opt->all.table)
        return opt->backend->update_all(&opt->all, skip);
    if (skip && *skip)
        return FN_OK;
    return update_range(opt, &opt->prepared, base->steps, 0, base->n_params);
}

/* The split step in parts (optimizer_paths.h): on the GPU a table a part. */
static fn_status adam_split(fn_optimizer *base)
{
    fn_adam *opt = (fn_adam *)base;
    return opt->all.table ? fn_multi_tensor_split(&opt->all, base->part_first, base->n_parts)
                          : FN_OK;
}

/* adam_apply for part k's parameters alone. */
static fn_status adam_apply_part(fn_optimizer *base, int k, const int *skip)
{
    fn_adam *opt = (fn_adam *)base;
    if (opt->all.table) {
        const fn_multi_tensor *part = &opt->all.parts[k];
        return part->n ? opt->backend->update_all(part, skip) : FN_OK;
    }
    if (skip && *skip)
        return FN_OK;
    return update_range(opt, &opt->prepared, base->steps, base->part_first[k],
                        base->part_first[k + 1] - base->part_first[k]);
}

/* On the GPU the split step; on the CPU the checked one-tensor updates. */
static fn_status adam_step_any(fn_optimizer *base)
{
    fn_adam *opt = (fn_adam *)base;
    if (!opt->all.table)
        return adam_step(base);
    FN_TRY(adam_prepare(base));
    return adam_apply(base, NULL);
}

/* One launch on the GPU (the multi-tensor table), else tensor by tensor. */
static fn_status adam_zero_grad(fn_optimizer *base)
{
    fn_adam *opt = (fn_adam *)base;
    return opt->all.table ? fn_multi_tensor_zero_grad(&opt->all) : fn_optimizer_zero_each(base);
}

/* An invalid lr is kept and reported by the next step. */
static void adam_set_lr(fn_optimizer *base, float lr) { ((fn_adam *)base)->cfg.lr = lr; }

static fn_tensor *adam_state(fn_optimizer *base, int kind, int param)
{
    fn_adam *opt = (fn_adam *)base;
    return kind == 0 ? &opt->exp_avg[param] : &opt->exp_avg_sq[param];
}

static void free_moments(fn_tensor *t, int n)
{
    for (int i = 0; t && i < n; i++)
        fn_tensor_free(&t[i]);
    free(t);
}

static void adam_destroy(fn_optimizer *base)
{
    fn_adam *opt = (fn_adam *)base;
    free_moments(opt->exp_avg, base->n_params);
    free_moments(opt->exp_avg_sq, base->n_params);
    fn_multi_tensor_release(&opt->all);
    fn_optimizer_release(base);
    free(opt);
}

/* The performance paths (optim/optimizer_paths.h), Adam's and AdamW's. */
static const fn_optimizer_paths adam_paths = {
    .step_params = adam_step_params,
    .prepare = adam_prepare,
    .apply = adam_apply,
    .zero_grad = adam_zero_grad,
    .split = adam_split,
    .apply_part = adam_apply_part,
};

/* Adam's and AdamW's tables differ in their names alone. */
#define ADAM_OPS(the_name)                                                                      \
    {                                                                                           \
        .name = (the_name), .step = adam_step_any, .set_lr = adam_set_lr, .n_state = 2,         \
        .state_names = adam_state_names, .state_nonnegative = adam_state_nonnegative,           \
        .state = adam_state, .destroy = adam_destroy, .paths = &adam_paths,                     \
    }
static const fn_optimizer_ops adam_ops = ADAM_OPS("adam");
static const fn_optimizer_ops adamw_ops = ADAM_OPS("adamw");

static fn_status alloc_moments(fn_adam *opt)
{
    const int n = opt->base.n_params;
    opt->exp_avg = calloc((size_t)n, sizeof *opt->exp_avg);
    opt->exp_avg_sq = calloc((size_t)n, sizeof *opt->exp_avg_sq);
    if (!opt->exp_avg || !opt->exp_avg_sq)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for Adam's moments");
    for (int i = 0; i < n; i++) {
        const fn_tensor *v = &opt->base.params[i]->value;
        FN_TRY(fn_tensor_alloc(&opt->exp_avg[i], v->rows, v->cols, v->device));
        FN_TRY(fn_tensor_alloc(&opt->exp_avg_sq[i], v->rows, v->cols, v->device));
    }
    return zero_state(opt, 0, opt->base.n_params);
}

fn_status fn_adam_create(fn_optimizer **out, fn_context *ctx, fn_param *const *params,
                         int n_params, const fn_adam_config *cfg)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_adam_create: out is NULL");
    *out = NULL;
    FN_TRY(fn_adam_config_check(cfg));
    fn_adam *opt = calloc(1, sizeof *opt);
    if (!opt)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for an Adam optimiser");
    opt->cfg = *cfg;
    opt->backend = backend_for(ctx ? fn_context_device(ctx) : FN_CPU);
    fn_status st = fn_optimizer_init(&opt->base, cfg->decoupled ? &adamw_ops : &adam_ops, ctx,
                                     params, n_params, "fn_adam_create");
    if (st == FN_OK)
        st = alloc_moments(opt);
    if (st == FN_OK && opt->backend->update_all)
        st = fn_multi_tensor_create(&opt->all, ctx, opt->base.params, n_params, opt->exp_avg,
                                    opt->exp_avg_sq, sizeof(fn_adam_step));
    if (st != FN_OK) {
        adam_destroy(&opt->base);
        return st;
    }
    *out = &opt->base;
    return FN_OK;
}

const fn_adam_config *fn_adam_get_config(const fn_optimizer *opt)
{
    if (!opt || (opt->ops != &adam_ops && opt->ops != &adamw_ops))
        return NULL;
    return &((const fn_adam *)opt)->cfg;
}
