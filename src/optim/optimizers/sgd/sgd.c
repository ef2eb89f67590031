/* sgd.c — SGD as torch.optim.SGD: option checks with torch's rules, the
 * checked one-tensor update, and the optimiser (optimizer.h) that owns the
 * momentum buffers. The backend (optim/optimizers/sgd/sgd_cpu.c, kernels/optim/optimizers/sgd/sgd_cuda.cu) is
 * picked by the context's device; the optimiser picks it once, with the
 * paths table (optim/optimizer_paths.h): the fused one only where the
 * backend fuses the plain step.
 * On the GPU a step is the split step (optimizer_paths.h): its scalars written to
 * the device, then one launch for every parameter (multi_tensor.h).
 *
 * Momentum folded into backward (the fold hook, optimizer_paths.h): with
 * momentum mu > 0, dampening 0 and no nesterov, each parameter's gradient
 * tensor is its momentum buffer and its grad_beta mu, so backward leaves
 * torch's buf = mu buf + g there (the first step's buf = mu 0 + g = g,
 * torch's clone: the buffers are zeroed when the fold is made before the
 * first step) and the step is buf += wd theta, theta -= lr buf: one pass
 * over theta and buf, with no gradient tensor written or read. The
 * rounding differs from the unfolded step's (mu buf + g rounded once in
 * the product, wd theta added after it); a checkpoint's "momentum" is the
 * buffer, torch's, either way. While folded the parameters' own gradient
 * tensors are freed (nothing reads them: the fold is made only where the
 * optimiser alone reads gradients, trainer/step_choice.c) and the table's
 * gradients are the buffers; destroy allocates them again, zeroed, so
 * the parameters' layers find gradients of their own.
 *
 * Momentum in bfloat16 (momentum_bf16, sgd.h): each weight with a bfloat16
 * copy keeps its buffer in bf16[i] as well as the float32 tensor
 * buffers[i], which is then only its published view: widened into by
 * state_export (checkpoints), rounded back by state_import. The table's
 * kernels read and write the bfloat16 buffer (multi_tensor.h); folded,
 * backward writes it (the weight's grad_bf16, param.h); a one-tensor update
 * (step_params, the CPU-shaped path) widens it into the view, updates the
 * view in float32 and rounds it back: the table's arithmetic, so the same
 * bits. */
#include <math.h>
#include <stdlib.h>

#include "optim/optimizer_paths.h"
#include "optim/optimizers/sgd/sgd_backends.h"
#include "fusenet/sgd.h"

struct fn_sgd {
    fn_optimizer base;             /* first: the parameters and the step count */
    const fn_sgd_backend *backend; /* of the context's device */
    fn_tensor *buffers;            /* [n_params] momentum buffers; NULL when momentum is 0 */
    fn_sgd_config cfg;
    fn_multi_tensor all;           /* GPU: every parameter in one launch; else zeroed */
    fn_sgd_scalars prepared;       /* the step prepare wrote (split step) */
    int folded;                    /* 1 while folded (sgd_fold): the gradients are the
                                    * buffers, the parameters' own ones freed */
    int fused;                     /* 1 once fused (sgd_fuse): every step is
                                    * backward_step, the unread gradients freed */
    fn_tensor *bf16;               /* [n_params] with momentum_bf16: a weight's bfloat16
                                    * buffer (storage of rows x ceil(cols / 2) floats), data
                                    * NULL for a parameter whose buffer is float32; else NULL */
};

/* Parameter i's bfloat16 momentum buffer, or NULL: its buffer is float32. */
static void *bf16_buffer(const fn_sgd *opt, int i)
{
    return opt->bf16 ? opt->bf16[i].data : NULL;
}

static const char *const sgd_state_names[] = {"momentum"};

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
    if (cfg->momentum_bf16 && !(cfg->momentum > 0.0f))
        return fn_fail(FN_ERR_INVALID,
                       "sgd: momentum_bf16 needs momentum > 0 (got %g): without momentum there "
                       "is no buffer to keep",
                       (double)cfg->momentum);
    return FN_OK;
}

