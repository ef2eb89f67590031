/* comm.c — the communicator's entry points (fusenet/comm.h), the choice of
 * backend, the host collectives over the world's (host_collectives.h), and the
 * single-process backend, which sums nothing (a plain run's). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "dist/comm_impl.h"
#include "core/device_impl.h"

/* --- the single-process backend ---------------------------------------------- */

static fn_status single_start(fn_comm *c, fn_comm_op op, fn_tensor *const *whole, int n,
                              int ticket)
{
    (void)c, (void)op, (void)whole, (void)n, (void)ticket;
    return FN_OK;
}

static fn_status single_wait(fn_comm *c, int ticket)
{
    (void)c, (void)ticket;
    return FN_OK;
}

static fn_status single_settle(fn_comm *c)
{
    (void)c;
    return FN_OK;
}

const fn_comm_backend fn_comm_single_backend = {
    .name = "single",
    .start = single_start,
    .wait = single_wait,
    .settle = single_settle,
};

/* --- creating ------------------------------------------------------------------- */

/* The backend of ctx's device in an MPI world (or alone, self_device), or
 * why there is none. */
static fn_status pick_backend(const fn_context *ctx, int self_device,
                              const fn_comm_backend **out)
{
    *out = &fn_comm_single_backend;
    if (!fn_world_mpi() && !(self_device && ctx->device == FN_CUDA))
        return FN_OK;
    if (ctx->device == FN_CPU) {
#ifdef FN_HAVE_MPI
        if (!self_device)
            *out = &fn_comm_mpi_backend;
#endif
        return FN_OK;
    }
#ifdef FN_HAVE_NCCL
    *out = &fn_comm_nccl_backend;
    return FN_OK;
#else
    return fn_fail(FN_ERR_NODEV,
                   "this build has no NCCL (%s), which training on GPUs under mpirun or srun "
                   "needs to sum gradients: rebuild where CMake finds nccl.h and libnccl (the "
                   "CUDA toolkit's), or train on the CPU ([run] device = cpu)",
                   fn_world_build());
#endif
}

fn_status fn_comm_create(fn_comm **out, fn_context *ctx, fn_comm_scope scope)
{
    if (!out || !ctx)
        return fn_fail(FN_ERR_INVALID, "fn_comm_create: communicator or context is NULL");
    *out = NULL;
    if (scope != FN_COMM_WORLD && scope != FN_COMM_SELF && scope != FN_COMM_SELF_DEVICE)
        return fn_fail(FN_ERR_INVALID, "fn_comm_create: unknown scope %d", (int)scope);
    const fn_comm_backend *backend = &fn_comm_single_backend;
    if (scope != FN_COMM_SELF)
        FN_TRY(pick_backend(ctx, scope == FN_COMM_SELF_DEVICE, &backend));
    fn_comm *c = calloc(1, sizeof *c);
    if (!c)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the communicator");
    c->backend = backend;
    c->ctx = ctx;
    const int world = scope == FN_COMM_WORLD && backend != &fn_comm_single_backend;
    c->rank = world ? fn_world_rank() : 0;
    c->size = world ? fn_world_size() : 1;
    c->mpi = world;
    c->timeout_s = fn_comm_timeout_s();
    fn_status st = backend->create ? backend->create(c) : FN_OK;
    if (st != FN_OK) {
        fn_comm_destroy(c);
        return st;
    }
    *out = c;
    return FN_OK;
}

void fn_comm_destroy(fn_comm *c)
{
    if (!c)
        return;
    if (c->backend->release)
        c->backend->release(c);
    free(c);
}

int fn_comm_rank(const fn_comm *c) { return c ? c->rank : 0; }
int fn_comm_size(const fn_comm *c) { return c ? c->size : 1; }
int fn_comm_is_single(const fn_comm *c) { return !c || c->backend == &fn_comm_single_backend; }
const char *fn_comm_name(const fn_comm *c) { return c ? c->backend->name : "single"; }

/* --- gradient sums ------------------------------------------------------------------ */

