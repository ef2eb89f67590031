/* comm_mpi_bf16.h (private) — the MPI backend's sums in bfloat16
 * (fn_comm_set_sum, comm.h; dist/comm_mpi.c): a tensor rounded into a
 * scratch buffer, the buffer summed as 16-bit values under an operation
 * that adds two bfloat16 values in float and rounds the sum back to
 * bfloat16 (MPI_Iallreduce for a sum; for a reduce-scatter one MPI_Ireduce
 * of a range to its owner), and the sum widened into the tensor once its
 * requests are done (for a reduce-scatter this rank's range alone). The
 * sums of one step are numbered by slot (the MPI backend's request number
 * since the last settle: a tensor's first request); each slot keeps its
 * buffer from step to step, so a run allocates once. */
#ifndef FUSENET_DIST_COMM_MPI_BF16_H
#define FUSENET_DIST_COMM_MPI_BF16_H

#include "dist/host_collectives.h"
#include "fusenet/tensor.h"

#ifdef FN_MPI_REQUESTS
typedef struct fn_mpi_bf16 fn_mpi_bf16; /* opaque */

/* Made on the first bfloat16 sum (its MPI operation with it). */
fn_status fn_mpi_bf16_create(fn_mpi_bf16 **s);
/* Frees the buffers and the operation (before MPI_Finalize, or not at all
 * after it). NULL is fine. */
void fn_mpi_bf16_destroy(fn_mpi_bf16 *s);
/* t rounded into slot's buffer and its sum started into *request. */
fn_status fn_mpi_bf16_start(fn_mpi_bf16 *s, fn_tensor *t, int slot, MPI_Request *request);
/* t rounded into slot's buffer, whose values [keep, keep + n_keep) go back
 * into t when the slot is finished (a reduce-scatter's part of this rank;
 * the sums are started by fn_mpi_bf16_reduce_start). */
fn_status fn_mpi_bf16_round(fn_mpi_bf16 *s, fn_tensor *t, int slot, size_t keep, size_t n_keep);
/* Slot's values [first, first + n) summed onto rank root's (in place
 * there), started into *request; every rank calls it for the same ranges
 * and roots in the same order. */
void fn_mpi_bf16_reduce_start(fn_mpi_bf16 *s, int slot, size_t first, size_t n, int root,
                              MPI_Request *request);
/* The sums of slots [first, end) whose requests are done widened into
 * their tensors; a slot not started in bfloat16, or already widened, is
 * skipped. */
void fn_mpi_bf16_finish(fn_mpi_bf16 *s, int first, int end);
#endif

#endif