static const fn_sgd_backend *backend_for(fn_device device)
{
    return device == FN_CUDA ? &fn_sgd_cuda_backend : &fn_sgd_cpu_backend;
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
    FN_TRY(fn_tensor_check_on(value, "value", dev, value->rows, value->cols));
    FN_TRY(fn_tensor_check_on(grad, "grad", dev, value->rows, value->cols));
    if (cfg->momentum != 0.0f)
        FN_TRY(fn_tensor_check_on(momentum_buf, "momentum buffer", dev, value->rows,
                                  value->cols));
    return FN_OK;
}

/* The update through a backend of ctx's device, after the checks. */
static fn_status checked_update(const fn_sgd_backend *backend, fn_context *ctx, fn_tensor *value,
                                const fn_tensor *grad, fn_tensor *momentum_buf,
                                const fn_sgd_config *cfg, int first_step)
{
    fn_status st = check_update(ctx, value, grad, momentum_buf, cfg);
    if (st != FN_OK) {
        fn_error_prefix("fn_sgd_update: ");
        return st;
    }
    return backend->update(ctx, value, grad, momentum_buf, cfg, first_step);
}

fn_status fn_sgd_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                        fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step)
{
    const fn_sgd_backend *backend = backend_for(ctx ? fn_context_device(ctx) : FN_CPU);
    return checked_update(backend, ctx, value, grad, momentum_buf, cfg, first_step);
}

/* --- the optimiser ------------------------------------------------------------ */

/* Parameter i's bfloat16 buffer widened into its float32 view (to_view) or
 * the view rounded back; nothing where the buffer is float32. */
static fn_status sync_bf16(fn_sgd *opt, int i, int to_view)
{
    void *h = bf16_buffer(opt, i);
    if (!h)
        return FN_OK;
    fn_tensor *view = &opt->buffers[i];
    const size_t n = fn_tensor_count(view);
    return to_view ? opt->backend->widen_bf16(opt->base.ctx, view->data, h, n)
                   : opt->backend->narrow_bf16(opt->base.ctx, h, view->data, n);
}

/* One parameter's one-tensor update (with a bfloat16 buffer: through its
 * view, sgd.c's header). */
static fn_status update_one(fn_sgd *opt, const fn_sgd_config *cfg, int first, int i)
{
    fn_optimizer *base = &opt->base;
    fn_param *p = base->params[i];
    fn_tensor *buf = opt->buffers ? &opt->buffers[i] : NULL;
    if (!first || opt->folded) /* the first unfolded step reads no buffer */
        FN_TRY(sync_bf16(opt, i, 1));
    FN_TRY(opt->folded ? opt->backend->update_folded(base->ctx, &p->value, buf, cfg)
                          : checked_update(opt->backend, base->ctx, &p->value, &p->grad, buf,
                                           cfg, first));
    return sync_bf16(opt, i, 0);
}

/* The one-tensor updates of parameters [from, from + count) with cfg;
 * first: the run's first step; step: the step's number in messages. */
static fn_status update_range(fn_sgd *opt, const fn_sgd_config *cfg, int first, long long step,
                              int from, int count)
{
    fn_optimizer *base = &opt->base;
    for (int i = from; i < from + count; i++) {
        fn_param *p = base->params[i];
        fn_status st = update_one(opt, cfg, first, i);
        if (st == FN_OK) /* the one-tensor update writes no copy: a pass of its own */
            st = fn_param_refresh_bf16(p, base->ctx);
        if (st != FN_OK) {
            fn_error_prefix("sgd step %lld, parameter %d (%s): ", step, i,
                            p->name ? p->name : "(unnamed)");
            return st;
        }
    }
    return FN_OK;
}

/* Fused (sgd_fuse), the steps are backward_step's: the gradients a step
 * would read may be freed. */
static fn_status check_unfused(const fn_sgd *opt, long long step)
{
    if (!opt->fused)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID,
                   "sgd step %lld: this optimiser takes its steps in the backward pass "
                   "(fn_optimizer_fuse): take them with fn_optimizer_backward_step",
                   step);
}

