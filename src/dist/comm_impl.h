/* comm_impl.h (private) — what a communicator (fusenet/comm.h) holds and its
 * backends, each a static const table picked once at creation:
 * single-process (dist/comm.c), MPI on host floats (dist/comm_mpi.c) and
 * NCCL on the GPU (kernels/dist/comm_cuda.cu). Host collectives and the NCCL
 * id's broadcast go through MPI (host_collectives.h) whatever the backend. */
#ifndef FUSENET_DIST_COMM_IMPL_H
#define FUSENET_DIST_COMM_IMPL_H

#include <stdint.h>

#include "dist/host_collectives.h"
#include "fusenet/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_comm_backend {
    const char *name;
    /* The sums of ticket `ticket` (numbered from 0 since the last settle). */
    fn_status (*start)(fn_comm *comm, fn_tensor *const *tensors, int n, int ticket);
    fn_status (*wait)(fn_comm *comm, int ticket);
    fn_status (*settle)(fn_comm *comm); /* every ticket; then they are forgotten */
    fn_status (*create)(fn_comm *comm); /* optional */
    void (*release)(fn_comm *comm);     /* optional: what create made */
} fn_comm_backend;

struct fn_comm {
    const fn_comm_backend *backend;
    fn_context *ctx;   /* borrowed */
    int rank, size;
    int mpi;           /* host collectives go through MPI_COMM_WORLD */
    int tickets;       /* started since the last settle */
    fn_comm_sum sum;   /* the type of the sums (fn_comm_set_sum) */
    double timeout_s;  /* fn_comm_settle's bound */
    void *impl;        /* the backend's own */
};

extern const fn_comm_backend fn_comm_single_backend; /* dist/comm.c */
extern const fn_comm_backend fn_comm_mpi_backend;    /* dist/comm_mpi.c; only with FN_HAVE_MPI */
extern const fn_comm_backend fn_comm_nccl_backend;   /* kernels/dist/comm_cuda.cu; only with FN_HAVE_NCCL */

/* kernels/dist/comm_cuda.cu: t *= factor on ctx's stream. */
fn_status fn_comm_scale_cuda(fn_context *ctx, fn_tensor *t, float factor);

#ifdef __cplusplus
}
#endif
#endif
