/* data.h — data sets and the rows of their mini-batches, in host memory
 * (fn_loader, loader.h, gathers each batch's rows and puts it on the
 * device). A set's rows come from an HDF5 file or from a program's memory
 * set (memory_set.h); what follows the opening (slabs, shuffle, batches,
 * column statistics) is one path for both, so the same rows, options and
 * seed give the same batches from either.
 *
 * A file's set is two datasets of one file: inputs [N, in], and targets, either
 * integer labels [N] (any HDF5 integer type of up to 8 bytes, read as
 * int32; for cross-entropy) or values [N, out] (for mean squared error).
 * Inputs and mse targets may be of any IEEE float (half, single, double) or
 * integer type of up to 8 bytes: HDF5 converts them to float32 as it reads
 * each slab, and a value that is not finite, or beyond float32's range, is
 * an error naming the file, dataset, row and column.
 * Types, ranks, the matching N, that each dataset stores what it declares,
 * label range and finite values are checked when the set is opened (first
 * in a child process, since HDF5 itself may crash or hang on a corrupt
 * file: src/store/h5_probe.h); errors name the file and the dataset.
 *
 * Shuffling: rows are split into slabs of `slab_rows` consecutive rows (one
 * slab holding every row when the set fits in the memory budget). Each epoch
 * visits the slabs in a shuffled order and the rows of each slab in a
 * shuffled order, cutting each slab into batches; so with one slab it is a
 * plain shuffle of the whole set. The permutations of epoch e come from
 * splitmix64 seeded with (seed, e, stream) alone, so a resumed run can
 * reproduce any epoch and step. Every row is used once per epoch; a slab's
 * last batch may be partial (slab_rows is a multiple of the batch size, so
 * only the slab holding the set's last rows has one). */
#ifndef FUSENET_DATA_H
#define FUSENET_DATA_H

#include "fusenet/api.h"

#include <stddef.h>
#include <stdint.h>

#include "fusenet/device.h"
#include "fusenet/memory_set.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a batch's targets are. */
typedef enum fn_data_targets {
    FN_DATA_NO_TARGETS = 0, /* inputs only (predict) */
    FN_DATA_LABELS,         /* int32 [rows] (cross_entropy) */
    FN_DATA_FLOATS          /* float32 [rows, out] (mse) */
} fn_data_targets;

typedef struct fn_data_options {
    const char *inputs;  /* dataset name of the inputs */
    const char *targets; /* dataset name of the targets; NULL: inputs only (predict) */
    fn_data_targets target_kind; /* what the loss takes (fn_loss_targets): labels [N]
                                  * or values [N, out] */
    int unit_targets;    /* values [N, out] each in [0, 1] (bce_with_logits): others are
                          * refused naming the row */
    const char *loss;    /* the loss that reads the targets, for messages ("huber");
                          * NULL: cross_entropy for labels, mse for values */
    int targets_by_rank; /* predict --targets: labels when the targets have rank 1,
                          * values when rank 2, whatever `target_kind` says */
    int in_features;     /* required input columns; 0: any */
    const char *in_features_from; /* what requires them, for the message
                                   * ("the network of weights.h5"); NULL: unnamed */
    int out_features;    /* classes (labels in [0, out)) or target columns */
    int batch_size;      /* >= 1 */
    size_t memory_budget; /* bytes of host memory for rows before reading in slabs */
    int shuffle;          /* 0: file order (validation, predict) */
    uint64_t seed;
    /* What the caller's user sets the two names with ("[data] inputs",
     * "--inputs"), for the message about a dataset the file lacks, which
     * lists the datasets it holds; NULL: not named. */
    const char *inputs_key, *targets_key;
} fn_data_options;

typedef struct fn_data fn_data; /* opaque */

/* Opens and checks a file's set; it stays in host memory (a loader takes
 * batches to the device). */
FN_API fn_status fn_data_open(fn_data **data, const char *path, const fn_data_options *opt);

/* Opens a memory set as a set: opt's dataset names are not used (targets
 * NULL still means inputs only); its labels or values must be what opt's
 * loss needs (or, with targets_by_rank, are taken as they are), its labels
 * in [0, out_features), its columns those of opt. The memory set is
 * borrowed and must outlive the set: nothing is copied again. */
FN_API fn_status fn_data_open_memory(fn_data **data, const fn_memory_set *set,
                                     const fn_data_options *opt);

/* Where a set's rows come from: a file or a memory set, one of the two. */
typedef struct fn_data_source {
    const char *path;            /* an HDF5 file (opt names its datasets) */
    const fn_memory_set *memory; /* or a memory set (borrowed) */
} fn_data_source;

/* fn_data_open or fn_data_open_memory, as the source says. */
FN_API fn_status fn_data_open_source(fn_data **data, const fn_data_source *source,
                                     const fn_data_options *opt);
FN_API void fn_data_close(fn_data *data); /* NULL is fine */
/* The rows of dataset opt->inputs in the file at path, its shape checked
 * as fn_data_open checks it (of opt, only inputs and inputs_key are
 * read), without reading a row: to size batches before the set is
 * opened. */
FN_API fn_status fn_data_count_rows(const char *path, const fn_data_options *opt, int64_t *rows);

