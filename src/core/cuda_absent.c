/* cuda_absent.c — the runtime room's calls into kernels/ in a build without
 * CUDA (cuda_absent.h): no GPUs, and every call that would need one fails
 * saying that the build lacks the backend and how to add it. */
#include <stdio.h>

#include "core/cuda_absent.h"
#include "core/cuda_runtime.h"
#include "core/gemm_cuda.h"
#include "core/graph_cuda.h"

fn_status fn_cuda_absent(const char *what)
{
    return fn_fail(FN_ERR_NODEV,
                   "%s: this build of fusenet has no CUDA backend (it was configured with "
                   "-DFN_CUDA=OFF, or without a CUDA toolkit); rebuild with -DFN_CUDA=ON and "
                   "the CUDA toolkit installed, or use device = cpu",
                   what);
}

int fn_cuda_count_devices(void) { return 0; }

void fn_cuda_device_label(int gpu, char *buf, size_t cap) { snprintf(buf, cap, "cuda:%d", gpu); }

fn_status fn_cuda_context_init(fn_context *ctx, int gpu)
{
    (void)ctx, (void)gpu;
    return fn_cuda_absent("device = cuda");
}

void fn_cuda_context_release(fn_context *ctx) { (void)ctx; }

int fn_cuda_context_pdl(const fn_context *ctx)
{
    (void)ctx;
    return 0;
}

fn_status fn_cuda_context_sync(fn_context *ctx)
{
    (void)ctx;
    return fn_cuda_absent("fn_context_sync");
}

fn_status fn_cuda_side_begin(fn_context *ctx)
{
    (void)ctx;
    return fn_cuda_absent("fn_cuda_side_begin");
}

void fn_cuda_side_end(fn_context *ctx) { (void)ctx; }

fn_status fn_cuda_join(fn_context *ctx)
{
    (void)ctx;
    return fn_cuda_absent("fn_cuda_join");
}

fn_status fn_cuda_alloc(void **ptr, size_t bytes)
{
    (void)bytes;
    *ptr = NULL;
    return fn_cuda_absent("GPU memory");
}

void fn_cuda_free(void *ptr) { (void)ptr; }

fn_status fn_cuda_memset_zero(void *ptr, size_t bytes)
{
    (void)ptr, (void)bytes;
    return fn_cuda_absent("GPU memory");
}

fn_status fn_cuda_copy(void *dst, fn_device dst_device, const void *src, fn_device src_device,
                       size_t bytes)
{
    (void)dst, (void)dst_device, (void)src, (void)src_device, (void)bytes;
    return fn_cuda_absent("a copy to or from the GPU");
}

fn_status fn_cuda_host_alloc(void **ptr, size_t bytes)
{
    (void)bytes;
    *ptr = NULL;
    return fn_cuda_absent("pinned host memory");
}

void fn_cuda_host_free(void *ptr) { (void)ptr; }

fn_status fn_cuda_context_use_stream(fn_context *ctx, void *stream, int own)
{
    (void)ctx, (void)stream, (void)own;
    return fn_cuda_absent("a GPU's stream");
}

fn_status fn_cuda_memory_free(int gpu, size_t *free_bytes, size_t *total)
{
    (void)gpu, (void)free_bytes, (void)total;
    return fn_cuda_absent("GPU memory");
}

fn_status fn_cuda_transfer_create(fn_cuda_transfer **t, fn_context *ctx, int slots)
{
    (void)ctx, (void)slots;
    *t = NULL;
    return fn_cuda_absent("the GPU's copy stream");
}

void fn_cuda_transfer_destroy(fn_cuda_transfer *t) { (void)t; }

fn_status fn_cuda_transfer_bind_thread(const fn_cuda_transfer *t)
{
    (void)t;
    return fn_cuda_absent("the GPU's copy stream");
}

fn_status fn_cuda_transfer_release(fn_cuda_transfer *t, int slot)
{
    (void)t, (void)slot;
    return fn_cuda_absent("the GPU's copy stream");
}

fn_status fn_cuda_transfer_send(fn_cuda_transfer *t, int slot, const fn_cuda_piece *pieces, int n)
{
    (void)t, (void)slot, (void)pieces, (void)n;
    return fn_cuda_absent("the GPU's copy stream");
}

fn_status fn_cuda_transfer_acquire(fn_cuda_transfer *t, int slot)
{
    (void)t, (void)slot;
    return fn_cuda_absent("the GPU's copy stream");
}

fn_status fn_cuda_transfer_wait_sent(fn_cuda_transfer *t, int slot)
{
    (void)t, (void)slot;
    return fn_cuda_absent("the GPU's copy stream");
}

fn_status fn_cuda_transfer_upload(fn_cuda_transfer *t, void *dst, const void *src, size_t bytes)
{
    (void)t, (void)dst, (void)src, (void)bytes;
    return fn_cuda_absent("the GPU's copy stream");
}

fn_status fn_cuda_transfer_send_gather(fn_cuda_transfer *t, int slot, const fn_cuda_piece *pieces,
                                       int n, const int32_t *rows, int count,
                                       const fn_cuda_rows_gather *gathers, int g)
{
    (void)t, (void)slot, (void)pieces, (void)n, (void)rows, (void)count, (void)gathers, (void)g;
    return fn_cuda_absent("the GPU's copy stream");
}

fn_status fn_cuda_init_uniform(float *out, size_t n, float lo, float hi, uint64_t seed,
                               uint64_t offset)
{
    (void)out, (void)n, (void)lo, (void)hi, (void)seed, (void)offset;
    return fn_cuda_absent("fn_init_uniform on the GPU");
}

fn_status fn_cuda_fill(float *out, size_t n, float value)
{
    (void)out, (void)n, (void)value;
    return fn_cuda_absent("fn_init_constant on the GPU");
}

fn_status fn_cuda_graph_begin(fn_context *ctx)
{
    (void)ctx;
    return fn_cuda_absent("CUDA graphs");
}

fn_status fn_cuda_graph_end(fn_context *ctx, fn_cuda_graph **graph)
{
    (void)ctx;
    *graph = NULL;
    return fn_cuda_absent("CUDA graphs");
}

void fn_cuda_graph_abort(fn_context *ctx) { (void)ctx; }

fn_status fn_cuda_graph_launch(fn_context *ctx, fn_cuda_graph *graph)
{
    (void)ctx, (void)graph;
    return fn_cuda_absent("CUDA graphs");
}

void fn_cuda_graph_destroy(fn_cuda_graph *graph) { (void)graph; }

fn_status fn_cuda_to_bf16(fn_context *ctx, fn_bf16 *a_h, const float *a, size_t na, fn_bf16 *b_h,
                          const float *b, size_t nb)
{
    (void)ctx, (void)a_h, (void)a, (void)na, (void)b_h, (void)b, (void)nb;
    return fn_cuda_absent("bfloat16 rounding");
}