static fn_status sgd_step_params(fn_optimizer *base, int from, int count)
{
    fn_sgd *opt = (fn_sgd *)base;
    FN_TRY(check_unfused(opt, base->steps + 1));
    return update_range(opt, &opt->cfg, base->steps == 0, base->steps + 1, from, count);
}

/* The split step's host half: the options checked as the one-tensor
 * update checks them, and the step's scalars kept (and, on the GPU,
 * queued to the device). */
static fn_status sgd_prepare(fn_optimizer *base)
{
    fn_sgd *opt = (fn_sgd *)base;
    FN_TRY(check_unfused(opt, base->steps + 1));
    fn_status st = fn_sgd_config_check(&opt->cfg);
    if (st != FN_OK) {
        fn_error_prefix("sgd step %lld: ", base->steps + 1);
        return st;
    }
    opt->prepared = (fn_sgd_scalars){.lr = opt->cfg.lr, .first_step = base->steps == 0};
    return opt->all.table ? fn_multi_tensor_set_scalars(&opt->all, &opt->prepared) : FN_OK;
}

/* The split step's device half; on the CPU the one-tensor updates with the
 * prepared scalars, unless *skip. */
static fn_status sgd_apply(fn_optimizer *base, const int *skip)
{
    fn_sgd *opt = (fn_sgd *)base;
    FN_TRY(check_unfused(opt, base->steps));
    if (opt->all.table)
        return opt->backend->update_all(&opt->all, &opt->cfg, skip, opt->folded);
    if (skip && *skip)
        return FN_OK;
    fn_sgd_config cfg = opt->cfg;
    cfg.lr = opt->prepared.lr;
    return update_range(opt, &cfg, opt->prepared.first_step, base->steps, 0, base->n_params);
}

/* The split step in parts (optimizer_paths.h): on the GPU a table a part. */
static fn_status sgd_split(fn_optimizer *base)
{
    fn_sgd *opt = (fn_sgd *)base;
    return opt->all.table ? fn_multi_tensor_split(&opt->all, base->part_first, base->n_parts)
                          : FN_OK;
}

/* sgd_apply for part k's parameters alone. */
static fn_status sgd_apply_part(fn_optimizer *base, int k, const int *skip)
{
    fn_sgd *opt = (fn_sgd *)base;
    FN_TRY(check_unfused(opt, base->steps));
    if (opt->all.table) {
        const fn_multi_tensor *part = &opt->all.parts[k];
        return part->n ? opt->backend->update_all(part, &opt->cfg, skip, opt->folded)
                       : FN_OK;
    }
    if (skip && *skip)
        return FN_OK;
    fn_sgd_config cfg = opt->cfg;
    cfg.lr = opt->prepared.lr;
    const int from = base->part_first[k];
    return update_range(opt, &cfg, opt->prepared.first_step, base->steps, from,
                        base->part_first[k + 1] - from);
}

static fn_status sgd_step(fn_optimizer *base)
{
    fn_sgd *opt = (fn_sgd *)base;
    if (opt->all.table) {
        FN_TRY(sgd_prepare(base));
        return sgd_apply(base, NULL);
    }
    return sgd_step_params(base, 0, base->n_params);
}

/* The bfloat16 buffers zeroed (folded: the gradients backward adds to). */
static fn_status zero_bf16(fn_sgd *opt)
{
    for (int i = 0; opt->bf16 && i < opt->base.n_params; i++)
        if (opt->bf16[i].data)
            FN_TRY(fn_tensor_zero(&opt->bf16[i]));
    return FN_OK;
}

/* One launch on the GPU (the multi-tensor table), else tensor by tensor;
 * folded, the gradients are the buffers, zeroed tensor by tensor with the
 * bfloat16 ones: the momentum starts again. */
