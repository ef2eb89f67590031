/* shard.c — the optimiser sharded over the ranks (shard.h): the parts this
 * rank owns as parameters of their own, the inner optimiser over them, the
 * reduce-scatter of the gradients into the parts and the gather of the
 * values out of them, and the whole state a checkpoint reads and writes.
 *
 * Part i views whole parameter i's value and gradient at this rank's range
 * ([1, n] tensors into the same memory: the reduce-scatter leaves the
 * part's sum there, in place, and the inner update writes the net's values
 * in place), so sharding allocates no tensor but the state's parts. A part
 * may be empty (a parameter of fewer values than ranks):
 * it takes part in the collectives with no values and is not the inner
 * optimiser's (nor the clipper's, fn_shard_clip_create); inner_of maps the
 * whole list onto the inner one. The inner optimiser's step count is set
 * to this one's before every call, so the count a checkpoint restores
 * reaches it. */
#include <stdlib.h>
#include <string.h>

#include "optim/optimizer_paths.h"
#include "optim/shard.h"

typedef struct shard_opt {
    fn_optimizer base;    /* over the whole parameters (the net's) */
    fn_optimizer_ops ops; /* the inner's name and state kinds; this file's calls */
    fn_optimizer *inner;  /* over the non-empty parts */
    fn_comm *comm;        /* borrowed */
    fn_param *parts;      /* [n_params]: this rank's part of each parameter */
    int *inner_of;        /* [n_params + 1]: the non-empty parts before part i */
    int *sum_ticket;      /* [n_params]: the ticket of the part's gradient sum, -1: none */
    fn_tensor **grads, **values; /* [n_params]: the collectives' lists */
    fn_tensor *whole;     /* [n_state * n_params] host tensors between whole_begin and _end */
    int whole_open;
} shard_opt;

static shard_opt *shard_of(fn_optimizer *opt) { return (shard_opt *)opt; }

/* The inner optimiser's parameters for whole ones [first, first + count). */
static void inner_range(const shard_opt *s, int first, int count, int *ifirst, int *icount)
{
    *ifirst = s->inner_of[first];
    *icount = s->inner_of[first + count] - *ifirst;
}

static fn_optimizer *synced_inner(shard_opt *s)
{
    s->inner->steps = s->base.steps;
    return s->inner;
}

/* Part i's views of this rank's range of value i and of its gradient, aimed
 * again before every sum (a layer may allocate its gradients anew). */
static void aim_part(shard_opt *s, int i)
{
    const fn_param *p = s->base.params[i];
    size_t first = 0, n = 0;
    fn_comm_part(s->comm, fn_tensor_count(&p->value), fn_comm_rank(s->comm), &first, &n);
    fn_param *q = &s->parts[i];
    q->value = fn_tensor_view(n ? p->value.data + first : NULL, 1, (int)n, p->value.device);
    q->grad = fn_tensor_view(n ? p->grad.data + first : NULL, 1, (int)n, p->grad.device);
}

/* --- a step ------------------------------------------------------------------------ */

static fn_status shard_sum_start(fn_optimizer *opt, int first, int count)
{
    shard_opt *s = shard_of(opt);
    for (int i = first; i < first + count; i++)
        aim_part(s, i);
    int ticket = 0;
    FN_TRY(fn_comm_reduce_scatter_start(s->comm, s->grads + first, count, &ticket));
    for (int i = first; i < first + count; i++)
        s->sum_ticket[i] = ticket;
    return FN_OK;
}

/* Waits for the sums of parameters [first, first + count), starting those
 * not started yet. */
static fn_status wait_sums(shard_opt *s, int first, int count)
{
    for (int i = first; i < first + count; i++)
        if (s->sum_ticket[i] < 0)
            FN_TRY(shard_sum_start(&s->base, i, 1));
    for (int i = first; i < first + count; i++)
        if (i == first || s->sum_ticket[i] != s->sum_ticket[i - 1])
            FN_TRY(fn_comm_sum_wait(s->comm, s->sum_ticket[i]));
    for (int i = first; i < first + count; i++)
        s->sum_ticket[i] = -1;
    return FN_OK;
}

