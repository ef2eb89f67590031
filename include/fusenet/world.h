/* world.h — the process world a launcher (mpirun, srun) started: data
 * parallelism's ranks.
 *
 * The world: a program calls fn_world_init first thing. When a launcher
 * started it (its environment says so: OMPI_COMM_WORLD_SIZE, PMI_SIZE,
 * PMIX_RANK, or SLURM_STEP_NUM_TASKS > 1 with SLURM_PROCID) and the library was
 * built with MPI (FN_HAVE_MPI), that is MPI_Init_thread; otherwise the world
 * is this process alone, rank 0 of 1, and nothing else happens, so a plain
 * `./train` is unchanged. A launcher's world of several processes in a build
 * without MPI is an error saying so. MPI is finalised by fn_world_finalize;
 * fn_world_abort (MPI_Abort) ends every rank, for a failure on one rank
 * (the library itself never exits: only a program calls it). */
#ifndef FUSENET_WORLD_H
#define FUSENET_WORLD_H

#include "fusenet/api.h"

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts MPI when a launcher started this process (see above); argc and
 * argv may be NULL. Once per process; a second call does nothing. */
FN_API fn_status fn_world_init(int *argc, char ***argv);
/* MPI_Finalize when fn_world_init started MPI; otherwise nothing. */
FN_API void fn_world_finalize(void);
/* Ends every rank with this exit status (MPI_Abort) in a world of several;
 * returns in a world of one (the caller exits). */
FN_API void fn_world_abort(int status);
FN_API int fn_world_rank(void);       /* 0 before fn_world_init or without MPI */
FN_API int fn_world_size(void);       /* 1 likewise */
FN_API int fn_world_local_rank(void); /* this process's rank among those of its node */
FN_API int fn_world_mpi(void);        /* 1: MPI was started (even with one rank) */
/* What this build can do: "MPI and NCCL", "MPI, no NCCL", ... */
FN_API const char *fn_world_build(void);
/* World collectives for a run's set-up, before any communicator exists
 * (the ranks' agreement on their config and data, which must come before
 * a backend's own collectives); each bounded like every wait for other
 * ranks (comm.h). In a world of one, or without MPI, the identity.
 * fn_world_gather_bytes: every rank's n bytes to rank 0 (MPI_Igather),
 * in rank order into all [size * n] there (all is not touched elsewhere
 * and may be NULL); fn_world_broadcast_bytes: rank 0's n bytes to every
 * rank (MPI_Ibcast). */
FN_API fn_status fn_world_gather_bytes(const void *mine, int n, void *all);
FN_API fn_status fn_world_broadcast_bytes(void *bytes, int n);

#ifdef __cplusplus
}
#endif
#endif
