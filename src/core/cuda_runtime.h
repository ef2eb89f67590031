/* cuda_runtime.h (private) — the CUDA runtime under every layer: contexts,
 * device and pinned memory, the copy stream, Philox initialisation. All are `extern "C"`, return fn_status, and report failures with the CUDA,
 * cuBLAS or cuRAND message and the file:line of the failing call. */
#ifndef FUSENET_CORE_CUDA_RUNTIME_H
#define FUSENET_CORE_CUDA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kernels/core/device_cuda.cu */
int fn_cuda_count_devices(void);
/* "cuda:0 NVIDIA H100 80GB HBM3": GPU gpu's ordinal and name (snprintf's rules). */
void fn_cuda_device_label(int gpu, char *buf, size_t cap);
fn_status fn_cuda_context_init(fn_context *ctx, int gpu);
void fn_cuda_context_release(fn_context *ctx);
fn_status fn_cuda_context_sync(fn_context *ctx);
/* 1 when the context's kernels launch with programmatic dependent launch
 * (kernel_launch_cuda.cuh; FUSENET_PDL=0 at its creation turns it off). */
int fn_cuda_context_pdl(const fn_context *ctx);
/* fn_context_use_stream (stream) or, when own, fn_context_own_stream. */
fn_status fn_cuda_context_use_stream(fn_context *ctx, void *stream, int own);
/* The context's side stream, for work independent of what the main stream
 * does meanwhile (a layer's weight gradient beside its input gradient):
 *   fn_cuda_side_begin  what is queued next on the context (kernels,
 *                       products: fn_ctx_stream) goes to the side stream,
 *                       after everything queued on the main one so far;
 *   fn_cuda_side_end    back to the main stream;
 *   fn_cuda_join        what the main stream queues next waits for
 *                       everything queued on the side stream so far.
 * A layer joins before its call returns, so the rest of the library sees
 * one stream; the trainer alone, with [run] layer_updates, leaves each
 * layer's update queued there and joins at the end of the step (a layer's
 * own join then waits for the updates before it too). The side stream's
 * products have a cuBLAS workspace of their own. CUDA graph capture follows the fork and the join. */
fn_status fn_cuda_side_begin(fn_context *ctx);
void fn_cuda_side_end(fn_context *ctx);
fn_status fn_cuda_join(fn_context *ctx);

/* kernels/core/memory_cuda.cu: plain device memory (cudaMalloc), synchronous copies */
fn_status fn_cuda_alloc(void **ptr, size_t bytes);
void fn_cuda_free(void *ptr);
fn_status fn_cuda_memset_zero(void *ptr, size_t bytes);
fn_status fn_cuda_copy(void *dst, fn_device dst_device, const void *src, fn_device src_device,
                       size_t bytes);
/* Pinned host memory (cudaHostAlloc), for copies that overlap with kernels. */
fn_status fn_cuda_host_alloc(void **ptr, size_t bytes);
void fn_cuda_host_free(void *ptr);
/* The free and total device memory of GPU gpu (cudaMemGetInfo). */
fn_status fn_cuda_memory_free(int gpu, size_t *free_bytes, size_t *total);

/* kernels/core/transfer_cuda.cu: host-to-device copies on a copy stream of their
 * own, ordered against the context's stream by two events per slot (a slot
 * is one pair of host and device buffers that copies go through in turn):
 *   fn_cuda_transfer_release(s)  on the context's stream: the kernels queued
 *                                so far are the last to read slot s's
 *                                device buffers;
 *   fn_cuda_transfer_send(s)     on the copy stream, after that release:
 *                                the pieces' copies into slot s;
 *   fn_cuda_transfer_acquire(s)  on the context's stream: what is queued
 *                                next waits for slot s's last send;
 *   fn_cuda_transfer_wait_sent(s) the host waits for slot s's last send to
 *                                have read its host buffers.
 * A set kept on the device: fn_cuda_transfer_upload copies its rows on the
 * copy stream (from any host memory, which is free again when the call
 * returns), and fn_cuda_transfer_send_gather is a send whose pieces carry
 * the batch's row numbers, after whose copies kernels on the copy stream
 * gather those rows of the uploaded arrays into the slot's device buffers
 * (the copy stream's order puts them after every upload before them).
 * The copy stream is non-blocking: the synchronous copies of memory_cuda.cu
 * (legacy default stream) never wait for it. A thread other than the one that
 * created the context calls fn_cuda_transfer_bind_thread first. */
typedef struct fn_cuda_transfer fn_cuda_transfer;
typedef struct fn_cuda_piece {
    void *dst;       /* device */
    const void *src; /* pinned host */
    size_t bytes;
} fn_cuda_piece;
fn_status fn_cuda_transfer_create(fn_cuda_transfer **t, fn_context *ctx, int slots);
/* Waits for the copies in flight, then frees the stream and events. */
void fn_cuda_transfer_destroy(fn_cuda_transfer *t);
fn_status fn_cuda_transfer_bind_thread(const fn_cuda_transfer *t);
fn_status fn_cuda_transfer_release(fn_cuda_transfer *t, int slot);
fn_status fn_cuda_transfer_send(fn_cuda_transfer *t, int slot, const fn_cuda_piece *pieces, int n);
fn_status fn_cuda_transfer_acquire(fn_cuda_transfer *t, int slot);
fn_status fn_cuda_transfer_wait_sent(fn_cuda_transfer *t, int slot);
typedef struct fn_cuda_rows_gather {
    float *dst;       /* device [count, cols]: a slot's buffer */
    const float *set; /* device [set rows, cols]: uploaded rows */
    int cols;
} fn_cuda_rows_gather;
fn_status fn_cuda_transfer_upload(fn_cuda_transfer *t, void *dst, const void *src, size_t bytes);
/* rows: device [count], row numbers into each gather's set, copied by one of
 * the pieces. */
fn_status fn_cuda_transfer_send_gather(fn_cuda_transfer *t, int slot, const fn_cuda_piece *pieces,
                                       int n, const int32_t *rows, int count,
                                       const fn_cuda_rows_gather *gathers, int g);

/* kernels/core/init_cuda.cu: Philox uniforms on the GPU, same numbers as the host API */
fn_status fn_cuda_init_uniform(float *out, size_t n, float lo, float hi, uint64_t seed,
                               uint64_t offset);
fn_status fn_cuda_fill(float *out, size_t n, float value);

#ifdef __cplusplus
}
#endif
#endif
