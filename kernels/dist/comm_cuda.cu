/* comm_cuda.cu — the communicator's GPU side (fusenet/comm.h): the scaling
 * of a rank's loss gradient and, in a build with NCCL (FN_HAVE_NCCL), the
 * NCCL backend. Each ticket's sums run on a communication stream of the
 * communicator's own: an event recorded on the context's stream when they
 * start (the layer's backward queued before it), the stream waits for it,
 * one collective a tensor in one NCCL group (ncclAllReduce for a sum; for
 * the sharded ones, nccl_one), and an event after them
 * that fn_comm_sum_wait makes the context's stream wait for. The host
 * waits only in fn_comm_settle, polling that last event and the
 * communicator's asynchronous error against a deadline, so a rank that
 * stopped answering ends in an error (the communicator aborted with
 * ncclCommAbort), never a hang. The communicator is non-blocking
 * (ncclConfig_t.blocking = 0) so its set-up is bounded the same way.
 * Sums and reduce-scatters in bfloat16 (fn_comm_set_sum) run on the same
 * stream: a kernel rounds each tensor into a scratch buffer of its slot
 * (its place among the tensors started since the last settle; the buffers
 * stay from step to step), ncclAllReduce (a sum) or nccl_one's
 * reduce-scatter (ncclReduceScatter or ncclReduce) adds the buffers in
 * place as ncclBfloat16, and a kernel widens each sum back into its
 * tensor (a reduce-scatter's: this rank's part alone) before the ticket's
 * event. Gathers stay float32. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

#include "dist/comm_impl.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"

#ifdef FN_HAVE_NCCL
#include <cuda_bf16.h>
#include <nccl.h>
#endif

static constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) scale_kernel(float *x, size_t n, float factor)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        x[i] *= factor;
}

extern "C" fn_status fn_comm_scale_cuda(fn_context *ctx, fn_tensor *t, float factor)
{
    const size_t n = (size_t)t->rows * (size_t)t->cols;
    if (n == 0)
        return FN_OK;
    fn_launch(ctx, scale_kernel, (unsigned)fn_stride_blocks(ctx, n, kThreads), kThreads, 0,
              fn_ctx_stream(ctx), t->data, n, factor);
    FN_CUDA_CHECK_LAUNCH(scale_kernel);
    return FN_OK;
}

#ifdef FN_HAVE_NCCL

typedef struct nccl_sums {
    ncclComm_t comm;
    int comm_made, aborted;
    cudaStream_t stream; /* the communication stream */
    cudaEvent_t *ready, *done; /* [cap]: per ticket */
    int cap, made;             /* events allocated, created */
    /* Sums in bfloat16: slot i's scratch buffer half[i] of half_cap[i]
     * values ([n_slots]), and the next slot of this step. */
    __nv_bfloat16 **half;
    size_t *half_cap;
    int n_slots, slot;
} nccl_sums;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void pause_briefly(void)
{
    const struct timespec ts = {0, 20000}; /* 20 us */
    nanosleep(&ts, NULL);
}

static fn_status nccl_failure(nccl_sums *m, ncclResult_t r, const char *what, const char *file,
                              int line)
{
    const char *last = m->comm_made ? ncclGetLastError(m->comm) : "";
    return fn_fail(FN_ERR_CUDA, "%s:%d: %s: NCCL: %s%s%s", file, line, what,
                   ncclGetErrorString(r), last && last[0] ? ": " : "", last ? last : "");
}

/* ncclInProgress is the non-blocking communicator's "queued": the caller
 * polls the asynchronous error (wait_async). */
