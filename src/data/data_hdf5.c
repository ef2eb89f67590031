/* data_hdf5.c — the HDF5 file source of a data set (data_impl.h):
 * opening a file's inputs and targets and checking their types and shapes,
 * first in a probe's child process (h5_probe.h), then slabs read by
 * hyperslab (data_rows.c) with every value checked, targets in the forms
 * scikit-learn users store (target_form.c); and counting a file's rows.
 * data.c holds what every source shares (slabs, shuffle, batches). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/data.h"
#include "data/data_impl.h"
#include "store/h5_storage.h"
#include "store/h5util.h"
#include "store/regular_file.h"

/* --- opening and checking ----------------------------------------------- */

/* A dataset the file lacks: the ones it holds, and the key that names it. */
static fn_status missing_set(const fn_data *d, const char *name, const char *key)
{
    char held[512], fix[128] = "";
    fn_h5_root_names(d->file, held, sizeof held);
    if (key)
        snprintf(fix, sizeof fix, "; set %s to the name of the %s", key,
                 name == d->inputs ? "inputs" : "targets");
    if (!held[0])
        return fn_fail(FN_ERR_FORMAT, "%s: no dataset '%s': the file's root holds nothing",
                       d->path, name);
    return fn_fail(FN_ERR_FORMAT, "%s: no dataset '%s' (the file holds %s)%s", d->path, name,
                   held, fix);
}

/* key: what the user names the dataset with (fn_data_options), or NULL. */
static fn_status open_set(fn_data *d, const char *name, const char *key, hid_t *set, int *rank,
                          hsize_t *dims, hid_t *type)
{
    const htri_t there = H5Lexists(d->file, name, H5P_DEFAULT);
    /* A lookup that failed (a damaged root group) is not listed: listing
     * would read the damage again, and HDF5 can take minutes over it. */
    if (there < 0)
        return fn_fail(FN_ERR_FORMAT, "%s: no dataset '%s'", d->path, name);
    if (there == 0)
        return missing_set(d, name, key);
    FN_TRY(fn_h5_open_dataset(d->file, d->path, name, set));
    /* Any rank is read here; the callers say which one they expect. */
    hsize_t all[H5S_MAX_RANK] = {0};
    hid_t space = H5Dget_space(*set);
    *rank = space < 0 ? -1 : H5Sget_simple_extent_dims(space, all, NULL);
    fn_status st = *rank < 0 ? fn_h5_fail(FN_ERR_FORMAT, "%s: dataset '%s': cannot read its shape",
                                          d->path, name)
                             : FN_OK;
    if (space >= 0)
        H5Sclose(space);
    FN_TRY(st);
    dims[0] = all[0];
    dims[1] = all[1];
    *type = H5Dget_type(*set);
    if (*type < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: dataset '%s': cannot read its type", d->path, name);
    return FN_OK;
}

/* A float type HDF5 converts to float32 as IEEE arithmetic would: IEEE
 * half, single or double in either byte order (h5py's float16 is such a
 * type of its own). Other float layouts (custom exponent or mantissa
 * fields, as a damaged or fuzzed file may declare) are refused rather than
 * handed to HDF5's soft conversion. */
static int ieee_float(hid_t type)
{
    static const struct { size_t size, esize, msize, ebias; } ieee[] = {
        {2, 5, 10, 15}, {4, 8, 23, 127}, {8, 11, 52, 1023}};
    size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0)
        return 0;
    size_t size = H5Tget_size(type), prec = H5Tget_precision(type);
    for (size_t i = 0; i < sizeof ieee / sizeof ieee[0]; i++)
        if (size == ieee[i].size && prec == 8 * size && H5Tget_offset(type) == 0 &&
            spos == prec - 1 && epos == ieee[i].msize && esize == ieee[i].esize && mpos == 0 &&
            msize == ieee[i].msize && H5Tget_ebias(type) == ieee[i].ebias &&
            H5Tget_norm(type) == H5T_NORM_IMPLIED)
            return 1;
    return 0;
}

/* Inputs and mse targets (numeric): any IEEE float or integer of up to 8
 * bytes, which HDF5 converts to float32 as it reads (integers round to the
 * nearest float32; a float64 beyond float32's range becomes infinite and
 * is reported by check_finite). Labels: any integer of up to 8 bytes. */
