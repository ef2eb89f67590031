/* h5_write.h — writing small HDF5 data sets for the tests that build their
 * own files with the HDF5 C API. Fails the test on any error. Include
 * after <cmocka.h>. */
#ifndef FN_TEST_H5_WRITE_H
#define FN_TEST_H5_WRITE_H

#include <hdf5.h>

/* Dataset `name` of file_type, rank 1 ([d0]) or 2 ([d0, d1]), written from
 * data in mem_type (nothing written when it has no element). */
void h5_put(hid_t file, const char *name, hid_t file_type, hid_t mem_type, int rank, hsize_t d0,
            hsize_t d1, const void *data);

#endif
