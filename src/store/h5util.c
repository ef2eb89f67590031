/* h5util.c — HDF5 helpers: type names, files (opened for
 * reading, or written through atomic_file.h), attributes and float
 * datasets. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/atomic_file.h"
#include "store/h5_error.h"
#include "store/h5_storage.h"
#include "store/h5util.h"
#include "store/regular_file.h"

void fn_h5_type_name(hid_t type, char *buf, size_t n)
{
    size_t bits = H5Tget_size(type) * 8;
    switch (H5Tget_class(type)) {
    case H5T_INTEGER:
        snprintf(buf, n, "%s%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int", bits);
        break;
    case H5T_FLOAT:
        snprintf(buf, n, "float%zu", bits);
        break;
    case H5T_STRING:
        snprintf(buf, n, "string");
        break;
    case H5T_COMPOUND:
        snprintf(buf, n, "compound");
        break;
    case H5T_ENUM:
        snprintf(buf, n, "enum");
        break;
    default:
        snprintf(buf, n, "of an unsupported type class");
        break;
    }
}

fn_status fn_h5_open_read(hid_t *file, const char *path)
{
    fn_h5_quiet();
    if (access(path, R_OK) != 0)
        return fn_fail(FN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* A FIFO would hold HDF5 until the probe's minute ran out. */
    FN_TRY(fn_require_regular_file(path));
    *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: not a readable HDF5 file", path);
    return FN_OK;
}

/* The file format of HDF5 1.8 and later: its superblock, object headers
 * (attributes among them) and indexes carry checksums, so a flipped bit in
 * the metadata fails the open or the read, as one in the data does
 * (checksummed_layout). Every HDF5 since 1.8 and h5py read it. */
