/* optimizer.c — the checked entry points of the optimiser interface and the
 * set-up every optimiser shares: its parameter list is validated here once,
 * so each ops table may trust it; the step count is kept here, so a step
 * that fails is never counted. The performance paths' entry points
 * (optimizer_paths.h) are here too: they share those checks. */
#include <stdlib.h>

#include "fusenet/optimizer.h"
#include "optim/optimizer_paths.h"

static const char *name_of(const fn_optimizer *opt)
{
    return opt && opt->ops && opt->ops->name ? opt->ops->name : "optimiser";
}

/* The optimiser's performance paths; every hook NULL where it has none. */
static const fn_optimizer_paths *paths_of(const fn_optimizer *opt)
{
    static const fn_optimizer_paths none;
    return opt->ops->paths ? opt->ops->paths : &none;
}

static fn_status check_optimizer(const fn_optimizer *opt, const char *caller)
{
    if (!opt)
        return fn_fail(FN_ERR_INVALID, "%s: optimiser is NULL", caller);
    if (!opt->ops || !opt->ops->step)
        return fn_fail(FN_ERR_INVALID, "%s: optimiser has no ops table", caller);
    return FN_OK;
}

/* Every step's entry point: the count the ops compute with (steps + 1)
 * stays in 1..FN_OPTIMIZER_MAX_STEPS. */
static fn_status check_step(const fn_optimizer *opt, const char *caller)
{
    FN_TRY(check_optimizer(opt, caller));
    if (opt->steps < 0 || opt->steps >= FN_OPTIMIZER_MAX_STEPS)
        return fn_fail(FN_ERR_INVALID, "%s: %s has taken %lld steps; a step count is 0 to 2^53",
                       caller, name_of(opt), opt->steps);
    return FN_OK;
}

fn_status fn_optimizer_step(fn_optimizer *opt)
{
    FN_TRY(check_step(opt, "fn_optimizer_step"));
    FN_TRY(opt->ops->step(opt));
    opt->steps++;
    return FN_OK;
}

int fn_optimizer_can_step_params(const fn_optimizer *opt)
{
    return opt && opt->ops && paths_of(opt)->step_params;
}

fn_status fn_optimizer_step_params(fn_optimizer *opt, int first, int count)
{
    FN_TRY(check_step(opt, "fn_optimizer_step_params"));
    if (!paths_of(opt)->step_params)
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_step_params: %s has no partial steps",
                       name_of(opt));
    if (first < 0 || count < 0 || first > opt->n_params - count)
        return fn_fail(FN_ERR_INVALID,
                       "fn_optimizer_step_params: parameters [%d, %d) of %d", first,
                       first + count, opt->n_params);
    return paths_of(opt)->step_params(opt, first, count);
}

void fn_optimizer_step_done(fn_optimizer *opt)
{
    if (opt)
        opt->steps++;
}

int fn_optimizer_sums_own(const fn_optimizer *opt)
{
    return opt && opt->ops && paths_of(opt)->sum_start;
}

fn_status fn_optimizer_sum_start(fn_optimizer *opt, int first, int count)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_sum_start"));
    if (!paths_of(opt)->sum_start)
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_sum_start: %s sums no gradients itself",
                       name_of(opt));
    if (first < 0 || count < 0 || first > opt->n_params - count)
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_sum_start: parameters [%d, %d) of %d",
                       first, first + count, opt->n_params);
    return paths_of(opt)->sum_start(opt, first, count);
}

fn_status fn_optimizer_whole_begin(fn_optimizer *opt, fn_optimizer_whole mode)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_whole_begin"));
    return paths_of(opt)->whole_begin ? paths_of(opt)->whole_begin(opt, mode) : FN_OK;
}

void fn_optimizer_whole_end(fn_optimizer *opt)
{
    if (opt && opt->ops && paths_of(opt)->whole_end)
        paths_of(opt)->whole_end(opt);
}

int fn_optimizer_can_backward_step(const fn_optimizer *opt)
{
    return opt && opt->ops && paths_of(opt)->backward_step;
}

fn_status fn_optimizer_backward_step(fn_optimizer *opt, fn_net *net, const fn_tensor *dy)
{
    FN_TRY(check_step(opt, "fn_optimizer_backward_step"));
    if (!paths_of(opt)->backward_step)
        return fn_fail(FN_ERR_INVALID,
                       "fn_optimizer_backward_step: %s, as configured, has no fused backward step",
                       name_of(opt));
    FN_TRY(paths_of(opt)->backward_step(opt, net, dy));
    opt->steps++;
    return FN_OK;
}

void fn_optimizer_set_lr(fn_optimizer *opt, float lr)
{
    if (opt && opt->ops && opt->ops->set_lr)
        opt->ops->set_lr(opt, lr);
}

int fn_optimizer_can_split(const fn_optimizer *opt)
{
    return opt && opt->ops && paths_of(opt)->prepare && paths_of(opt)->apply;
}