#define FN_NCCL_CHECK(m, call)                                                     \
    do {                                                                           \
        ncclResult_t fn_r_ = (call);                                               \
        if (fn_r_ != ncclSuccess && fn_r_ != ncclInProgress)                       \
            return nccl_failure(m, fn_r_, #call, __FILE__, __LINE__);              \
    } while (0)

/* Aborts the communicator (its kernels end, its peers see an error). */
static void abort_comm(nccl_sums *m)
{
    if (m->comm_made && !m->aborted) {
        ncclCommAbort(m->comm);
        m->aborted = 1;
    }
}

/* Until the communicator's last call is no longer in progress, at most the
 * communicator's timeout. */
static fn_status wait_async(fn_comm *c, const char *what)
{
    nccl_sums *m = (nccl_sums *)c->impl;
    const double deadline = now() + c->timeout_s;
    for (;;) {
        ncclResult_t r = ncclSuccess;
        FN_NCCL_CHECK(m, ncclCommGetAsyncError(m->comm, &r));
        if (r == ncclSuccess)
            return FN_OK;
        if (r != ncclInProgress) {
            fn_status st = nccl_failure(m, r, what, __FILE__, __LINE__);
            abort_comm(m);
            return st;
        }
        if (now() > deadline) {
            abort_comm(m);
            return fn_fail(FN_ERR_CUDA,
                           "NCCL %s did not finish in %.0f s ($FN_COMM_TIMEOUT_S): another "
                           "rank stopped answering; communicator aborted",
                           what, c->timeout_s);
        }
        pause_briefly();
    }
}

static fn_status nccl_create(fn_comm *c)
{
    nccl_sums *m = (nccl_sums *)calloc(1, sizeof *m);
    if (!m)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the communicator");
    c->impl = m;
    ncclUniqueId id;
    if (c->rank == 0)
        FN_NCCL_CHECK(m, ncclGetUniqueId(&id));
    if (c->size > 1)
        FN_TRY(fn_comm_broadcast_bytes(&id, (int)sizeof id));
    FN_CUDA_CHECK(cudaSetDevice(c->ctx->gpu));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&m->comm, c->size, id, c->rank, &config);
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_failure(m, r, "ncclCommInitRankConfig", __FILE__, __LINE__);
    m->comm_made = 1;
    FN_TRY(wait_async(c, "communicator set-up (ncclCommInitRankConfig)"));
    /* The highest priority: the sums' kernels get multiprocessors as soon
     * as blocks of the backward's products retire, instead of waiting for
     * the products queued behind them. */
    int least = 0, greatest = 0;
    FN_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    FN_CUDA_CHECK(cudaStreamCreateWithPriority(&m->stream, cudaStreamNonBlocking, greatest));
    return FN_OK;
}

static void nccl_release(fn_comm *c)
{
    nccl_sums *m = (nccl_sums *)c->impl;
    if (!m)
        return;
    if (m->stream) {
        if (!m->aborted)
            cudaStreamSynchronize(m->stream);
        cudaStreamDestroy(m->stream);
    }
    for (int i = 0; i < m->made; i++) {
        cudaEventDestroy(m->ready[i]);
        cudaEventDestroy(m->done[i]);
    }
    free(m->ready);
    free(m->done);
    /* A non-blocking communicator finishes its work in ncclCommFinalize,
     * waited for within the timeout (else aborted), before it is freed. */
    if (m->comm_made && !m->aborted) {
        ncclResult_t r = ncclCommFinalize(m->comm);
        if ((r != ncclSuccess && r != ncclInProgress) ||
            wait_async(c, "communicator finalisation (ncclCommFinalize)") != FN_OK)
            abort_comm(m);
        if (!m->aborted)
            ncclCommDestroy(m->comm);
    }
    /* The bfloat16 buffers after the communicator, which may hold them
     * registered. */
    for (int i = 0; i < m->n_slots; i++)
        cudaFree(m->half[i]);
    free(m->half);
    free(m->half_cap);
    free(m);
}

/* Events for tickets [0, need). */
static fn_status make_events(nccl_sums *m, int need)
{
    if (need > m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        while (cap < need)
            cap *= 2;
        cudaEvent_t *ready = (cudaEvent_t *)realloc(m->ready, sizeof *ready * (size_t)cap);
        if (ready)
            m->ready = ready;
        cudaEvent_t *done = (cudaEvent_t *)realloc(m->done, sizeof *done * (size_t)cap);
        if (done)
            m->done = done;
        if (!ready || !done)
            return fn_fail(FN_ERR_NOMEM, "out of host memory for the gradient sums' events");
        m->cap = cap;
    }
    for (; m->made < need; m->made++) {
        FN_CUDA_CHECK(cudaEventCreateWithFlags(&m->ready[m->made], cudaEventDisableTiming));
        cudaError_t err = cudaEventCreateWithFlags(&m->done[m->made], cudaEventDisableTiming);
        if (err != cudaSuccess) {
            cudaEventDestroy(m->ready[m->made]);
            FN_CUDA_CHECK(err);
        }
    }
    return FN_OK;
}

/* One collective in place over `count` values of `type` at buf (a
 * tensor's floats, or its bfloat16 scratch buffer), inside the ticket's
 * NCCL group. Equal parts (count a multiple of the ranks) take NCCL's
 * reduce-scatter and all-gather (in place: the receiving part at sendbuff
 * + rank * part); unequal ones one reduce to, or broadcast from, each
 * part's owner. */