static hid_t checksummed_metadata(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

/* The prepared temporary *tmp, created exclusively as an HDF5 file. */
static fn_status create_prepared(hid_t *file, char **tmp)
{
    /* EXCL: HDF5 opens it with O_CREAT | O_EXCL, so it never follows a
     * link or truncates a file that is not this call's own. */
    hid_t fapl = checksummed_metadata();
    *file = fapl < 0 ? -1 : H5Fcreate(*tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    if (fapl >= 0)
        H5Pclose(fapl);
    if (*file < 0) {
        fn_status st = fn_h5_fail(FN_ERR_IO, "%s: cannot create", *tmp);
        free(*tmp);
        *tmp = NULL;
        return st;
    }
    return FN_OK;
}

fn_status fn_h5_create_tmp(hid_t *file, const char *path, char **tmp)
{
    fn_h5_quiet();
    FN_TRY(fn_atomic_prepare(path, tmp));
    return create_prepared(file, tmp);
}

fn_status fn_h5_commit(hid_t file, const char *tmp, const char *path)
{
    if (H5Fclose(file) < 0) {
        fn_status st = fn_h5_fail(FN_ERR_IO, "%s: cannot close", tmp);
        fn_atomic_abandon(tmp);
        return st;
    }
    return fn_atomic_commit(tmp, path);
}

void fn_h5_abandon(hid_t file, const char *tmp)
{
    if (file >= 0)
        H5Fclose(file);
    fn_atomic_abandon(tmp);
}

fn_status fn_h5_finish(hid_t file, char *tmp, const char *path, fn_status st)
{
    if (st == FN_OK)
        st = fn_h5_commit(file, tmp, path);
    else
        fn_h5_abandon(file, tmp);
    free(tmp);
    return st;
}

/* --- attributes --------------------------------------------------------- */

static fn_status put_attr(hid_t obj, const char *where, const char *name, hid_t type,
                          const void *value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = space < 0 ? -1 : H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = attr < 0 ? -1 : H5Awrite(attr, type, value);
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (w < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot write attribute '%s'", where, name);
    return FN_OK;
}

fn_status fn_h5_put_string(hid_t obj, const char *where, const char *name, const char *value)
{
    /* Variable-length UTF-8, as h5py writes str: h5py reads it back as str. */
    hid_t type = H5Tcopy(H5T_C_S1);
    if (type < 0 || H5Tset_size(type, H5T_VARIABLE) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0) {
        if (type >= 0)
            H5Tclose(type);
        return fn_h5_fail(FN_ERR_IO, "%s: cannot make a string type", where);
    }
    fn_status st = put_attr(obj, where, name, type, &value);
    H5Tclose(type);
    return st;
}

fn_status fn_h5_put_int(hid_t obj, const char *where, const char *name, long long value)
{
    int64_t v = value;
    hid_t type = value >= INT32_MIN && value <= INT32_MAX ? H5T_STD_I32LE : H5T_STD_I64LE;
    return put_attr(obj, where, name, type, type == H5T_STD_I32LE ? (void *)&(int32_t){(int32_t)v}
                                                                   : (void *)&v);
}

fn_status fn_h5_put_double(hid_t obj, const char *where, const char *name, double value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = space < 0 ? -1
                           : H5Acreate2(obj, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = attr < 0 ? -1 : H5Awrite(attr, H5T_NATIVE_DOUBLE, &value);
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (w < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot write attribute '%s'", where, name);
    return FN_OK;
}

fn_status fn_h5_put_doubles(hid_t obj, const char *where, const char *name, const double *values,
                            int n)
{
    const hsize_t dims[1] = {(hsize_t)n};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t attr = space < 0 ? -1
                           : H5Acreate2(obj, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = attr < 0 ? -1 : H5Awrite(attr, H5T_NATIVE_DOUBLE, values);
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (w < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot write attribute '%s'", where, name);
    return FN_OK;
}

/* Opens attribute `name` and checks its class; the caller closes it. */
static fn_status open_attr(hid_t obj, const char *where, const char *name, H5T_class_t want,
                           const char *want_text, hid_t *attr)
{
    htri_t exists = H5Aexists(obj, name);
    if (exists <= 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: attribute '%s' is missing", where, name);
    *attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (*attr < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: cannot open attribute '%s'", where, name);
    hid_t type = H5Aget_type(*attr);
    hid_t space = H5Aget_space(*attr);
    H5T_class_t cls = type < 0 ? H5T_NO_CLASS : H5Tget_class(type);
    hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    char tname[32];
    if (type >= 0)
        fn_h5_type_name(type, tname, sizeof tname);
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    if (cls != want || n != 1) {
        H5Aclose(*attr);
        return fn_fail(FN_ERR_FORMAT, "%s: attribute '%s' is %s%s, expected a single %s", where,
                       name, n != 1 ? "not a single value of type " : "",
                       cls == H5T_NO_CLASS ? "unreadable" : tname, want_text);
    }
    return FN_OK;
}

static fn_status read_string_attr(hid_t attr, const char *where, const char *name, char **value)
{
    hid_t type = H5Aget_type(attr);
    if (type < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: attribute '%s'", where, name);
    htri_t vlen = H5Tis_variable_str(type);
    size_t size = H5Tget_size(type);
    hid_t mem = H5Tcopy(type);
    herr_t r = -1;
    char *text = NULL;
    if (vlen > 0) {
        char *p = NULL;
        r = H5Aread(attr, mem, &p);
        if (r >= 0 && p)
            text = strdup(p);
        if (r >= 0)
            H5free_memory(p);
    } else if (vlen == 0 && (text = calloc(size + 1, 1))) {
        r = H5Aread(attr, mem, text);
    }
    H5Tclose(mem);
    H5Tclose(type);
    if (r < 0 || !text) {
        free(text);
        return fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read attribute '%s'", where, name);
    }
    *value = text;
    return FN_OK;
}

fn_status fn_h5_get_string(hid_t obj, const char *where, const char *name, char **value)
{
    hid_t attr = -1;
    FN_TRY(open_attr(obj, where, name, H5T_STRING, "string", &attr));
    fn_status st = read_string_attr(attr, where, name, value);
    H5Aclose(attr);
    return st;
}

fn_status fn_h5_get_int(hid_t obj, const char *where, const char *name, long long *value)
{
    hid_t attr = -1;
    FN_TRY(open_attr(obj, where, name, H5T_INTEGER, "integer", &attr));
    int64_t v = 0;
    fn_status st = H5Aread(attr, H5T_NATIVE_INT64, &v) < 0
                       ? fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read attribute '%s'", where, name)
                       : FN_OK;
    H5Aclose(attr);
    if (st == FN_OK)
        *value = v;
    return st;
}

fn_status fn_h5_get_double(hid_t obj, const char *where, const char *name, double *value)
{
    hid_t attr = -1;
    FN_TRY(open_attr(obj, where, name, H5T_FLOAT, "float", &attr));
    fn_status st = H5Aread(attr, H5T_NATIVE_DOUBLE, value) < 0
                       ? fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read attribute '%s'", where, name)
                       : FN_OK;
    H5Aclose(attr);
    return st;
}

fn_status fn_h5_get_doubles(hid_t obj, const char *where, const char *name, double *values,
                            int n)
{
    if (H5Aexists(obj, name) <= 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: attribute '%s' is missing", where, name);
    hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (attr < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: cannot open attribute '%s'", where, name);
    hid_t type = H5Aget_type(attr), space = H5Aget_space(attr);
    const H5T_class_t cls = type < 0 ? H5T_NO_CLASS : H5Tget_class(type);
    const hssize_t count = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    fn_status st = FN_OK;
    if (cls != H5T_FLOAT || count != n)
        st = fn_fail(FN_ERR_FORMAT, "%s: attribute '%s' is not %d floating-point numbers", where,
                     name, n);
    else if (H5Aread(attr, H5T_NATIVE_DOUBLE, values) < 0)
        st = fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read attribute '%s'", where, name);
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    H5Aclose(attr);
    return st;
}

/* --- float datasets ----------------------------------------------------- */

/* "[i, j]" or "[i]" of the first non-finite value of data, or "" if none. */
static void first_non_finite(const float *data, int rank, const long long *dims, char *at,
                             size_t n, const char **what)
{
    long long cols = rank > 1 ? dims[1] : 1, count = dims[0] * cols;
    at[0] = '\0';
    for (long long i = 0; i < count; i++) {
        if (isfinite(data[i]))
            continue;
        if (rank > 1)
            snprintf(at, n, "[%lld, %lld]", i / cols, i % cols);
        else
            snprintf(at, n, "[%lld]", i);
        *what = isnan(data[i]) ? "NaN" : "an infinity";
        return;
    }
}

/* Whole rows a chunk, about 1 MiB each, with HDF5's Fletcher-32 checksum
 * per chunk: a flipped bit in a weights file or checkpoint fails its read
 * (HDF5 checks by default) instead of loading a changed value. Files
 * written before, contiguous and without checksums, read as ever. */
static hid_t checksummed_layout(int rank, const hsize_t *dims)
{
    enum { CHUNK_FLOATS = 1 << 18 };
    hsize_t chunk[2] = {dims[0], rank > 1 ? dims[1] : 1};
    const hsize_t row = rank > 1 ? dims[1] : 1;
    const hsize_t rows = row >= CHUNK_FLOATS ? 1 : CHUNK_FLOATS / row;
    chunk[0] = dims[0] < rows ? dims[0] : rows;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl >= 0 && (H5Pset_chunk(dcpl, rank, chunk) < 0 || H5Pset_fletcher32(dcpl) < 0)) {
        H5Pclose(dcpl);
        return -1;
    }
    return dcpl;
}

fn_status fn_h5_put_floats(hid_t loc, const char *where, const char *name, const float *data,
                           int rank, const long long *dims)
{
    char at[64];
    const char *what = "";
    first_non_finite(data, rank, dims, at, sizeof at, &what);
    if (at[0])
        return fn_fail(FN_ERR_NUMERIC, "%s: dataset '%s' would hold %s at %s; not written", where,
                       name, what, at);
    hsize_t d[2] = {(hsize_t)dims[0], rank > 1 ? (hsize_t)dims[1] : 1};
    hid_t space = H5Screate_simple(rank, d, NULL);
    hid_t dcpl = checksummed_layout(rank, d);
    hid_t set = space < 0 || dcpl < 0 ? -1
                                      : H5Dcreate2(loc, name, H5T_IEEE_F32LE, space, H5P_DEFAULT,
                                                   dcpl, H5P_DEFAULT);
    herr_t w = set < 0 ? -1 : H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    /* Before the closes, which would clear HDF5's reason (a full disk). */
    fn_status st = w < 0 ? fn_h5_fail(FN_ERR_IO, "%s: cannot write dataset '%s'", where, name)
                         : FN_OK;
    if (set >= 0)
        H5Dclose(set);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    return st;
}

static fn_status check_float_set(hid_t set, const char *where, const char *name, int rank,
                                 const long long *dims)
{
    hid_t type = H5Dget_type(set);
    hid_t space = H5Dget_space(set);
    char tname[32] = "unreadable";
    int is_f32 = type >= 0 && H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 4;
    if (type >= 0)
        fn_h5_type_name(type, tname, sizeof tname);
    hsize_t d[H5S_MAX_RANK] = {0};
    int r = space < 0 ? -1 : H5Sget_simple_extent_dims(space, d, NULL);
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    if (!is_f32)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' is %s, expected float32", where, name,
                       tname);
    int same = r == rank && (long long)d[0] == dims[0] && (rank < 2 || (long long)d[1] == dims[1]);
    if (!same) {
        char want[64], got[64] = "";
        snprintf(want, sizeof want, rank > 1 ? "[%lld, %lld]" : "[%lld]", dims[0],
                 rank > 1 ? dims[1] : 0);
        int len = 0;
        for (int i = 0; i < r && len < (int)sizeof got - 24; i++)
            len += snprintf(got + len, sizeof got - (size_t)len, "%s%llu", i ? ", " : "",
                            (unsigned long long)d[i]);
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has shape [%s], expected %s", where, name,
                       got, want);
    }
    return FN_OK;
}

/* Opens dataset name and checks it as fn_h5_check_floats says; *set is
 * open only on FN_OK. */
static fn_status open_floats(hid_t loc, const char *where, const char *name, int rank,
                             const long long *dims, hid_t *set)
{
    *set = -1;
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' is missing", where, name);
    FN_TRY(fn_h5_open_dataset(loc, where, name, set));
    fn_status st = check_float_set(*set, where, name, rank, dims);
    /* A chunk missing from a weights file or checkpoint reads as zeros. */
    if (st == FN_OK)
        st = fn_h5_check_storage(*set, where, name);
    if (st == FN_OK)
        st = fn_h5_check_filters(*set, where, name);
    if (st != FN_OK) {
        H5Dclose(*set);
        *set = -1;
    }
    return st;
}

fn_status fn_h5_check_floats(hid_t loc, const char *where, const char *name, int rank,
                             const long long *dims)
{
    hid_t set = -1;
    FN_TRY(open_floats(loc, where, name, rank, dims, &set));
    H5Dclose(set);
    return FN_OK;
}

fn_status fn_h5_get_floats(hid_t loc, const char *where, const char *name, float *data, int rank,
                           const long long *dims)
{
    hid_t set = -1;
    FN_TRY(open_floats(loc, where, name, rank, dims, &set));
    fn_status st = FN_OK;
    if (H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        st = fn_h5_read_fail(set, FN_ERR_FORMAT, "%s: cannot read dataset '%s'", where, name);
    H5Dclose(set);
    FN_TRY(st);
    /* fusenet never writes a non-finite value, so one means a damaged file. */
    char at[64];
    const char *what = "";
    first_non_finite(data, rank, dims, at, sizeof at, &what);
    if (at[0])
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' holds %s at %s", where, name, what, at);
    return FN_OK;
}

/* --- listing ------------------------------------------------------------ */

typedef struct name_list {
    char *buf;
    size_t cap, len;
    int count;
} name_list;

enum { LISTED = 12 };

static herr_t add_name(hid_t group, const char *name, const H5L_info_t *info, void *arg)
{
    (void)group;
    (void)info;
    name_list *l = arg;
    const int n = snprintf(l->len < l->cap ? l->buf + l->len : NULL,
                           l->len < l->cap ? l->cap - l->len : 0, "%s'%s'",
                           l->count ? ", " : "", l->count < LISTED ? name : "...");
    l->len += n > 0 ? (size_t)n : 0;
    return ++l->count > LISTED; /* stop after "..." */
}

void fn_h5_root_names(hid_t file, char *buf, size_t cap)
{
    name_list l = {buf, cap, 0, 0};
    if (cap)
        buf[0] = '\0';
    hsize_t at = 0;
    H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &at, add_name, &l);
    H5Eclear2(H5E_DEFAULT);
}
