/* comm_mpi.c — in a build with MPI (FN_HAVE_MPI), the MPI backend of the
 * communicator (dist/comm_impl.h) on host floats, in place: MPI_Iallreduce
 * a tensor for a sum, MPI_Ireduce to each part's owner for a
 * reduce-scatter, MPI_Iallgatherv a tensor for a gather (its counts and
 * displacements kept until the request is done, as MPI requires); a sum
 * or a reduce-scatter in bfloat16 (fn_comm_set_sum) through the scratch
 * buffers of comm_mpi_bf16.c, widened back when the ticket's requests are
 * done; a gather is float32 whatever the sums' type.
 * Each ticket's requests are waited for within the timeout
 * (host_collectives.h). */
#include <stdlib.h>

#include "dist/comm_impl.h"
#include "dist/comm_mpi_bf16.h"
#include "dist/host_collectives.h"

#ifdef FN_HAVE_MPI
/* Every request since the last settle; ticket k's are [first[k], first[k + 1]). */
typedef struct mpi_sums {
    MPI_Request *requests;
    int **layouts; /* [n_requests]: a request's counts and displacements, or NULL */
    int *first;
    int n_requests, cap_requests, cap_layouts, cap_tickets;
    fn_mpi_bf16 *bf16; /* the sums in bfloat16 (comm_mpi_bf16.c); made on the first */
} mpi_sums;

static fn_status grow(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return FN_OK;
    int cap2 = *cap ? *cap : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *q = realloc(*p, size * (size_t)cap2);
    if (!q)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the gradient sums");
    *p = q;
    *cap = cap2;
    return FN_OK;
}

static fn_status mpi_create(fn_comm *c)
{
    c->impl = calloc(1, sizeof(mpi_sums));
    return c->impl ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory for the communicator");
}

static void free_layouts(mpi_sums *m)
{
    for (int i = 0; i < m->n_requests; i++) {
        free(m->layouts[i]);
        m->layouts[i] = NULL;
    }
}

static void mpi_release(fn_comm *c)
{
    mpi_sums *m = c->impl;
    if (!m)
        return;
    free_layouts(m);
    fn_mpi_bf16_destroy(m->bf16);
    free(m->layouts);
    free(m->requests);
    free(m->first);
    free(m);
}

static fn_status bf16_of(mpi_sums *m, fn_mpi_bf16 **out)
{
    if (!m->bf16)
        FN_TRY(fn_mpi_bf16_create(&m->bf16));
    *out = m->bf16;
    return FN_OK;
}

/* A reduce-scatter in place: one MPI_Ireduce to each non-empty part's
 * owner, who receives the sum in place (MPI_Ireduce_scatter would write
 * it at the start of another buffer). In bfloat16 the tensor is rounded
 * into the slot of its first request, whose parts are reduced there, and
 * this rank's part alone is widened back when they are done. */
static fn_status reduce_parts(fn_comm *c, fn_tensor *t, size_t count)
{
    mpi_sums *m = c->impl;
    float *whole = t->data;
    const int slot = m->n_requests;
    fn_mpi_bf16 *bf16 = NULL;
    if (c->sum == FN_COMM_SUM_BF16 && count > 0) {
        size_t mine = 0, n_mine = 0;
        fn_comm_part(c, count, c->rank, &mine, &n_mine);
        FN_TRY(bf16_of(m, &bf16));
        FN_TRY(fn_mpi_bf16_round(bf16, t, slot, mine, n_mine));
    }
    for (int r = 0; r < c->size; r++) {
        size_t first = 0, n = 0;
        fn_comm_part(c, count, r, &first, &n);
        if (n == 0)
            continue; /* every rank skips it: the parts are the same everywhere */
        m->layouts[m->n_requests] = NULL;
        MPI_Request *request = &m->requests[m->n_requests++];
        if (bf16)
            fn_mpi_bf16_reduce_start(bf16, slot, first, n, r, request);
        else
            MPI_Ireduce(r == c->rank ? MPI_IN_PLACE : whole + first, whole + first, (int)n,
                        MPI_FLOAT, MPI_SUM, r, MPI_COMM_WORLD, request);
    }
    return FN_OK;
}

