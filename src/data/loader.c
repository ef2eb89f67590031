/* loader.c — fn_loader: a set's batches gathered into slots of host
 * buffers and handed out on the context's device, either in fn_loader_next
 * itself (the synchronous mode: one slot, no thread) or prepared ahead by a
 * background thread (the producer) and handed out in order by
 * fn_loader_next (the consumer).
 *
 * In the background, batch n of a run (a run: from one fn_loader_start to
 * the next halt) goes through slot n % FN_LOADER_SLOTS. The producer
 * prepares batch n once the consumer has released batch n -
 * FN_LOADER_SLOTS: it waits until the copy of that older batch has read the
 * slot's host buffers, takes the batch's rows from the set, gathers them
 * into the host buffers on the workers and queues their copy to the slot's
 * device buffers, after the event the consumer recorded when it released
 * the slot. Counters under one mutex say what is ready (produced) and what
 * is free again (released).
 *
 * With the set kept on the device (loader.h), the producer sends a batch's
 * row numbers in place of its rows and the copy stream gathers them from
 * the uploaded slab (send_gathered); everything else is the same. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/cuda_runtime.h"
#include "core/device_impl.h"
#include "core/workers.h"
#include "fusenet/loader.h"
#include "fusenet/input_norm.h"
#include "store/h5util.h"

enum { K = FN_LOADER_SLOTS, DEFAULT_THREADS_CAP = 8, THREADS_CAP = 64, MESSAGE_CAP = 1024 };
enum { SMALL_GATHER_FLOATS = 1 << 16 }; /* 256 KiB: gathered without the workers */
/* FN_GATHER_AUTO gathers on the device from batches of this many bytes of
 * inputs: below it the host's gather, the copy and the kernels that follow
 * take less time than a gather kernel on the copy stream, above it less
 * than the host's threads (measured: docs/gpus.md). */
enum { DEVICE_GATHER_MIN_BYTES = 1 << 20 };

typedef struct slot {
    float *hx, *ht;   /* host [batch, in], [batch, out]; pinned on the GPU */
    int32_t *hl;      /* host [batch] labels */
    float *hw;        /* host [batch] sample weights, when the set has them */
    int64_t *hidx;    /* host [batch] file rows */
    fn_tensor dx, dt; /* on the GPU only */
    int32_t *dl;      /* on the GPU only */
    int32_t *hrows, *drows; /* the set on the device: [batch] slab rows, pinned and device */
    int rows;         /* of the batch in it: this process's share */
    int batch_rows;   /* of the whole batch; 0: the epoch's end */
} slot;

struct fn_loader {
    fn_context *ctx; /* borrowed */
    fn_data *data;   /* borrowed */
    const fn_input_norm *norm; /* borrowed; NULL: inputs as read */
    const fn_input_norm *target_norm; /* borrowed; NULL: mse targets as read */
    int cuda, background;
    int batch, in, out; /* batch: the rows a slot holds (a share's at most) */
    int part, parts; /* the share of each batch (loader.h); parts 1: all */
    fn_data_targets targets;
    int weighted;      /* the set's rows carry sample weights (fn_data_has_weights) */
    int on_device;     /* the set's rows kept on the device (loader.h) */
    float *set_x;      /* device [slab capacity, in]: the slab set_first starts */
    float *set_t;      /* device [slab capacity, out] (float targets), or NULL */
    int64_t set_first; /* the uploaded slab's first row in the file; -1: none */
    int n_slots; /* K in the background, 1 in the synchronous mode */
    slot slots[K];
    fn_cuda_transfer *xfer; /* GPU only */
    fn_workers *workers;
    pthread_t thread;
    int thread_started, sync_made;
    int bound; /* the producer's CUDA device is set (producer only) */

