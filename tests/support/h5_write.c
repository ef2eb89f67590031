/* h5_write.c — the HDF5 data-set writer of h5_write.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "h5_write.h"

void h5_put(hid_t file, const char *name, hid_t file_type, hid_t mem_type, int rank, hsize_t d0,
            hsize_t d1, const void *data)
{
    hsize_t dims[2] = {d0, d1};
    hid_t space = H5Screate_simple(rank, dims, NULL);
    assert_true(space >= 0);
    hid_t set = H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(set >= 0);
    if (d0 * (rank > 1 ? d1 : 1) > 0)
        assert_true(H5Dwrite(set, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(set);
    H5Sclose(space);
}

void h5_write_xy(const char *path, const double *x, hsize_t rows, hsize_t in, hid_t y_file_type,
                 hid_t y_mem_type, const void *y)
{
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "X", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, rows, in, x);
    h5_put(file, "y", y_file_type, y_mem_type, 1, rows, 0, y);
    assert_true(H5Fclose(file) >= 0);
}