/* Tensor `whole`'s requests: at most size of them (reduce_parts). */
static fn_status start_one(fn_comm *c, fn_comm_op op, fn_tensor *whole)
{
    mpi_sums *m = c->impl;
    const size_t count = fn_tensor_count(whole);
    if (count > (size_t)0x7fffffff)
        return fn_fail(FN_ERR_INVALID, "a tensor of %zu floats is beyond MPI's int counts",
                       count);
    if (op == FN_COMM_OP_REDUCE_SCATTER)
        return reduce_parts(c, whole, count);
    MPI_Request *r = &m->requests[m->n_requests];
    int **layout = &m->layouts[m->n_requests];
    *layout = NULL;
    if (op == FN_COMM_OP_SUM && c->sum == FN_COMM_SUM_BF16) {
        fn_mpi_bf16 *bf16 = NULL;
        FN_TRY(bf16_of(m, &bf16));
        FN_TRY(fn_mpi_bf16_start(bf16, whole, m->n_requests, r));
    } else if (op == FN_COMM_OP_SUM) {
        MPI_Iallreduce(MPI_IN_PLACE, whole->data, (int)count, MPI_FLOAT, MPI_SUM,
                       MPI_COMM_WORLD, r);
    } else {
        FN_TRY(fn_comm_part_layout(c, count, layout));
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, whole->data, *layout,
                        *layout + c->size, MPI_FLOAT, MPI_COMM_WORLD, r);
    }
    m->n_requests++;
    return FN_OK;
}

static fn_status mpi_start(fn_comm *c, fn_comm_op op, fn_tensor *const *whole, int n, int ticket)
{
    mpi_sums *m = c->impl;
    const int most = m->n_requests + n * (op == FN_COMM_OP_REDUCE_SCATTER ? c->size : 1);
    FN_TRY(grow((void **)&m->requests, &m->cap_requests, most, sizeof(MPI_Request)));
    FN_TRY(grow((void **)&m->layouts, &m->cap_layouts, most, sizeof(int *)));
    FN_TRY(grow((void **)&m->first, &m->cap_tickets, ticket + 2, sizeof(int)));
    if (ticket == 0)
        m->first[0] = 0;
    for (int i = 0; i < n; i++)
        FN_TRY(start_one(c, op, whole[i]));
    m->first[ticket + 1] = m->n_requests;
    return FN_OK;
}

static fn_status mpi_wait(fn_comm *c, int ticket)
{
    mpi_sums *m = c->impl;
    const int first = m->first[ticket], end = m->first[ticket + 1];
    FN_TRY(fn_mpi_wait_requests(m->requests + first, end - first,
                                "a layer's gradient sums or its parameters' gather"));
    fn_mpi_bf16_finish(m->bf16, first, end);
    return FN_OK;
}

/* A completed request is MPI_REQUEST_NULL, which MPI_Testall skips. */
static fn_status mpi_settle(fn_comm *c)
{
    mpi_sums *m = c->impl;
    fn_status st = fn_mpi_wait_requests(m->requests, m->n_requests,
                                        "the gradient sums and the parameters' gathers");
    if (st == FN_OK) { /* an error ends the job: requests in flight keep their layouts */
        fn_mpi_bf16_finish(m->bf16, 0, m->n_requests);
        free_layouts(m);
    }
    m->n_requests = 0;
    return st;
}

const fn_comm_backend fn_comm_mpi_backend = {
    .name = "mpi",
    .start = mpi_start,
    .wait = mpi_wait,
    .settle = mpi_settle,
    .create = mpi_create,
    .release = mpi_release,
};
#endif
