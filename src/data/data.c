/* data.c — data sets in host memory: the one path of slabs, the seeded
 * two-level shuffle (slab order, then rows within a slab; shuffle.h) and
 * each batch's rows, which fn_loader gathers and puts on the device,
 * whatever the source: an HDF5 file (data_hdf5.c) or a memory set
 * (data_memory.c); data_source.c opens either. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "fusenet/data.h"
#include "data/data_impl.h"
#include "data/shuffle.h"
#include "store/h5_storage.h"
#include "store/h5util.h"


/* Host bytes of one row: inputs and targets. */
size_t fn_data_row_bytes(const fn_data *d)
{
    size_t bytes = (size_t)d->in * sizeof(float);
    if (d->targets)
        bytes += d->labels ? sizeof(int32_t) : (size_t)d->out * sizeof(float);
    return bytes;
}

static int64_t slab_length(const fn_data *d, int64_t slab)
{
    int64_t start = slab * d->slab_rows;
    return d->n - start < d->slab_rows ? d->n - start : d->slab_rows;
}

fn_status fn_data_check_unit(const fn_data *d, fn_status code, const char *what, const float *v,
                             int64_t rows, int64_t row0)
{
    for (int64_t i = 0; d->unit && i < rows * d->out; i++)
        if (!(v[i] >= 0.0f && v[i] <= 1.0f))
            return fn_fail(code,
                           "%s: %s row %lld column %lld is %g; bce_with_logits takes targets in "
                           "[0, 1] (one a label: 1 present, 0 absent)", d->path, what,
                           (long long)(row0 + i / d->out), (long long)(i % d->out), (double)v[i]);
    return FN_OK;
}

/* Slab k in the views, checked. */
static fn_status load_slab(fn_data *d, int64_t k)
{
    if (d->loaded == k)
        return FN_OK;
    d->loaded = -1;
    FN_TRY(d->source->load(d, k * d->slab_rows, slab_length(d, k)));
    d->loaded = k;
    return FN_OK;
}

/* Slab size from the budget: a multiple of the batch size, at least one
 * batch. Every source plans alike, so a memory set and a file of the same
 * rows are shuffled alike. */
static void plan_slabs(fn_data *d, size_t budget)
{
    int64_t fit = (int64_t)(budget / fn_data_row_bytes(d));
    if (fit >= d->n) {
        d->slab_rows = d->n;
    } else {
        int64_t b = d->batch_size;
        d->slab_rows = fit < b ? b : fit / b * b;
    }
    d->n_slabs = (d->n + d->slab_rows - 1) / d->slab_rows;
}

/* What the source holds and alloc_buffers' two orders. */
int64_t fn_data_slab_capacity(const fn_data *d)
{
    return d ? d->slab_rows : 0;
}

size_t fn_data_host_bytes(const fn_data *d)
{
    if (!d)
        return 0;
    return d->source->held_bytes(d) + (size_t)d->n_slabs * sizeof(int64_t) +
           (size_t)d->slab_rows * sizeof(int64_t);
}

static fn_status alloc_buffers(fn_data *d)
{
    size_t s = (size_t)d->slab_rows;
    size_t out = (size_t)(d->out > 0 ? d->out : 1);
    if (d->source->buffered) {
        d->slab_x = malloc(s * (size_t)d->in * sizeof(float));
        d->slab_t = d->targets && !d->labels ? malloc(s * out * sizeof(float)) : NULL;
        d->slab_l = d->targets && d->labels ? malloc(s * sizeof(int32_t)) : NULL;
        if (!d->slab_x || (d->targets && !d->slab_t && !d->slab_l))
            return fn_fail(FN_ERR_NOMEM, "%s: out of host memory for %lld rows", d->path,
                           (long long)d->slab_rows);
    }
    d->slab_order = malloc((size_t)d->n_slabs * sizeof(int64_t));
    d->row_order = malloc(s * sizeof(int64_t));
    if (!d->slab_order || !d->row_order)
        return fn_fail(FN_ERR_NOMEM, "%s: out of host memory for %lld rows", d->path,
                       (long long)d->slab_rows);
    return FN_OK;
}

fn_status fn_data_plan(fn_data *d, size_t memory_budget)
{
    plan_slabs(d, memory_budget);
    FN_TRY(alloc_buffers(d));
    return fn_data_seek(d, 0, 0);
}

/* The probe's allowance for reading one slab: a minute, plus a minute per
 * GiB (only a disk or share slower than 17 MB/s would need more). */
