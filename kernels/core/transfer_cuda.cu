/* transfer_cuda.cu — host-to-device copies that overlap with a context's
 * kernels: a non-blocking copy stream of their own and, per slot (one pair of
 * host and device buffers that batches go through in turn), an event saying
 * the context's stream is done with the slot and one saying its last copy
 * has landed; and a set's rows kept on the device, each batch's rows
 * gathered from them by a kernel on the copy stream. core/cuda_runtime.h
 * states the protocol. */
#include <stdlib.h>

#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/kernel_launch_cuda.cuh"
#include "core/launch_cuda.cuh"

struct fn_cuda_transfer {
    fn_context *ctx;      /* borrowed */
    cudaStream_t stream;  /* the copies */
    int slots;
    cudaEvent_t *released; /* [slots], recorded on the context's stream */
    cudaEvent_t *sent;     /* [slots], recorded on the copy stream */
};

static fn_status create_events(cudaEvent_t *events, int n)
{
    for (int i = 0; i < n; i++)
        FN_CUDA_CHECK(cudaEventCreateWithFlags(&events[i], cudaEventDisableTiming));
    return FN_OK;
}

static fn_status create(fn_cuda_transfer *t)
{
    t->released = (cudaEvent_t *)calloc((size_t)t->slots, sizeof *t->released);
    t->sent = (cudaEvent_t *)calloc((size_t)t->slots, sizeof *t->sent);
    if (!t->released || !t->sent)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the copy stream's events");
    FN_CUDA_CHECK(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking));
    FN_TRY(create_events(t->released, t->slots));
    return create_events(t->sent, t->slots);
}

extern "C" fn_status fn_cuda_transfer_create(fn_cuda_transfer **out, fn_context *ctx, int slots)
{
    *out = NULL;
    if (!ctx || !ctx->cuda || slots < 1)
        return fn_fail(FN_ERR_INVALID, "fn_cuda_transfer_create: needs a CUDA context and slots");
    fn_cuda_transfer *t = (fn_cuda_transfer *)calloc(1, sizeof *t);
    if (!t)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the copy stream");
    t->ctx = ctx;
    t->slots = slots;
    fn_status st = create(t);
    if (st != FN_OK) {
        fn_cuda_transfer_destroy(t);
        return st;
    }
    *out = t;
    return FN_OK;
}

static void destroy_events(cudaEvent_t *events, int n)
{
    for (int i = 0; events && i < n; i++)
        if (events[i])
            cudaEventDestroy(events[i]);
    free(events);
}

extern "C" void fn_cuda_transfer_destroy(fn_cuda_transfer *t)
{
    if (!t)
        return;
    if (t->stream) {
        cudaStreamSynchronize(t->stream);
        cudaStreamDestroy(t->stream);
    }
    destroy_events(t->released, t->slots);
    destroy_events(t->sent, t->slots);
    free(t);
}

extern "C" fn_status fn_cuda_transfer_bind_thread(const fn_cuda_transfer *t)
{
    FN_CUDA_CHECK(cudaSetDevice(t->ctx->gpu));
    return FN_OK;
}

extern "C" fn_status fn_cuda_transfer_release(fn_cuda_transfer *t, int slot)
{
    FN_CUDA_CHECK(cudaEventRecord(t->released[slot], fn_ctx_stream(t->ctx)));
    return FN_OK;
}

/* The pieces' copies on the copy stream, after slot's release. */
static fn_status copy_pieces(fn_cuda_transfer *t, int slot, const fn_cuda_piece *pieces, int n)
{
    FN_CUDA_CHECK(cudaStreamWaitEvent(t->stream, t->released[slot], 0));
    for (int i = 0; i < n; i++)
        FN_CUDA_CHECK(cudaMemcpyAsync(pieces[i].dst, pieces[i].src, pieces[i].bytes,
                                      cudaMemcpyHostToDevice, t->stream));
    return FN_OK;
}

extern "C" fn_status fn_cuda_transfer_send(fn_cuda_transfer *t, int slot,
                                           const fn_cuda_piece *pieces, int n)
{
    FN_TRY(copy_pieces(t, slot, pieces, n));
    FN_CUDA_CHECK(cudaEventRecord(t->sent[slot], t->stream));
    return FN_OK;
}

/* out[i, :] = set[rows[i], :] for the n rows, cols floats each: a copy, so
 * the batch has the bits of the set's rows. */
__global__ void gather_rows_kernel(float *__restrict__ out,        /* [n, cols] */
                                   const float *__restrict__ set,  /* [set rows, cols] */
                                   const int32_t *__restrict__ rows, /* [n] */
                                   int n, int cols)
{
    FN_GRID_WAIT();
    const size_t total = (size_t)n * (size_t)cols;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        const size_t i = k / (size_t)cols, j = k % (size_t)cols;
        out[k] = set[(size_t)rows[i] * (size_t)cols + j];
    }
}

extern "C" fn_status fn_cuda_transfer_send_gather(fn_cuda_transfer *t, int slot,
                                                  const fn_cuda_piece *pieces, int n,
                                                  const int32_t *rows, int count,
                                                  const fn_cuda_rows_gather *gathers, int g)
{
    FN_TRY(copy_pieces(t, slot, pieces, n));
    const int threads = 256;
    for (int i = 0; i < g && count > 0; i++) {
        const size_t blocks = fn_stride_blocks(t->ctx, (size_t)count * (size_t)gathers[i].cols,
                                               threads);
        fn_launch(t->ctx, gather_rows_kernel, (unsigned)blocks, threads, 0, t->stream,
                  gathers[i].dst, gathers[i].set, rows, count, gathers[i].cols);
        FN_CUDA_CHECK(cudaGetLastError());
    }
    FN_CUDA_CHECK(cudaEventRecord(t->sent[slot], t->stream));
    return FN_OK;
}

extern "C" fn_status fn_cuda_transfer_upload(fn_cuda_transfer *t, void *dst, const void *src,
                                             size_t bytes)
{
    FN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, t->stream));
    return FN_OK;
}

extern "C" fn_status fn_cuda_transfer_acquire(fn_cuda_transfer *t, int slot)
{
    FN_CUDA_CHECK(cudaStreamWaitEvent(fn_ctx_stream(t->ctx), t->sent[slot], 0));
    return FN_OK;
}

extern "C" fn_status fn_cuda_transfer_wait_sent(fn_cuda_transfer *t, int slot)
{
    FN_CUDA_CHECK(cudaEventSynchronize(t->sent[slot]));
    return FN_OK;
}
