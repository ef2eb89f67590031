/* loss_tally_cuda.cu — the GPU half of a loss tally (loss_tally.h): the
 * running sums in device memory, and the late read of them. A copy of the
 * sums goes after each step's kernels into a slot of a ring of pinned host
 * buffers, with an event recorded behind it; the host asks the event
 * (cudaEventQuery: never waits) and takes the copy when it has arrived.
 * A loss's kernels leave its partial sums (loss_kind.h, partials), and
 * finish them into the sums in their last block where the loss can; else
 * the tally's finish kernel adds them up and counts the step. */
#include <math.h>
#include <stdlib.h>

#include "nn/loss_tally_cuda.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "nn/loss_tally_finish_cuda.cuh"

struct fn_cuda_tally {
    fn_context *ctx;                 /* borrowed */
    fn_loss_tally_value *sums;       /* device [1] */
    int *ticket;                     /* device [1]: the losses' last-block count (loss_kind.h) */
    fn_loss_tally_value *ring;       /* pinned host [FN_LOSS_TALLY_RING] */
    cudaEvent_t done[FN_LOSS_TALLY_RING];
    int recorded[FN_LOSS_TALLY_RING]; /* done[i] was recorded at least once */
    int n_events;                    /* created so far */
};

/* ---- kernels ---- */

/* The finish of a loss's partial sums, for the losses that leave them
 * (loss_tally_finish_cuda.cuh). */
__global__ void __launch_bounds__(kTallyFinishThreads)
tally_finish_kernel(float *loss /* [1] */, fn_loss_tally_value *tally,
                    const double *partials /* [count] */, const int *counts /* [count] or NULL */,
                    int count, double scale, int rows)
{
    FN_GRID_WAIT();
    tally_finish_block(loss, tally, partials, counts, count, scale, rows);
}

/* ---- launchers ---- */

static fn_status create_parts(fn_cuda_tally *t)
{
    FN_CUDA_CHECK(cudaMalloc((void **)&t->sums, sizeof *t->sums));
    FN_CUDA_CHECK(cudaMalloc((void **)&t->ticket, sizeof *t->ticket));
    FN_CUDA_CHECK(cudaMemset(t->ticket, 0, sizeof *t->ticket));
    FN_CUDA_CHECK(cudaHostAlloc((void **)&t->ring, FN_LOSS_TALLY_RING * sizeof *t->ring,
                                cudaHostAllocDefault));
    for (; t->n_events < FN_LOSS_TALLY_RING; t->n_events++)
        FN_CUDA_CHECK(cudaEventCreateWithFlags(&t->done[t->n_events], cudaEventDisableTiming));
    return FN_OK;
}

extern "C" fn_status fn_cuda_tally_create(fn_cuda_tally **out, fn_context *ctx)
{
    *out = NULL;
    fn_cuda_tally *t = (fn_cuda_tally *)calloc(1, sizeof *t);
    if (!t)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a loss tally");
    t->ctx = ctx;
    fn_status st = create_parts(t);
    if (st != FN_OK) {
        fn_cuda_tally_destroy(t);
        return st;
    }
    *out = t;
    return FN_OK;
}

extern "C" void fn_cuda_tally_destroy(fn_cuda_tally *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_events; i++) {
        cudaEventSynchronize(t->done[i]);
        cudaEventDestroy(t->done[i]);
    }
    cudaFreeHost(t->ring);
    cudaFree(t->ticket);
    cudaFree(t->sums);
    free(t);
}

extern "C" fn_loss_tally_value *fn_cuda_tally_sums(fn_cuda_tally *t) { return t->sums; }

extern "C" fn_status fn_cuda_tally_finish(fn_cuda_tally *t, fn_tensor *loss,
                                          const fn_loss_partials *p, int rows)
{
    fn_launch(t->ctx, tally_finish_kernel, 1, kTallyFinishThreads, 0, fn_ctx_stream(t->ctx),
              loss->data, t->sums, p->sums, p->counts, p->count, p->scale, rows);
    FN_CUDA_CHECK_LAUNCH(tally_finish_kernel);
    return FN_OK;
}

extern "C" void fn_cuda_tally_into(fn_cuda_tally *t, fn_tensor *loss, int rows,
                                   fn_loss_tally_into *into)
{
    *into = fn_loss_tally_into{loss->data, t->sums, t->ticket, rows};
}

extern "C" fn_status fn_cuda_tally_set(fn_cuda_tally *t, const fn_loss_tally_value *v)
{
    /* From pageable memory: the runtime stages it before returning, so v
     * may go out of scope at once; ordered on the stream like a kernel. */
    FN_CUDA_CHECK(cudaMemcpyAsync(t->sums, v, sizeof *v, cudaMemcpyHostToDevice,
                                  fn_ctx_stream(t->ctx)));
    return FN_OK;
}

extern "C" fn_status fn_cuda_tally_post(fn_cuda_tally *t, int slot)
{
    cudaStream_t s = fn_ctx_stream(t->ctx);
    if (t->recorded[slot])
        FN_CUDA_CHECK(cudaEventSynchronize(t->done[slot]));
    FN_CUDA_CHECK(cudaMemcpyAsync(&t->ring[slot], t->sums, sizeof *t->sums,
                                  cudaMemcpyDeviceToHost, s));
    FN_CUDA_CHECK(cudaEventRecord(t->done[slot], s));
    t->recorded[slot] = 1;
    return FN_OK;
}

extern "C" fn_status fn_cuda_tally_arrived(fn_cuda_tally *t, int slot, int *arrived,
                                           fn_loss_tally_value *v)
{
    *arrived = 0;
    const cudaError_t e = cudaEventQuery(t->done[slot]);
    if (e == cudaErrorNotReady)
        return FN_OK;
    FN_CUDA_CHECK_NAMED(e, "cudaEventQuery(a loss tally's copy)");
    *arrived = 1;
    *v = t->ring[slot];
    return FN_OK;
}

extern "C" fn_status fn_cuda_tally_read(fn_cuda_tally *t, fn_loss_tally_value *v)
{
    cudaStream_t s = fn_ctx_stream(t->ctx);
    FN_CUDA_CHECK(cudaMemcpyAsync(&t->ring[0], t->sums, sizeof *t->sums, cudaMemcpyDeviceToHost, s));
    FN_CUDA_CHECK(cudaStreamSynchronize(s));
    *v = t->ring[0];
    return FN_OK;
}