static fn_status shard_step_params(fn_optimizer *opt, int first, int count)
{
    shard_opt *s = shard_of(opt);
    FN_TRY(wait_sums(s, first, count));
    int ifirst = 0, icount = 0;
    inner_range(s, first, count, &ifirst, &icount);
    if (icount > 0)
        FN_TRY(fn_optimizer_step_params(synced_inner(s), ifirst, icount));
    int ticket = 0;
    return fn_comm_gather_start(s->comm, s->values + first, count, &ticket);
}

/* The whole step: the sums not started yet, every part's update, every
 * value's gather (fn_comm_settle waits for them). */
static fn_status shard_step(fn_optimizer *opt)
{
    return shard_step_params(opt, 0, opt->n_params);
}

static void shard_set_lr(fn_optimizer *opt, float lr)
{
    fn_optimizer_set_lr(shard_of(opt)->inner, lr);
}

/* --- the whole state of a checkpoint ---------------------------------------------------- */

static fn_tensor *shard_state(fn_optimizer *opt, int kind, int param)
{
    shard_opt *s = shard_of(opt);
    fn_tensor *t = s->whole_open ? &s->whole[(size_t)kind * opt->n_params + param] : NULL;
    return t && t->data ? t : NULL;
}

/* Whether the inner optimiser keeps state of this kind (for every
 * parameter or none: the library's optimisers decide by their options). */
static int keeps(shard_opt *s, int kind) { return fn_optimizer_state(s->inner, kind, 0) != NULL; }

static void shard_whole_end(fn_optimizer *opt)
{
    shard_opt *s = shard_of(opt);
    const size_t n = (size_t)fn_optimizer_n_state(opt) * (size_t)opt->n_params;
    for (size_t i = 0; s->whole && i < n; i++)
        fn_tensor_free(&s->whole[i]);
    s->whole_open = 0;
}

/* Part i's state of `kind` into rank 0's whole tensor (which `whole` is
 * on rank 0, NULL elsewhere). */
static fn_status gather_part(shard_opt *s, int kind, int i, fn_tensor *whole)
{
    const size_t count = fn_tensor_count(&s->base.params[i]->value);
    const size_t n = fn_tensor_count(&s->parts[i].value);
    float *host = malloc(sizeof *host * (n ? n : 1));
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the optimiser state's gather");
    fn_status st = FN_OK;
    if (n > 0)
        st = fn_tensor_download(fn_optimizer_state(s->inner, kind, s->inner_of[i]), host, n);
    if (st == FN_OK)
        st = fn_comm_gather_parts(s->comm, host, whole ? whole->data : NULL, count);
    free(host);
    return st;
}

static fn_status open_whole(shard_opt *s, fn_optimizer_whole mode)
{
    const int root = fn_comm_rank(s->comm) == 0;
    for (int k = 0; k < fn_optimizer_n_state(&s->base); k++)
        for (int i = 0; keeps(s, k) && i < s->base.n_params; i++) {
            fn_tensor *whole = &s->whole[(size_t)k * s->base.n_params + i];
            const fn_tensor *v = &s->base.params[i]->value;
            if (mode == FN_WHOLE_READ || root)
                FN_TRY(fn_tensor_alloc(whole, v->rows, v->cols, FN_CPU));
            if (mode == FN_WHOLE_WRITE)
                FN_TRY(gather_part(s, k, i, root ? whole : NULL));
        }
    return FN_OK;
}

static fn_status shard_whole_begin(fn_optimizer *opt, fn_optimizer_whole mode)
{
    shard_opt *s = shard_of(opt);
    shard_whole_end(opt);
    if (mode == FN_WHOLE_WRITE)
        FN_TRY(fn_optimizer_state_export(s->inner)); /* float32 */
    s->whole_open = 1;
    const fn_status st = open_whole(s, mode);
    if (st != FN_OK)
        shard_whole_end(opt);
    return st;
}