static fn_status check_type(const fn_data *d, const char *name, hid_t type, int numeric)
{
    char tname[32];
    fn_h5_type_name(type, tname, sizeof tname);
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    if (numeric && cls == H5T_FLOAT && !ieee_float(type))
        return fn_fail(FN_ERR_FORMAT,
                       "%s: dataset '%s' is a float of %zu bytes that is not IEEE half, single "
                       "or double precision", d->path, name, size);
    if (numeric && cls != H5T_FLOAT && cls != H5T_INTEGER)
        return fn_fail(FN_ERR_FORMAT,
                       "%s: dataset '%s' is %s, expected numbers (a float or integer type)",
                       d->path, name, tname);
    if (!numeric && cls != H5T_INTEGER)
        return fn_fail(FN_ERR_FORMAT,
                       "%s: dataset '%s' is %s, expected integer class labels for cross_entropy",
                       d->path, name, tname);
    /* HDF5 allows integers of any size; converting a wider one needs a
     * buffer of that size per value (a 4 GiB "integer" in a fuzzed file),
     * and no real integer type is wider than int64. */
    if (cls == H5T_INTEGER && size > 8)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' is an integer of %zu bytes, expected %s",
                       d->path, name, size,
                       numeric ? "at most 8 bytes"
                               : "integer class labels of at most 8 bytes for cross_entropy");
    return FN_OK;
}

static fn_status open_inputs(fn_data *d, const fn_data_options *opt)
{
    int rank = 0;
    hsize_t dims[2] = {0, 0};
    hid_t type = -1;
    fn_status st = open_set(d, d->inputs, opt->inputs_key, &d->xset, &rank, dims, &type);
    if (st == FN_OK)
        st = check_type(d, d->inputs, type, 1);
    if (type >= 0) {
        fn_h5_type_name(type, d->xtype, sizeof d->xtype);
        H5Tclose(type);
    }
    FN_TRY(st);
    if (rank != 2)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has rank %d, expected 2 ([N, in])",
                       d->path, d->inputs, rank);
    if (dims[0] == 0 || dims[1] == 0)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' is empty", d->path, d->inputs);
    if (dims[1] > (1u << 24))
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has %llu columns, too many", d->path,
                       d->inputs, (unsigned long long)dims[1]);
    if (opt->in_features && (int)dims[1] != opt->in_features)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has %llu columns, expected %d%s%s%s",
                       d->path, d->inputs, (unsigned long long)dims[1], opt->in_features,
                       opt->in_features_from ? " (" : "",
                       opt->in_features_from ? opt->in_features_from : "",
                       opt->in_features_from ? ")" : "");
    FN_TRY(fn_h5_check_storage(d->xset, d->path, d->inputs));
    d->n = (int64_t)dims[0];
    d->in = (int)dims[1];
    return FN_OK;
}

static fn_status check_target_shape(const fn_data *d, int rank, const hsize_t *dims)
{
    const char *name = d->targets;
    int want_rank = fn_target_form_rank(d);
    if (rank != want_rank)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has rank %d, expected %s for %s", d->path,
                       name, rank, d->labels ? "1 ([N] labels)" : "2 ([N, out])",
                       fn_data_loss(d));
    if ((int64_t)dims[0] != d->n)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has %llu rows but '%s' has %lld", d->path,
                       name, (unsigned long long)dims[0], d->inputs, (long long)d->n);
    if (!d->labels && rank == 2 && (int64_t)dims[1] != d->out)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has %llu columns, expected %d (the model's outputs)",
                       d->path, name, (unsigned long long)dims[1], d->out);
    return FN_OK;
}

static fn_status open_targets(fn_data *d, const fn_data_options *opt)
{
    int rank = 0;
    hsize_t dims[2] = {0, 0};
    hid_t type = -1;
    fn_status st = open_set(d, d->targets, opt->targets_key, &d->tset, &rank, dims, &type);
    if (st == FN_OK && d->by_rank)
        d->labels = rank == 1;
    if (st == FN_OK)
        st = fn_target_form_choose(d, rank, dims, H5Tget_class(type) == H5T_FLOAT);
    if (st == FN_OK)
        st = check_type(d, d->targets, type,
                        !d->labels || d->tform == FN_FORM_WHOLE_FLOATS ||
                            d->tform == FN_FORM_ONE_HOT);
    if (type >= 0) {
        fn_h5_type_name(type, d->ttype, sizeof d->ttype);
        H5Tclose(type);
    }
    FN_TRY(st);
    FN_TRY(check_target_shape(d, rank, dims));
    return fn_h5_check_storage(d->tset, d->path, d->targets);
}

/* --- slabs --------------------------------------------------------------- */

/* The value at (row, col) as the file holds it, read as a double (HDF5
 * converts); NaN when it cannot be read. */
static double file_value(hid_t set, int64_t row, int64_t col)
{
    hsize_t start[2] = {(hsize_t)row, (hsize_t)col}, one[2] = {1, 1};
    hid_t file_space = H5Dget_space(set), mem_space = H5Screate_simple(2, one, NULL);
    double v = NAN;
    if (file_space < 0 || mem_space < 0 ||
        H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, one, NULL) < 0 ||
        H5Dread(set, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, &v) < 0)
        v = NAN;
    if (file_space >= 0)
        H5Sclose(file_space);
    if (mem_space >= 0)
        H5Sclose(mem_space);
    H5Eclear2(H5E_DEFAULT);
    return v;
}

