/* data_memory.c — a memory set (memory_set.h) as the source of a data set
 * (data_impl.h): its shapes and labels checked against the options when
 * opened, each slab a view of the set's own copies (no copy per slab, no
 * buffers). Slabs, shuffle and batches are data.c's, as for a file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "data/data_impl.h"

static fn_status memory_load(fn_data *d, int64_t row0, int64_t rows)
{
    (void)rows; /* the whole set was checked when it was made and opened */
    const fn_memory_set *m = d->memory;
    d->view_x = fn_memory_set_input_data(m) + (size_t)row0 * (size_t)d->in;
    d->view_l = d->targets && d->labels ? fn_memory_set_label_data(m) + row0 : NULL;
    d->view_t = d->targets && !d->labels
                    ? fn_memory_set_target_data(m) + (size_t)row0 * (size_t)d->out
                    : NULL;
    const float *w = d->targets ? fn_memory_set_weight_data(m) : NULL;
    d->view_w = w ? w + row0 : NULL;
    return FN_OK;
}

static size_t memory_held_bytes(const fn_data *d)
{
    return fn_memory_set_bytes(d->memory);
}

static const fn_data_source_ops memory_source = {
    .kind = "memory set",
    .load = memory_load,
    .buffered = 0,
    .held_bytes = memory_held_bytes,
};

/* The targets the options ask for against those the set holds. */
static fn_status check_targets(fn_data *d)
{
    const fn_memory_set *m = d->memory;
    const int has_labels = fn_memory_set_has_labels(m), cols = fn_memory_set_target_columns(m);
    if (!has_labels && cols == 0)
        return fn_fail(FN_ERR_INVALID, "%s holds inputs alone; training and evaluation need "
                       "labels (fn_memory_set_labels) or target values (fn_memory_set_values)",
                       d->path);
    if (d->by_rank)
        d->labels = has_labels;
    if (d->labels && !has_labels)
        return fn_fail(FN_ERR_INVALID, "%s holds float targets of %d columns; cross_entropy needs "
                       "integer class labels (fn_memory_set_labels), or use loss = mse",
                       d->path, cols);
    if (!d->labels && has_labels)
        return fn_fail(FN_ERR_INVALID, "%s holds class labels; %s needs float targets [N, out] "
                       "(fn_memory_set_values), or use loss = cross_entropy", d->path,
                       fn_data_loss(d));
    if (!d->labels && cols != d->out)
        return fn_fail(FN_ERR_INVALID, "%s has %d target columns, expected %d (the model's "
                       "outputs)", d->path, cols, d->out);
    return FN_OK;
}

static fn_status check_labels(const fn_data *d)
{
    const int32_t *l = fn_memory_set_label_data(d->memory);
    for (int64_t i = 0; i < d->n; i++)
        if (l[i] < 0 || l[i] >= d->out)
            return fn_fail(FN_ERR_INVALID, "%s: row %lld holds label %d, expected 0 to %d (the "
                           "model has %d outputs)", d->path, (long long)i, (int)l[i], d->out - 1,
                           d->out);
    return FN_OK;
}

static fn_status open_memory(fn_data *d, const fn_data_options *opt)
{
    const fn_memory_set *m = d->memory;
    d->n = fn_memory_set_rows(m);
    d->in = fn_memory_set_in_features(m);
    snprintf(d->xtype, sizeof d->xtype, "float32");
    snprintf(d->ttype, sizeof d->ttype, fn_memory_set_has_labels(m) ? "int32" : "float32");
    if (opt->in_features && d->in != opt->in_features)
        return fn_fail(FN_ERR_INVALID, "%s has %d input columns, expected %d", d->path, d->in,
                       opt->in_features);
    if (d->targets) {
        FN_TRY(check_targets(d));
        if (d->labels)
            FN_TRY(check_labels(d));
        else
            FN_TRY(fn_data_check_unit(d, FN_ERR_INVALID, "targets", fn_memory_set_target_data(m),
                                      d->n, 0));
    }
    FN_TRY(fn_data_plan(d, opt->memory_budget));
    return fn_data_check_slabs(d, NULL); /* views only: nothing is copied */
}

fn_status fn_data_open_memory(fn_data **data, const fn_memory_set *set,
                              const fn_data_options *opt)
{
    *data = NULL;
    if (!set || !opt)
        return fn_fail(FN_ERR_INVALID, "fn_data_open_memory: the %s NULL",
                       !set ? "memory set is" : "options are");
    char where[300];
    snprintf(where, sizeof where, "memory set '%s'", fn_memory_set_name(set));
    FN_TRY(fn_data_begin(data, &memory_source, where, opt));
    (*data)->memory = set;
    fn_status st = open_memory(*data, opt);
    if (st != FN_OK) {
        fn_data_close(*data);
        *data = NULL;
    }
    return st;
}
