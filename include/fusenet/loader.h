/* loader.h — a training set's batches prepared ahead of the step that uses
 * them.
 *
 * On the GPU a background thread takes the set's batches in order
 * (fn_data_next_rows: the same batches, in the same order, as fn_data_next),
 * gathers each one's shuffled rows into pinned host memory on a few threads,
 * and copies it to the device on a copy stream of its own, while the GPU
 * computes the steps before it. Batches go through FN_LOADER_SLOTS slots,
 * each a pinned host buffer and a device buffer; events order each copy
 * after the last kernels that read its slot's previous batch, and the
 * kernels of a batch after its copy, so nothing waits on the host but a
 * batch that is not ready yet. On the CPU, batches come from fn_data_next
 * when fn_next is called (options.background runs the thread there too, for
 * tests).
 *
 * The set is the loader's between fn_loader_start and fn_loader_halt: the
 * thread reads it (and the HDF5 file, when the set is read in slabs), so the
 * caller touches neither the set nor any HDF5 file in between; after
 * fn_loader_halt the thread is idle. */
#ifndef FUSENET_LOADER_H
#define FUSENET_LOADER_H

#include "fusenet/data.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FN_LOADER_SLOTS = 3 }; /* the batch in use and two prepared ahead */

typedef struct fn_loader_options {
    /* Threads that gather a batch's rows; 0: $FN_LOADER_THREADS when set,
     * else half the CPUs, at most 8. */
    int threads;
    int background; /* on the CPU: prepare batches in the thread as well */
} fn_loader_options;

/* What the thread did, since the loader was created. */
typedef struct fn_loader_stats {
    int threads;           /* gathering; 0 without the background thread */
    long long batches;     /* handed out */
    double prepare_seconds; /* preparing batches: the set's rows, gathering them
                             * into the host buffers, queuing their copies */
    double wait_seconds;   /* fn_loader_next waiting for a batch not ready yet */
} fn_loader_stats;

typedef struct fn_loader fn_loader; /* opaque */

/* A loader of `data`'s batches on ctx's device; opt may be NULL. data and
 * ctx are borrowed and must outlive it. */
fn_status fn_loader_create(fn_loader **loader, fn_context *ctx, fn_data *data,
                           const fn_loader_options *opt);
/* Halts the thread and frees everything; NULL is fine. */
void fn_loader_destroy(fn_loader *loader);

/* Halts, positions the set at batch `step` of epoch `epoch` and starts
 * preparing batches from there. */
fn_status fn_loader_start(fn_loader *loader, long long epoch, long long step);
/* The next batch (rows == 0 after the epoch's last one): on the device, and
 * ordered on the context's stream after its copy. Valid until the next call
 * of fn_loader_next, fn_loader_halt or fn_loader_start; it is released, for
 * the thread to fill again, only then. A failure of the thread (a slab that
 * cannot be read, a CUDA error) is returned here, by the batch it hit. */
fn_status fn_loader_next(fn_loader *loader, fn_batch *batch);
/* Releases the batch in use and waits until the thread is idle: then the
 * set and HDF5 are the caller's again. */
fn_status fn_loader_halt(fn_loader *loader);

fn_loader_stats fn_loader_get_stats(const fn_loader *loader);

#ifdef __cplusplus
}
#endif
#endif
