/* outputs.c — the predictions file of outputs.h, through the atomic
 * temporary-and-rename of atomic_file.h, under a name of this process
 * (fn_h5_create_tmp, fn_h5_commit): predict holds no lock on the
 * directory, and two predicts to one path must not share a temporary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/outputs.h"
#include "store/h5util.h"

struct fn_outputs {
    hid_t file, set;
    hid_t classes; /* -1: none */
    int64_t rows;
    char *tmp;  /* the temporary's name; NULL once committed */
    char *path; /* the final name */
    int cols;
};

static fn_status create_set(fn_outputs *o, int64_t rows)
{
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)o->cols};
    hid_t space = H5Screate_simple(2, dims, NULL);
    o->set = space < 0 ? -1
                       : H5Dcreate2(o->file, "outputs", H5T_IEEE_F32LE, space, H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT);
    if (space >= 0)
        H5Sclose(space);
    if (o->set < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot create dataset 'outputs'", o->tmp);
    return FN_OK;
}

fn_status fn_outputs_create(fn_outputs **out, const char *path, int64_t rows, int cols)
{
    *out = NULL;
    fn_outputs *o = calloc(1, sizeof *o);
    if (!o)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    *o = (fn_outputs){.file = -1, .set = -1, .classes = -1, .rows = rows, .cols = cols};
    *out = o;
    size_t n = strlen(path) + 1;
    o->path = malloc(n);
    if (!o->path)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    memcpy(o->path, path, n);
    FN_TRY(fn_h5_create_tmp(&o->file, path, &o->tmp));
    return create_set(o, rows);
}

/* Rows [row0, row0 + n) of `set` (cols 0: a rank-1 set) from host memory,
 * as `what` in messages. */
static fn_status write_rows(const fn_outputs *o, hid_t set, const char *what, hid_t mem_type,
                            int64_t row0, int n, int cols, const void *host)
{
    int rank = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)row0, 0}, count[2] = {(hsize_t)n, (hsize_t)cols};
    hid_t file_space = H5Dget_space(set);
    hid_t mem_space = H5Screate_simple(rank, count, NULL);
    herr_t r = -1;
    if (file_space >= 0 && mem_space >= 0 &&
        H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0)
        r = H5Dwrite(set, mem_type, mem_space, file_space, H5P_DEFAULT, host);
    /* Before the closes, which would clear HDF5's reason (a full disk). */
    fn_status st = r < 0 ? fn_h5_fail(FN_ERR_IO, "%s: cannot write rows of '%s'", o->tmp, what)
                         : FN_OK;
    if (file_space >= 0)
        H5Sclose(file_space);
    if (mem_space >= 0)
        H5Sclose(mem_space);
    return st;
}

/* A non-finite output is refused as it comes, so the file is never
 * renamed into place with one. */
static fn_status check_finite(const fn_outputs *o, int64_t row0, int n, const float *host)
{
    const size_t count = (size_t)n * (size_t)o->cols;
    for (size_t i = 0; i < count; i++)
        if (!isfinite(host[i]))
            return fn_fail(FN_ERR_NUMERIC,
                           "%s: output row %lld column %d is %s: the network gives a non-finite "
                           "output for that input row (its values or the input standardisation "
                           "overflow); nothing written",
                           o->path, (long long)(row0 + (int64_t)(i / (size_t)o->cols)),
                           (int)(i % (size_t)o->cols),
                           isnan(host[i]) ? "nan" : host[i] > 0 ? "inf" : "-inf");
    return FN_OK;
}

fn_status fn_outputs_write(fn_outputs *o, int64_t row0, int n, const float *host)
{
    FN_TRY(check_finite(o, row0, n, host));
    return write_rows(o, o->set, "outputs", H5T_NATIVE_FLOAT, row0, n, o->cols, host);
}

fn_status fn_outputs_add_classes(fn_outputs *o)
{
    hsize_t dims[1] = {(hsize_t)o->rows};
    hid_t space = H5Screate_simple(1, dims, NULL);
    o->classes = space < 0 ? -1
                           : H5Dcreate2(o->file, "classes", H5T_STD_I32LE, space, H5P_DEFAULT,
                                        H5P_DEFAULT, H5P_DEFAULT);
    if (space >= 0)
        H5Sclose(space);
    if (o->classes < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot create dataset 'classes'", o->tmp);
    return FN_OK;
}

fn_status fn_outputs_write_classes(fn_outputs *o, int64_t row0, int n, const int32_t *classes)
{
    if (o->classes < 0)
        return fn_fail(FN_ERR_INVALID, "%s: no dataset 'classes' (fn_outputs_add_classes)",
                       o->tmp);
    return write_rows(o, o->classes, "classes", H5T_NATIVE_INT32, row0, n, 0, classes);
}

fn_status fn_outputs_commit(fn_outputs *o)
{
    H5Dclose(o->set);
    o->set = -1;
    if (o->classes >= 0)
        H5Dclose(o->classes);
    o->classes = -1;
    fn_status st = fn_h5_commit(o->file, o->tmp, o->path);
    o->file = -1;
    return st;
}

void fn_outputs_destroy(fn_outputs *o)
{
    if (!o)
        return;
    if (o->set >= 0)
        H5Dclose(o->set);
    if (o->classes >= 0)
        H5Dclose(o->classes);
    if (o->file >= 0)
        fn_h5_abandon(o->file, o->tmp);
    free(o->tmp);
    free(o->path);
    free(o);
}
