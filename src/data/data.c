/* data.c — data sets in host memory: the one path of slabs, the seeded
 * two-level shuffle (slab order, then rows within a slab; shuffle.h) and
 * each batch's rows, which fn_loader gathers and puts on the device; and
 * the HDF5 file source (data_impl.h): opening and checking (first in a
 * probe's child process, h5_probe.h), slabs read by hyperslab. A memory
 * set is the other source (data_memory.c); data_source.c opens either. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "fusenet/data.h"
#include "data/data_impl.h"
#include "data/shuffle.h"
#include "store/h5_storage.h"
#include "store/h5util.h"


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
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has rank %d, expected %s", d->path, name,
                       rank, d->labels ? "1 ([N] labels for cross_entropy)" : "2 ([N, out] for mse)");
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

static int64_t slab_length(const fn_data *d, int64_t slab)
{
    int64_t start = slab * d->slab_rows;
    return d->n - start < d->slab_rows ? d->n - start : d->slab_rows;
}

fn_status fn_data_read_rows(const fn_data *d, hid_t set, const char *name, hid_t mem_type,
                            void *buf, int64_t row0, int64_t rows, int cols)
{
    int rank = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)row0, 0};
    hsize_t count[2] = {(hsize_t)rows, (hsize_t)(cols > 0 ? cols : 1)};
    hid_t file_space = H5Dget_space(set);
    hid_t mem_space = H5Screate_simple(rank, count, NULL);
    herr_t r = -1;
    if (file_space >= 0 && mem_space >= 0 &&
        H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0)
        r = H5Dread(set, mem_type, mem_space, file_space, H5P_DEFAULT, buf);
    /* Before the closes, which would clear HDF5's reason (a corrupt chunk). */
    fn_status st = r < 0 ? fn_h5_read_fail(set, FN_ERR_IO, "%s: dataset '%s': cannot read rows %lld to %lld",
                                           d->path, name, (long long)row0, (long long)(row0 + rows - 1))
                         : FN_OK;
    if (file_space >= 0)
        H5Sclose(file_space);
    if (mem_space >= 0)
        H5Sclose(mem_space);
    return st;
}

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

