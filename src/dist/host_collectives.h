/* host_collectives.h (private) — the world's collectives on host values,
 * over MPI_COMM_WORLD, each waited for within fn_comm_timeout_s (a rank
 * that stopped answering: an error naming the wait, never a hang). */
#ifndef FUSENET_DIST_HOST_COLLECTIVES_H
#define FUSENET_DIST_HOST_COLLECTIVES_H

#include "fusenet/status.h"

/* MPI's requests are C code's only (kernels never wait on them). */
#if defined(FN_HAVE_MPI) && !defined(__CUDACC__)
#define FN_MPI_REQUESTS 1
#include <mpi.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The bound of every wait for other ranks, in seconds: $FN_COMM_TIMEOUT_S
 * when it is a positive number, else 600. */
double fn_comm_timeout_s(void);

/* Rank 0's bytes to every rank of the world (MPI_Ibcast). */
fn_status fn_comm_broadcast_bytes(void *bytes, int n);
/* Every rank's values [n] gathered in rank order into all [size * n]. */
fn_status fn_comm_gather_doubles(const double *values, int n, double *all);
fn_status fn_comm_max_int(int *value);
/* Every rank's values [n] into rank 0's all, rank r's at displs[r] (counts[r]
 * of them); all, counts and displs are read on rank 0 alone. */
fn_status fn_comm_gather_floats(const float *mine, int n, float *all, const int *counts,
                                const int *displs);

#ifdef FN_MPI_REQUESTS
/* Polls n requests until done or the timeout; `what` names the wait in the
 * error. */
fn_status fn_mpi_wait_requests(MPI_Request *requests, int n, const char *what);
#endif

#ifdef __cplusplus
}
#endif
#endif
