/* h5util.h (private) — the HDF5 plumbing shared by data.c, weights.c,
 * checkpoint.c and outputs.c (HDF5's messages as fn_fail text: h5_error.h):
 * files opened for reading or written atomically (atomic_file.h), and
 * attribute and dataset helpers whose errors name the file and object. */
#ifndef FUSENET_SRC_H5UTIL_H
#define FUSENET_SRC_H5UTIL_H

#include <hdf5.h>
#include <stddef.h>

#include "fusenet/status.h"
#include "store/h5_error.h"
/* Every loader of an HDF5 file reads it under the probe first, so its
 * declarations come with these. */
#include "store/h5_probe.h"

/* "float32", "int64", "uint8", "string", ... */
void fn_h5_type_name(hid_t type, char *buf, size_t n);

/* Opens an existing regular file read-only (regular_file.h: anything else
 * is refused at once, saying what it is); errors name the path. */
fn_status fn_h5_open_read(hid_t *file, const char *path);

/* The atomic write of an HDF5 file (atomic_file.h): creates a temporary
 * of this process, "<path>.<pid>-<n>.tmp" (fn_atomic_prepare),
 * exclusively; *tmp is malloc'ed. */
fn_status fn_h5_create_tmp(hid_t *file, const char *path, char **tmp);
/* Closes file, fsyncs the temporary, renames it over path and fsyncs the
 * directory. On failure the temporary is removed and path is untouched. */
fn_status fn_h5_commit(hid_t file, const char *tmp, const char *path);
/* Closes and removes an unfinished temporary. */
void fn_h5_abandon(hid_t file, const char *tmp);
/* The end of a file written through fn_h5_create_tmp, st its writing's
 * status: committed over path when FN_OK, else abandoned; frees tmp either
 * way. Returns st, or the commit's failure. */
fn_status fn_h5_finish(hid_t file, char *tmp, const char *path, fn_status st);

/* Attributes of obj; `where` names obj in messages ("w.h5: group 'layer0'"). */
fn_status fn_h5_put_string(hid_t obj, const char *where, const char *name, const char *value);
fn_status fn_h5_put_int(hid_t obj, const char *where, const char *name, long long value);
fn_status fn_h5_put_double(hid_t obj, const char *where, const char *name, double value);
/* An attribute of n doubles (a one-dimensional float64 array). */
fn_status fn_h5_put_doubles(hid_t obj, const char *where, const char *name, const double *values,
                            int n);
/* *value is malloc'ed; both fixed and variable length strings are read. */
fn_status fn_h5_get_string(hid_t obj, const char *where, const char *name, char **value);
fn_status fn_h5_get_int(hid_t obj, const char *where, const char *name, long long *value);
fn_status fn_h5_get_double(hid_t obj, const char *where, const char *name, double *value);
/* Reads an attribute of exactly n numbers as doubles; FN_ERR_FORMAT naming
 * it for another count. */
fn_status fn_h5_get_doubles(hid_t obj, const char *where, const char *name, double *values,
                            int n);

/* The names in the file's root group, "'X', 'y'", in HDF5's name order,
 * into buf (snprintf's rules; "..." after the first dozen); "" when it
 * holds none. For a message about a dataset the file lacks. Only the
 * root's links are read, no object opened: on a damaged file it reads no
 * more than the lookup that failed. */
void fn_h5_root_names(hid_t file, char *buf, size_t cap);

/* A float32 dataset of rank 1 or 2 (dims[0] only when rank is 1), chunked
 * with a Fletcher-32 checksum per chunk. Refuses
 * (FN_ERR_NUMERIC) to write a non-finite value: a file with a NaN is never a
 * good one to keep. */
fn_status fn_h5_put_floats(hid_t loc, const char *where, const char *name, const float *data,
                           int rank, const long long *dims);
/* Reads a float32 dataset that must have exactly this rank and these dims
 * and hold finite values only (a weights file's or checkpoint's). */
fn_status fn_h5_get_floats(hid_t loc, const char *where, const char *name, float *data, int rank,
                           const long long *dims);
/* fn_h5_get_floats' checks without the read: the dataset is there, float32
 * of this rank and these dims, and its storage holds every value
 * (h5_storage.h). For sizes a file claims, before memory of that size is
 * allocated. */
fn_status fn_h5_check_floats(hid_t loc, const char *where, const char *name, int rank,
                             const long long *dims);

#endif
