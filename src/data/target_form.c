/* target_form.c — targets stored the way scikit-learn and NumPy users
 * store them, read as the loss needs them (data_impl.h's fn_target_form):
 * values [N] for one mse output read as [N, 1]; class labels [N, 1] read
 * as [N]; labels of a float type, every one a whole number; one-hot rows
 * [N, classes]. Each has a one-line description for the program to show
 * (fn_data_reading). A form that could mean two things stays an error
 * naming the shapes that are read. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "data/data_impl.h"

/* The form of labels (cross_entropy) of this rank, columns and class. */
static fn_status choose_labels(fn_data *d, int rank, const hsize_t *dims, int is_float)
{
    if (rank == 1) {
        d->tform = is_float ? FN_FORM_WHOLE_FLOATS : FN_FORM_AS_DECLARED;
        return FN_OK;
    }
    if (rank == 2 && dims[1] == 1) {
        d->tform = is_float ? FN_FORM_WHOLE_FLOATS : FN_FORM_LABEL_COLUMN;
        d->tcols = 1;
        return FN_OK;
    }
    if (rank == 2 && d->out > 1 && dims[1] == (hsize_t)d->out) {
        d->tform = FN_FORM_ONE_HOT;
        d->tcols = d->out;
        return FN_OK;
    }
    return fn_fail(FN_ERR_FORMAT,
                   "%s: dataset '%s' has rank %d%s, expected class labels for cross_entropy: "
                   "[N] or [N, 1] labels, or one-hot rows [N, %d] (the model's outputs)",
                   d->path, d->targets, rank, rank == 2 ? " with several columns" : "", d->out);
}

fn_status fn_target_form_choose(fn_data *d, int rank, const hsize_t *dims, int is_float)
{
    d->tform = FN_FORM_AS_DECLARED;
    d->tcols = rank == 2 ? (int)dims[1] : 0;
    /* predict --targets takes rank 1 as labels, but floats [N] for a network
     * of one output are that output's values. */
    if (d->by_rank && rank == 1 && is_float && d->out == 1) {
        d->labels = 0;
        d->tform = FN_FORM_VALUES_1D;
    }
    if (d->by_rank)
        return FN_OK;
    if (d->labels)
        return choose_labels(d, rank, dims, is_float);
    if (rank == 1 && d->out == 1)
        d->tform = FN_FORM_VALUES_1D;
    else if (rank == 1)
        return fn_fail(FN_ERR_FORMAT,
                       "%s: dataset '%s' has rank 1 ([N]), but the model has %d outputs: %s "
                       "takes values [N, %d]", d->path, d->targets, d->out, fn_data_loss(d),
                       d->out);
    return FN_OK;
}

int fn_target_form_rank(const fn_data *d)
{
    switch (d->tform) {
    case FN_FORM_AS_DECLARED: return d->labels ? 1 : 2;
    case FN_FORM_VALUES_1D: return 1;
    case FN_FORM_LABEL_COLUMN:
    case FN_FORM_ONE_HOT: return 2;
    case FN_FORM_WHOLE_FLOATS: return d->tcols ? 2 : 1;
    }
    return 0;
}

void fn_target_form_describe(const fn_data *d, char *text, size_t cap)
{
    const long long n = (long long)d->n;
    text[0] = '\0';
    switch (d->tform) {
    case FN_FORM_AS_DECLARED: return;
    case FN_FORM_VALUES_1D:
        snprintf(text, cap, "%s: dataset '%s' [%lld] %s read as [%lld, 1], the %s targets of "
                 "the model's one output", d->path, d->targets, n, d->ttype, n, fn_data_loss(d));
        return;
    case FN_FORM_LABEL_COLUMN:
        snprintf(text, cap, "%s: dataset '%s' [%lld, 1] %s read as class labels [%lld]",
                 d->path, d->targets, n, d->ttype, n);
        return;
    case FN_FORM_WHOLE_FLOATS:
        snprintf(text, cap, "%s: dataset '%s' [%lld%s] %s read as integer class labels [%lld] "
                 "(every value is a whole number)", d->path, d->targets, n,
                 d->tcols ? ", 1" : "", d->ttype, n);
        return;
    case FN_FORM_ONE_HOT:
        snprintf(text, cap, "%s: dataset '%s' [%lld, %d] %s read as class labels [%lld] (every "
                 "row is one-hot)", d->path, d->targets, n, d->tcols, d->ttype, n);
        return;
    }
}

/* Float labels: each a whole number in [0, 2^31). */
static fn_status whole_labels(const fn_data *d, const double *v, int64_t rows, int64_t row0)
{
    for (int64_t i = 0; i < rows; i++) {
        if (!(v[i] == floor(v[i]) && fabs(v[i]) < 2147483648.0))
            return fn_fail(FN_ERR_FORMAT,
                           "%s: dataset '%s' row %lld holds %g: float labels for cross_entropy "
                           "must be whole numbers (class indices); for regression set [train] "
                           "loss = mse", d->path, d->targets, (long long)(row0 + i), v[i]);
        d->slab_l[i] = (int32_t)v[i];
    }
    return FN_OK;
}

/* One-hot rows: a single 1, zeros elsewhere; the label is the 1's column. */
static fn_status one_hot_labels(const fn_data *d, const double *v, int64_t rows, int64_t row0)
{
    const int c = d->tcols;
    for (int64_t i = 0; i < rows; i++) {
        int hot = -1, ok = 1;
        for (int j = 0; j < c && ok; j++) {
            const double x = v[i * c + j];
            if (x == 1.0 && hot < 0)
                hot = j;
            else if (x != 0.0)
                ok = 0;
        }
        if (!ok || hot < 0)
            return fn_fail(FN_ERR_FORMAT,
                           "%s: dataset '%s' row %lld is not one-hot (rows [N, %d] for "
                           "cross_entropy must hold a single 1 and zeros); give class labels "
                           "[N] instead", d->path, d->targets, (long long)(row0 + i), c);
        d->slab_l[i] = hot;
    }
    return FN_OK;
}

fn_status fn_target_form_load(fn_data *d, int64_t row0, int64_t rows)
{
    const char *name = d->targets;
    switch (d->tform) {
    case FN_FORM_AS_DECLARED: break;
    case FN_FORM_VALUES_1D:
        return fn_data_read_rows(d, d->tset, name, H5T_NATIVE_FLOAT, d->slab_t, row0, rows, 0);
    case FN_FORM_LABEL_COLUMN:
        return fn_data_read_rows(d, d->tset, name, H5T_NATIVE_INT32, d->slab_l, row0, rows, 1);
    case FN_FORM_WHOLE_FLOATS:
    case FN_FORM_ONE_HOT: {
        const size_t cols = (size_t)(d->tcols ? d->tcols : 1);
        double *v = malloc((size_t)rows * cols * sizeof *v);
        if (!v)
            return fn_fail(FN_ERR_NOMEM, "%s: out of host memory for %lld rows of '%s'", d->path,
                           (long long)rows, name);
        fn_status st = fn_data_read_rows(d, d->tset, name, H5T_NATIVE_DOUBLE, v, row0, rows,
                                          d->tcols);
        if (st == FN_OK)
            st = d->tform == FN_FORM_ONE_HOT ? one_hot_labels(d, v, rows, row0)
                                             : whole_labels(d, v, rows, row0);
        free(v);
        return st;
    }
    }
    return fn_fail(FN_ERR_INVALID, "%s: unknown target form", d->path);
}

void fn_data_reading(const fn_data *d, char *text, size_t cap)
{
    if (cap)
        fn_target_form_describe(d, text, cap);
}
