/* trainer_ranks.c — what the ranks of a data-parallel run train on, for
 * its report: each rank's node (its host name's hash) and device (the CPU,
 * or its GPU) go to rank 0 in one gather, which counts the distinct
 * devices (a node's CPU is one device, however many ranks share it) and
 * nodes. A set-up collective: it runs beside the ranks' agreement, before
 * the communicator exists. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hash.h"
#include "trainer/trainer_impl.h"

typedef struct rank_place {
    uint64_t node;  /* hash of the host name */
    int32_t device; /* fn_device */
    int32_t gpu;    /* cuda:N; -1 on the CPU */
} rank_place;

static rank_place my_place(const fn_trainer *t)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    const fn_device d = fn_context_device(t->ctx);
    return (rank_place){.node = fn_hash_bytes(FN_HASH_START, host, strlen(host)),
                        .device = (int32_t)d,
                        .gpu = d == FN_CUDA ? (int32_t)t->gpu : -1};
}

/* How many of all[0..n) differ from every one before them, comparing the
 * whole place (devices) or its node alone (nodes). */
static int count_distinct(const rank_place *all, int n, int nodes_only)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = all[j].node == all[i].node &&
                   (nodes_only || (all[j].device == all[i].device && all[j].gpu == all[i].gpu));
        count += !seen;
    }
    return count;
}

fn_status fn_trainer_count_devices(fn_trainer *t)
{
    t->devices = t->nodes = 1;
    const int size = fn_world_size();
    if (size < 2)
        return FN_OK;
    const rank_place mine = my_place(t);
    rank_place *all = t->rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
    if (t->rank == 0 && !all)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the ranks' devices");
    fn_status st = fn_world_gather_bytes(&mine, (int)sizeof mine, all);
    if (st == FN_OK && all) {
        t->devices = count_distinct(all, size, 0);
        t->nodes = count_distinct(all, size, 1);
    }
    free(all);
    return st;
}