static fn_status nccl_one(fn_comm *c, fn_comm_op op, void *buf, size_t count,
                          ncclDataType_t type)
{
    nccl_sums *m = (nccl_sums *)c->impl;
    char *const w = (char *)buf;
    const size_t bytes = type == ncclBfloat16 ? sizeof(__nv_bfloat16) : sizeof(float);
    if (op == FN_COMM_OP_SUM) {
        FN_NCCL_CHECK(m, ncclAllReduce(w, w, count, type, ncclSum, m->comm, m->stream));
        return FN_OK;
    }
    size_t mine = 0, n = 0;
    fn_comm_part(c, count, c->rank, &mine, &n);
    if (count % (size_t)c->size == 0) {
        if (op == FN_COMM_OP_REDUCE_SCATTER)
            FN_NCCL_CHECK(m, ncclReduceScatter(w, w + mine * bytes, n, type, ncclSum, m->comm,
                                               m->stream));
        else
            FN_NCCL_CHECK(m, ncclAllGather(w + mine * bytes, w, n, type, m->comm, m->stream));
        return FN_OK;
    }
    for (int r = 0; r < c->size; r++) {
        size_t first = 0;
        fn_comm_part(c, count, r, &first, &n);
        if (n == 0)
            continue; /* every rank skips it: the parts are the same everywhere */
        char *const part = w + first * bytes;
        if (op == FN_COMM_OP_REDUCE_SCATTER) /* in place on the root */
            FN_NCCL_CHECK(m, ncclReduce(part, part, n, type, ncclSum, r, m->comm, m->stream));
        else
            FN_NCCL_CHECK(m, ncclBroadcast(part, part, n, type, r, m->comm, m->stream));
    }
    return FN_OK;
}

/* --- sums in bfloat16 --------------------------------------------------------------- */

__global__ void __launch_bounds__(kThreads)
    round_bf16_kernel(__nv_bfloat16 *h /* [n] */, const float *x /* [n] */, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        h[i] = __float2bfloat16_rn(x[i]);
}

__global__ void __launch_bounds__(kThreads)
    widen_bf16_kernel(float *x /* [n] */, const __nv_bfloat16 *h /* [n] */, size_t n)
{
    FN_GRID_WAIT();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        x[i] = __bfloat162float(h[i]);
}

/* Slot i's buffer of at least count values. The step's earlier sums were
 * settled, so a buffer grown here is no longer read. */
static fn_status half_buffer(nccl_sums *m, int i, size_t count, __nv_bfloat16 **out)
{
    if (i >= m->n_slots) {
        const int n = i + 16;
        __nv_bfloat16 **half = (__nv_bfloat16 **)realloc(m->half, sizeof *half * (size_t)n);
        if (half)
            m->half = half;
        size_t *cap = (size_t *)realloc(m->half_cap, sizeof *cap * (size_t)n);
        if (cap)
            m->half_cap = cap;
        if (!half || !cap)
            return fn_fail(FN_ERR_NOMEM, "out of host memory for the bfloat16 gradient sums");
        for (int k = m->n_slots; k < n; k++) {
            m->half[k] = NULL;
            m->half_cap[k] = 0;
        }
        m->n_slots = n;
    }
    if (m->half_cap[i] < count) {
        FN_CUDA_CHECK(cudaFree(m->half[i]));
        m->half[i] = NULL;
        m->half_cap[i] = 0;
        FN_CUDA_CHECK_NAMED(cudaMalloc((void **)&m->half[i], sizeof(__nv_bfloat16) * count),
                            "a bfloat16 gradient sum's buffer (cudaMalloc)");
        m->half_cap[i] = count;
    }
    *out = m->half[i];
    return FN_OK;
}

/* The range of tensor t that a bfloat16 collective widens back: the
 * whole for a sum, this rank's part for a reduce-scatter. */
static void widened_range(const fn_comm *c, fn_comm_op op, const fn_tensor *t, size_t *first,
                          size_t *n)
{
    const size_t count = fn_tensor_count(t);
    *first = 0;
    *n = count;
    if (op == FN_COMM_OP_REDUCE_SCATTER)
        fn_comm_part(c, count, c->rank, first, n);
}

/* The tensors rounded into their slots' buffers, summed (op: a sum or a
 * reduce-scatter) as ncclBfloat16 in place there, and the sums widened
 * back (a reduce-scatter's: this rank's part alone): all on the
 * communication stream. */
