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
    char loss[32];      /* fn_data_options.loss, "" when not given (fn_data_loss) */
    int tform;          /* how a file's targets are read (fn_target_form) */
    int tcols;          /* the targets' columns in the file; 0: rank 1 */
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
    const float *view_w;     /* [slab rows] sample weights, or NULL (memory sets only) */
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

/* How an HDF5 file's targets are read (target_form.c): as declared
 * (labels [N] of an integer type, values [N, out]), or in a form
 * scikit-learn and NumPy users store, each shown to the user once. */
typedef enum fn_target_form {
    FN_FORM_AS_DECLARED = 0,
    FN_FORM_VALUES_1D,    /* mse with one output: values [N] as [N, 1] */
    FN_FORM_LABEL_COLUMN, /* integer labels [N, 1] as [N] */
    FN_FORM_WHOLE_FLOATS, /* float labels [N] or [N, 1], each a whole number */
    FN_FORM_ONE_HOT       /* rows [N, out] of a single 1 and zeros */
} fn_target_form;

/* The form of the targets dataset of this rank and dims (is_float: of a
 * float type) into d->tform and d->tcols, from d->labels and d->out; a
 * shape no form reads fails, naming those that are read. */
fn_status fn_target_form_choose(fn_data *d, int rank, const hsize_t *dims, int is_float);
/* The targets' rank in the file that d->tform reads. */
int fn_target_form_rank(const fn_data *d);

/* The loss that reads d's targets, for messages: fn_data_options.loss, or
 * cross_entropy for labels and mse for values. */
const char *fn_data_loss(const fn_data *d);
/* Reads rows [row0, row0 + rows) of a form other than as declared into
 * the slab's labels or targets, each value checked (labels' range aside). */
fn_status fn_target_form_load(fn_data *d, int64_t row0, int64_t rows);
/* One line saying how the targets were read; "" when as declared. */
void fn_target_form_describe(const fn_data *d, char *text, size_t cap);

/* Rows [row0, row0 + rows) of a dataset, cols columns (0: a rank-1
 * dataset), converted to mem_type into buf. */
/* Host bytes of one row: inputs and targets (data.c). */
size_t fn_data_row_bytes(const fn_data *d);

fn_status fn_data_read_rows(const fn_data *d, hid_t set, const char *name, hid_t mem_type,
                            void *buf, int64_t row0, int64_t rows, int cols);

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
