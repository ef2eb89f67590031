/* input_norm.c — input standardisation (input_norm.h): the statistics from
 * a training set, the `/input_norm` group of weights files and checkpoints,
 * and the CPU path of the transform (the GPU's is
 * kernels/data/input_norm_cuda.cu). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/h5util.h"
#include "data/input_norm_impl.h"

enum { WHERE_CAP = 512 };

static fn_status check_values(int features, const float *mean, const float *std)
{
    for (int j = 0; j < features; j++) {
        if (!isfinite(mean[j]))
            return fn_fail(FN_ERR_INVALID, "input standardisation: mean of column %d is %g", j,
                           (double)mean[j]);
        if (!isfinite(std[j]) || !(std[j] > 0))
            return fn_fail(FN_ERR_INVALID,
                           "input standardisation: std of column %d is %g, expected > 0", j,
                           (double)std[j]);
    }
    return FN_OK;
}

static fn_status fill(fn_input_norm *n, const float *mean, const float *std)
{
    size_t bytes = (size_t)n->features * sizeof(float);
    n->mean = malloc(bytes);
    n->std = malloc(bytes);
    if (!n->mean || !n->std)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    memcpy(n->mean, mean, bytes);
    memcpy(n->std, std, bytes);
    if (fn_context_device(n->ctx) != FN_CUDA)
        return FN_OK;
    FN_TRY(fn_tensor_alloc(&n->dmean, 1, n->features, FN_CUDA));
    FN_TRY(fn_tensor_alloc(&n->dstd, 1, n->features, FN_CUDA));
    FN_TRY(fn_tensor_upload(&n->dmean, mean, (size_t)n->features));
    return fn_tensor_upload(&n->dstd, std, (size_t)n->features);
}

fn_status fn_input_norm_create(fn_input_norm **out, fn_context *ctx, int features,
                               const float *mean, const float *std)
{
    *out = NULL;
    if (!ctx || features < 1 || !mean || !std)
        return fn_fail(FN_ERR_INVALID, "fn_input_norm_create: bad arguments");
    FN_TRY(check_values(features, mean, std));
    fn_input_norm *n = calloc(1, sizeof *n);
    if (!n)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    n->ctx = ctx;
    n->features = features;
    fn_status st = fill(n, mean, std);
    if (st != FN_OK) {
        fn_input_norm_destroy(n);
        return st;
    }
    *out = n;
    return FN_OK;
}

void fn_input_norm_destroy(fn_input_norm *n)
{
    if (!n)
        return;
    free(n->mean);
    free(n->std);
    fn_tensor_free(&n->dmean);
    fn_tensor_free(&n->dstd);
    free(n);
}

int fn_input_norm_features(const fn_input_norm *n) { return n->features; }
const float *fn_input_norm_mean(const fn_input_norm *n) { return n->mean; }
const float *fn_input_norm_std(const fn_input_norm *n) { return n->std; }

/* --- from a training set ----------------------------------------------------- */

/* Column j's float32 mean and std; a constant column (or one whose spread
 * rounds to std 0 in float32) gets std 1. Returns 1 when constant. */
static int column(double mean, double std, int constant, float *m, float *s)
{
    *m = (float)mean;
    *s = (float)std;
    if (constant || !(*s > 0)) {
        *s = 1.0f;
        return 1;
    }
    return 0;
}

fn_status fn_input_norm_from_stats(fn_input_norm **out, fn_context *ctx, int in, const double *mean,
                            const double *std, const int *constant, int *n_constant,
                            int *list, int cap)
{
    float *m = malloc((size_t)in * sizeof(float)), *s = malloc((size_t)in * sizeof(float));
    fn_status st = m && s ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory");
    int count = 0;
    for (int j = 0; st == FN_OK && j < in; j++)
        if (column(mean[j], std[j], constant[j], &m[j], &s[j])) {
            if (list && count < cap)
                list[count] = j;
            count++;
        }
    if (st == FN_OK)
        st = fn_input_norm_create(out, ctx, in, m, s);
    if (n_constant)
        *n_constant = count;
    free(m);
    free(s);
    return st;
}

fn_status fn_input_norm_from_data(fn_input_norm **out, fn_context *ctx, fn_data *data,
                                  int *n_constant, int *list, int cap)
{
    *out = NULL;
    const int in = fn_data_in_features(data);
    double *mean = malloc((size_t)in * sizeof(double)), *std = malloc((size_t)in * sizeof(double));
    int *constant = malloc((size_t)in * sizeof(int));
    fn_status st = mean && std && constant ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory");
    if (st == FN_OK)
        st = fn_data_column_stats(data, mean, std, constant);
    if (st == FN_OK)
        st = fn_input_norm_from_stats(out, ctx, in, mean, std, constant, n_constant, list, cap);
    free(mean);
    free(std);
    free(constant);
    return st;
}

/* --- checking against data ------------------------------------------------------------ */

/* Row r (of the batch's) standardised: the first column whose value does
 * not come out finite, or -1. */
static int bad_column(const fn_input_norm *n, const fn_batch_rows *b, int r)
{
    const float *x = b->x + (size_t)b->order[r] * (size_t)b->in;
    for (int j = 0; j < b->in; j++) {
        const float z = (x[j] - n->mean[j]) / n->std[j];
        if (!isfinite(z))
            return j;
    }
    return -1;
}