/* Exported by whole_begin: a writer that did not call it gets nothing. */
static fn_status shard_state_export(fn_optimizer *opt)
{
    if (shard_of(opt)->whole_open)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID, "the sharded %s's state is whole only between "
                   "fn_optimizer_whole_begin and _end, which every rank calls", opt->ops->name);
}

/* Each kind's part of the whole tensors loaded into the inner's state. */
static fn_status shard_state_import(fn_optimizer *opt)
{
    shard_opt *s = shard_of(opt);
    FN_TRY(shard_state_export(opt));
    for (int k = 0; k < fn_optimizer_n_state(opt); k++)
        for (int i = 0; keeps(s, k) && i < opt->n_params; i++) {
            size_t first = 0, n = 0;
            fn_comm_part(s->comm, fn_tensor_count(&opt->params[i]->value),
                         fn_comm_rank(s->comm), &first, &n);
            if (n > 0)
                FN_TRY(fn_tensor_upload(fn_optimizer_state(s->inner, k, s->inner_of[i]),
                                        shard_state(opt, k, i)->data + first, n));
        }
    return fn_optimizer_state_import(s->inner);
}

/* The rank's part of the state. */
static size_t shard_kept_bytes(const fn_optimizer *opt)
{
    return fn_optimizer_state_bytes(((const shard_opt *)opt)->inner);
}

/* --- making and destroying ---------------------------------------------------------------- */

static void shard_destroy(fn_optimizer *opt)
{
    shard_opt *s = shard_of(opt);
    shard_whole_end(opt);
    fn_optimizer_destroy(s->inner);
    free(s->parts);
    free(s->inner_of);
    free(s->sum_ticket);
    free(s->grads);
    free(s->values);
    free(s->whole);
    free(opt->params);
    free(s);
}

static const fn_optimizer_paths shard_paths = {
    .step_params = shard_step_params,
    .state_export = shard_state_export,
    .state_import = shard_state_import,
    .kept_state_bytes = shard_kept_bytes,
    .sum_start = shard_sum_start,
    .whole_begin = shard_whole_begin,
    .whole_end = shard_whole_end,
};

static void make_part(shard_opt *s, int i)
{
    s->parts[i] = (fn_param){.name = s->base.params[i]->name};
    aim_part(s, i);
    const size_t n = fn_tensor_count(&s->parts[i].value);
    s->grads[i] = &s->base.params[i]->grad;
    s->values[i] = &s->base.params[i]->value;
    s->sum_ticket[i] = -1;
    s->inner_of[i + 1] = s->inner_of[i] + (n > 0);
}

static fn_status alloc_lists(shard_opt *s, fn_param *const *params, int n)
{
    s->base.params = malloc(sizeof *s->base.params * (size_t)n);
    s->parts = calloc((size_t)n, sizeof *s->parts);
    s->inner_of = calloc((size_t)n + 1, sizeof *s->inner_of);
    s->sum_ticket = malloc(sizeof *s->sum_ticket * (size_t)n);
    s->grads = malloc(sizeof *s->grads * (size_t)n);
    s->values = malloc(sizeof *s->values * (size_t)n);
    if (!s->base.params || !s->parts || !s->inner_of || !s->sum_ticket || !s->grads ||
        !s->values)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the sharded optimiser");
    memcpy(s->base.params, params, sizeof *params * (size_t)n);
    s->base.n_params = n;
    return FN_OK;
}

