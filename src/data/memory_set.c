/* memory_set.c — a data set copied from a program's arrays (memory_set.h):
 * the arguments and every value checked, then copied. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/memory_set.h"

/* As many columns as an HDF5 set may have (data.c). */
enum { MAX_COLUMNS = 1 << 24 };

struct fn_memory_set {
    char *name;
    int64_t rows;
    int in, out;      /* out: target columns, 0 without float targets */
    float *x;         /* [rows, in] */
    int32_t *labels;  /* [rows], or NULL */
    float *targets;   /* [rows, out], or NULL */
    float *weights;   /* [rows] sample weights, or NULL */
};

typedef struct arrays {
    const char *call, *name;
    const float *x;
    int64_t rows;
    int in;
    const int32_t *labels;
    const float *targets;
    int out;
} arrays;

static fn_status check_columns(const arrays *a, const char *what, int cols)
{
    if (cols < 1 || cols > MAX_COLUMNS)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': %d %s columns, expected 1 to %d",
                       a->call, a->name, cols, what, MAX_COLUMNS);
    if ((uint64_t)a->rows > SIZE_MAX / sizeof(float) / (uint64_t)cols)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': %lld rows of %d %s columns are "
                       "more than this machine can address", a->call, a->name,
                       (long long)a->rows, cols, what);
    return FN_OK;
}

static fn_status check_shape(const arrays *a)
{
    if (!a->x)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': the inputs are NULL", a->call,
                       a->name);
    if (a->rows < 1)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s' has %lld rows, expected at least 1",
                       a->call, a->name, (long long)a->rows);
    FN_TRY(check_columns(a, "input", a->in));
    if (a->out)
        FN_TRY(check_columns(a, "target", a->out));
    return FN_OK;
}

/* The first value that is not finite, named as data.c names a file's. */
static fn_status check_finite(const arrays *a, const char *what, const float *v, int cols)
{
    const size_t n = (size_t)a->rows * (size_t)cols;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': %s row %lld column %lld is %s",
                           a->call, a->name, what, (long long)(i / (size_t)cols),
                           (long long)(i % (size_t)cols), isnan(v[i]) ? "NaN" : "infinite");
    return FN_OK;
}

static fn_status copy_of(void **dst, const void *src, size_t bytes, const arrays *a)
{
    *dst = malloc(bytes);
    if (!*dst)
        return fn_fail(FN_ERR_NOMEM, "%s: memory set '%s': out of host memory for %zu bytes",
                       a->call, a->name, bytes);
    memcpy(*dst, src, bytes);
    return FN_OK;
}

static fn_status fill(fn_memory_set *s, const arrays *a)
{
    FN_TRY(check_shape(a));
    FN_TRY(check_finite(a, "inputs", a->x, a->in));
    if (a->targets)
        FN_TRY(check_finite(a, "targets", a->targets, a->out));
    if (!(s->name = strdup(a->name)))
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    s->rows = a->rows;
    s->in = a->in;
    s->out = a->out;
    const size_t rows = (size_t)a->rows;
    FN_TRY(copy_of((void **)&s->x, a->x, rows * (size_t)a->in * sizeof(float), a));
    if (a->labels)
        FN_TRY(copy_of((void **)&s->labels, a->labels, rows * sizeof(int32_t), a));
    if (a->targets)
        FN_TRY(copy_of((void **)&s->targets, a->targets, rows * (size_t)a->out * sizeof(float), a));
    return FN_OK;
}

static fn_status make(fn_memory_set **set, arrays a)
{
    if (!set)
        return fn_fail(FN_ERR_INVALID, "%s: the set's pointer is NULL", a.call);
    *set = NULL;
    a.name = a.name ? a.name : "memory";
    fn_memory_set *s = calloc(1, sizeof *s);
    if (!s)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    fn_status st = fill(s, &a);
    if (st != FN_OK) {
        fn_memory_set_destroy(s);
        return st;
    }
    *set = s;
    return FN_OK;
}

