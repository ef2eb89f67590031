/* sgd.c — SGD as torch.optim.SGD: option checks with torch's rules, the
 * checked one-tensor update (dispatched to src/sgd_cpu.c or
 * kernels/sgd_cuda.cu) and the optimiser that owns the momentum buffers. */
#include <math.h>
#include <stdlib.h>

#include "optim/sgd_backends.h"
#include "fusenet/sgd.h"

struct fn_sgd {
    fn_context *ctx;    /* borrowed */
    fn_param **params;  /* [n_params]; the array is ours, the parameters borrowed */
    fn_tensor *buffers; /* [n_params] momentum buffers; NULL when momentum is 0 */
    int n_params;
    fn_sgd_config cfg;
    long long steps;
};

fn_sgd_config fn_sgd_config_default(float lr)
{
    return (fn_sgd_config){.lr = lr, .momentum = 0.0f, .dampening = 0.0f,
                           .weight_decay = 0.0f, .nesterov = 0};
}

fn_status fn_sgd_config_check(const fn_sgd_config *cfg)
{
    if (!cfg)
        return fn_fail(FN_ERR_INVALID, "sgd: config is NULL");
    if (!(cfg->lr > 0.0f) || !isfinite(cfg->lr))
        return fn_fail(FN_ERR_INVALID, "sgd: lr %g must be positive and finite", (double)cfg->lr);
    if (!(cfg->momentum >= 0.0f) || !isfinite(cfg->momentum))
        return fn_fail(FN_ERR_INVALID, "sgd: momentum %g must be >= 0 and finite",
                       (double)cfg->momentum);
    if (!(cfg->weight_decay >= 0.0f) || !isfinite(cfg->weight_decay))
        return fn_fail(FN_ERR_INVALID, "sgd: weight_decay %g must be >= 0 and finite",
                       (double)cfg->weight_decay);
    if (!(cfg->dampening >= 0.0f && cfg->dampening <= 1.0f))
        return fn_fail(FN_ERR_INVALID, "sgd: dampening %g must be in [0, 1]",
                       (double)cfg->dampening);
    if (cfg->nesterov && !(cfg->momentum > 0.0f && cfg->dampening == 0.0f))
        return fn_fail(FN_ERR_INVALID,
                       "sgd: nesterov needs momentum > 0 and dampening 0 (got momentum %g, "
                       "dampening %g)",
                       (double)cfg->momentum, (double)cfg->dampening);
    return FN_OK;
}

/* t must hold data on `device` with value's shape. */
static fn_status check_like(const fn_tensor *t, const char *what, const fn_tensor *value,
                            fn_device device)
{
    FN_TRY(fn_tensor_check(t, what, value->rows, value->cols));
    if (t->device != device)
        return fn_fail(FN_ERR_INVALID, "%s is on the %s, expected the %s", what,
                       fn_device_name(t->device), fn_device_name(device));
    return FN_OK;
}

static fn_status check_update(fn_context *ctx, const fn_tensor *value, const fn_tensor *grad,
                              const fn_tensor *momentum_buf, const fn_sgd_config *cfg)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "ctx is NULL");
    FN_TRY(fn_sgd_config_check(cfg));
    if (!value || !value->data)
        return fn_fail(FN_ERR_INVALID, "value is NULL");
    const fn_device dev = fn_context_device(ctx);
    FN_TRY(check_like(value, "value", value, dev));
    FN_TRY(check_like(grad, "grad", value, dev));
    if (cfg->momentum != 0.0f)
        FN_TRY(check_like(momentum_buf, "momentum buffer", value, dev));
    return FN_OK;
}

fn_status fn_sgd_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                        fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step)
{
    fn_status st = check_update(ctx, value, grad, momentum_buf, cfg);
    if (st != FN_OK) {
        fn_error_prefix("fn_sgd_update: ");
        return st;
    }
    if (value->device == FN_CUDA)
        return fn_cuda_sgd_update(ctx, value, grad, momentum_buf, cfg, first_step);
    return fn_cpu_sgd_update(value, grad, momentum_buf, cfg, first_step);
}