static fn_status sgd_zero_grad(fn_optimizer *base)
{
    fn_sgd *opt = (fn_sgd *)base;
    if (opt->all.table && !opt->folded)
        return fn_multi_tensor_zero_grad(&opt->all);
    FN_TRY(fn_optimizer_zero_each(base));
    /* folded, a bfloat16 buffer is the gradient backward adds to */
    return opt->folded ? zero_bf16(opt) : FN_OK;
}

static int can_fold(const fn_sgd_config *cfg)
{
    return cfg->momentum > 0.0f && cfg->dampening == 0.0f && !cfg->nesterov;
}

/* Parameter i's gradient is grad from now on, in the table as well
 * (GPU), so that no entry points at freed memory. */
static fn_status set_grad(fn_sgd *opt, int i, fn_tensor grad)
{
    opt->base.params[i]->grad = grad;
    return opt->all.table ? fn_multi_tensor_set_grad(&opt->all, i, grad.data) : FN_OK;
}

/* Parameter i's gradient becomes its buffer; its own gradient tensor,
 * which nothing reads or writes while folded, is freed. */
static fn_status fold_param(fn_sgd *opt, int i)
{
    fn_param *p = opt->base.params[i];
    if (p->grad_beta != 0.0f || p->grad_bf16)
        return fn_fail(FN_ERR_INVALID,
                       "fn_optimizer_fold: parameter %s already adds into its gradient "
                       "(grad_beta %g%s), as a fold into another optimiser leaves it: "
                       "destroy that optimiser first, or set grad_beta 0",
                       p->name ? p->name : "(unnamed)", (double)p->grad_beta,
                       p->grad_bf16 ? ", a bfloat16 gradient" : "");
    fn_tensor own = p->grad;
    p->grad_bf16 = bf16_buffer(opt, i); /* backward writes the bfloat16 buffer there */
    p->grad_beta = opt->cfg.momentum;
    fn_status st = set_grad(opt, i, opt->buffers[i]);
    fn_tensor_free(&own);
    return st;
}

/* The fold hook (optimizer_paths.h; this file's header says what it computes). */
static fn_status sgd_fold(fn_optimizer *base, int *folded)
{
    fn_sgd *opt = (fn_sgd *)base;
    *folded = opt->folded;
    if (*folded || !can_fold(&opt->cfg))
        return FN_OK;
    if (base->steps == 0) { /* the first step's buffer is then mu 0 + g = g */
        for (int i = 0; i < base->n_params; i++)
            FN_TRY(fn_tensor_zero(&opt->buffers[i]));
        FN_TRY(zero_bf16(opt));
    }
    opt->folded = 1; /* from the first parameter on: unfold gives back what was taken */
    for (int i = 0; i < base->n_params; i++)
        FN_TRY(fold_param(opt, i));
    *folded = 1;
    return FN_OK;
}

/* Destroy's part for parameter i: where folded, its buffer freed, then a
 * gradient of its own allocated (zeroed: the peak stays the run's), for
 * its layer to write again and free. Without memory the parameter is
 * left with no gradient (never the freed buffer): the next check of its
 * grad names it. */
static fn_status unfold_param(fn_sgd *opt, int i)
{
    fn_param *p = opt->base.params[i];
    if (p->grad.data != opt->buffers[i].data)
        return FN_OK;
    fn_tensor_free(&opt->buffers[i]);
    p->grad_bf16 = NULL;
    p->grad_beta = 0.0f;
    fn_tensor own;
    const fn_status st = fn_tensor_alloc(&own, p->value.rows, p->value.cols, p->value.device);
    const fn_status set = set_grad(opt, i, own); /* own is zeroed where st failed */
    return st != FN_OK ? st : set;
}

/* The parameters' own gradients back, their buffers freed (destroy's
 * first half: the fold lasts the optimiser's life); the first failure's
 * status, every parameter tried. */
static fn_status unfold(fn_sgd *opt)
{
    fn_status first = FN_OK;
    for (int i = 0; opt->folded && i < opt->base.n_params; i++) {
        fn_status st = unfold_param(opt, i);
        first = first == FN_OK ? st : first;
    }
    opt->folded = 0;
    return first;
}