/* Every value read as float32 must be finite. HDF5 turns a float64 beyond
 * float32's range into an infinity, so an infinity is looked up again in
 * the file to say which it was. */
static fn_status check_finite(const fn_data *d, hid_t set, const char *name, const float *v,
                              int64_t rows, int cols, int64_t row0)
{
    for (int64_t i = 0; i < rows * cols; i++) {
        if (isfinite(v[i]))
            continue;
        long long row = (long long)(row0 + i / cols), col = (long long)(i % cols);
        double in_file = isnan(v[i]) ? NAN : file_value(set, row, col);
        if (isfinite(in_file))
            return fn_fail(FN_ERR_FORMAT,
                           "%s: dataset '%s' row %lld column %lld is %g, beyond float32's range "
                           "(magnitude at most 3.4e38)", d->path, name, row, col, in_file);
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' row %lld column %lld is %s", d->path,
                       name, row, col, isnan(v[i]) ? "NaN" : "infinite");
    }
    return FN_OK;
}

/* The label of row `row` as the file holds it, as text: labels are read
 * as int32, and HDF5's conversion clips what an int32 cannot hold (2^32 + 1
 * would read as 2147483647), so the row is read again in 64 bits of the
 * file's signedness (labels are at most 8 bytes, check_type). */
static void label_text(const fn_data *d, int64_t row, int32_t read, char *buf, size_t n)
{
    snprintf(buf, n, "%d", read);
    hid_t type = H5Dget_type(d->tset);
    int is_unsigned = type >= 0 && H5Tget_sign(type) == H5T_SGN_NONE;
    if (type >= 0)
        H5Tclose(type);
    unsigned long long u = 0;
    long long v = 0;
    const int cols = d->tcols == 1 ? 1 : 0; /* labels [N, 1] */
    if (is_unsigned && fn_data_read_rows(d, d->tset, d->targets, H5T_NATIVE_ULLONG, &u, row, 1, cols) == FN_OK)
        snprintf(buf, n, "%llu", u);
    else if (!is_unsigned &&
             fn_data_read_rows(d, d->tset, d->targets, H5T_NATIVE_LLONG, &v, row, 1, cols) == FN_OK)
        snprintf(buf, n, "%lld", v);
}

static fn_status check_labels(const fn_data *d, const int32_t *l, int64_t rows, int64_t row0)
{
    for (int64_t i = 0; i < rows; i++)
        if (l[i] < 0 || l[i] >= d->out) {
            char label[32];
            label_text(d, row0 + i, l[i], label, sizeof label);
            return fn_fail(FN_ERR_FORMAT,
                           "%s: dataset '%s' row %lld holds label %s, expected 0 to %d (the model has %d outputs)",
                           d->path, d->targets, (long long)(row0 + i), label, d->out - 1, d->out);
        }
    return FN_OK;
}


/* The HDF5 source's load: rows read into the slab buffers and checked. */
static fn_status hdf5_load(fn_data *d, int64_t row0, int64_t rows)
{
    FN_TRY(fn_data_read_rows(d, d->xset, d->inputs, H5T_NATIVE_FLOAT, d->slab_x, row0, rows, d->in));
    FN_TRY(check_finite(d, d->xset, d->inputs, d->slab_x, rows, d->in, row0));
    if (d->targets && d->tform != FN_FORM_AS_DECLARED) {
        FN_TRY(fn_target_form_load(d, row0, rows));
        if (d->labels)
            FN_TRY(check_labels(d, d->slab_l, rows, row0));
        else
            FN_TRY(check_finite(d, d->tset, d->targets, d->slab_t, rows, d->out, row0));
    } else if (d->targets && d->labels) {
        FN_TRY(fn_data_read_rows(d, d->tset, d->targets, H5T_NATIVE_INT32, d->slab_l, row0, rows, 0));
        FN_TRY(check_labels(d, d->slab_l, rows, row0));
    } else if (d->targets) {
        FN_TRY(fn_data_read_rows(d, d->tset, d->targets, H5T_NATIVE_FLOAT, d->slab_t, row0, rows, d->out));
        FN_TRY(check_finite(d, d->tset, d->targets, d->slab_t, rows, d->out, row0));
        if (d->unit) {
            char what[300];
            snprintf(what, sizeof what, "dataset '%s'", d->targets);
            FN_TRY(fn_data_check_unit(d, FN_ERR_FORMAT, what, d->slab_t, rows, row0));
        }
    }
    d->view_x = d->slab_x;
    d->view_l = d->slab_l;
    d->view_t = d->slab_t;
    return FN_OK;
}