/* Every rank owns a part: the largest parameter has a value a rank. */
static fn_status check_parts(const fn_comm *comm, fn_param *const *params, int n)
{
    size_t largest = 0;
    for (int i = 0; i < n; i++)
        if (params[i] && fn_tensor_count(&params[i]->value) > largest)
            largest = fn_tensor_count(&params[i]->value);
    if (largest >= (size_t)fn_comm_size(comm))
        return FN_OK;
    return fn_fail(FN_ERR_INVALID,
                   "[run] shard = optimizer over %d ranks: the network's largest parameter has "
                   "%zu values, fewer than the ranks, so a rank would own no part; run fewer ranks "
                   "or set [run] shard = none",
                   fn_comm_size(comm), largest);
}

/* The inner optimiser over the non-empty parts; this one's table after it. */
static fn_status make_inner(shard_opt *s, const fn_optimizer_kind *kind, fn_context *ctx,
                            float lr, const void *options)
{
    const int n = s->base.n_params;
    fn_param **owned = malloc(sizeof *owned * (size_t)n);
    if (!owned)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the sharded optimiser");
    int m = 0;
    for (int i = 0; i < n; i++)
        if (s->parts[i].value.cols > 0)
            owned[m++] = &s->parts[i];
    const fn_status st = kind->create(&s->inner, ctx, owned, m, lr, options);
    free(owned);
    FN_TRY(st);
    if (!fn_optimizer_can_step_params(s->inner))
        return fn_fail(FN_ERR_INVALID, "[run] shard = optimizer: optimiser %s cannot update "
                       "in parts, which sharding needs", kind->name);
    const fn_optimizer_ops *in = s->inner->ops;
    s->ops = (fn_optimizer_ops){.name = in->name, .step = shard_step, .set_lr = shard_set_lr,
                                .n_state = in->n_state, .state_names = in->state_names,
                                .state_nonnegative = in->state_nonnegative,
                                .state = shard_state, .destroy = shard_destroy,
                                .paths = &shard_paths};
    s->whole = calloc((size_t)(in->n_state > 0 ? in->n_state : 1) * (size_t)n, sizeof *s->whole);
    return s->whole ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory for the sharded optimiser");
}

static fn_status build(shard_opt *s, const fn_optimizer_kind *kind, fn_context *ctx,
                       fn_param *const *params, int n, float lr, const void *options)
{
    FN_TRY(alloc_lists(s, params, n));
    for (int i = 0; i < n; i++)
        make_part(s, i);
    return make_inner(s, kind, ctx, lr, options);
}

fn_status fn_shard_optimizer_create(fn_optimizer **out, fn_comm *comm,
                                    const fn_optimizer_kind *kind, fn_context *ctx,
                                    fn_param *const *params, int n_params, float lr,
                                    const void *options)
{
    if (!out || !comm || !kind || !ctx || !params || n_params < 1)
        return fn_fail(FN_ERR_INVALID, "fn_shard_optimizer_create: bad arguments");
    *out = NULL;
    FN_TRY(check_parts(comm, params, n_params));
    shard_opt *s = calloc(1, sizeof *s);
    if (!s)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the sharded optimiser");
    s->comm = comm;
    s->base.ctx = ctx;
    s->base.ops = &s->ops;
    s->ops.destroy = shard_destroy; /* what a failed build frees with */
    const fn_status st = build(s, kind, ctx, params, n_params, lr, options);
    if (st != FN_OK) {
        shard_destroy(&s->base);
        return st;
    }
    *out = &s->base;
    return FN_OK;
}

/* The inner optimiser's parameters are the non-empty parts (every rank has
 * one: check_parts), which the clipper reads through their views. */
fn_status fn_shard_clip_create(fn_clip **clip, fn_optimizer *opt, float max_norm)
{
    if (!clip || !opt || !opt->ops || opt->ops->destroy != shard_destroy)
        return fn_fail(FN_ERR_INVALID, "fn_shard_clip_create: not a sharded optimiser");
    const shard_opt *s = shard_of(opt);
    FN_TRY(fn_clip_create(clip, opt->ctx, s->inner->params, s->inner->n_params, max_norm));
    return fn_clip_set_comm(*clip, s->comm);
}