static double slab_seconds(const fn_data *d)
{
    double gib = (double)d->slab_rows * (double)fn_data_row_bytes(d) / (1024.0 * 1024.0 * 1024.0);
    return FN_H5_PROBE_SECONDS + 60.0 * gib;
}

/* The loaded slab's values, as the network gets them, into the two
 * running hashes: inputs, and labels or targets. */
static void hash_slab(const fn_data *d, fn_hash_stream *x, fn_hash_stream *t)
{
    const size_t rows = (size_t)slab_length(d, d->loaded);
    fn_hash_stream_add(x, d->view_x, rows * (size_t)d->in * sizeof(float));
    if (d->view_l)
        fn_hash_stream_add(t, d->view_l, rows * sizeof(int32_t));
    if (d->view_t)
        fn_hash_stream_add(t, d->view_t, rows * (size_t)d->out * sizeof(float));
}

fn_status fn_data_check_slabs(fn_data *d, fn_h5_child *probe)
{
    double step = slab_seconds(d);
    fn_hash_stream x, t;
    fn_hash_stream_start(&x);
    fn_hash_stream_start(&t);
    for (int64_t k = 0; k < d->n_slabs; k++) {
        fn_h5_probe_alive(probe, step);
        FN_TRY(load_slab(d, k));
        hash_slab(d, &x, &t);
    }
    const uint64_t both[2] = {fn_hash_stream_end(&x), fn_hash_stream_end(&t)};
    d->checksum = fn_hash_words(FN_HASH_START, both, sizeof both);
    return FN_OK;
}

static fn_status copy_name(char **dst, const char *src)
{
    *dst = strdup(src);
    return *dst ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of memory");
}

const char *fn_data_loss(const fn_data *d)
{
    return d->loss[0] ? d->loss : d->labels ? "cross_entropy" : "mse";
}

static fn_status begin_data(fn_data *d, const char *path, const fn_data_options *opt)
{
    if (opt->batch_size < 1 || (opt->targets && opt->out_features < 1))
        return fn_fail(FN_ERR_INVALID, "fn_data_open: bad options for %s", path);
    FN_TRY(copy_name(&d->path, path));
    if (opt->inputs)
        FN_TRY(copy_name(&d->inputs, opt->inputs));
    if (opt->targets)
        FN_TRY(copy_name(&d->targets, opt->targets));
    d->labels = opt->target_kind == FN_DATA_LABELS;
    d->by_rank = opt->targets_by_rank;
    d->unit = opt->unit_targets && !d->labels;
    snprintf(d->loss, sizeof d->loss, "%s", opt->loss ? opt->loss : "");
    d->out = opt->out_features;
    d->batch_size = opt->batch_size;
    d->shuffle = opt->shuffle;
    d->seed = opt->seed;
    return FN_OK;
}

fn_status fn_data_begin(fn_data **data, const fn_data_source_ops *source, const char *path,
                        const fn_data_options *opt)
{
    *data = NULL;
    fn_data *d = calloc(1, sizeof *d);
    if (!d)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    d->source = source;
    d->file = d->xset = d->tset = -1;
    d->loaded = d->ordered = -1;
    fn_status st = begin_data(d, path, opt);
    if (st != FN_OK) {
        fn_data_close(d);
        return st;
    }
    *data = d;
    return FN_OK;
}

void fn_data_close(fn_data *d)
{
    if (!d)
        return;
    if (d->source->close)
        d->source->close(d);
    free(d->slab_x);
    free(d->slab_t);
    free(d->slab_l);
    free(d->slab_order);
    free(d->row_order);
    free(d->path);
    free(d->inputs);
    free(d->targets);
    free(d);
}

int64_t fn_data_rows(const fn_data *d) { return d->n; }
int fn_data_in_features(const fn_data *d) { return d->in; }
int64_t fn_data_slab_rows(const fn_data *d) { return d->slab_rows; }
int fn_data_batch_size(const fn_data *d) { return d->batch_size; }
int fn_data_out_features(const fn_data *d) { return d->out; }
const char *fn_data_path(const fn_data *d) { return d->path; }


fn_data_targets fn_data_target_kind(const fn_data *d)
{
    return !d->targets ? FN_DATA_NO_TARGETS : d->labels ? FN_DATA_LABELS : FN_DATA_FLOATS;
}

static long long slab_batches(const fn_data *d, int64_t k)
{
    return (slab_length(d, k) + d->batch_size - 1) / d->batch_size;
}

