/* comm.h — data parallelism's runtime: the process world a launcher (mpirun,
 * srun) started, and a communicator that sums gradients across its ranks.
 *
 * The world: a program calls fn_world_init first thing. When a launcher
 * started it (its environment says so: OMPI_COMM_WORLD_SIZE, PMI_SIZE,
 * PMIX_RANK, or SLURM_STEP_NUM_TASKS > 1 with SLURM_PROCID) and the library was
 * built with MPI (FN_HAVE_MPI), that is MPI_Init_thread; otherwise the world
 * is this process alone, rank 0 of 1, and nothing else happens, so a plain
 * `./train` is unchanged. A launcher's world of several processes in a build
 * without MPI is an error saying so. MPI is finalised by fn_world_finalize;
 * fn_world_abort (MPI_Abort) ends every rank, for a failure on one rank
 * (the library itself never exits: only a program calls it).
 *
 * A communicator (fn_comm) belongs to a context. fn_comm_create with
 * FN_COMM_WORLD gives, when the world was started by MPI (even with one
 * rank), the backend of the context's device: MPI_Iallreduce in place on
 * host floats for the CPU; ncclAllReduce on a communication stream of its
 * own for the GPU (a build with NCCL: FN_HAVE_NCCL; the NCCL unique id goes from rank
 * 0 to the others with MPI_Bcast). Otherwise, or with FN_COMM_SELF, the
 * single-process backend, which sums nothing (fn_comm_is_single).
 *
 * Gradient sums are started and waited for by ticket, so each layer's sum
 * can start as soon as its backward is done (the trainer's
 * fn_net_backward_each) and an update wait only for the sums it reads:
 *   fn_comm_sum_start  queues the in-place sums of tensors on the
 *                      context's device after the work queued so far (GPU:
 *                      an event on the context's stream, waited for by the
 *                      communication stream);
 *   fn_comm_sum_wait   work queued next on the context (GPU: its stream;
 *                      CPU: the caller) sees those sums;
 *   fn_comm_settle     waits for every sum started and forgets the tickets.
 * Every wait for other ranks, here and in the host collectives, is bounded
 * by $FN_COMM_TIMEOUT_S seconds (600 by default): MPI's requests are polled
 * (MPI_Testall); NCCL's stream and ncclCommGetAsyncError are polled, and on
 * a timeout or an NCCL error the communicator is aborted (ncclCommAbort).
 * Either fails with a message naming the wait: the caller ends the job
 * (fn_world_abort), so a rank that stopped answering never hangs the
 * others.
 * Every rank must start the same sums in the same order, of tensors of the
 * same sizes. For a fixed number of ranks the sums are deterministic (the
 * libraries pick their algorithm by size and rank count) and every rank
 * receives the same bits (checked by the trainer with fn_comm_same).
 *
 * Host collectives (blocking, MPI on the world; on one process the
 * identity): fn_comm_sum_doubles, fn_comm_any (did any rank set its flag),
 * fn_comm_same (do all ranks hold this value). */
#ifndef FUSENET_COMM_H
#define FUSENET_COMM_H

#include <stdint.h>

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- the process world ------------------------------------------------------ */

/* Starts MPI when a launcher started this process (see above); argc and
 * argv may be NULL. Once per process; a second call does nothing. */
fn_status fn_world_init(int *argc, char ***argv);
/* MPI_Finalize when fn_world_init started MPI; otherwise nothing. */
void fn_world_finalize(void);
/* Ends every rank with this exit status (MPI_Abort) in a world of several;
 * returns in a world of one (the caller exits). */
void fn_world_abort(int status);
int fn_world_rank(void);       /* 0 before fn_world_init or without MPI */
int fn_world_size(void);       /* 1 likewise */
int fn_world_local_rank(void); /* this process's rank among those of its node */
int fn_world_mpi(void);        /* 1: MPI was started (even with one rank) */
/* What this build can do: "MPI and NCCL", "MPI, no NCCL", ... */
const char *fn_world_build(void);
/* World collectives for a run's set-up, before any communicator exists
 * (the ranks' agreement on their config and data, which must come before
 * a backend's own collectives); each bounded like every wait for other
 * ranks (below). In a world of one, or without MPI, the identity.
 * fn_world_gather_bytes: every rank's n bytes to rank 0 (MPI_Igather),
 * in rank order into all [size * n] there (all is not touched elsewhere
 * and may be NULL); fn_world_broadcast_bytes: rank 0's n bytes to every
 * rank (MPI_Ibcast). */
fn_status fn_world_gather_bytes(const void *mine, int n, void *all);
fn_status fn_world_broadcast_bytes(void *bytes, int n);

/* --- communicators ------------------------------------------------------------- */

typedef struct fn_comm fn_comm; /* opaque */

typedef enum fn_comm_scope {
    FN_COMM_WORLD = 0, /* the world's ranks (one process alone: single) */
    FN_COMM_SELF,      /* this process alone, even inside a world (tests) */
    /* This process alone through its device's backend: on a GPU, NCCL with
     * a communicator of one rank, what a one-rank world runs, without a
     * launcher or MPI (tests on a machine without MPI); on the CPU, whose
     * backend needs MPI started, the single-process backend. */
    FN_COMM_SELF_DEVICE
} fn_comm_scope;

/* A communicator for ctx's device (borrowed; must outlive it). A GPU
 * context in an MPI world of a build without NCCL is an error saying so. */
fn_status fn_comm_create(fn_comm **comm, fn_context *ctx, fn_comm_scope scope);
void fn_comm_destroy(fn_comm *comm); /* NULL is fine */

int fn_comm_rank(const fn_comm *comm);
int fn_comm_size(const fn_comm *comm);
/* 1: the single-process backend (nothing to sum, plain training). */
int fn_comm_is_single(const fn_comm *comm);
const char *fn_comm_name(const fn_comm *comm); /* "single", "mpi", "nccl" */

/* Sums tensors[0..n) in place across the ranks, started now (see above);
 * *ticket names the sums for fn_comm_sum_wait. */
fn_status fn_comm_sum_start(fn_comm *comm, fn_tensor *const *tensors, int n, int *ticket);
fn_status fn_comm_sum_wait(fn_comm *comm, int ticket);
fn_status fn_comm_settle(fn_comm *comm);

/* values[0..n) summed over the ranks in place, in rank order (so every rank
 * gets the same bits). */
fn_status fn_comm_sum_doubles(fn_comm *comm, double *values, int n);
/* *flag becomes 1 on every rank when it was non-zero on any. */
fn_status fn_comm_any(fn_comm *comm, int *flag);
/* *same = 1 when every rank passed the same value, else 0 on every rank. */
fn_status fn_comm_same(fn_comm *comm, uint64_t value, int *same);

/* t *= factor on t's device, on ctx's stream (a rank's share of a loss
 * gradient: its rows over the global batch's). */
fn_status fn_comm_scale(fn_context *ctx, fn_tensor *t, float factor);

#ifdef __cplusplus
}
#endif
#endif
