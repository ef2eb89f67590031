/* sets.h — the small classification (and regression) sets the trainer's
 * tests train on, one writer for all: inputs drawn uniform in [-1, 1)
 * (chk_uniform, row by row, column by column, from a seed), labels and
 * float targets computed from each row as the set's shape says. Include
 * after <cmocka.h>. */
#ifndef FN_TEST_SETS_H
#define FN_TEST_SETS_H

#include <hdf5.h>
#include <stdint.h>

#include "fusenet/device.h"

typedef struct set_shape {
    int cols;                            /* inputs per row: "X" [rows, cols], float32 */
    int32_t (*label)(const float *row);  /* "y" [rows], int32 */
    int values;                          /* > 0: "t" [rows, values], float32 (mse) */
    float (*value)(const float *row, int j);
} set_shape;

/* Writes the set of `rows` rows drawn from `seed` to path; fails the test
 * on any error. */
void write_set(const char *path, int rows, uint64_t seed, const set_shape *shape);

/* A test's folder for one set file: /tmp/<prefix>XXXXXX holding `path`
 * (<dir>/set.h5, not created), a CPU context, HDF5's printing off (the
 * tests read what the library says). Freed with everything in the folder. */
typedef struct set_file {
    char dir[64];
    char path[128];
    fn_context *ctx;
} set_file;

set_file *set_file_new(const char *prefix);
void set_file_free(set_file *f);
/* Creates (truncates) f->path for writing; fails the test when it cannot. */
hid_t set_file_create(const set_file *f);
/* The same as a cmocka setup and teardown: *state is the set_file. */
int set_file_setup(void **state);
int set_file_teardown(void **state);

#endif