fn_status fn_memory_set_labels(fn_memory_set **set, const char *name, const float *inputs,
                               int64_t rows, int in, const int32_t *labels)
{
    const char *call = "fn_memory_set_labels";
    if (!labels)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': the labels are NULL", call,
                       name ? name : "memory");
    return make(set, (arrays){.call = call, .name = name, .x = inputs, .rows = rows, .in = in,
                              .labels = labels});
}

fn_status fn_memory_set_values(fn_memory_set **set, const char *name, const float *inputs,
                               int64_t rows, int in, const float *targets, int out)
{
    const char *call = "fn_memory_set_values";
    if (!targets)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': the targets are NULL", call,
                       name ? name : "memory");
    if (out < 1)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': %d target columns, expected 1 to %d",
                       call, name ? name : "memory", out, MAX_COLUMNS);
    return make(set, (arrays){.call = call, .name = name, .x = inputs, .rows = rows, .in = in,
                              .targets = targets, .out = out});
}

fn_status fn_memory_set_inputs(fn_memory_set **set, const char *name, const float *inputs,
                               int64_t rows, int in)
{
    return make(set, (arrays){.call = "fn_memory_set_inputs", .name = name, .x = inputs,
                              .rows = rows, .in = in});
}

/* Each weight finite and >= 0, their sum above 0 (a mean over rows that
 * all weigh 0 is 0/0). */
static fn_status check_weights(const fn_memory_set *s, const char *call, const float *w)
{
    double sum = 0.0;
    for (int64_t i = 0; i < s->rows; i++) {
        if (!isfinite(w[i]) || w[i] < 0.0f)
            return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': sample weight (sample_weight) "
                           "of row %lld is %g: expected a finite number >= 0", call, s->name,
                           (long long)i, (double)w[i]);
        sum += w[i];
    }
    if (!(sum > 0.0))
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s': every sample weight "
                       "(sample_weight) is 0, so the weighted loss sum(w l) / sum(w) is 0/0; "
                       "give at least one row a weight above 0", call, s->name);
    return FN_OK;
}

fn_status fn_memory_set_weights(fn_memory_set *s, const float *weights)
{
    const char *call = "fn_memory_set_weights";
    if (!s || !weights)
        return fn_fail(FN_ERR_INVALID, "%s: the %s NULL", call, !s ? "set is" : "weights are");
    if (!s->labels && !s->targets)
        return fn_fail(FN_ERR_INVALID, "%s: memory set '%s' holds inputs alone; sample weights "
                       "need labels or target values", call, s->name);
    FN_TRY(check_weights(s, call, weights));
    float *copy = NULL;
    const arrays a = {.call = call, .name = s->name};
    FN_TRY(copy_of((void **)&copy, weights, (size_t)s->rows * sizeof(float), &a));
    free(s->weights);
    s->weights = copy;
    return FN_OK;
}

void fn_memory_set_destroy(fn_memory_set *s)
{
    if (!s)
        return;
    free(s->name);
    free(s->x);
    free(s->labels);
    free(s->targets);
    free(s->weights);
    free(s);
}

const char *fn_memory_set_name(const fn_memory_set *s) { return s->name; }
int64_t fn_memory_set_rows(const fn_memory_set *s) { return s->rows; }
int fn_memory_set_in_features(const fn_memory_set *s) { return s->in; }
int fn_memory_set_target_columns(const fn_memory_set *s) { return s->out; }
int fn_memory_set_has_labels(const fn_memory_set *s) { return s->labels != NULL; }
const float *fn_memory_set_input_data(const fn_memory_set *s) { return s->x; }
const int32_t *fn_memory_set_label_data(const fn_memory_set *s) { return s->labels; }
const float *fn_memory_set_target_data(const fn_memory_set *s) { return s->targets; }
const float *fn_memory_set_weight_data(const fn_memory_set *s) { return s->weights; }

size_t fn_memory_set_bytes(const fn_memory_set *s)
{
    if (!s)
        return 0;
    const size_t rows = (size_t)s->rows;
    return rows * (size_t)s->in * sizeof(float) + (s->labels ? rows * sizeof(int32_t) : 0) +
           rows * (size_t)s->out * sizeof(float) + (s->weights ? rows * sizeof(float) : 0);
}