fn_status fn_optimizer_prepare(fn_optimizer *opt)
{
    FN_TRY(check_step(opt, "fn_optimizer_prepare"));
    if (!fn_optimizer_can_split(opt))
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_prepare: %s has no split step", name_of(opt));
    FN_TRY(paths_of(opt)->prepare(opt));
    opt->steps++;
    return FN_OK;
}

fn_status fn_optimizer_apply(fn_optimizer *opt, const int *skip)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_apply"));
    if (!fn_optimizer_can_split(opt))
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_apply: %s has no split step", name_of(opt));
    return paths_of(opt)->apply(opt, skip);
}

int fn_optimizer_can_apply_parts(const fn_optimizer *opt)
{
    return fn_optimizer_can_split(opt) && paths_of(opt)->split && paths_of(opt)->apply_part;
}

static fn_status check_counts(const fn_optimizer *opt, const int *counts, int n)
{
    if (!counts || n < 1)
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_set_parts: no parts");
    long long sum = 0;
    for (int k = 0; k < n; k++) {
        if (counts[k] < 0)
            return fn_fail(FN_ERR_INVALID, "fn_optimizer_set_parts: part %d has %d parameters",
                           k, counts[k]);
        sum += counts[k];
    }
    if (sum != opt->n_params)
        return fn_fail(FN_ERR_INVALID,
                       "fn_optimizer_set_parts: the parts hold %lld parameters, %s has %d", sum,
                       name_of(opt), opt->n_params);
    return FN_OK;
}

fn_status fn_optimizer_set_parts(fn_optimizer *opt, const int *counts, int n)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_set_parts"));
    if (!fn_optimizer_can_apply_parts(opt))
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_set_parts: %s has no update in parts",
                       name_of(opt));
    FN_TRY(check_counts(opt, counts, n));
    int *first = malloc(((size_t)n + 1) * sizeof *first);
    if (!first)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the optimiser's parts");
    first[0] = 0;
    for (int k = 0; k < n; k++)
        first[k + 1] = first[k] + counts[k];
    free(opt->part_first);
    opt->part_first = first;
    opt->n_parts = n;
    const fn_status st = paths_of(opt)->split(opt);
    if (st != FN_OK) { /* no parts rather than half-made ones: apply_part refuses */
        free(opt->part_first);
        opt->part_first = NULL;
        opt->n_parts = 0;
    }
    return st;
}

fn_status fn_optimizer_apply_part(fn_optimizer *opt, int part, const int *skip)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_apply_part"));
    if (!fn_optimizer_can_apply_parts(opt))
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_apply_part: %s has no update in parts",
                       name_of(opt));
    if (part < 0 || part >= opt->n_parts)
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_apply_part: part %d of %d", part,
                       opt->n_parts);
    return paths_of(opt)->apply_part(opt, part, skip);
}

fn_status fn_optimizer_zero_grad(fn_optimizer *opt)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_zero_grad"));
    const fn_optimizer_paths *paths = paths_of(opt);
    return paths->zero_grad ? paths->zero_grad(opt) : fn_optimizer_zero_each(opt);
}

fn_status fn_optimizer_fold(fn_optimizer *opt, int *folded)
{
    if (!folded)
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_fold: folded is NULL");
    *folded = 0;
    FN_TRY(check_optimizer(opt, "fn_optimizer_fold"));
    return paths_of(opt)->fold ? paths_of(opt)->fold(opt, folded) : FN_OK;
}

fn_status fn_optimizer_fuse(fn_optimizer *opt, fn_net *net)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_fuse"));
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_optimizer_fuse: net is NULL");
    return paths_of(opt)->fuse ? paths_of(opt)->fuse(opt, net) : FN_OK;
}

fn_status fn_optimizer_zero_each(fn_optimizer *opt)
{
    for (int i = 0; i < opt->n_params; i++)
        FN_TRY(fn_tensor_zero(&opt->params[i]->grad));
    return FN_OK;
}

void fn_optimizer_destroy(fn_optimizer *opt)
{
    if (opt && opt->ops && opt->ops->destroy)
        opt->ops->destroy(opt);
}

const char *fn_optimizer_name(const fn_optimizer *opt) { return name_of(opt); }

long long fn_optimizer_steps(const fn_optimizer *opt) { return opt ? opt->steps : 0; }

void fn_optimizer_set_steps(fn_optimizer *opt, long long steps)
{
    if (opt)
        opt->steps = steps;
}

int fn_optimizer_n_state(const fn_optimizer *opt)
{
    return opt && opt->ops && opt->ops->state ? opt->ops->n_state : 0;
}

const char *fn_optimizer_state_name(const fn_optimizer *opt, int kind)
{
    if (kind < 0 || kind >= fn_optimizer_n_state(opt))
        return NULL;
    return opt->ops->state_names[kind];
}

