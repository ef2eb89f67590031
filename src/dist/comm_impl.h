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

/* A ticket's collective (fusenet/comm.h), in place over whole[0..n),
 * every rank's tensors of the same sizes; a part is fn_comm_part's. */
typedef enum fn_comm_op {
    FN_COMM_OP_SUM,            /* whole[i] = the ranks' sum */
    FN_COMM_OP_REDUCE_SCATTER, /* this rank's part of whole[i] = that part's sum */
    FN_COMM_OP_GATHER          /* every rank's part of whole[i] to every rank */
} fn_comm_op;

typedef struct fn_comm_backend {
    const char *name;
    /* Ticket `ticket`'s collective (numbered from 0 since the last settle). */
    fn_status (*start)(fn_comm *comm, fn_comm_op op, fn_tensor *const *whole, int n, int ticket);
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

/* Every rank's part (fn_comm_part) of a tensor of `count` values, in MPI's
 * int counts: *layout = counts [size], then displacements [size]; the
 * caller frees it. The count must fit an int (the caller checks). */
fn_status fn_comm_part_layout(const fn_comm *comm, size_t count, int **layout);

/* kernels/dist/comm_cuda.cu: t *= factor on ctx's stream. */
fn_status fn_comm_scale_cuda(fn_context *ctx, fn_tensor *t, float factor);

#ifdef __cplusplus
}
#endif
#endif