fn_status fn_data_check_unit(const fn_data *d, fn_status code, const char *what, const float *v,
                             int64_t rows, int64_t row0)
{
    for (int64_t i = 0; d->unit && i < rows * d->out; i++)
        if (!(v[i] >= 0.0f && v[i] <= 1.0f))
            return fn_fail(code,
                           "%s: %s row %lld column %lld is %g; bce_with_logits takes targets in "
                           "[0, 1] (one a label: 1 present, 0 absent)", d->path, what,
                           (long long)(row0 + i / d->out), (long long)(i % d->out), (double)v[i]);
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

/* Host bytes of one row: inputs and targets. */
static size_t row_bytes(const fn_data *d)
{
    size_t bytes = (size_t)d->in * sizeof(float);
    if (d->targets)
        bytes += d->labels ? sizeof(int32_t) : (size_t)d->out * sizeof(float);
    return bytes;
}

/* The slab buffers an HDF5 set reads into. */
static size_t hdf5_held_bytes(const fn_data *d)
{
    return (size_t)d->slab_rows * row_bytes(d);
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

/* Slab k in the views, checked. */
static fn_status load_slab(fn_data *d, int64_t k)
{
    if (d->loaded == k)
        return FN_OK;
    d->loaded = -1;
    FN_TRY(d->source->load(d, k * d->slab_rows, slab_length(d, k)));
    d->loaded = k;
    return FN_OK;
}

/* Slab size from the budget: a multiple of the batch size, at least one
 * batch. Every source plans alike, so a memory set and a file of the same
 * rows are shuffled alike. */
static void plan_slabs(fn_data *d, size_t budget)
{
    int64_t fit = (int64_t)(budget / row_bytes(d));
    if (fit >= d->n) {
        d->slab_rows = d->n;
    } else {
        int64_t b = d->batch_size;
        d->slab_rows = fit < b ? b : fit / b * b;
    }
    d->n_slabs = (d->n + d->slab_rows - 1) / d->slab_rows;
}

/* What the source holds and alloc_buffers' two orders. */
int64_t fn_data_slab_capacity(const fn_data *d)
{
    return d ? d->slab_rows : 0;
}

size_t fn_data_host_bytes(const fn_data *d)
{
    if (!d)
        return 0;
    return d->source->held_bytes(d) + (size_t)d->n_slabs * sizeof(int64_t) +
           (size_t)d->slab_rows * sizeof(int64_t);
}

static fn_status alloc_buffers(fn_data *d)
{
    size_t s = (size_t)d->slab_rows;
    size_t out = (size_t)(d->out > 0 ? d->out : 1);
    if (d->source->buffered) {
        d->slab_x = malloc(s * (size_t)d->in * sizeof(float));
        d->slab_t = d->targets && !d->labels ? malloc(s * out * sizeof(float)) : NULL;
        d->slab_l = d->targets && d->labels ? malloc(s * sizeof(int32_t)) : NULL;
        if (!d->slab_x || (d->targets && !d->slab_t && !d->slab_l))
            return fn_fail(FN_ERR_NOMEM, "%s: out of host memory for %lld rows", d->path,
                           (long long)d->slab_rows);
    }
    d->slab_order = malloc((size_t)d->n_slabs * sizeof(int64_t));
    d->row_order = malloc(s * sizeof(int64_t));
    if (!d->slab_order || !d->row_order)
        return fn_fail(FN_ERR_NOMEM, "%s: out of host memory for %lld rows", d->path,
                       (long long)d->slab_rows);
    return FN_OK;
}

fn_status fn_data_plan(fn_data *d, size_t memory_budget)
{
    plan_slabs(d, memory_budget);
    FN_TRY(alloc_buffers(d));
    return fn_data_seek(d, 0, 0);
}

/* The probe's allowance for reading one slab: a minute, plus a minute per
 * GiB (only a disk or share slower than 17 MB/s would need more). */
static double slab_seconds(const fn_data *d)
{
    double gib = (double)d->slab_rows * (double)row_bytes(d) / (1024.0 * 1024.0 * 1024.0);
    return FN_H5_PROBE_SECONDS + 60.0 * gib;
}

/* The loaded slab's values, as the network gets them, into the two
 * running hashes: inputs, and labels or targets. */
static void hash_slab(const fn_data *d, fn_hash_stream *x, fn_hash_stream *t)
{
    const size_t rows = (size_t)slab_length(d, d->loaded);
    fn_hash_stream_add(x, d->view_x, rows * (size_t)d->in * sizeof(float));
    if (d->view_l)
        fn_hash_stream_add(t, d->view_l, rows * sizeof(int32_t));
    if (d->view_t)
        fn_hash_stream_add(t, d->view_t, rows * (size_t)d->out * sizeof(float));
}

fn_status fn_data_check_slabs(fn_data *d, fn_h5_child *probe)
{
    double step = slab_seconds(d);
    fn_hash_stream x, t;
    fn_hash_stream_start(&x);
    fn_hash_stream_start(&t);
    for (int64_t k = 0; k < d->n_slabs; k++) {
        fn_h5_probe_alive(probe, step);
        FN_TRY(load_slab(d, k));
        hash_slab(d, &x, &t);
    }
    const uint64_t both[2] = {fn_hash_stream_end(&x), fn_hash_stream_end(&t)};
    d->checksum = fn_hash_words(FN_HASH_START, both, sizeof both);
    return FN_OK;
}

static fn_status copy_name(char **dst, const char *src)
{
    *dst = strdup(src);
    return *dst ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of memory");
}

static fn_status begin_data(fn_data *d, const char *path, const fn_data_options *opt)
{
    if (opt->batch_size < 1 || (opt->targets && opt->out_features < 1))
        return fn_fail(FN_ERR_INVALID, "fn_data_open: bad options for %s", path);
    FN_TRY(copy_name(&d->path, path));
    if (opt->inputs)
        FN_TRY(copy_name(&d->inputs, opt->inputs));
    if (opt->targets)
        FN_TRY(copy_name(&d->targets, opt->targets));
    d->labels = opt->target_kind == FN_DATA_LABELS;
    d->by_rank = opt->targets_by_rank;
    d->unit = opt->unit_targets && !d->labels;
    d->out = opt->out_features;
    d->batch_size = opt->batch_size;
    d->shuffle = opt->shuffle;
    d->seed = opt->seed;
    return FN_OK;
}

fn_status fn_data_begin(fn_data **data, const fn_data_source_ops *source, const char *path,
                        const fn_data_options *opt)
{
    *data = NULL;
    fn_data *d = calloc(1, sizeof *d);
    if (!d)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    d->source = source;
    d->file = d->xset = d->tset = -1;
    d->loaded = d->ordered = -1;
    fn_status st = begin_data(d, path, opt);
    if (st != FN_OK) {
        fn_data_close(d);
        return st;
    }
    *data = d;
    return FN_OK;
}

/* checked: the probe's child has read and checked every slab already. */
static fn_status open_file(fn_data *d, const char *path, const fn_data_options *opt, int checked,
                           fn_h5_child *probe)
{
    if (!opt->inputs)
        return fn_fail(FN_ERR_INVALID, "fn_data_open: bad options for %s", path);
    FN_TRY(fn_h5_open_read(&d->file, path));
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
    fn_status st = fn_h5_open_read(&d->file, path);
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

void fn_data_close(fn_data *d)
{
    if (!d)
        return;
    if (d->source->close)
        d->source->close(d);
    free(d->slab_x);
    free(d->slab_t);
    free(d->slab_l);
    free(d->slab_order);
    free(d->row_order);
    free(d->path);
    free(d->inputs);
    free(d->targets);
    free(d);
}

int64_t fn_data_rows(const fn_data *d) { return d->n; }
int fn_data_in_features(const fn_data *d) { return d->in; }
int64_t fn_data_slab_rows(const fn_data *d) { return d->slab_rows; }
int fn_data_batch_size(const fn_data *d) { return d->batch_size; }
int fn_data_out_features(const fn_data *d) { return d->out; }
const char *fn_data_path(const fn_data *d) { return d->path; }

void fn_data_reading(const fn_data *d, char *text, size_t cap)
{
    if (cap)
        fn_target_form_describe(d, text, cap);
}

fn_data_targets fn_data_target_kind(const fn_data *d)
{
    return !d->targets ? FN_DATA_NO_TARGETS : d->labels ? FN_DATA_LABELS : FN_DATA_FLOATS;
}

static long long slab_batches(const fn_data *d, int64_t k)
{
    return (slab_length(d, k) + d->batch_size - 1) / d->batch_size;
}

long long fn_data_batches(const fn_data *d)
{
    long long total = 0;
    for (int64_t k = 0; k < d->n_slabs; k++)
        total += slab_batches(d, k);
    return total;
}

/* --- column statistics (standardisation) --------------------------------- */

/* One slab's columns merged into the running (count n, mean, m2, min, max)
 * by Chan et al.'s pairwise update: each slab's mean and squared deviations
 * are taken about its own mean, two passes in float64, so a column with a
 * large offset (1e6 + small changes) loses nothing to cancellation. */
static void merge_slab(const float *x, int64_t rows, int in, int64_t n_before, double *mean,
                       double *m2, float *lo, float *hi, double *slab_mean)
{
    for (int j = 0; j < in; j++)
        slab_mean[j] = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int j = 0; j < in; j++) {
            float v = x[i * in + j];
            slab_mean[j] += v;
            lo[j] = n_before == 0 && i == 0 ? v : fminf(lo[j], v);
            hi[j] = n_before == 0 && i == 0 ? v : fmaxf(hi[j], v);
        }
    double nb = (double)rows, na = (double)n_before, n = na + nb;
    for (int j = 0; j < in; j++) {
        slab_mean[j] /= nb;
        double dev = 0;
        for (int64_t i = 0; i < rows; i++) {
            double e = (double)x[i * in + j] - slab_mean[j];
            dev += e * e;
        }
        if (n_before == 0) {
            mean[j] = slab_mean[j];
            m2[j] = dev;
            continue;
        }
        double delta = slab_mean[j] - mean[j];
        mean[j] += delta * nb / n;
        m2[j] += dev + delta * delta * na * nb / n;
    }
}

/* The statistics of the inputs (targets 0) or the mse targets (1). */
static fn_status stats_of(fn_data *d, int targets, double *mean, double *std, int *constant)
{
    const int in = targets ? d->out : d->in;
    double *m2 = calloc((size_t)in, sizeof(double)), *slab_mean = malloc((size_t)in * sizeof(double));
    float *lo = malloc((size_t)in * sizeof(float)), *hi = malloc((size_t)in * sizeof(float));
    fn_status st = m2 && slab_mean && lo && hi ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of memory");
    for (int j = 0; j < in; j++)
        mean[j] = 0;
    int64_t seen = 0;
    for (int64_t k = 0; st == FN_OK && k < d->n_slabs; k++) {
        st = load_slab(d, k);
        if (st != FN_OK)
            break;
        int64_t rows = slab_length(d, k);
        merge_slab(targets ? d->view_t : d->view_x, rows, in, seen, mean, m2, lo, hi, slab_mean);
        seen += rows;
    }
    for (int j = 0; st == FN_OK && j < in; j++) {
        std[j] = sqrt(m2[j] / (double)seen);
        constant[j] = lo[j] == hi[j];
    }
    free(m2);
    free(slab_mean);
    free(lo);
    free(hi);
    return st;
}

fn_status fn_data_column_stats(fn_data *d, double *mean, double *std, int *constant)
{
    return stats_of(d, 0, mean, std, constant);
}

fn_status fn_data_target_stats(fn_data *d, double *mean, double *std, int *constant)
{
    if (fn_data_target_kind(d) != FN_DATA_FLOATS)
        return fn_fail(FN_ERR_INVALID, "%s: target statistics need values [N, out] (mse), not "
                       "labels", d->path);
    return stats_of(d, 1, mean, std, constant);
}

/* --- fingerprint ---------------------------------------------------------- */

fn_status fn_data_fingerprint(fn_data *d, char *text, size_t cap, uint64_t *checksum)
{
    if (d->targets && d->labels)
        snprintf(text, cap, "'%s' [%lld, %d] %s, '%s' [%lld] %s", d->inputs, (long long)d->n,
                 d->in, d->xtype, d->targets, (long long)d->n, d->ttype);
    else if (d->targets)
        snprintf(text, cap, "'%s' [%lld, %d] %s, '%s' [%lld, %d] %s", d->inputs, (long long)d->n,
                 d->in, d->xtype, d->targets, (long long)d->n, d->out, d->ttype);
    else
        snprintf(text, cap, "'%s' [%lld, %d] %s", d->inputs, (long long)d->n, d->in, d->xtype);
    *checksum = d->checksum;
    return FN_OK;
}

/* --- iteration ----------------------------------------------------------- */

fn_status fn_data_seek(fn_data *d, long long epoch, long long step)
{
    if (epoch < 0 || step < 0)
        return fn_fail(FN_ERR_INVALID, "fn_data_seek: epoch %lld, step %lld", epoch, step);
    d->epoch = epoch;
    d->ordered = -1;
    fn_shuffle_permutation(d->slab_order, d->n_slabs, d->shuffle,
                           fn_shuffle_stream(d->seed, epoch, 0));
    d->pos_slab = 0;
    d->pos_row = 0;
    while (d->pos_slab < d->n_slabs) {
        long long nb = slab_batches(d, d->slab_order[d->pos_slab]);
        if (step < nb) {
            d->pos_row = step * d->batch_size;
            break;
        }
        step -= nb;
        d->pos_slab++;
    }
    return FN_OK;
}

/* Loads the current slab and its row order if they are not there yet. */
static fn_status enter_slab(fn_data *d)
{
    int64_t k = d->slab_order[d->pos_slab];
    FN_TRY(load_slab(d, k));
    if (d->ordered != k) {
        fn_shuffle_permutation(d->row_order, slab_length(d, k), d->shuffle,
                               fn_shuffle_stream(d->seed, d->epoch, k + 1));
        d->ordered = k;
    }
    return FN_OK;
}

void fn_batch_rows_gather(const fn_batch_rows *r, int begin, int end, float *x,
                          int32_t *labels, float *target, int64_t *index)
{
    size_t in = (size_t)r->in, out = (size_t)r->out;
    for (int i = begin; i < end; i++) {
        int64_t local = r->order[i];
        index[i] = r->first + local;
        memcpy(x + (size_t)i * in, r->x + (size_t)local * in, in * sizeof(float));
        if (r->labels)
            labels[i] = r->labels[local];
        if (r->target)
            memcpy(target + (size_t)i * out, r->target + (size_t)local * out, out * sizeof(float));
    }
}

fn_status fn_data_next_rows(fn_data *d, fn_batch_rows *r)
{
    *r = (fn_batch_rows){.in = d->in, .out = d->out};
    if (d->pos_slab >= d->n_slabs)
        return FN_OK;
    FN_TRY(enter_slab(d));
    int64_t k = d->slab_order[d->pos_slab];
    int64_t left = slab_length(d, k) - d->pos_row;
    r->rows = left < d->batch_size ? (int)left : d->batch_size;
    r->x = d->view_x;
    r->labels = d->view_l;
    r->target = d->view_t;
    r->order = d->row_order + d->pos_row;
    r->first = k * d->slab_rows;
    r->slab_rows = slab_length(d, k);
    d->pos_row += r->rows;
    if (d->pos_row >= slab_length(d, k)) {
        d->pos_slab++;
        d->pos_row = 0;
    }
    return FN_OK;
}