static fn_status start_bf16(fn_comm *c, fn_comm_op op, fn_tensor *const *t, int n)
{
    nccl_sums *m = (nccl_sums *)c->impl;
    const int first = m->slot;
    for (int i = 0; i < n; i++) {
        const size_t count = fn_tensor_count(t[i]);
        __nv_bfloat16 *h = NULL;
        FN_TRY(half_buffer(m, first + i, count, &h));
        const unsigned blocks = (unsigned)fn_stride_blocks(c->ctx, count, kThreads);
        if (count)
            fn_launch(c->ctx, round_bf16_kernel, blocks, kThreads, 0, m->stream, h, t[i]->data,
                      count);
        FN_CUDA_CHECK_LAUNCH(round_bf16_kernel);
    }
    m->slot += n;
    FN_NCCL_CHECK(m, ncclGroupStart());
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && i < n; i++)
        st = nccl_one(c, op, m->half[first + i], fn_tensor_count(t[i]), ncclBfloat16);
    FN_NCCL_CHECK(m, ncclGroupEnd());
    FN_TRY(st);
    FN_TRY(wait_async(c, op == FN_COMM_OP_SUM
                             ? "all-reduce of the gradients in bfloat16 (ncclAllReduce)"
                             : "reduce-scatter of the gradients in bfloat16 (ncclReduceScatter "
                               "or ncclReduce)"));
    for (int i = 0; i < n; i++) {
        size_t from = 0, count = 0;
        widened_range(c, op, t[i], &from, &count);
        const unsigned blocks = (unsigned)fn_stride_blocks(c->ctx, count, kThreads);
        if (count)
            fn_launch(c->ctx, widen_bf16_kernel, blocks, kThreads, 0, m->stream,
                      t[i]->data + from, m->half[first + i] + from, count);
        FN_CUDA_CHECK_LAUNCH(widen_bf16_kernel);
    }
    return FN_OK;
}

/* --- the backend --------------------------------------------------------------------- */

static fn_status nccl_start(fn_comm *c, fn_comm_op op, fn_tensor *const *whole, int n,
                            int ticket)
{
    nccl_sums *m = (nccl_sums *)c->impl;
    if (m->aborted)
        return fn_fail(FN_ERR_CUDA, "the NCCL communicator was aborted after an earlier error");
    FN_TRY(make_events(m, ticket + 1));
    FN_CUDA_CHECK(cudaEventRecord(m->ready[ticket], fn_ctx_stream(c->ctx)));
    FN_CUDA_CHECK(cudaStreamWaitEvent(m->stream, m->ready[ticket], 0));
    if (op != FN_COMM_OP_GATHER && c->sum == FN_COMM_SUM_BF16) { /* gathers stay float32 */
        FN_TRY(start_bf16(c, op, whole, n));
        FN_CUDA_CHECK(cudaEventRecord(m->done[ticket], m->stream));
        return FN_OK;
    }
    FN_NCCL_CHECK(m, ncclGroupStart());
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && i < n; i++)
        st = nccl_one(c, op, whole[i]->data, fn_tensor_count(whole[i]), ncclFloat);
    FN_NCCL_CHECK(m, ncclGroupEnd());
    FN_TRY(st);
    FN_TRY(wait_async(c, "a collective of the gradients or parameters (NCCL)"));
    FN_CUDA_CHECK(cudaEventRecord(m->done[ticket], m->stream));
    return FN_OK;
}

static fn_status nccl_wait(fn_comm *c, int ticket)
{
    nccl_sums *m = (nccl_sums *)c->impl;
    FN_CUDA_CHECK(cudaStreamWaitEvent(fn_ctx_stream(c->ctx), m->done[ticket], 0));
    return FN_OK;
}

/* Polls the last ticket's event (the communication stream runs its sums in
 * order) and the communicator's error, until the deadline. */
static fn_status nccl_settle(fn_comm *c)
{
    nccl_sums *m = (nccl_sums *)c->impl;
    const cudaEvent_t last = m->done[c->tickets - 1];
    m->slot = 0; /* the bfloat16 buffers are free for the next step's sums */
    const double deadline = now() + c->timeout_s;
    for (;;) {
        const cudaError_t q = cudaEventQuery(last);
        if (q == cudaSuccess)
            return FN_OK;
        if (q != cudaErrorNotReady)
            FN_CUDA_CHECK_NAMED(q, "the gradient sums (cudaEventQuery)");
        ncclResult_t r = ncclSuccess;
        FN_NCCL_CHECK(m, ncclCommGetAsyncError(m->comm, &r));
        if (r != ncclSuccess && r != ncclInProgress) {
            fn_status st = nccl_failure(m, r, "the gradient sums", __FILE__, __LINE__);
            abort_comm(m);
            return st;
        }
        if (now() > deadline) {
            abort_comm(m);
            return fn_fail(FN_ERR_CUDA,
                           "the gradient sums (ncclAllReduce) did not finish in %.0f s "
                           "($FN_COMM_TIMEOUT_S): another rank stopped answering; communicator "
                           "aborted",
                           c->timeout_s);
        }
        pause_briefly();
    }
}

const fn_comm_backend fn_comm_nccl_backend = {
    .name = "nccl",
    .start = nccl_start,
    .wait = nccl_wait,
    .settle = nccl_settle,
    .create = nccl_create,
    .release = nccl_release,
};

#endif
