/* h5_write.h — writing small HDF5 data sets and attributes for the tests
 * that build or damage their own files with the HDF5 C API. Fails the test
 * on any error. Include after <cmocka.h>. */
#ifndef FN_TEST_H5_WRITE_H
#define FN_TEST_H5_WRITE_H

#include <hdf5.h>

/* Dataset `name` of file_type, rank 1 ([d0]) or 2 ([d0, d1]), written from
 * data in mem_type (nothing written when it has no element). */
void h5_put(hid_t file, const char *name, hid_t file_type, hid_t mem_type, int rank, hsize_t d0,
            hsize_t d1, const void *data);

/* A new file at path (replaced if there) holding the set "X" [rows, in],
 * float64 from x, and "y" [rows] of y_file_type from y in y_mem_type. */
void h5_write_xy(const char *path, const double *x, hsize_t rows, hsize_t in, hid_t y_file_type,
                 hid_t y_mem_type, const void *y);

/* Attribute `name` of obj (a file, group or data set), scalar, of
 * file_type, written from *value in mem_type; one already there is
 * replaced. */
void h5_set_attr(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *value);

/* Rewrites data set `name` [rows, cols] of the file at path as fusenet
 * writes it (float32 chunks of one row, Fletcher-32) with row `skip`'s
 * chunk never written: a file damaged as a crash mid-write leaves it. */
void h5_drop_chunk(const char *path, const char *name, hsize_t skip);

#endif