FN_API int64_t fn_data_rows(const fn_data *data);
FN_API int fn_data_in_features(const fn_data *data);
FN_API long long fn_data_batches(const fn_data *data); /* per epoch */
/* Rows per slab; equal to the number of rows when the set is held whole. */
FN_API int64_t fn_data_slab_rows(const fn_data *data);

FN_API int fn_data_batch_size(const fn_data *data);
FN_API int fn_data_out_features(const fn_data *data); /* classes, or target columns (mse) */
/* The host memory the set holds while open: one slab of rows and targets
 * (the whole set when it fits the budget) and its shuffle orders. */
FN_API size_t fn_data_host_bytes(const fn_data *data);

/* Whether the set's rows carry sample weights (a memory set's,
 * fn_memory_set_weights; an HDF5 file's never do). */
FN_API int fn_data_has_weights(const fn_data *data);

/* What a batch's targets are: target_kind, or by rank (targets_by_rank). */
FN_API fn_data_targets fn_data_target_kind(const fn_data *data);
FN_API const char *fn_data_path(const fn_data *data); /* the file, as opened */
/* How the set's targets were read, when other than as declared: values
 * [N] for one mse output as [N, 1]; class labels [N, 1] as [N]; float
 * labels, every one a whole number; one-hot rows [N, classes] (docs/data.md).
 * One line naming the file and dataset into text (cap bytes); "" when the
 * targets were read as declared. For a program to show the user. */
FN_API void fn_data_reading(const fn_data *data, char *text, size_t cap);

/* Positions the set at batch `step` of epoch `epoch` (0-based). */
FN_API fn_status fn_data_seek(fn_data *data, long long epoch, long long step);

/* The next batch of the current epoch (rows == 0 after the last one) as
 * rows of the slab in host memory, which fn_batch_rows_gather copies out
 * (fn_loader does, into its slots, on one thread or several). Valid until
 * the next call of fn_data_next_rows or fn_data_seek on the set. */
typedef struct fn_batch_rows {
    int rows;              /* 0: the epoch is over */
    int in, out;           /* input columns; target columns (FN_DATA_FLOATS) */
    const float *x;        /* the slab's inputs, [slab rows, in] */
    const int32_t *labels; /* the slab's labels [slab rows], or NULL */
    const float *target;   /* the slab's targets [slab rows, out], or NULL */
    const float *weights;  /* the slab's sample weights [slab rows], or NULL: none */
    const int64_t *order;  /* [rows]: the batch's rows, as rows of the slab */
    int64_t first;         /* the slab's first row in the file */
    int64_t slab_rows;     /* the slab's rows: x holds [slab_rows, in] */
} fn_batch_rows;

/* The rows a slab holds at most (every row when the set is one slab). */
FN_API int64_t fn_data_slab_capacity(const fn_data *data);

FN_API fn_status fn_data_next_rows(fn_data *data, fn_batch_rows *rows);

/* Per input column, over every row of the set in file order, slab by slab,
 * in float64 (the float32 values the network sees): mean[j], the standard
 * deviation std[j] (population: divided by the rows) and constant[j] (1
 * when the column's smallest value equals its largest), each array of
 * fn_data_in_features entries. A set of several slabs is read once more;
 * a batch from fn_data_next_rows is invalid afterwards, the position in
 * the epoch is kept. With sample weights (fn_data_has_weights) the mean
 * and deviation are weighted, a row of weight k counting as k copies of
 * it (the range, for constant, is over every row). For `[data]
 * standardize` (input_norm.h). */
FN_API fn_status fn_data_column_stats(fn_data *data, double *mean, double *std, int *constant);
/* The same for the target columns of a set of values (mse; fn_data_out_features
 * entries each), for `[data] standardize_targets`. */
FN_API fn_status fn_data_target_stats(fn_data *data, double *mean, double *std, int *constant);
/* For a set of class labels: used[c] = 1 when some row is labelled c, else
 * 0, for each of the fn_data_out_features classes (a network's outputs
 * that no row asks for). Read as fn_data_column_stats reads. */
FN_API fn_status fn_data_labels_used(fn_data *data, unsigned char *used);

/* What the set is, to compare the sets of several processes: its
 * datasets' names, shapes and stored types into text ("'X' [1437, 64]
 * float64, 'y' [1437] int64"; snprintf's rules) and a 64-bit checksum of
 * every value as the network gets it (float32 inputs and targets, int32
 * labels, in file order) into *checksum. The checksum is computed as the
 * open reads and checks every value (docs/formats.md gives the function;
 * it does not depend on how the set is split into slabs), so nothing is
 * read again; the position in the epoch is kept. */
FN_API fn_status fn_data_fingerprint(fn_data *data, char *text, size_t cap, uint64_t *checksum);

/* Copies rows [begin, end) of the batch to the same rows of x [rows, in],
 * labels [rows], target [rows, out] and index [rows] (file row numbers);
 * labels and target are written when the set has them. Reads only, so
 * threads may gather disjoint ranges of one batch at once. */
FN_API void fn_batch_rows_gather(const fn_batch_rows *rows, int begin, int end, float *x,
                                 int32_t *labels, float *target, int64_t *index);

#ifdef __cplusplus
}
#endif
#endif