fn_status fn_input_norm_check_data(const fn_input_norm *n, fn_data *data, const char *source)
{
    if (!n || !data || fn_data_in_features(data) != n->features)
        return fn_fail(FN_ERR_INVALID, "fn_input_norm_check_data: bad arguments");
    FN_TRY(fn_data_seek(data, 0, 0));
    fn_batch_rows b;
    fn_status st = fn_data_next_rows(data, &b);
    for (int r = 0; st == FN_OK && r < b.rows; r++) {
        const int j = bad_column(n, &b, r);
        if (j < 0)
            continue;
        const float v = b.x[(size_t)b.order[r] * (size_t)b.in + (size_t)j];
        const float z = (v - n->mean[j]) / n->std[j];
        char from[WHERE_CAP] = "[data] standardize's statistics";
        if (source)
            snprintf(from, sizeof from, "%s's input standardisation (group '%s')", source,
                     FN_INPUT_NORM_GROUP);
        st = fn_fail(FN_ERR_NUMERIC,
                     "%s turn %s row %lld column %d (%g) into %s: (x - mean %g) / std %g "
                     "overflows float32; the statistics do not fit these inputs",
                     from, fn_data_path(data), (long long)(b.first + b.order[r]), j, (double)v,
                     isnan(z) ? "nan" : z > 0 ? "inf" : "-inf", (double)n->mean[j],
                     (double)n->std[j]);
    }
    fn_status back = fn_data_seek(data, 0, 0);
    FN_TRY(st);
    return back;
}

/* --- applying --------------------------------------------------------------------- */

fn_status fn_input_norm_apply(const fn_input_norm *n, fn_tensor *x)
{
    fn_device device = fn_context_device(n->ctx);
    FN_TRY(fn_tensor_check_on(x, "standardised inputs", device, x->rows, n->features));
    if (device == FN_CUDA)
        return fn_input_norm_apply_cuda(n->ctx, x->data, n->dmean.data, n->dstd.data, x->rows,
                                        x->cols);
    for (int i = 0; i < x->rows; i++) {
        float *row = x->data + (size_t)i * (size_t)x->cols;
        /* A subtraction then a division, each rounded (no FMA joins
         * them), as the kernel and PyTorch. */
        for (int j = 0; j < x->cols; j++)
            row[j] = (row[j] - n->mean[j]) / n->std[j];
    }
    return FN_OK;
}

/* --- the HDF5 group ------------------------------------------------------------------ */

fn_status fn_input_norm_write(hid_t file, const char *path, const fn_input_norm *n)
{
    return fn_input_norm_write_group(file, path, n, FN_INPUT_NORM_GROUP);
}

fn_status fn_input_norm_write_group(hid_t file, const char *path, const fn_input_norm *n,
                                    const char *name)
{
    if (!n)
        return FN_OK;
    hid_t group = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot create group '%s'", path, name);
    char where[WHERE_CAP];
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    long long dims[2] = {n->features, 0};
    fn_status st = fn_h5_put_floats(group, where, "mean", n->mean, 1, dims);
    if (st == FN_OK)
        st = fn_h5_put_floats(group, where, "std", n->std, 1, dims);
    H5Gclose(group);
    return st;
}

typedef struct host_norm {
    int present;
    float *mean, *std;
} host_norm;

static fn_status read_group(hid_t file, const char *path, const char *name, int features,
                            host_norm *h)
{
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return FN_OK;
    hid_t group = H5Gopen2(file, name, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: '%s' is not a group", path, name);
    char where[WHERE_CAP];
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    h->present = 1;
    h->mean = malloc((size_t)features * sizeof(float));
    h->std = malloc((size_t)features * sizeof(float));
    long long dims[2] = {features, 0};
    fn_status st = h->mean && h->std ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory");
    if (st == FN_OK)
        st = fn_h5_get_floats(group, where, "mean", h->mean, 1, dims);
    if (st == FN_OK)
        st = fn_h5_get_floats(group, where, "std", h->std, 1, dims);
    for (int j = 0; st == FN_OK && j < features; j++)
        if (!(h->std[j] > 0))
            st = fn_fail(FN_ERR_FORMAT, "%s: dataset 'std' holds %g at [%d], expected > 0",
                         where, (double)h->std[j], j);
    H5Gclose(group);
    return st;
}

static fn_status read_file(const char *path, const char *name, int features, host_norm *h)
{
    *h = (host_norm){0};
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_status st = read_group(file, path, name, features, h);
    H5Fclose(file);
    return st;
}

static void host_norm_free(host_norm *h)
{
    free(h->mean);
    free(h->std);
    *h = (host_norm){0};
}

typedef struct load_job {
    const char *path, *group;
    int features;
} load_job;

static fn_status probe_read(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const load_job *job = arg;
    host_norm h;
    fn_status st = read_file(job->path, job->group, job->features, &h);
    host_norm_free(&h);
    return st;
}

fn_status fn_input_norm_load(fn_input_norm **out, fn_context *ctx, const char *path,
                             int features)
{
    return fn_input_norm_load_group(out, ctx, path, features, FN_INPUT_NORM_GROUP);
}

fn_status fn_input_norm_load_group(fn_input_norm **out, fn_context *ctx, const char *path,
                                   int features, const char *group)
{
    *out = NULL;
    if (!ctx || features < 1)
        return fn_fail(FN_ERR_INVALID, "fn_input_norm_load: bad arguments for %s", path);
    load_job job = {path, group, features};
    FN_TRY(fn_h5_probe(path, probe_read, &job, FN_H5_PROBE_SECONDS, NULL));
    host_norm h;
    fn_status st = read_file(path, group, features, &h);
    if (st == FN_OK && h.present)
        st = fn_input_norm_create(out, ctx, features, h.mean, h.std);
    host_norm_free(&h);
    return st;
}