static const char *const sum_names[] = {
    [FN_COMM_SUM_FLOAT32] = "float32",
    [FN_COMM_SUM_BF16] = "bf16",
};
_Static_assert(sizeof sum_names / sizeof *sum_names == FN_COMM_SUMS, "every sum type has its name");

const char *fn_comm_sum_name(fn_comm_sum sum)
{
    return (unsigned)sum < FN_COMM_SUMS ? sum_names[sum] : "unknown";
}

/* Between settles only: a ticket's sums are one type from start to wait. */
fn_status fn_comm_set_sum(fn_comm *c, fn_comm_sum sum)
{
    if (!c)
        return fn_fail(FN_ERR_INVALID, "fn_comm_set_sum: communicator is NULL");
    if ((unsigned)sum >= FN_COMM_SUMS)
        return fn_fail(FN_ERR_INVALID, "fn_comm_set_sum: unknown sum type %d", (int)sum);
    if (c->tickets)
        return fn_fail(FN_ERR_INVALID,
                       "fn_comm_set_sum: %d sum%s started and not settled: call fn_comm_settle "
                       "first",
                       c->tickets, c->tickets == 1 ? "" : "s");
    c->sum = sum;
    return FN_OK;
}

fn_comm_sum fn_comm_sum_of(const fn_comm *c) { return c ? c->sum : FN_COMM_SUM_FLOAT32; }

void fn_comm_part(const fn_comm *c, size_t count, int rank, size_t *first, size_t *n)
{
    const size_t size = (size_t)fn_comm_size(c), r = (size_t)rank;
    *first = count * r / size;
    *n = count * (r + 1) / size - *first;
}

fn_status fn_comm_part_layout(const fn_comm *c, size_t count, int **out)
{
    int *layout = malloc(sizeof *layout * 2 * (size_t)c->size);
    if (!layout)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the sharded collectives");
    for (int r = 0; r < c->size; r++) {
        size_t first = 0, n = 0;
        fn_comm_part(c, count, r, &first, &n);
        layout[r] = (int)n;
        layout[c->size + r] = (int)first;
    }
    *out = layout;
    return FN_OK;
}

/* Every tensor on the communicator's device. */
static fn_status check_tensors(const fn_comm *c, fn_tensor *const *whole, int n, const char *who)
{
    if (n < 0 || (n > 0 && !whole))
        return fn_fail(FN_ERR_INVALID, "%s: bad arguments", who);
    for (int i = 0; i < n; i++)
        if (!whole[i] || whole[i]->device != c->ctx->device)
            return fn_fail(FN_ERR_INVALID, "%s: tensor %d is not on the communicator's device",
                           who, i);
    return FN_OK;
}

static fn_status start(fn_comm *c, fn_comm_op op, fn_tensor *const *whole, int n, int *ticket,
                       const char *who)
{
    if (!c || !ticket)
        return fn_fail(FN_ERR_INVALID, "%s: communicator or ticket is NULL", who);
    FN_TRY(check_tensors(c, whole, n, who));
    *ticket = c->tickets;
    FN_TRY(c->backend->start(c, op, whole, n, *ticket));
    c->tickets++;
    return FN_OK;
}

fn_status fn_comm_sum_start(fn_comm *c, fn_tensor *const *tensors, int n, int *ticket)
{
    return start(c, FN_COMM_OP_SUM, tensors, n, ticket, "fn_comm_sum_start");
}

fn_status fn_comm_reduce_scatter_start(fn_comm *c, fn_tensor *const *whole, int n, int *ticket)
{
    return start(c, FN_COMM_OP_REDUCE_SCATTER, whole, n, ticket, "fn_comm_reduce_scatter_start");
}

fn_status fn_comm_gather_start(fn_comm *c, fn_tensor *const *whole, int n, int *ticket)
{
    return start(c, FN_COMM_OP_GATHER, whole, n, ticket, "fn_comm_gather_start");
}

