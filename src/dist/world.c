/* world.c — the process world (fusenet/world.h): MPI started when a
 * launcher started this process and the build has MPI (FN_HAVE_MPI), else
 * this process alone; its rank, size and rank on its node. */
#include <stdlib.h>

#include "fusenet/world.h"

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
