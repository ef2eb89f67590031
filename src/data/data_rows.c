/* data_rows.c — rows [row0, row0 + rows) of an HDF5 dataset into memory of
 * a given type, HDF5 converting (data_impl.h's fn_data_read_rows): the one
 * read of a set's slabs and of its targets' other forms. */
#include "data/data_impl.h"
#include "store/h5_storage.h"
#include "store/h5util.h"

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