long long fn_data_batches(const fn_data *d)
{
    long long total = 0;
    for (int64_t k = 0; k < d->n_slabs; k++)
        total += slab_batches(d, k);
    return total;
}

/* --- column statistics (standardisation) --------------------------------- */

/* Row i's sample weight (data_impl.h's view_w); 1 without (a product by 1
 * is exact: the unweighted statistics' bits). */
static double weight_at(const float *w, int64_t i) { return w ? (double)w[i] : 1.0; }

/* One slab's columns merged into the running (weight n, mean, m2, min,
 * max) by Chan et al.'s pairwise update: each slab's mean and squared
 * deviations are taken about its own mean, two passes in float64, so a
 * column with a large offset (1e6 + small changes) loses nothing to
 * cancellation. With sample weights w each row counts w times (a row of
 * weight k as k copies of it); a slab whose rows all weigh 0 adds nothing
 * but its range. rows_before: the rows merged so far (their range). */
static void merge_slab(const float *x, const float *w, int64_t rows, int in, int64_t rows_before,
                       double *n_before, double *mean, double *m2, float *lo, float *hi,
                       double *slab_mean)
{
    double nb = 0;
    for (int j = 0; j < in; j++)
        slab_mean[j] = 0;
    for (int64_t i = 0; i < rows; i++) {
        nb += weight_at(w, i);
        for (int j = 0; j < in; j++) {
            float v = x[i * in + j];
            slab_mean[j] += v * weight_at(w, i);
            lo[j] = rows_before == 0 && i == 0 ? v : fminf(lo[j], v);
            hi[j] = rows_before == 0 && i == 0 ? v : fmaxf(hi[j], v);
        }
    }
    if (nb == 0)
        return;
    double na = *n_before, n = na + nb;
    *n_before = n;
    for (int j = 0; j < in; j++) {
        slab_mean[j] /= nb;
        double dev = 0;
        for (int64_t i = 0; i < rows; i++) {
            double e = (double)x[i * in + j] - slab_mean[j];
            dev += e * e * weight_at(w, i);
        }
        if (na == 0) {
            mean[j] = slab_mean[j];
            m2[j] = dev;
            continue;
        }
        double delta = slab_mean[j] - mean[j];
        mean[j] += delta * nb / n;
        m2[j] += dev + delta * delta * na * nb / n;
    }
}

/* The statistics of the inputs (targets 0) or the mse targets (1). */
static fn_status stats_of(fn_data *d, int targets, double *mean, double *std, int *constant)
{
    const int in = targets ? d->out : d->in;
    double *m2 = calloc((size_t)in, sizeof(double)), *slab_mean = malloc((size_t)in * sizeof(double));
    float *lo = malloc((size_t)in * sizeof(float)), *hi = malloc((size_t)in * sizeof(float));
    fn_status st = m2 && slab_mean && lo && hi ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of memory");
    for (int j = 0; j < in; j++)
        mean[j] = 0;
    int64_t seen = 0;
    double weight = 0; /* the rows' weights so far: seen without sample weights */
    for (int64_t k = 0; st == FN_OK && k < d->n_slabs; k++) {
        st = load_slab(d, k);
        if (st != FN_OK)
            break;
        int64_t rows = slab_length(d, k);
        merge_slab(targets ? d->view_t : d->view_x, d->view_w, rows, in, seen, &weight, mean, m2,
                   lo, hi, slab_mean);
        seen += rows;
    }
    for (int j = 0; st == FN_OK && j < in; j++) {
        std[j] = sqrt(m2[j] / weight);
        constant[j] = lo[j] == hi[j];
    }
    free(m2);
    free(slab_mean);
    free(lo);
    free(hi);
    return st;
}

fn_status fn_data_column_stats(fn_data *d, double *mean, double *std, int *constant)
{
    return stats_of(d, 0, mean, std, constant);
}

fn_status fn_data_target_stats(fn_data *d, double *mean, double *std, int *constant)
{
    if (fn_data_target_kind(d) != FN_DATA_FLOATS)
        return fn_fail(FN_ERR_INVALID, "%s: target statistics need values [N, out] (mse), not "
                       "labels", d->path);
    return stats_of(d, 1, mean, std, constant);
}