/* The fused step updates net's parameters: they must be this optimiser's. */
static fn_status check_net(const fn_optimizer *base, const fn_net *net)
{
    int same = fn_net_n_params(net) == base->n_params;
    for (int i = 0; same && i < base->n_params; i++)
        same = fn_net_param(net, i) == base->params[i];
    if (!same)
        return fn_fail(FN_ERR_INVALID, "sgd: the net's parameters are not the optimiser's");
    return FN_OK;
}

static fn_status sgd_backward_step(fn_optimizer *base, fn_net *net, const fn_tensor *dy)
{
    fn_sgd *opt = (fn_sgd *)base;
    FN_TRY(check_net(base, net));
    return opt->backend->backward_plain(net, dy, opt->cfg.lr);
}

static int has_backward_sgd(const fn_layer *l) { return l->ops && l->ops->backward_sgd; }

/* Whether fusing frees p's gradient: p belongs to a layer of net with
 * backward_sgd. */
static int released_by_fuse(fn_net *net, const fn_param *p)
{
    for (int i = 0; i < fn_net_n_layers(net); i++) {
        const fn_layer *l = fn_net_layer(net, i);
        for (int k = 0; has_backward_sgd(l) && k < l->n_params; k++)
            if (&l->params[k] == p)
                return 1;
    }
    return 0;
}

/* The fuse hook (optimizer_paths.h): the gradients the fused backward never
 * reads freed (the fused step: sgd_fused.h), and the table's entries for them cleared,
 * so that no launch reaches freed memory (the table's zeroing skips
 * them). */
static fn_status sgd_fuse(fn_optimizer *base, fn_net *net)
{
    fn_sgd *opt = (fn_sgd *)base;
    FN_TRY(check_net(base, net));
    opt->fused = 1;
    /* the layers whose backward_sgd takes the step never touch their
     * gradients; a later fn_net_backward allocates them again. The
     * table's entries go first, so none ever points at freed memory. */
    for (int i = 0; opt->all.table && i < base->n_params; i++)
        if (released_by_fuse(net, base->params[i]))
            FN_TRY(fn_multi_tensor_set_grad(&opt->all, i, NULL));
    for (int i = 0; i < fn_net_n_layers(net); i++)
        if (has_backward_sgd(fn_net_layer(net, i)))
            fn_layer_release_grads(fn_net_layer(net, i));
    return FN_OK;
}

/* Destroy's part once fused: gradients of their own again (zeroed), for
 * the layers that fusing left without; the first failure's status. */
static fn_status unfuse(fn_sgd *opt)
{
    fn_status first = FN_OK;
    for (int i = 0; opt->fused && i < opt->base.n_params; i++) {
        fn_param *p = opt->base.params[i];
        fn_status st = p->grad.data ? FN_OK
                                    : fn_tensor_alloc(&p->grad, p->value.rows, p->value.cols,
                                                      p->value.device);
        first = first == FN_OK ? st : first;
    }
    opt->fused = 0;
    return first;
}

/* An invalid lr is kept and reported by the next step. */
static void sgd_set_lr(fn_optimizer *base, float lr) { ((fn_sgd *)base)->cfg.lr = lr; }

static fn_tensor *sgd_state(fn_optimizer *base, int kind, int param)
{
    (void)kind;
    return fn_sgd_momentum_buffer((fn_sgd *)base, param);
}

/* The bfloat16 buffers into their float32 views (to_view) or back. */
static fn_status sync_all_bf16(fn_sgd *opt, int to_view)
{
    for (int i = 0; opt->bf16 && i < opt->base.n_params; i++)
        FN_TRY(sync_bf16(opt, i, to_view));
    return FN_OK;
}

static fn_status sgd_state_export(fn_optimizer *base) { return sync_all_bf16((fn_sgd *)base, 1); }

static fn_status sgd_state_import(fn_optimizer *base) { return sync_all_bf16((fn_sgd *)base, 0); }

