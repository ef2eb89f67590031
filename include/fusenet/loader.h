/* loader.h — the one way a data set's batches reach the device: fn_loader
 * takes the set's batches in order (fn_data_next_rows), gathers each one's
 * rows into a slot of host buffers and hands it out on the context's
 * device, in one of two modes that give the same batches, in the same
 * order, with the same rows and values:
 *
 * Synchronous (FN_LOADER_SYNC): fn_loader_next does the work on the calling
 * thread, with no other thread and no copy stream: it gathers the batch
 * into its one slot and, on the GPU, copies it to the slot's device
 * buffers (a plain copy, which waits for the kernels queued so far, the
 * last that may read the previous batch). The set is read only inside
 * fn_loader_next, so the caller may use the set's file, or any other HDF5
 * file, between two calls (predict writes its outputs so). The mode of the
 * CPU, of evaluation (train's validation set, predict) and of tests.
 *
 * Background (FN_LOADER_BACKGROUND): batches are prepared ahead of the step
 * that uses them. A background thread gathers each batch's rows into pinned
 * host memory on a few threads and copies it to the device on a copy stream
 * of its own, while the GPU computes the steps before it. Batches go
 * through FN_LOADER_SLOTS slots, each a pinned host buffer and a device
 * buffer; events order each copy after the last kernels that read its
 * slot's previous batch, and the kernels of a batch after its copy, so
 * nothing waits on the host but a batch that is not ready yet. The set is
 * the loader's between fn_loader_start and fn_loader_halt: the thread reads
 * it (and the HDF5 file, when the set is read in slabs), so the caller
 * touches neither the set nor any HDF5 file in between; after
 * fn_loader_halt the thread is idle. The GPU's training mode; on the CPU
 * for tests.
 *
 * FN_LOADER_AUTO (the default, options NULL): background on the GPU,
 * synchronous on the CPU.
 *
 * Where the background mode on the GPU gathers a batch (fn_loader_gather):
 * on the host, as above, or from the set's rows kept on the device: each
 * slab's inputs (and float targets) are uploaded once when the set enters
 * it (a set of one slab: once for the whole run), and each batch's row
 * numbers go over instead of its rows, a kernel on the copy stream
 * gathering the rows there. The same batches, bit for bit: a gather is a
 * copy. Labels and row numbers are still gathered on the host (the batch
 * hands them out there too). */
#ifndef FUSENET_LOADER_H
#define FUSENET_LOADER_H

#include "fusenet/api.h"

#include "fusenet/data.h"
#include "fusenet/input_norm.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FN_LOADER_SLOTS = 3 }; /* background: the batch in use and two prepared ahead */

typedef enum fn_loader_mode {
    FN_LOADER_AUTO = 0,   /* background on the GPU, synchronous on the CPU */
    FN_LOADER_SYNC,       /* in fn_loader_next, on the calling thread */
    FN_LOADER_BACKGROUND  /* ahead, on a background thread */
} fn_loader_mode;

typedef enum fn_loader_gather {
    FN_GATHER_AUTO = 0, /* on the device when a batch's inputs take 1 MiB or more and a
                         * slab's inputs and targets at most a quarter of the GPU's
                         * free memory, else on the host */
    FN_GATHER_HOST,     /* on the host, each batch's rows copied over */
    FN_GATHER_DEVICE    /* on the device (fails when its memory cannot be had) */
} fn_loader_gather;

typedef struct fn_loader_options {
    fn_loader_mode mode;
    /* Background mode: the threads that gather a batch's rows, the
     * background thread included, at most 64; 0: $FN_LOADER_THREADS when
     * set, else half the CPUs, at most 8. Unused in the synchronous mode. */
    int threads;
    /* Data parallelism (comm.h): this process's share of every batch, part
     * `part` of `parts` (0: the whole batch): the contiguous rows
     * [rows * part / parts, rows * (part + 1) / parts) of the batch a single
     * process would take, so shares differ by at most one row and may be
     * empty (a short last batch). */
    int part, parts;
    /* The background mode on the GPU: where a batch's rows are gathered
     * (above). Unused in the synchronous mode and on the CPU. */
    fn_loader_gather gather;
} fn_loader_options;

