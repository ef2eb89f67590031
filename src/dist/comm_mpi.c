/* comm_mpi.c — in a build with MPI (FN_HAVE_MPI), the MPI backend of the
 * communicator (dist/comm_impl.h): MPI_Iallreduce in place on host floats,
 * one request per tensor, each ticket's requests waited for within the
 * timeout (host_collectives.h); in bfloat16 (fn_comm_set_sum) through the
 * scratch buffers of comm_mpi_bf16.c, widened back when the ticket's
 * requests are done. */
#include <stdlib.h>

#include "dist/comm_impl.h"
#include "dist/comm_mpi_bf16.h"
#include "dist/host_collectives.h"

#ifdef FN_HAVE_MPI
/* Every request since the last settle; ticket k's are [first[k], first[k + 1]). */
typedef struct mpi_sums {
    MPI_Request *requests;
    int *first;
    int n_requests, cap_requests, cap_tickets;
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

static void mpi_release(fn_comm *c)
{
    mpi_sums *m = c->impl;
    if (!m)
        return;
    fn_mpi_bf16_destroy(m->bf16);
    free(m->requests);
    free(m->first);
    free(m);
}

static fn_status mpi_start(fn_comm *c, fn_tensor *const *t, int n, int ticket)
{
    mpi_sums *m = c->impl;
    FN_TRY(grow((void **)&m->requests, &m->cap_requests, m->n_requests + n, sizeof(MPI_Request)));
    FN_TRY(grow((void **)&m->first, &m->cap_tickets, ticket + 2, sizeof(int)));
    if (ticket == 0)
        m->first[0] = 0;
    if (c->sum == FN_COMM_SUM_BF16 && !m->bf16)
        FN_TRY(fn_mpi_bf16_create(&m->bf16));
    for (int i = 0; i < n; i++) {
        const size_t count = (size_t)t[i]->rows * (size_t)t[i]->cols;
        if (count > (size_t)0x7fffffff)
            return fn_fail(FN_ERR_INVALID, "a gradient of %zu floats is beyond MPI's int counts",
                           count);
        if (c->sum == FN_COMM_SUM_BF16)
            FN_TRY(fn_mpi_bf16_start(m->bf16, t[i], m->n_requests, &m->requests[m->n_requests]));
        else
            MPI_Iallreduce(MPI_IN_PLACE, t[i]->data, (int)count, MPI_FLOAT, MPI_SUM,
                           MPI_COMM_WORLD, &m->requests[m->n_requests]);
        m->n_requests++;
    }
    m->first[ticket + 1] = m->n_requests;
    return FN_OK;
}

static fn_status mpi_wait(fn_comm *c, int ticket)
{
    mpi_sums *m = c->impl;
    const int first = m->first[ticket], end = m->first[ticket + 1];
    FN_TRY(fn_mpi_wait_requests(m->requests + first, end - first,
                                "a layer's gradient sums (MPI_Iallreduce)"));
    fn_mpi_bf16_finish(m->bf16, first, end);
    return FN_OK;
}

/* A completed request is MPI_REQUEST_NULL, which MPI_Testall skips. */
static fn_status mpi_settle(fn_comm *c)
{
    mpi_sums *m = c->impl;
    fn_status st = fn_mpi_wait_requests(m->requests, m->n_requests, "the gradient sums (MPI_Iallreduce)");
    if (st == FN_OK)
        fn_mpi_bf16_finish(m->bf16, 0, m->n_requests);
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