/* The kept_state_bytes hook: the bfloat16 buffers (two to a float). */
static size_t sgd_kept_state_bytes(const fn_optimizer *base)
{
    const fn_sgd *opt = (const fn_sgd *)base;
    size_t n = 0;
    for (int i = 0; opt->bf16 && i < base->n_params; i++)
        n += fn_tensor_count(&opt->bf16[i]) * sizeof(float);
    return n;
}

static void sgd_destroy(fn_optimizer *base)
{
    fn_sgd *opt = (fn_sgd *)base;
    fn_multi_tensor_release(&opt->all); /* first: unfold need not update it */
    (void)unfold(opt); /* destroy has no status: a parameter left without memory has no grad */
    (void)unfuse(opt);
    if (opt->buffers)
        for (int i = 0; i < base->n_params; i++)
            fn_tensor_free(&opt->buffers[i]);
    free(opt->buffers);
    if (opt->bf16)
        for (int i = 0; i < base->n_params; i++)
            fn_tensor_free(&opt->bf16[i]);
    free(opt->bf16);
    fn_optimizer_release(base);
    free(opt);
}

/* The performance paths (optim/optimizer_paths.h) of SGD as configured. */
static const fn_optimizer_paths sgd_paths = {
    .step_params = sgd_step_params,
    .prepare = sgd_prepare,
    .apply = sgd_apply,
    .zero_grad = sgd_zero_grad,
    .fold = sgd_fold,
    .split = sgd_split,
    .apply_part = sgd_apply_part,
    .state_export = sgd_state_export,
    .state_import = sgd_state_import,
    .kept_state_bytes = sgd_kept_state_bytes,
};

/* Plain SGD where the backend fuses the step into the backward pass. */
static const fn_optimizer_paths sgd_fused_paths = {
    .step_params = sgd_step_params,
    .backward_step = sgd_backward_step,
    .fuse = sgd_fuse,
    .prepare = sgd_prepare,
    .apply = sgd_apply,
    .zero_grad = sgd_zero_grad,
};

/* The public table, the same for both but for the paths it points to. */
#define SGD_OPS(the_paths)                                                                      \
    {                                                                                           \
        .name = "sgd", .step = sgd_step, .set_lr = sgd_set_lr, .n_state = 1,                    \
        .state_names = sgd_state_names, .state = sgd_state, .destroy = sgd_destroy,             \
        .paths = (the_paths),                                                                   \
    }
static const fn_optimizer_ops sgd_ops = SGD_OPS(&sgd_paths);
static const fn_optimizer_ops sgd_fused_ops = SGD_OPS(&sgd_fused_paths);

static fn_status alloc_buffers(fn_sgd *opt)
{
    const int n = opt->base.n_params;
    opt->buffers = calloc((size_t)n, sizeof *opt->buffers);
    if (!opt->buffers)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for SGD's momentum buffers");
    for (int i = 0; i < n; i++) {
        const fn_tensor *v = &opt->base.params[i]->value;
        FN_TRY(fn_tensor_alloc(&opt->buffers[i], v->rows, v->cols, v->device));
    }
    return FN_OK;
}

/* With momentum_bf16: a GPU context in bf16 math, where the weights with
 * a bfloat16 copy are the ones whose products run in bfloat16. */
static fn_status check_bf16_context(const fn_sgd_config *cfg, fn_context *ctx,
                                    const fn_sgd_backend *backend)
{
    if (!cfg->momentum_bf16)
        return FN_OK;
    const fn_device dev = ctx ? fn_context_device(ctx) : FN_CPU;
    const fn_math math = ctx ? fn_context_math(ctx) : FN_MATH_FP32;
    if (!backend->narrow_bf16 || math != FN_MATH_BF16)
        return fn_fail(FN_ERR_INVALID,
                       "sgd: momentum_bf16 needs the GPU in bf16 math (here device %s, math "
                       "%s): only there does the weights' dW product write a bfloat16 buffer; "
                       "set [run] device = cuda and math = bf16, or momentum_bf16 = false",
                       fn_device_name(dev), fn_math_name(math));
    return FN_OK;
}

