/* make_synthetic.c — writes a synthetic training set for the benchmark scripts:
 * X float32 [rows, cols] uniform in [-1, 1) and y int32 [rows] uniform in
 * [0, classes), from a fixed xorshift seed, written 1024 rows at a time
 * into a new temporary of this process ("out.h5.<pid>.tmp", created
 * exclusively) that is renamed over out.h5 once whole, and removed on
 * failure. Built and run by scripts/synthetic_set.sh; not part of the
 * library.
 *
 *   make_synthetic out.h5 rows cols classes */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { CHUNK_ROWS = 1024 };

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int write_rows(hid_t set, hid_t type, int rank, hsize_t row0, hsize_t rows, hsize_t cols,
                      const void *buf)
{
    hsize_t start[2] = {row0, 0}, count[2] = {rows, cols};
    hid_t file_space = H5Dget_space(set);
    hid_t mem_space = H5Screate_simple(rank, count, NULL);
    int ok = H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
             H5Dwrite(set, type, mem_space, file_space, H5P_DEFAULT, buf) >= 0;
    H5Sclose(mem_space);
    H5Sclose(file_space);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: make_synthetic out.h5 rows cols classes\n");
        return 2;
    }
    hsize_t rows = strtoull(argv[2], NULL, 10), cols = strtoull(argv[3], NULL, 10);
    int classes = atoi(argv[4]);
    if (!rows || !cols || classes < 1) {
        fprintf(stderr, "make_synthetic: rows, cols and classes must be positive\n");
        return 2;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", argv[1], (long)getpid());
    hid_t file = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {rows, cols};
    hid_t xspace = H5Screate_simple(2, dims, NULL), yspace = H5Screate_simple(1, dims, NULL);
    hid_t x = H5Dcreate2(file, "X", H5T_IEEE_F32LE, xspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t y = H5Dcreate2(file, "y", H5T_STD_I32LE, yspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    float *xb = malloc(sizeof *xb * CHUNK_ROWS * cols);
    int32_t *yb = malloc(sizeof *yb * CHUNK_ROWS);
    if (file < 0 || x < 0 || y < 0 || !xb || !yb) {
        fprintf(stderr, "make_synthetic: cannot create %s\n", tmp);
        if (file >= 0)
            remove(tmp);
        return 1;
    }
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (hsize_t r0 = 0; r0 < rows; r0 += CHUNK_ROWS) {
        hsize_t n = rows - r0 < CHUNK_ROWS ? rows - r0 : CHUNK_ROWS;
        for (hsize_t i = 0; i < n * cols; i++)
            xb[i] = (float)((double)(next(&s) >> 11) * 0x1.0p-52 - 1.0);
        for (hsize_t i = 0; i < n; i++)
            yb[i] = (int32_t)(next(&s) % (uint64_t)classes);
        if (!write_rows(x, H5T_NATIVE_FLOAT, 2, r0, n, cols, xb) ||
            !write_rows(y, H5T_NATIVE_INT32, 1, r0, n, 1, yb)) {
            fprintf(stderr, "make_synthetic: cannot write %s\n", tmp);
            remove(tmp);
            return 1;
        }
    }
    free(xb);
    free(yb);
    H5Dclose(x);
    H5Dclose(y);
    H5Sclose(xspace);
    H5Sclose(yspace);
    if (H5Fclose(file) < 0 || rename(tmp, argv[1]) != 0) {
        fprintf(stderr, "make_synthetic: cannot write %s\n", argv[1]);
        remove(tmp);
        return 1;
    }
    return 0;
}