    pthread_mutex_t mu;
    pthread_cond_t cv;  /* broadcast on every change below */
    int run;            /* started and not halted: batches may be made */
    int busy;           /* the producer is preparing one: the set is its */
    int quit;
    long long produced; /* batches of this run in their slots, the end included */
    long long released; /* batches of this run the consumer is done with */
    int ended;          /* the producer reached the epoch's end, or failed */
    fn_status error;    /* its failure: batch `produced` could not be made */
    char message[MESSAGE_CAP];
    fn_loader_stats stats;

    /* The consumer's own. */
    long long next; /* the batch of this run handed out next */
    int in_use;     /* batch next - 1 is handed out and not released */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --- the producer -------------------------------------------------------- */

typedef struct gather_job {
    const fn_batch_rows *rows;
    slot *slot;
} gather_job;

static void gather_part(void *arg, int part, int parts)
{
    const gather_job *j = arg;
    int n = j->rows->rows;
    int begin = (int)((long long)n * part / parts), end = (int)((long long)n * (part + 1) / parts);
    fn_batch_rows_gather(j->rows, begin, end, j->slot->hx, j->slot->hl, j->slot->ht,
                         j->slot->hidx);
}

/* What of a slot goes to the device: its inputs and targets; returns how
 * many pieces. */
static int slot_pieces(const fn_loader *l, const slot *sl, fn_cuda_piece pieces[2])
{
    size_t rows = (size_t)sl->rows;
    pieces[0] = (fn_cuda_piece){sl->dx.data, sl->hx, rows * (size_t)l->in * sizeof(float)};
    int n = 1;
    if (l->targets == FN_DATA_LABELS)
        pieces[n++] = (fn_cuda_piece){sl->dl, sl->hl, rows * sizeof(int32_t)};
    else if (l->targets == FN_DATA_FLOATS)
        pieces[n++] = (fn_cuda_piece){sl->dt.data, sl->ht, rows * (size_t)l->out * sizeof(float)};
    return n;
}

/* Queues the copy of slot s's host buffers to its device buffers. */
static fn_status send_slot(fn_loader *l, int s)
{
    fn_cuda_piece pieces[2];
    int n = slot_pieces(l, &l->slots[s], pieces);
    return fn_cuda_transfer_send(l->xfer, s, pieces, n);
}

/* Narrows a batch's rows to this process's share (loader.h); the slot
 * keeps both counts. */
static void take_share(const fn_loader *l, fn_batch_rows *r, slot *sl)
{
    sl->batch_rows = r->rows;
    const long long begin = (long long)r->rows * l->part / l->parts,
                    end = (long long)r->rows * (l->part + 1) / l->parts;
    r->order += begin;
    r->rows = (int)(end - begin);
    sl->rows = r->rows;
}

/* The set kept on the device: the batch's slab uploaded unless it is there
 * already, then the batch's row numbers (and labels) sent, and its inputs
 * and float targets gathered from the slab on the copy stream. The row
 * numbers, file rows and labels are gathered here, on the host. */
static fn_status send_gathered(fn_loader *l, int s, const fn_batch_rows *r)
{
    slot *sl = &l->slots[s];
    const size_t rows = (size_t)r->rows;
    if (r->first != l->set_first) {
        l->set_first = -1; /* until both are in */
        FN_TRY(fn_cuda_transfer_upload(l->xfer, l->set_x, r->x,
                                       (size_t)r->slab_rows * (size_t)l->in * sizeof(float)));
        if (l->targets == FN_DATA_FLOATS)
            FN_TRY(fn_cuda_transfer_upload(l->xfer, l->set_t, r->target,
                                           (size_t)r->slab_rows * (size_t)l->out * sizeof(float)));
        l->set_first = r->first;
    }
    for (size_t i = 0; i < rows; i++) {
        const int64_t local = r->order[i];
        sl->hrows[i] = (int32_t)local; /* a slab has at most INT32_MAX rows here (build) */
        sl->hidx[i] = r->first + local;
        if (r->labels)
            sl->hl[i] = r->labels[local];
    }
    fn_cuda_piece pieces[2] = {{sl->drows, sl->hrows, rows * sizeof(int32_t)}};
    int n = 1;
    if (l->targets == FN_DATA_LABELS)
        pieces[n++] = (fn_cuda_piece){sl->dl, sl->hl, rows * sizeof(int32_t)};
    fn_cuda_rows_gather gathers[2] = {{sl->dx.data, l->set_x, l->in}};
    int g = 1;
    if (l->targets == FN_DATA_FLOATS)
        gathers[g++] = (fn_cuda_rows_gather){sl->dt.data, l->set_t, l->out};
    return fn_cuda_transfer_send_gather(l->xfer, s, pieces, n, sl->drows, r->rows, gathers, g);
}

/* The batch's sample weights into the slot's host buffer, in the batch's
 * row order: they stay on the host, where the losses that take them run. */
static void gather_weights(const fn_batch_rows *r, slot *sl)
{
    for (int i = 0; r->weights && i < r->rows; i++)
        sl->hw[i] = r->weights[r->order[i]];
}

/* Makes the next batch of the set in slot s (rows 0 at the epoch's end). */
static fn_status prepare(fn_loader *l, int s)
{
    slot *sl = &l->slots[s];
    if (l->cuda && !l->bound) {
        FN_TRY(fn_cuda_transfer_bind_thread(l->xfer));
        l->bound = 1;
    }
    if (l->cuda)
        FN_TRY(fn_cuda_transfer_wait_sent(l->xfer, s));
    fn_batch_rows r;
    FN_TRY(fn_data_next_rows(l->data, &r));
    take_share(l, &r, sl);
    if (!r.rows)
        return FN_OK;
    gather_weights(&r, sl);
    if (l->on_device)
        return send_gathered(l, s, &r);
    gather_job job = {&r, sl};
    /* A small batch is gathered on this thread alone: waking the workers
     * costs tens of microseconds, more than copying it (at 15000 steps a
     * second a batch has 66). The same rows either way. */
    if ((size_t)r.rows * (size_t)l->in <= SMALL_GATHER_FLOATS)
        gather_part(&job, 0, 1);
    else
        fn_workers_run(l->workers, gather_part, &job);
    return l->cuda ? send_slot(l, s) : FN_OK;
}

static int may_prepare(const fn_loader *l)
{
    return l->run && !l->ended && l->produced < l->released + K;
}

static void *producer_main(void *arg)
{
    fn_loader *l = arg;
    int quiet = 0;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->quit && !may_prepare(l))
            pthread_cond_wait(&l->cv, &l->mu);
        if (l->quit)
            break;
        /* HDF5's error printing is per thread. Silenced here, after
         * fn_loader_start, not when the thread starts: this thread calls
         * HDF5 only while the loader runs, so it is never inside HDF5 (or
         * holding a thread-safe HDF5's lock) while the caller forks the
         * probe of another file (h5_probe.c), whose child would then wait
         * for that lock forever (a 60 s probe timeout on the validation
         * set opened right after this loader was created). */
        if (!quiet) {
            fn_h5_quiet();
            quiet = 1;
        }
        int s = (int)(l->produced % K);
        l->busy = 1;
        pthread_mutex_unlock(&l->mu);
        double t0 = now();
        fn_status st = prepare(l, s);
        double took = now() - t0;
        pthread_mutex_lock(&l->mu);
        l->busy = 0;
        l->stats.prepare_seconds += took;
        if (st != FN_OK) {
            l->error = st;
            snprintf(l->message, sizeof l->message, "%s", fn_last_error());
            l->ended = 1;
        } else {
            l->produced++;
            l->ended = l->slots[s].batch_rows == 0;
        }
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* --- handing out ----------------------------------------------------------- */

/* The batch in slot sl, as views of its buffers on the loader's device,
 * its inputs standardised there when the loader has a norm (in place: a
 * slot's inputs are gathered afresh for each batch). */
static fn_status hand_out(fn_loader *l, const slot *sl, fn_batch *b)
{
    b->rows = sl->rows;
    b->batch_rows = sl->batch_rows;
    if (!sl->rows)
        return FN_OK; /* an empty share: nothing on the device */
    b->index = sl->hidx;
    b->host_labels = l->targets == FN_DATA_LABELS ? sl->hl : NULL;
    b->host_weights = l->weighted ? sl->hw : NULL;
    if (l->cuda) {
        b->x = fn_tensor_rows(&sl->dx, 0, sl->rows);
        b->labels = b->host_labels ? sl->dl : NULL;
        if (l->targets == FN_DATA_FLOATS)
            b->target = fn_tensor_rows(&sl->dt, 0, sl->rows);
    } else {
        b->x = fn_tensor_view(sl->hx, sl->rows, l->in, FN_CPU);
        b->labels = b->host_labels;
        if (l->targets == FN_DATA_FLOATS)
            b->target = fn_tensor_view(sl->ht, sl->rows, l->out, FN_CPU);
    }
    if (l->target_norm && l->targets == FN_DATA_FLOATS)
        FN_TRY(fn_input_norm_apply(l->target_norm, &b->target));
    return l->norm ? fn_input_norm_apply(l->norm, &b->x) : FN_OK;
}

/* --- the consumer (background) -------------------------------------------- */

/* Gives the batch in use back to the producer; on the GPU after the kernels
 * queued so far, the last that may read it. */
static fn_status release_in_use(fn_loader *l)
{
    if (!l->in_use)
        return FN_OK;
    l->in_use = 0;
    if (l->cuda)
        FN_TRY(fn_cuda_transfer_release(l->xfer, (int)((l->next - 1) % K)));
    pthread_mutex_lock(&l->mu);
    l->released++;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return FN_OK;
}

/* --- the synchronous mode ------------------------------------------------- */

/* Copies the slot to its device buffers: plain copies, which wait for the
 * kernels queued so far on the context's stream (a blocking one), the last
 * that may read the batch before. */
static fn_status copy_slot(const fn_loader *l, const slot *sl)
{
    fn_cuda_piece pieces[2];
    int n = slot_pieces(l, sl, pieces);
    for (int i = 0; i < n; i++)
        FN_TRY(fn_cuda_copy(pieces[i].dst, FN_CUDA, pieces[i].src, FN_CPU, pieces[i].bytes));
    return FN_OK;
}

/* The next batch, made now in the one slot on this thread. */
static fn_status next_now(fn_loader *l, fn_batch *b)
{
    slot *sl = &l->slots[0];
    double t0 = now();
    fn_batch_rows r;
    FN_TRY(fn_data_next_rows(l->data, &r));
    take_share(l, &r, sl);
    if (!sl->batch_rows)
        return FN_OK;
    fn_batch_rows_gather(&r, 0, r.rows, sl->hx, sl->hl, sl->ht, sl->hidx);
    gather_weights(&r, sl);
    if (l->cuda && r.rows)
        FN_TRY(copy_slot(l, sl));
    l->stats.prepare_seconds += now() - t0;
    FN_TRY(hand_out(l, sl, b));
    l->stats.batches++;
    return FN_OK;
}

/* --- the consumer's calls -------------------------------------------------- */

fn_status fn_loader_next(fn_loader *l, fn_batch *b)
{
    *b = (fn_batch){0};
    if (!l->run) /* written by this thread alone */
        return fn_fail(FN_ERR_INVALID, "fn_loader_next: the loader is not started");
    if (!l->background)
        return next_now(l, b);
    FN_TRY(release_in_use(l));
    double t0 = now();
    pthread_mutex_lock(&l->mu);
    while (!l->ended && l->produced <= l->next)
        pthread_cond_wait(&l->cv, &l->mu);
    int ready = l->produced > l->next;
    fn_status error = l->error;
    char message[MESSAGE_CAP];
    snprintf(message, sizeof message, "%s", l->message);
    l->stats.wait_seconds += now() - t0;
    pthread_mutex_unlock(&l->mu);
    if (!ready)
        return fn_fail(error, "%s", message);
    int s = (int)(l->next % K);
    const slot *sl = &l->slots[s];
    if (!sl->batch_rows)
        return FN_OK; /* the epoch's end; asked again, the same answer */
    if (l->cuda)
        FN_TRY(fn_cuda_transfer_acquire(l->xfer, s));
    l->next++;
    l->in_use = 1;
    l->stats.batches++;
    return hand_out(l, sl, b);
}

fn_status fn_loader_halt(fn_loader *l)
{
    if (!l->background) {
        l->run = 0;
        return FN_OK;
    }
    fn_status st = release_in_use(l);
    pthread_mutex_lock(&l->mu);
    l->run = 0;
    pthread_cond_broadcast(&l->cv);
    while (l->busy)
        pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
    return st;
}

fn_status fn_loader_start(fn_loader *l, long long epoch, long long step)
{
    FN_TRY(fn_loader_halt(l));
    FN_TRY(fn_data_seek(l->data, epoch, step));
    if (!l->background) {
        l->run = 1;
        return FN_OK;
    }
    l->next = 0;
    pthread_mutex_lock(&l->mu);
    l->produced = l->released = 0;
    l->ended = 0;
    l->error = FN_OK;
    l->message[0] = '\0';
    l->run = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return FN_OK;
}

fn_status fn_loader_set_norm(fn_loader *l, const fn_input_norm *norm)
{
    if (norm && fn_input_norm_features(norm) != l->in)
        return fn_fail(FN_ERR_INVALID, "fn_loader_set_norm: %d columns standardised, the set has %d",
                       fn_input_norm_features(norm), l->in);
    l->norm = norm;
    return FN_OK;
}

fn_status fn_loader_set_target_norm(fn_loader *l, const fn_input_norm *norm)
{
    if (norm && (l->targets != FN_DATA_FLOATS || fn_input_norm_features(norm) != l->out))
        return fn_fail(FN_ERR_INVALID, "fn_loader_set_target_norm: %d columns standardised, the "
                       "set has %d target columns", fn_input_norm_features(norm),
                       l->targets == FN_DATA_FLOATS ? l->out : 0);
    l->target_norm = norm;
    return FN_OK;
}

fn_loader_stats fn_loader_get_stats(const fn_loader *l)
{
    fn_loader *m = (fn_loader *)l;
    if (!l->background)
        return l->stats;
    pthread_mutex_lock(&m->mu);
    fn_loader_stats s = l->stats;
    pthread_mutex_unlock(&m->mu);
    return s;
}

/* --- creating and destroying ----------------------------------------------- */

/* The background's gathering threads, chosen as loader.h says. */
static int choose_threads(const fn_loader_options *opt)
{
    int t = opt ? opt->threads : 0;
    const char *env = getenv("FN_LOADER_THREADS");
    if (t <= 0 && env)
        t = atoi(env);
    if (t <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        t = cpus > 1 ? (int)(cpus / 2) : 1;
        t = t > DEFAULT_THREADS_CAP ? DEFAULT_THREADS_CAP : t;
    }
    return t > THREADS_CAP ? THREADS_CAP : t;
}

static fn_status host_alloc(const fn_loader *l, void **p, size_t bytes)
{
    if (l->cuda)
        return fn_cuda_host_alloc(p, bytes);
    *p = malloc(bytes);
    return *p ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory for the loader's batches");
}

/* What alloc_slot allocates, for every slot: host buffers (pinned on the
 * GPU) and, on the GPU, their device copies. */
void fn_loader_bytes(const fn_loader *l, size_t *host, size_t *device)
{
    *host = *device = 0;
    if (!l)
        return;
    const size_t b = (size_t)l->batch;
    size_t h = b * (size_t)l->in * sizeof(float) + b * sizeof(int64_t), d = 0;
    size_t t = l->targets == FN_DATA_LABELS   ? b * sizeof(int32_t)
               : l->targets == FN_DATA_FLOATS ? b * (size_t)l->out * sizeof(float)
                                              : 0;
    h += t + (l->weighted ? b * sizeof(float) : 0);
    if (l->cuda)
        d = b * (size_t)l->in * sizeof(float) + t;
    if (l->on_device) {
        h += b * sizeof(int32_t);
        d += b * sizeof(int32_t);
    }
    *host = h * (size_t)l->n_slots;
    *device = d * (size_t)l->n_slots + l->stats.device_set_bytes;
}

static fn_status alloc_slot(fn_loader *l, slot *sl)
{
    size_t b = (size_t)l->batch;
    FN_TRY(host_alloc(l, (void **)&sl->hx, b * (size_t)l->in * sizeof(float)));
    FN_TRY(host_alloc(l, (void **)&sl->hidx, b * sizeof(int64_t)));
    if (l->targets == FN_DATA_LABELS)
        FN_TRY(host_alloc(l, (void **)&sl->hl, b * sizeof(int32_t)));
    if (l->targets == FN_DATA_FLOATS)
        FN_TRY(host_alloc(l, (void **)&sl->ht, b * (size_t)l->out * sizeof(float)));
    if (l->weighted)
        FN_TRY(host_alloc(l, (void **)&sl->hw, b * sizeof(float)));
    if (!l->cuda)
        return FN_OK;
    FN_TRY(fn_tensor_alloc(&sl->dx, l->batch, l->in, FN_CUDA));
    if (l->targets == FN_DATA_LABELS)
        FN_TRY(fn_cuda_alloc((void **)&sl->dl, b * sizeof(int32_t)));
    if (l->targets == FN_DATA_FLOATS)
        FN_TRY(fn_tensor_alloc(&sl->dt, l->batch, l->out, FN_CUDA));
    if (!l->on_device)
        return FN_OK;
    FN_TRY(host_alloc(l, (void **)&sl->hrows, b * sizeof(int32_t)));
    return fn_cuda_alloc((void **)&sl->drows, b * sizeof(int32_t));
}

static void host_free(const fn_loader *l, void *p)
{
    if (l->cuda)
        fn_cuda_host_free(p);
    else
        free(p);
}

static void free_slot(const fn_loader *l, slot *sl)
{
    host_free(l, sl->hx);
    host_free(l, sl->ht);
    host_free(l, sl->hl);
    host_free(l, sl->hw);
    host_free(l, sl->hidx);
    host_free(l, sl->hrows);
    fn_cuda_free(sl->drows);
    fn_tensor_free(&sl->dx);
    fn_tensor_free(&sl->dt);
    fn_cuda_free(sl->dl);
}

/* Whether the set's rows are kept on the device (loader.h), and if so
 * their device arrays, one slab's worth. */
static fn_status place_set(fn_loader *l, fn_loader_gather gather)
{
    if (!l->cuda || !l->background || gather == FN_GATHER_HOST)
        return FN_OK;
    const int64_t cap = fn_data_slab_capacity(l->data);
    const size_t x_bytes = (size_t)cap * (size_t)l->in * sizeof(float),
                 t_bytes = l->targets == FN_DATA_FLOATS ? (size_t)cap * (size_t)l->out * sizeof(float) : 0;
    if (cap > INT32_MAX) {
        if (gather == FN_GATHER_AUTO)
            return FN_OK;
        return fn_fail(FN_ERR_INVALID, "%s: the set's rows on the device: a slab of %lld rows; "
                       "at most %d can be gathered there", fn_data_path(l->data), (long long)cap,
                       INT32_MAX);
    }
    if (gather == FN_GATHER_AUTO) {
        if ((size_t)l->batch * (size_t)l->in * sizeof(float) < DEVICE_GATHER_MIN_BYTES)
            return FN_OK;
        size_t free_bytes = 0, total = 0;
        FN_TRY(fn_cuda_memory_free(l->ctx->gpu, &free_bytes, &total));
        if (x_bytes + t_bytes > free_bytes / 4)
            return FN_OK;
    }
    l->on_device = 1;
    FN_TRY(fn_cuda_alloc((void **)&l->set_x, x_bytes));
    if (t_bytes)
        FN_TRY(fn_cuda_alloc((void **)&l->set_t, t_bytes));
    l->stats.device_set_bytes = x_bytes + t_bytes;
    return FN_OK;
}

/* The slots, and in the background the thread, its workers and the copy
 * stream. */
static fn_status build(fn_loader *l, const fn_loader_options *opt)
{
    FN_TRY(place_set(l, opt ? opt->gather : FN_GATHER_AUTO));
    for (int s = 0; s < l->n_slots; s++)
        FN_TRY(alloc_slot(l, &l->slots[s]));
    if (!l->background)
        return FN_OK;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->sync_made = 1;
    if (l->cuda)
        FN_TRY(fn_cuda_transfer_create(&l->xfer, l->ctx, K));
    FN_TRY(fn_workers_create(&l->workers, choose_threads(opt)));
    l->stats.threads = fn_workers_threads(l->workers);
    FN_TRY(fn_thread_start(&l->thread, producer_main, l));
    l->thread_started = 1;
    return FN_OK;
}

fn_status fn_loader_create(fn_loader **out, fn_context *ctx, fn_data *data,
                           const fn_loader_options *opt)
{
    *out = NULL;
    if (!ctx || !data)
        return fn_fail(FN_ERR_INVALID, "fn_loader_create: context or data set is NULL");
    fn_loader_mode mode = opt ? opt->mode : FN_LOADER_AUTO;
    if (mode != FN_LOADER_AUTO && mode != FN_LOADER_SYNC && mode != FN_LOADER_BACKGROUND)
        return fn_fail(FN_ERR_INVALID, "fn_loader_create: unknown mode %d", (int)mode);
    if (opt && (opt->gather < FN_GATHER_AUTO || opt->gather > FN_GATHER_DEVICE))
        return fn_fail(FN_ERR_INVALID, "fn_loader_create: unknown gather %d", (int)opt->gather);
    if (opt && opt->parts > 0 && (opt->part < 0 || opt->part >= opt->parts))
        return fn_fail(FN_ERR_INVALID, "fn_loader_create: share %d of %d", opt->part, opt->parts);
    fn_loader *l = calloc(1, sizeof *l);
    if (!l)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the loader");
    l->ctx = ctx;
    l->data = data;
    l->set_first = -1;
    l->cuda = fn_context_device(ctx) == FN_CUDA;
    l->background = mode == FN_LOADER_BACKGROUND || (mode == FN_LOADER_AUTO && l->cuda);
    l->n_slots = l->background ? K : 1;
    l->batch = fn_data_batch_size(data);
    l->in = fn_data_in_features(data);
    l->out = fn_data_out_features(data);
    l->targets = fn_data_target_kind(data);
    l->weighted = fn_data_has_weights(data);
    l->part = opt && opt->parts > 0 ? opt->part : 0;
    l->parts = opt && opt->parts > 0 ? opt->parts : 1;
    l->batch = (l->batch + l->parts - 1) / l->parts; /* a share's rows at most */
    fn_status st = build(l, opt);
    if (st != FN_OK) {
        fn_loader_destroy(l);
        return st;
    }
    *out = l;
    return FN_OK;
}

void fn_loader_destroy(fn_loader *l)
{
    if (!l)
        return;
    if (l->thread_started) {
        fn_loader_halt(l);
        pthread_mutex_lock(&l->mu);
        l->quit = 1;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    fn_workers_destroy(l->workers);
    fn_cuda_transfer_destroy(l->xfer); /* waits for the copies from the host buffers */
    for (int s = 0; s < K; s++)
        free_slot(l, &l->slots[s]);
    fn_cuda_free(l->set_x);
    fn_cuda_free(l->set_t);
    if (l->sync_made) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
    }
    free(l);
}
