/* h5_write.c — the HDF5 data-set writer of h5_write.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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

void h5_set_attr(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *value)
{
    if (H5Aexists(obj, name) > 0)
        assert_true(H5Adelete(obj, name) >= 0);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(attr >= 0);
    assert_true(H5Awrite(attr, mem_type, value) >= 0);
    H5Aclose(attr);
    H5Sclose(space);
}

void h5_drop_chunk(const char *path, const char *name, hsize_t skip)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    hid_t set = H5Dopen2(file, name, H5P_DEFAULT), space = H5Dget_space(set);
    hsize_t dims[2] = {0, 0};
    assert_int_equal(H5Sget_simple_extent_dims(space, dims, NULL), 2);
    float *values = malloc(dims[0] * dims[1] * sizeof(float));
    assert_non_null(values);
    assert_true(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0);
    H5Dclose(set);
    assert_true(H5Ldelete(file, name, H5P_DEFAULT) >= 0);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {1, dims[1]};
    assert_true(H5Pset_chunk(dcpl, 2, chunk) >= 0 && H5Pset_fletcher32(dcpl) >= 0);
    set = H5Dcreate2(file, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(set >= 0);
    hid_t row = H5Screate_simple(2, chunk, NULL);
    for (hsize_t r = 0; r < dims[0]; r++) {
        if (r == skip)
            continue;
        const hsize_t start[2] = {r, 0};
        assert_true(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, chunk, NULL) >= 0);
        assert_true(H5Dwrite(set, H5T_NATIVE_FLOAT, row, space, H5P_DEFAULT,
                             values + r * dims[1]) >= 0);
    }
    H5Sclose(row);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Dclose(set);
    H5Fclose(file);
    free(values);
}
