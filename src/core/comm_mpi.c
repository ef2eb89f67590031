/* comm_mpi.c — the process world (fusenet/comm.h: fn_world_*) and, in a
 * build with MPI (FN_HAVE_MPI), the MPI backend of the communicator:
 * MPI_Iallreduce in place on host floats, one request per tensor, each
 * ticket's requests waited for by MPI_Waitall; and the host collectives
 * every backend uses (a gather, a maximum, the NCCL id's broadcast), and
 * the world's set-up collectives (a gather to rank 0, a broadcast from
 * it). Every
 * wait for other ranks is a poll (MPI_Testall, which also drives MPI's
 * progress) against the deadline of fn_comm_timeout_s: a rank that stopped
 * answering gives an error naming the wait, which the program turns into
 * MPI_Abort, never a hang. MPI's default error handler
 * (MPI_ERRORS_ARE_FATAL) stays: a failing MPI call ends every rank with
 * MPI's own message. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm_impl.h"
#include "core/context.h"

#ifdef FN_HAVE_MPI
#include <mpi.h>
#endif

static struct {
    int initialised; /* fn_world_init ran */
    int mpi;         /* and started MPI */
    int rank, size, local_rank;
} world = {.size = 1};

const char *fn_world_build(void)
{
#if defined(FN_HAVE_MPI) && defined(FN_HAVE_NCCL)
    return "built with MPI and NCCL";
#elif defined(FN_HAVE_MPI)
    return "built with MPI, without NCCL";
#elif defined(FN_HAVE_NCCL)
    return "built with NCCL, without MPI";
#else
    return "built without MPI and NCCL";
#endif
}

/* The processes a launcher says it started, from its environment; 0 when
 * no launcher did. */
static long launched_size(const char **var)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const char *v = getenv(sizes[i]);
        if (v && atol(v) > 0) {
            *var = sizes[i];
            return atol(v);
        }
    }
    /* A Slurm step of one task (a batch script's own step) is one process:
     * no MPI, as a plain run. */
    if (getenv("SLURM_PROCID") && getenv("SLURM_STEP_NUM_TASKS") &&
        atol(getenv("SLURM_STEP_NUM_TASKS")) > 1) {
        *var = "SLURM_STEP_NUM_TASKS";
        return atol(getenv("SLURM_STEP_NUM_TASKS"));
    }
    *var = "PMIX_RANK";
    return getenv("PMIX_RANK") ? 1 : 0;
}

#ifdef FN_HAVE_MPI
static void start_mpi(int *argc, char ***argv)
{
    int provided = 0;
    /* Only the thread that called fn_world_init calls MPI (the loader's
     * threads never do). */
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &world.local_rank);
    MPI_Comm_free(&node);
    world.mpi = 1;
}
#endif

fn_status fn_world_init(int *argc, char ***argv)
{
    if (world.initialised)
        return FN_OK;
    world.initialised = 1;
    const char *var = NULL;
    const long launched = launched_size(&var);
    if (!launched)
        return FN_OK;
#ifdef FN_HAVE_MPI
    start_mpi(argc, argv);
    return FN_OK;
#else
    (void)argc, (void)argv;
    if (launched == 1)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID,
                   "started as one of %ld processes (%s), but this build has no MPI (%s): "
                   "install Open MPI's development files (Debian: libopenmpi-dev openmpi-bin) "
                   "and rebuild, or run one process",
                   launched, var, fn_world_build());
#endif
}

void fn_world_finalize(void)
{
#ifdef FN_HAVE_MPI
    if (world.mpi) {
        MPI_Finalize();
        world.mpi = 0;
    }
#endif
}

void fn_world_abort(int status)
{
#ifdef FN_HAVE_MPI
    if (world.mpi && world.size > 1)
        MPI_Abort(MPI_COMM_WORLD, status);
#else
    (void)status;
#endif
}

int fn_world_rank(void) { return world.rank; }
int fn_world_size(void) { return world.size; }
int fn_world_local_rank(void) { return world.local_rank; }
int fn_world_mpi(void) { return world.mpi; }

/* --- host collectives ---------------------------------------------------------- */

#ifdef FN_HAVE_MPI
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Polls n requests until done or the deadline; after the first thousand
 * polls (the usual wait of a step's sums) with 50 us pauses. */
static fn_status wait_requests(MPI_Request *requests, int n, const char *what)
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
    return wait_requests(&r, 1, "a broadcast from rank 0 (MPI_Ibcast)");
}

fn_status fn_world_gather_bytes(const void *mine, int n, void *all)
{
    if (!world.mpi || world.size == 1) {
        if (all && n > 0)
            memcpy(all, mine, (size_t)n);
        return FN_OK;
    }
    MPI_Request r;
    MPI_Igather(mine, n, MPI_BYTE, all, n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
    return wait_requests(&r, 1, "the ranks' set-up gather to rank 0 (MPI_Igather)");
}

fn_status fn_world_broadcast_bytes(void *bytes, int n)
{
    return world.mpi && world.size > 1 ? fn_comm_broadcast_bytes(bytes, n) : FN_OK;
}

fn_status fn_comm_gather_doubles(const double *values, int n, double *all)
{
    MPI_Request r;
    MPI_Iallgather(values, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD, &r);
    return wait_requests(&r, 1, "the step's sums over the ranks (MPI_Iallgather)");
}

fn_status fn_comm_max_int(int *value)
{
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r);
    return wait_requests(&r, 1, "the ranks' agreement (MPI_Iallreduce)");
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

fn_status fn_comm_max_int(int *value)
{
    (void)value;
    return no_mpi();
}
#endif

/* --- the MPI backend: sums of host floats ------------------------------------------- */

#ifdef FN_HAVE_MPI
/* Every request since the last settle; ticket k's are [first[k], first[k + 1]). */
typedef struct mpi_sums {
    MPI_Request *requests;
    int *first;
    int n_requests, cap_requests, cap_tickets;
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
    for (int i = 0; i < n; i++) {
        const size_t count = (size_t)t[i]->rows * (size_t)t[i]->cols;
        if (count > (size_t)0x7fffffff)
            return fn_fail(FN_ERR_INVALID, "a gradient of %zu floats is beyond MPI's int counts",
                           count);
        MPI_Iallreduce(MPI_IN_PLACE, t[i]->data, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                       &m->requests[m->n_requests++]);
    }
    m->first[ticket + 1] = m->n_requests;
    return FN_OK;
}

static fn_status mpi_wait(fn_comm *c, int ticket)
{
    mpi_sums *m = c->impl;
    const int first = m->first[ticket];
    return wait_requests(m->requests + first, m->first[ticket + 1] - first,
                         "a layer's gradient sums (MPI_Iallreduce)");
}

/* A completed request is MPI_REQUEST_NULL, which MPI_Testall skips. */
static fn_status mpi_settle(fn_comm *c)
{
    mpi_sums *m = c->impl;
    fn_status st = wait_requests(m->requests, m->n_requests, "the gradient sums (MPI_Iallreduce)");
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