static fn_status check_params(fn_context *ctx, fn_param *const *params, int n_params)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_create: ctx is NULL");
    if (!params || n_params < 1)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_create: no parameters to optimise");
    const fn_device dev = fn_context_device(ctx);
    for (int i = 0; i < n_params; i++) {
        const fn_param *p = params[i];
        if (!p)
            return fn_fail(FN_ERR_INVALID, "fn_sgd_create: parameter %d is NULL", i);
        const char *name = p->name ? p->name : "(unnamed)";
        fn_status st = check_like(&p->value, "value", &p->value, dev);
        if (st == FN_OK)
            st = check_like(&p->grad, "grad", &p->value, dev);
        if (st != FN_OK) {
            fn_error_prefix("fn_sgd_create: parameter %d (%s): ", i, name);
            return st;
        }
    }
    return FN_OK;
}

static fn_status alloc_buffers(fn_sgd *opt)
{
    opt->buffers = calloc((size_t)opt->n_params, sizeof *opt->buffers);
    if (!opt->buffers)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for SGD's momentum buffers");
    for (int i = 0; i < opt->n_params; i++) {
        const fn_tensor *v = &opt->params[i]->value;
        FN_TRY(fn_tensor_alloc(&opt->buffers[i], v->rows, v->cols, v->device));
    }
    return FN_OK;
}

static fn_status setup(fn_sgd *opt, fn_param *const *params)
{
    opt->params = malloc((size_t)opt->n_params * sizeof *opt->params);
    if (!opt->params)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for SGD's parameter list");
    for (int i = 0; i < opt->n_params; i++)
        opt->params[i] = params[i];
    return opt->cfg.momentum != 0.0f ? alloc_buffers(opt) : FN_OK;
}

fn_status fn_sgd_create(fn_sgd **out, fn_context *ctx, fn_param *const *params, int n_params,
                        const fn_sgd_config *cfg)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_create: out is NULL");
    *out = NULL;
    FN_TRY(fn_sgd_config_check(cfg));
    FN_TRY(check_params(ctx, params, n_params));
    fn_sgd *opt = calloc(1, sizeof *opt);
    if (!opt)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for an SGD optimiser");
    *opt = (fn_sgd){.ctx = ctx, .n_params = n_params, .cfg = *cfg};
    fn_status st = setup(opt, params);
    if (st != FN_OK) {
        fn_sgd_destroy(opt);
        return st;
    }
    *out = opt;
    return FN_OK;
}

fn_status fn_sgd_step(fn_sgd *opt)
{
    if (!opt)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_step: optimiser is NULL");
    const int first = opt->steps == 0;
    for (int i = 0; i < opt->n_params; i++) {
        fn_param *p = opt->params[i];
        fn_tensor *buf = opt->buffers ? &opt->buffers[i] : NULL;
        fn_status st = fn_sgd_update(opt->ctx, &p->value, &p->grad, buf, &opt->cfg, first);
        if (st != FN_OK) {
            fn_error_prefix("sgd step %lld, parameter %d (%s): ", opt->steps + 1, i,
                            p->name ? p->name : "(unnamed)");
            return st;
        }
    }
    opt->steps++;
    return FN_OK;
}

int fn_sgd_is_plain(const fn_sgd *opt)
{
    return opt && opt->cfg.momentum == 0.0f && opt->cfg.weight_decay == 0.0f;
}

fn_status fn_sgd_count_step(fn_sgd *opt)
{
    if (!opt)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_count_step: optimiser is NULL");
    if (!fn_sgd_is_plain(opt))
        return fn_fail(FN_ERR_INVALID,
                       "fn_sgd_count_step: momentum %g, weight_decay %g: only a plain SGD step "
                       "(both 0) can be taken outside fn_sgd_step",
                       (double)opt->cfg.momentum, (double)opt->cfg.weight_decay);
    opt->steps++;
    return FN_OK;
}

void fn_sgd_destroy(fn_sgd *opt)
{
    if (!opt)
        return;
    if (opt->buffers)
        for (int i = 0; i < opt->n_params; i++)
            fn_tensor_free(&opt->buffers[i]);
    free(opt->buffers);
    free(opt->params);
    free(opt);
}

long long fn_sgd_steps(const fn_sgd *opt) { return opt->steps; }

void fn_sgd_set_steps(fn_sgd *opt, long long steps) { opt->steps = steps; }

fn_tensor *fn_sgd_momentum_buffer(fn_sgd *opt, int i)
{
    if (!opt || !opt->buffers || i < 0 || i >= opt->n_params)
        return NULL;
    return &opt->buffers[i];
}

const fn_sgd_config *fn_sgd_get_config(const fn_sgd *opt) { return &opt->cfg; }

/* An invalid lr is kept and reported by the next fn_sgd_step. */
void fn_sgd_set_lr(fn_sgd *opt, float lr)
{
    if (opt)
        opt->cfg.lr = lr;
}
