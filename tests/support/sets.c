/* sets.c — the trainer tests' sets (sets.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "check.h"
#include "h5_write.h"
#include "program.h"
#include "sets.h"

void write_set(const char *path, int rows, uint64_t seed, const set_shape *shape)
{
    const int cols = shape->cols, values = shape->values;
    float *x = chk_alloc_float((size_t)cols * (size_t)rows);
    float *t = values > 0 ? chk_alloc_float((size_t)values * (size_t)rows) : NULL;
    int32_t *y = calloc((size_t)rows, sizeof *y);
    assert_non_null(y);
    chk_rng rng = chk_rng_seed(seed);
    for (int i = 0; i < rows; i++) {
        float *row = x + (size_t)cols * (size_t)i;
        for (int j = 0; j < cols; j++)
            row[j] = (float)chk_uniform(&rng, -1, 1);
        y[i] = shape->label(row);
        for (int j = 0; j < values; j++)
            t[(size_t)values * (size_t)i + (size_t)j] = shape->value(row, j);
    }
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "X", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, 2, (hsize_t)rows, (hsize_t)cols, x);
    h5_put(file, "y", H5T_NATIVE_INT32, H5T_NATIVE_INT32, 1, (hsize_t)rows, 1, y);
    if (values > 0)
        h5_put(file, "t", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, 2, (hsize_t)rows, (hsize_t)values,
               t);
    H5Fclose(file);
    free(x);
    free(t);
    free(y);
}

set_file *set_file_new(const char *prefix)
{
    set_file *f = calloc(1, sizeof *f);
    assert_non_null(f);
    program_temp_dir(f->dir, sizeof f->dir, prefix);
    snprintf(f->path, sizeof f->path, "%s/set.h5", f->dir);
    assert_int_equal(fn_context_create(&f->ctx, FN_CPU, -1, FN_MATH_FP32), FN_OK);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return f;
}

void set_file_free(set_file *f)
{
    if (!f)
        return;
    fn_context_destroy(f->ctx);
    program_remove_dir(f->dir);
    free(f);
}

int set_file_setup(void **state)
{
    *state = set_file_new("fn_set_");
    return 0;
}

int set_file_teardown(void **state)
{
    set_file_free(*state);
    return 0;
}

hid_t set_file_create(const set_file *f)
{
    hid_t file = H5Fcreate(f->path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    return file;
}