int fn_optimizer_state_nonnegative(const fn_optimizer *opt, int kind)
{
    return kind >= 0 && kind < fn_optimizer_n_state(opt) && opt->ops->state_nonnegative &&
           opt->ops->state_nonnegative[kind];
}

fn_tensor *fn_optimizer_state(fn_optimizer *opt, int kind, int param)
{
    if (kind < 0 || kind >= fn_optimizer_n_state(opt) || param < 0 || param >= opt->n_params)
        return NULL;
    return opt->ops->state(opt, kind, param);
}

fn_status fn_optimizer_state_export(fn_optimizer *opt)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_state_export"));
    return paths_of(opt)->state_export ? paths_of(opt)->state_export(opt) : FN_OK;
}

fn_status fn_optimizer_state_import(fn_optimizer *opt)
{
    FN_TRY(check_optimizer(opt, "fn_optimizer_state_import"));
    return paths_of(opt)->state_import ? paths_of(opt)->state_import(opt) : FN_OK;
}

size_t fn_optimizer_state_bytes(fn_optimizer *opt)
{
    size_t n = 0;
    for (int k = 0; opt && k < fn_optimizer_n_state(opt); k++)
        for (int i = 0; i < opt->n_params; i++) {
            const fn_tensor *t = fn_optimizer_state(opt, k, i);
            n += t ? fn_tensor_count(t) : 0;
        }
    const fn_optimizer_paths *paths = opt ? paths_of(opt) : NULL;
    const size_t kept = paths && paths->kept_state_bytes ? paths->kept_state_bytes(opt) : 0;
    return n * sizeof(float) + kept;
}

/* 1 when parameter i's gradient is one of its state tensors. */
static int grad_is_state(fn_optimizer *opt, int i)
{
    const float *g = opt->params[i]->grad.data;
    for (int k = 0; g && k < fn_optimizer_n_state(opt); k++) {
        const fn_tensor *t = fn_optimizer_state(opt, k, i);
        if (t && t->data == g)
            return 1;
    }
    return 0;
}

size_t fn_optimizer_grad_state_bytes(fn_optimizer *opt)
{
    size_t n = 0;
    for (int i = 0; opt && i < opt->n_params; i++)
        n += grad_is_state(opt, i) ? fn_tensor_count(&opt->params[i]->grad) : 0;
    return n * sizeof(float);
}

static fn_status check_params(fn_context *ctx, fn_param *const *params, int n_params,
                              const char *who)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "%s: ctx is NULL", who);
    if (!params || n_params < 1)
        return fn_fail(FN_ERR_INVALID, "%s: no parameters to optimise", who);
    const fn_device dev = fn_context_device(ctx);
    for (int i = 0; i < n_params; i++) {
        const fn_param *p = params[i];
        if (!p)
            return fn_fail(FN_ERR_INVALID, "%s: parameter %d is NULL", who, i);
        fn_status st = fn_tensor_check_on(&p->value, "value", dev, p->value.rows, p->value.cols);
        if (st == FN_OK)
            st = fn_tensor_check_on(&p->grad, "grad", dev, p->value.rows, p->value.cols);
        if (st != FN_OK) {
            fn_error_prefix("%s: parameter %d (%s): ", who, i, p->name ? p->name : "(unnamed)");
            return st;
        }
    }
    return FN_OK;
}

fn_status fn_optimizer_init(fn_optimizer *opt, const fn_optimizer_ops *ops, fn_context *ctx,
                            fn_param *const *params, int n_params, const char *who)
{
    FN_TRY(check_params(ctx, params, n_params, who));
    *opt = (fn_optimizer){.ops = ops, .ctx = ctx, .n_params = n_params};
    opt->params = malloc((size_t)n_params * sizeof *opt->params);
    if (!opt->params)
        return fn_fail(FN_ERR_NOMEM, "%s: out of host memory for the parameter list", who);
    for (int i = 0; i < n_params; i++)
        opt->params[i] = params[i];
    /* Every parameter kept even past a failed refresh, so that release,
     * which the caller's clean-up runs, gives back exactly what was taken. */
    fn_status st = FN_OK;
    for (int i = 0; i < n_params; i++) {
        const fn_status kept = fn_param_keep_bf16(opt->params[i], ctx);
        st = st == FN_OK ? kept : st;
    }
    return st;
}

void fn_optimizer_release(fn_optimizer *opt)
{
    /* Only what fn_optimizer_init's keep counted: a copy written on this
     * context (another owner's keep is not ours to give back). */
    for (int i = 0; opt->params && i < opt->n_params; i++)
        if (fn_param_bf16_written(opt->params[i], opt->ctx))
            fn_param_release_bf16(opt->params[i]);
    free(opt->params);
    opt->params = NULL;
    opt->n_params = 0;
    free(opt->part_first);
    opt->part_first = NULL;
    opt->n_parts = 0;
}