fn_status fn_comm_sum_wait(fn_comm *c, int ticket)
{
    if (!c || ticket < 0 || ticket >= c->tickets)
        return fn_fail(FN_ERR_INVALID, "fn_comm_sum_wait: no ticket %d started", ticket);
    return c->backend->wait(c, ticket);
}

fn_status fn_comm_settle(fn_comm *c)
{
    if (!c)
        return fn_fail(FN_ERR_INVALID, "fn_comm_settle: communicator is NULL");
    fn_status st = c->tickets ? c->backend->settle(c) : FN_OK;
    c->tickets = 0;
    return st;
}

/* --- host collectives ---------------------------------------------------------------- */

/* Gathered and added in rank order on every rank, so every rank holds the
 * same bits (MPI_Allreduce promises no order). */
fn_status fn_comm_sum_doubles(fn_comm *c, double *values, int n)
{
    if (!c || n < 0 || (n > 0 && !values))
        return fn_fail(FN_ERR_INVALID, "fn_comm_sum_doubles: bad arguments");
    if (!c->mpi || c->size == 1 || n == 0)
        return FN_OK;
    double *all = malloc(sizeof *all * (size_t)n * (size_t)c->size);
    if (!all)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a sum over the ranks");
    fn_status st = fn_comm_gather_doubles(values, n, all);
    for (int i = 0; st == FN_OK && i < n; i++) {
        double s = 0;
        for (int r = 0; r < c->size; r++)
            s += all[(size_t)r * (size_t)n + (size_t)i];
        values[i] = s;
    }
    free(all);
    return st;
}

fn_status fn_comm_any(fn_comm *c, int *flag)
{
    if (!c || !flag)
        return fn_fail(FN_ERR_INVALID, "fn_comm_any: bad arguments");
    *flag = *flag != 0;
    return c->mpi && c->size > 1 ? fn_comm_max_int(flag) : FN_OK;
}

/* The value's two 32-bit halves, gathered exactly as doubles. */
fn_status fn_comm_same(fn_comm *c, uint64_t value, int *same)
{
    if (!c || !same)
        return fn_fail(FN_ERR_INVALID, "fn_comm_same: bad arguments");
    *same = 1;
    if (!c->mpi || c->size == 1)
        return FN_OK;
    const double mine[2] = {(double)(value >> 32), (double)(value & 0xffffffffu)};
    double *all = malloc(sizeof *all * 2 * (size_t)c->size);
    if (!all)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a comparison over the ranks");
    fn_status st = fn_comm_gather_doubles(mine, 2, all);
    for (int r = 0; st == FN_OK && r < c->size; r++)
        *same = *same && all[2 * r] == mine[0] && all[2 * r + 1] == mine[1];
    free(all);
    return st;
}

fn_status fn_comm_gather_parts(fn_comm *c, const float *part, float *whole, size_t count)
{
    if (!c || (count > 0 && !part))
        return fn_fail(FN_ERR_INVALID, "fn_comm_gather_parts: bad arguments");
    if (!c->mpi || c->size == 1) {
        if (whole && count > 0)
            memcpy(whole, part, sizeof *whole * count);
        return FN_OK;
    }
    if (count > (size_t)0x7fffffff)
        return fn_fail(FN_ERR_INVALID, "a tensor of %zu floats is beyond MPI's int counts", count);
    int *layout = NULL;
    FN_TRY(fn_comm_part_layout(c, count, &layout));
    fn_status st = fn_comm_gather_floats(part, layout[c->rank], whole, layout, layout + c->size);
    free(layout);
    return st;
}

/* --- the loss gradient's share ---------------------------------------------------------- */

fn_status fn_comm_scale(fn_context *ctx, fn_tensor *t, float factor)
{
    if (!ctx || !t)
        return fn_fail(FN_ERR_INVALID, "fn_comm_scale: context or tensor is NULL");
    if (t->device == FN_CUDA)
        return fn_comm_scale_cuda(ctx, t, factor);
    const size_t n = (size_t)t->rows * (size_t)t->cols;
    for (size_t i = 0; i < n; i++)
        t->data[i] *= factor;
    return FN_OK;
}