fn_status fn_data_labels_used(fn_data *d, unsigned char *used)
{
    if (fn_data_target_kind(d) != FN_DATA_LABELS)
        return fn_fail(FN_ERR_INVALID, "%s: the labels used need class labels, not values",
                       d->path);
    memset(used, 0, (size_t)d->out);
    for (int64_t k = 0; k < d->n_slabs; k++) {
        FN_TRY(load_slab(d, k));
        const int64_t rows = slab_length(d, k);
        for (int64_t i = 0; i < rows; i++)
            used[d->view_l[i]] = 1; /* in [0, out): checked as the slab loaded */
    }
    return FN_OK;
}

/* --- fingerprint ---------------------------------------------------------- */

fn_status fn_data_fingerprint(fn_data *d, char *text, size_t cap, uint64_t *checksum)
{
    if (d->targets && d->labels)
        snprintf(text, cap, "'%s' [%lld, %d] %s, '%s' [%lld] %s", d->inputs, (long long)d->n,
                 d->in, d->xtype, d->targets, (long long)d->n, d->ttype);
    else if (d->targets)
        snprintf(text, cap, "'%s' [%lld, %d] %s, '%s' [%lld, %d] %s", d->inputs, (long long)d->n,
                 d->in, d->xtype, d->targets, (long long)d->n, d->out, d->ttype);
    else
        snprintf(text, cap, "'%s' [%lld, %d] %s", d->inputs, (long long)d->n, d->in, d->xtype);
    *checksum = d->checksum;
    return FN_OK;
}

/* --- iteration ----------------------------------------------------------- */

fn_status fn_data_seek(fn_data *d, long long epoch, long long step)
{
    if (epoch < 0 || step < 0)
        return fn_fail(FN_ERR_INVALID, "fn_data_seek: epoch %lld, step %lld", epoch, step);
    d->epoch = epoch;
    d->ordered = -1;
    fn_shuffle_permutation(d->slab_order, d->n_slabs, d->shuffle,
                           fn_shuffle_stream(d->seed, epoch, 0));
    d->pos_slab = 0;
    d->pos_row = 0;
    while (d->pos_slab < d->n_slabs) {
        long long nb = slab_batches(d, d->slab_order[d->pos_slab]);
        if (step < nb) {
            d->pos_row = step * d->batch_size;
            break;
        }
        step -= nb;
        d->pos_slab++;
    }
    return FN_OK;
}

/* Loads the current slab and its row order if they are not there yet. */
static fn_status enter_slab(fn_data *d)
{
    int64_t k = d->slab_order[d->pos_slab];
    FN_TRY(load_slab(d, k));
    if (d->ordered != k) {
        fn_shuffle_permutation(d->row_order, slab_length(d, k), d->shuffle,
                               fn_shuffle_stream(d->seed, d->epoch, k + 1));
        d->ordered = k;
    }
    return FN_OK;
}

void fn_batch_rows_gather(const fn_batch_rows *r, int begin, int end, float *x,
                          int32_t *labels, float *target, int64_t *index)
{
    size_t in = (size_t)r->in, out = (size_t)r->out;
    for (int i = begin; i < end; i++) {
        int64_t local = r->order[i];
        index[i] = r->first + local;
        memcpy(x + (size_t)i * in, r->x + (size_t)local * in, in * sizeof(float));
        if (r->labels)
            labels[i] = r->labels[local];
        if (r->target)
            memcpy(target + (size_t)i * out, r->target + (size_t)local * out, out * sizeof(float));
    }
}

int fn_data_has_weights(const fn_data *d)
{
    return d && d->memory && d->targets && fn_memory_set_weight_data(d->memory) != NULL;
}

fn_status fn_data_next_rows(fn_data *d, fn_batch_rows *r)
{
    *r = (fn_batch_rows){.in = d->in, .out = d->out};
    if (d->pos_slab >= d->n_slabs)
        return FN_OK;
    FN_TRY(enter_slab(d));
    int64_t k = d->slab_order[d->pos_slab];
    int64_t left = slab_length(d, k) - d->pos_row;
    r->rows = left < d->batch_size ? (int)left : d->batch_size;
    r->x = d->view_x;
    r->labels = d->view_l;
    r->target = d->view_t;
    r->weights = d->view_w;
    r->order = d->row_order + d->pos_row;
    r->first = k * d->slab_rows;
    r->slab_rows = slab_length(d, k);
    d->pos_row += r->rows;
    if (d->pos_row >= slab_length(d, k)) {
        d->pos_slab++;
        d->pos_row = 0;
    }
    return FN_OK;
}
