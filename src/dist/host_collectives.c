/* host_collectives.c — the world's host collectives every backend uses (a
 * gather, a maximum, the NCCL id's broadcast), each a non-blocking MPI
 * collective polled (MPI_Testall, which also drives MPI's progress) against
 * the deadline of fn_comm_timeout_s: a rank that stopped answering gives an
 * error naming the wait, which the program turns into MPI_Abort, never a
 * hang. MPI's default error handler (MPI_ERRORS_ARE_FATAL) stays: a failing
 * MPI call ends every rank with MPI's own message. Without MPI each is an
 * error saying so, but the world's set-up collectives (a gather to rank 0,
 * a broadcast from it), which are then the identity. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/host_collectives.h"
#include "fusenet/world.h"

enum { DEFAULT_TIMEOUT_S = 600 };

double fn_comm_timeout_s(void)
{
    const char *env = getenv("FN_COMM_TIMEOUT_S");
    double v = env ? strtod(env, NULL) : 0;
    return v > 0 ? v : DEFAULT_TIMEOUT_S;
}

#ifdef FN_HAVE_MPI
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Polls n requests until done or the deadline; after the first thousand
 * polls (the usual wait of a step's sums) with 50 us pauses. */
fn_status fn_mpi_wait_requests(MPI_Request *requests, int n, const char *what)
{
    const double timeout = fn_comm_timeout_s(), deadline = now() + timeout;
    for (long polls = 0;; polls++) {
        int done = 0;
        MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
        if (done)
            return FN_OK;
        if (now() > deadline)
            return fn_fail(FN_ERR_IO,
                           "%s did not finish in %.0f s ($FN_COMM_TIMEOUT_S): another rank "
                           "stopped answering",
                           what, timeout);
        if (polls > 1000) {
            const struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
    }
}

fn_status fn_comm_broadcast_bytes(void *bytes, int n)
{
    MPI_Request r;
    MPI_Ibcast(bytes, n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
    return fn_mpi_wait_requests(&r, 1, "a broadcast from rank 0 (MPI_Ibcast)");
}

fn_status fn_world_gather_bytes(const void *mine, int n, void *all)
{
    if (!fn_world_mpi() || fn_world_size() == 1) {
        if (all && n > 0)
            memcpy(all, mine, (size_t)n);
        return FN_OK;
    }
    MPI_Request r;
    MPI_Igather(mine, n, MPI_BYTE, all, n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
    return fn_mpi_wait_requests(&r, 1, "the ranks' set-up gather to rank 0 (MPI_Igather)");
}

fn_status fn_world_broadcast_bytes(void *bytes, int n)
{
    return fn_world_mpi() && fn_world_size() > 1 ? fn_comm_broadcast_bytes(bytes, n) : FN_OK;
}

fn_status fn_comm_gather_doubles(const double *values, int n, double *all)
{
    MPI_Request r;
    MPI_Iallgather(values, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD, &r);
    return fn_mpi_wait_requests(&r, 1, "the step's sums over the ranks (MPI_Iallgather)");
}

fn_status fn_comm_gather_floats(const float *mine, int n, float *all, const int *counts,
                                const int *displs)
{
    MPI_Request r;
    MPI_Igatherv(mine, n, MPI_FLOAT, all, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD, &r);
    return fn_mpi_wait_requests(&r, 1, "the ranks' parts gathered to rank 0 (MPI_Igatherv)");
}

fn_status fn_comm_max_int(int *value)
{
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r);
    return fn_mpi_wait_requests(&r, 1, "the ranks' agreement (MPI_Iallreduce)");
}
#else
static fn_status no_mpi(void)
{
    return fn_fail(FN_ERR_INVALID, "a collective over the ranks, but %s", fn_world_build());
}

fn_status fn_comm_broadcast_bytes(void *bytes, int n)
{
    (void)bytes, (void)n;
    return no_mpi();
}

/* Without MPI the world is this process alone. */
fn_status fn_world_gather_bytes(const void *mine, int n, void *all)
{
    if (all && n > 0)
        memcpy(all, mine, (size_t)n);
    return FN_OK;
}

fn_status fn_world_broadcast_bytes(void *bytes, int n)
{
    (void)bytes, (void)n;
    return FN_OK;
}

fn_status fn_comm_gather_doubles(const double *values, int n, double *all)
{
    (void)values, (void)n, (void)all;
    return no_mpi();
}

fn_status fn_comm_gather_floats(const float *mine, int n, float *all, const int *counts,
                                const int *displs)
{
    (void)mine, (void)n, (void)all, (void)counts, (void)displs;
    return no_mpi();
}

fn_status fn_comm_max_int(int *value)
{
    (void)value;
    return no_mpi();
}
#endif
