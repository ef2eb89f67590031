/* comm.h — a communicator that sums gradients across the ranks of the
 * process world (world.h) a launcher (mpirun, srun) started.
 *
 * A communicator (fn_comm) belongs to a context. fn_comm_create with
 * FN_COMM_WORLD gives, when the world was started by MPI (even with one
 * rank), the backend of the context's device: MPI_Iallreduce in place on
 * host floats for the CPU; ncclAllReduce on a communication stream of its
 * own for the GPU (a build with NCCL: FN_HAVE_NCCL; the NCCL unique id goes from rank
 * 0 to the others with MPI_Bcast); the sharded collectives likewise, in
 * place (MPI_Ireduce to each part's owner and MPI_Iallgatherv;
 * ncclReduceScatter and ncclAllGather where the parts are equal, else one
 * ncclReduce or ncclBroadcast a part, in one group). Otherwise, or with FN_COMM_SELF, the
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
 * The sums are float32 by default; fn_comm_set_sum(comm, FN_COMM_SUM_BF16)
 * makes them bfloat16 (half the bytes on the wire): each tensor rounded to
 * the nearest bfloat16 (ties to even) into a scratch buffer of the
 * communicator's, the buffers summed across the ranks in bfloat16 (each
 * addition rounded to bfloat16: MPI with an operation of its own on the
 * CPU, NCCL's ncclBfloat16 on the GPU), and the sum widened back into the
 * tensor before fn_comm_sum_wait's work sees it. An element's result is
 * within (u + gamma_{N-1}) * sum_r |g_r| of the exact sum of the ranks'
 * float32 values g_r (u = 2^-8 per rounding, N ranks). The type holds for
 * the reduce-scatter too (the whole tensor rounded, each part reduced in
 * bfloat16 to its owner, this rank's part alone widened back, within the
 * same bound); the all-gather moves float32 whatever the type. The
 * single-process backend sums nothing in either type: there it changes
 * nothing.
 * Every rank must start the same sums in the same order, of tensors of the
 * same sizes, and choose the same type. For a fixed number of ranks the sums are deterministic (the
 * libraries pick their algorithm by size and rank count) and every rank
 * receives the same bits (checked by the trainer with fn_comm_same).
 *
 * Host collectives (blocking, MPI on the world; on one process the
 * identity): fn_comm_sum_doubles, fn_comm_any (did any rank set its flag),
 * fn_comm_same (do all ranks hold this value), fn_comm_gather_parts. */
#ifndef FUSENET_COMM_H
#define FUSENET_COMM_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/tensor.h"
#include "fusenet/world.h"

#ifdef __cplusplus
extern "C" {
#endif


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
FN_API fn_status fn_comm_create(fn_comm **comm, fn_context *ctx, fn_comm_scope scope);
FN_API void fn_comm_destroy(fn_comm *comm); /* NULL is fine */

FN_API int fn_comm_rank(const fn_comm *comm);
FN_API int fn_comm_size(const fn_comm *comm);
/* 1: the single-process backend (nothing to sum, plain training). */
FN_API int fn_comm_is_single(const fn_comm *comm);
FN_API const char *fn_comm_name(const fn_comm *comm); /* "single", "mpi", "nccl" */

/* The type the gradient sums travel and add in. */
typedef enum fn_comm_sum {
    FN_COMM_SUM_FLOAT32 = 0, /* float32 (the default) */
    FN_COMM_SUM_BF16         /* rounded to bfloat16, summed in bfloat16, widened back */
} fn_comm_sum;
/* How many there are: fn_comm_sum_name's table is checked against it. */
enum { FN_COMM_SUMS = FN_COMM_SUM_BF16 + 1 };

/* The type of the sums started from now on; an error while sums are
 * started and not settled (fn_comm_settle), or for an unknown type. */
FN_API fn_status fn_comm_set_sum(fn_comm *comm, fn_comm_sum sum);
FN_API fn_comm_sum fn_comm_sum_of(const fn_comm *comm); /* NULL: float32 */
/* "float32", "bf16" (the [run] grad_sum key's values); "unknown" past the last. */
FN_API const char *fn_comm_sum_name(fn_comm_sum sum);

/* Sums tensors[0..n) in place across the ranks, started now (see above);
 * *ticket names the sums for fn_comm_sum_wait. */
FN_API fn_status fn_comm_sum_start(fn_comm *comm, fn_tensor *const *tensors, int n, int *ticket);

/* Sharded collectives (a sharded optimiser's: each rank updates its part
 * of every parameter). Rank r of N owns elements [first, first + n) of a
 * tensor of `count` values, first = count * r / N: parts differ by at most
 * one element, and a part may be empty. Started and waited for by ticket,
 * like the sums (the same numbering): */
FN_API void fn_comm_part(const fn_comm *comm, size_t count, int rank, size_t *first, size_t *n);
/* In place: this rank's part of whole[i] becomes that part's sum over the
 * ranks, in the sums' type (fn_comm_set_sum); the rest of whole[i] is
 * left undefined. */
FN_API fn_status fn_comm_reduce_scatter_start(fn_comm *comm, fn_tensor *const *whole, int n,
                                              int *ticket);
/* Every rank's part of whole[i] (in place, at its fn_comm_part range) to
 * every rank's whole[i], in float32 whatever the sums' type. */
FN_API fn_status fn_comm_gather_start(fn_comm *comm, fn_tensor *const *whole, int n, int *ticket);
FN_API fn_status fn_comm_sum_wait(fn_comm *comm, int ticket);
FN_API fn_status fn_comm_settle(fn_comm *comm);

/* values[0..n) summed over the ranks in place, in rank order (so every rank
 * gets the same bits). */
FN_API fn_status fn_comm_sum_doubles(fn_comm *comm, double *values, int n);
/* Host floats: every rank's part (fn_comm_part's) of a tensor of `count`
 * values into rank 0's whole [count] (whole is read on rank 0 alone: the
 * others may pass NULL), as a checkpoint of sharded state needs. */
FN_API fn_status fn_comm_gather_parts(fn_comm *comm, const float *part, float *whole,
                                      size_t count);
/* *flag becomes 1 on every rank when it was non-zero on any. */
FN_API fn_status fn_comm_any(fn_comm *comm, int *flag);
/* *same = 1 when every rank passed the same value, else 0 on every rank. */
FN_API fn_status fn_comm_same(fn_comm *comm, uint64_t value, int *same);

/* t *= factor on t's device, on ctx's stream (a rank's share of a loss
 * gradient: its rows over the global batch's). */
FN_API fn_status fn_comm_scale(fn_context *ctx, fn_tensor *t, float factor);

#ifdef __cplusplus
}
#endif
#endif
