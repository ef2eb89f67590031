/* data_impl.h (private) — a data set's state, shared by the one path of
 * slabs, shuffle and batches (data.c) and the sources its rows come from:
 * an HDF5 file (data.c) or a program's memory set (data_memory.c). A
 * source is a table of hooks; nothing outside them knows which it is. */
#ifndef FN_IO_DATA_IMPL_H
#define FN_IO_DATA_IMPL_H

#include <hdf5.h>

#include "fusenet/data.h"
#include "fusenet/memory_set.h"

typedef struct fn_data_source_ops {
    const char *kind; /* "HDF5 file", "memory set" */
    /* Points the slab's views (x, labels, target) at rows [row0, row0 +
     * rows), reading them into the slab buffers where the source keeps
     * them elsewhere, every value checked. */
    fn_status (*load)(fn_data *d, int64_t row0, int64_t rows);
    /* Whether the slab needs buffers of its own (load reads into them). */
    int buffered;
    /* Host bytes the source holds for the set besides the slab buffers. */
    size_t (*held_bytes)(const fn_data *d);
    void (*close)(fn_data *d); /* optional */
} fn_data_source_ops;

struct fn_data {
    const fn_data_source_ops *source;
    char *path;             /* the file, or "memory set '<name>'": messages start with it */
    char *inputs, *targets; /* dataset names; targets NULL: none */
    hid_t file, xset, tset; /* HDF5 file */
    const fn_memory_set *memory; /* memory set (borrowed) */
    int labels;         /* targets are integer labels */
    int unit;           /* target values must lie in [0, 1] */
    int by_rank;        /* labels decided by the targets' rank (predict) */
    int64_t n;          /* rows */
    int in, out;        /* input columns; classes or target columns */
    int batch_size, shuffle;
    uint64_t seed;
    int64_t slab_rows, n_slabs;
    char xtype[32], ttype[32]; /* the datasets' types as stored ("float64", "int64") */

    float *slab_x;      /* [slab_rows, in], buffered sources */
    float *slab_t;      /* [slab_rows, out] when !labels */
    int32_t *slab_l;    /* [slab_rows] when labels */
    const float *view_x;     /* the loaded slab's rows: [slab rows, in] */
    const float *view_t;     /* [slab rows, out], or NULL */
    const int32_t *view_l;   /* [slab rows], or NULL */
    int64_t loaded;     /* the slab the views show, -1: none */
    /* fn_hash_words over the pair of the hashes of every input and of
     * every label or target as the network gets them (float32, int32), in
     * file order; computed as the open reads and checks every slab
     * (fn_data_check_slabs), the same whatever the slabs. */
    uint64_t checksum;

    long long epoch;
    int64_t *slab_order; /* [n_slabs] */
    int64_t *row_order;  /* [slab_rows]: the current slab's local rows, shuffled */
    int64_t pos_slab;    /* index into slab_order; n_slabs: epoch over */
    int64_t pos_row;     /* next position in row_order */
    int64_t ordered;     /* the slab row_order belongs to, -1: none */
};

/* A new set of `source` with the options every source shares (batch size,
 * shuffle, seed, loss, outputs, dataset names) copied; path names it in
 * messages. *data is NULL on failure. */
fn_status fn_data_begin(fn_data **data, const fn_data_source_ops *source, const char *path,
                        const fn_data_options *opt);
/* After the source set n, in and labels: slabs from the memory budget,
 * their buffers, and the position at the first batch. */
fn_status fn_data_plan(fn_data *d, size_t memory_budget);

/* With d->unit, rows [row0, row0 + rows) of target values v [rows, out]
 * each in [0, 1]: else `code` naming d's path, `what` ("dataset 't'",
 * "targets"), the row and the column (a NaN included). */
fn_status fn_data_check_unit(const fn_data *d, fn_status code, const char *what, const float *v,
                             int64_t rows, int64_t row0);
/* Every slab loaded once, in file order, so bad values fail at open, and
 * their checksum computed on the way; in a probe's child (probe non-NULL),
 * each slab tells the parent the child is still going. */
struct fn_h5_child;
fn_status fn_data_check_slabs(fn_data *d, struct fn_h5_child *probe);

#endif