/* The slab buffers an HDF5 set reads into. */
static size_t hdf5_held_bytes(const fn_data *d)
{
    return (size_t)d->slab_rows * fn_data_row_bytes(d);
}

static void hdf5_close(fn_data *d)
{
    if (d->xset >= 0)
        H5Dclose(d->xset);
    if (d->tset >= 0)
        H5Dclose(d->tset);
    if (d->file >= 0)
        H5Fclose(d->file);
}

static const fn_data_source_ops hdf5_source = {
    .kind = "HDF5 file",
    .load = hdf5_load,
    .buffered = 1,
    .held_bytes = hdf5_held_bytes,
    .close = hdf5_close,
};

/* fn_h5_open_read for a data set: a text file (a CSV, most likely) is
 * named as one, with the way to convert it; train and predict say the
 * same. */
static fn_status open_set_file(hid_t *file, const char *path)
{
    const fn_status st = fn_h5_open_read(file, path);
    if (st != FN_ERR_FORMAT || !fn_file_looks_like_text(path))
        return st;
    return fn_fail(FN_ERR_FORMAT, "%s is a text file (a CSV?), not HDF5: data sets are read "
                   "from HDF5; convert it first (docs/data.md shows how)", path);
}

/* checked: the probe's child has read and checked every slab already. */
static fn_status open_file(fn_data *d, const char *path, const fn_data_options *opt, int checked,
                           fn_h5_child *probe)
{
    if (!opt->inputs)
        return fn_fail(FN_ERR_INVALID, "fn_data_open: bad options for %s", path);
    FN_TRY(open_set_file(&d->file, path));
    FN_TRY(open_inputs(d, opt));
    if (d->targets)
        FN_TRY(open_targets(d, opt));
    FN_TRY(fn_data_plan(d, opt->memory_budget));
    return checked ? FN_OK : fn_data_check_slabs(d, probe);
}

static fn_status open_new(fn_data **data, const char *path, const fn_data_options *opt,
                          int checked, fn_h5_child *probe)
{
    FN_TRY(fn_data_begin(data, &hdf5_source, path, opt));
    fn_status st = open_file(*data, path, opt, checked, probe);
    if (st != FN_OK) {
        fn_data_close(*data);
        *data = NULL;
    }
    return st;
}

typedef struct open_job {
    const char *path;
    const fn_data_options *opt;
} open_job;

/* The probe's child: the whole open, every slab read and checked. */
static fn_status probe_open(fn_h5_child *probe, void *arg)
{
    const open_job *job = arg;
    fn_data *d = NULL;
    fn_status st = open_new(&d, job->path, job->opt, 0, probe);
    if (st == FN_OK)
        fn_h5_probe_result(probe, d->checksum);
    fn_data_close(d);
    return st;
}

/* The child opens and checks the set first (HDF5 may crash or hang on a
 * corrupt file, h5_probe.h); when it found the set good, the real open skips
 * the pass over every slab, so a large set is not read twice, and takes the
 * checksum the child computed as it read. When it failed, its message is
 * the open's. */
fn_status fn_data_open(fn_data **data, const char *path, const fn_data_options *opt)
{
    *data = NULL;
    open_job job = {path, opt};
    int checked = 0;
    uint64_t checksum = 0;
    FN_TRY(fn_h5_probe_for(path, probe_open, &job, FN_H5_PROBE_SECONDS, &checked, &checksum));
    FN_TRY(open_new(data, path, opt, checked, NULL));
    if (checked)
        (*data)->checksum = checksum;
    return FN_OK;
}

/* The inputs dataset opened and its shape checked as fn_data_open does,
 * nothing read or allocated for its rows. */
static fn_status count_rows(const char *path, const fn_data_options *given, int64_t *rows)
{
    const fn_data_options opt = {.inputs = given->inputs, .inputs_key = given->inputs_key,
                                 .batch_size = 1};
    fn_data *d;
    FN_TRY(fn_data_begin(&d, &hdf5_source, path, &opt));
    fn_status st = open_set_file(&d->file, path);
    if (st == FN_OK)
        st = open_inputs(d, &opt);
    *rows = st == FN_OK ? d->n : 0;
    fn_data_close(d);
    return st;
}

static fn_status probe_count(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const open_job *job = arg;
    int64_t rows = 0;
    return count_rows(job->path, job->opt, &rows);
}

fn_status fn_data_count_rows(const char *path, const fn_data_options *opt, int64_t *rows)
{
    *rows = 0;
    if (!path || !opt || !opt->inputs)
        return fn_fail(FN_ERR_INVALID, "fn_data_count_rows: a NULL argument");
    open_job job = {path, opt};
    FN_TRY(fn_h5_probe(path, probe_count, &job, FN_H5_PROBE_SECONDS, NULL));
    return count_rows(path, opt, rows);
}