/* A bfloat16 buffer, zeroed, for each weight with a bfloat16 copy. */
static fn_status alloc_bf16(fn_sgd *opt)
{
    const int n = opt->base.n_params;
    opt->bf16 = calloc((size_t)n, sizeof *opt->bf16);
    if (!opt->bf16)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for SGD's bfloat16 buffers");
    for (int i = 0; i < n; i++) {
        const fn_param *p = opt->base.params[i];
        if (!p->value_bf16)
            continue;
        FN_TRY(fn_tensor_alloc(&opt->bf16[i], p->value.rows, (p->value.cols + 1) / 2,
                               p->value.device));
        FN_TRY(fn_tensor_zero(&opt->bf16[i]));
    }
    return FN_OK;
}

/* The table's kernels read and write the bfloat16 buffers. */
static fn_status table_bf16(fn_sgd *opt)
{
    for (int i = 0; opt->bf16 && opt->all.table && i < opt->base.n_params; i++)
        if (bf16_buffer(opt, i))
            FN_TRY(fn_multi_tensor_set_state1_bf16(&opt->all, i, bf16_buffer(opt, i)));
    return FN_OK;
}

static const fn_optimizer_ops *ops_for(const fn_sgd_config *cfg, const fn_sgd_backend *backend)
{
    const int plain = cfg->momentum == 0.0f && cfg->weight_decay == 0.0f;
    return plain && backend->backward_plain ? &sgd_fused_ops : &sgd_ops;
}

fn_status fn_sgd_create(fn_sgd **out, fn_context *ctx, fn_param *const *params, int n_params,
                        const fn_sgd_config *cfg)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_create: out is NULL");
    *out = NULL;
    FN_TRY(fn_sgd_config_check(cfg));
    fn_sgd *opt = calloc(1, sizeof *opt);
    if (!opt)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for an SGD optimiser");
    opt->cfg = *cfg;
    opt->backend = backend_for(ctx ? fn_context_device(ctx) : FN_CPU);
    fn_status st = check_bf16_context(cfg, ctx, opt->backend);
    if (st == FN_OK)
        st = fn_optimizer_init(&opt->base, ops_for(cfg, opt->backend), ctx, params, n_params,
                               "fn_sgd_create");
    if (st == FN_OK && cfg->momentum != 0.0f)
        st = alloc_buffers(opt);
    if (st == FN_OK && cfg->momentum_bf16)
        st = alloc_bf16(opt);
    if (st == FN_OK && opt->backend->update_all)
        st = fn_multi_tensor_create(&opt->all, ctx, opt->base.params, n_params, opt->buffers,
                                    NULL, sizeof(fn_sgd_scalars));
    if (st == FN_OK)
        st = table_bf16(opt);
    if (st != FN_OK) {
        sgd_destroy(&opt->base);
        return st;
    }
    *out = opt;
    return FN_OK;
}

fn_optimizer *fn_sgd_optimizer(fn_sgd *opt) { return opt ? &opt->base : NULL; }

fn_status fn_sgd_step(fn_sgd *opt)
{
    if (!opt)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_step: optimiser is NULL");
    return fn_optimizer_step(&opt->base);
}

void fn_sgd_destroy(fn_sgd *opt)
{
    if (opt)
        sgd_destroy(&opt->base);
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
    opt->base.steps++;
    return FN_OK;
}

long long fn_sgd_steps(const fn_sgd *opt) { return opt->base.steps; }

void fn_sgd_set_steps(fn_sgd *opt, long long steps) { opt->base.steps = steps; }

fn_tensor *fn_sgd_momentum_buffer(fn_sgd *opt, int i)
{
    if (!opt || !opt->buffers || i < 0 || i >= opt->base.n_params)
        return NULL;
    return &opt->buffers[i];
}

const fn_sgd_config *fn_sgd_get_config(const fn_sgd *opt) { return &opt->cfg; }

void fn_sgd_set_lr(fn_sgd *opt, float lr)
{
    if (opt)
        sgd_set_lr(&opt->base, lr);
}