/* What the loader did, since it was created. */
typedef struct fn_loader_stats {
    int threads;           /* gathering in the background; 0: synchronous mode */
    long long batches;     /* handed out */
    double prepare_seconds; /* preparing batches: the set's rows, gathering them
                             * into the host buffers, copying them (synchronous)
                             * or queuing their copies (background) */
    double wait_seconds;   /* fn_loader_next waiting for a batch not ready yet */
    size_t device_set_bytes; /* the set's rows kept on the device; 0: gathered on the host */
} fn_loader_stats;

/* One mini-batch on the loader's device, valid until the next call of
 * fn_loader_next, fn_loader_halt or fn_loader_start. */
typedef struct fn_batch {
    int rows;                    /* this process's rows (its share, loader options) */
    int batch_rows;              /* the whole batch's, over every share; 0: the epoch is over */
    fn_tensor x;                 /* [rows, in] on the context's device */
    fn_tensor target;            /* mse: [rows, out] on the device; else empty */
    const int32_t *labels;       /* cross_entropy: [rows] on the device; else NULL */
    const int32_t *host_labels;  /* the same labels in host memory */
    const float *host_weights;   /* [rows] the rows' sample weights in host memory, or NULL:
                                  * the set has none (fn_data_has_weights) */
    const int64_t *index;        /* [rows] in host memory: the rows' numbers in the file */
} fn_batch;

typedef struct fn_loader fn_loader; /* opaque */

/* A loader of `data`'s batches on ctx's device; opt may be NULL (the
 * automatic mode). data and ctx are borrowed and must outlive it. */
FN_API fn_status fn_loader_create(fn_loader **loader, fn_context *ctx, fn_data *data,
                                  const fn_loader_options *opt);
/* Halts the thread and frees everything; NULL is fine. */
FN_API void fn_loader_destroy(fn_loader *loader);

/* Halts, positions the set at batch `step` of epoch `epoch` and (background)
 * starts preparing batches from there. */
FN_API fn_status fn_loader_start(fn_loader *loader, long long epoch, long long step);
/* The next batch (rows == 0 after the epoch's last one, and again when
 * asked again): on the device, and ordered on the context's stream after
 * its copy. It is released, for its slot to be filled again, at the next
 * call of fn_loader_next, fn_loader_halt or fn_loader_start. FN_ERR_INVALID
 * before fn_loader_start or after fn_loader_halt. A failure to make a
 * batch (a slab that cannot be read, a CUDA error) is returned here, by the
 * batch it hit; in the background mode every later call returns it again
 * until the next start. */
FN_API fn_status fn_loader_next(fn_loader *loader, fn_batch *batch);
/* Releases the batch in use and (background) waits until the thread is
 * idle: then the set and HDF5 are the caller's again. */
FN_API fn_status fn_loader_halt(fn_loader *loader);

/* Standardises every batch's inputs from now on (input_norm.h): on the
 * loader's device, after the batch reached it, before it is handed out.
 * norm is borrowed and must outlive the loader (NULL: none); it must be
 * on the loader's context and have the set's columns. Call it before
 * fn_loader_start or while halted. */
FN_API fn_status fn_loader_set_norm(fn_loader *loader, const fn_input_norm *norm);
/* The same for the mse targets of each batch (target_norm.h): the set's
 * target columns, the same rules. */
FN_API fn_status fn_loader_set_target_norm(fn_loader *loader, const fn_input_norm *norm);

FN_API fn_loader_stats fn_loader_get_stats(const fn_loader *loader);
/* The memory its slots hold: host buffers (pinned on the GPU) and their
 * device copies (GPU only), and the set's rows kept on the device. */
FN_API void fn_loader_bytes(const fn_loader *loader, size_t *host, size_t *device);

#ifdef __cplusplus
}
#endif
#endif
