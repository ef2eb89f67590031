/* multi_tensor_cuda.cu — multi-tensor tables (multi_tensor.h): building
 * one on the device, the step's scalars beside it, and the one-launch
 * zeroing of every gradient in it (a kernel on the context's stream, where
 * fn_tensor_zero's cudaMemset is one call a tensor on the legacy stream,
 * which a CUDA graph cannot capture). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "optim/multi_tensor_cuda.cuh"
#include "core/cuda_check.h"
#include "core/kernel_launch_cuda.cuh"

/* ---- kernels ---- */

__global__ void __launch_bounds__(kMtThreads)
mt_zero_grad_kernel(const fn_mt_entry *table /* [n] */, int n, long long chunks)
{
    FN_GRID_WAIT();
    mt_for_each_piece(table, n, chunks, [](const fn_mt_entry &e, size_t first, size_t end) {
        if (!e.grad) /* released (SGD's fuse): nothing to zero */
            return;
#pragma unroll
        for (int k = 0; k < kMtPerThread; k++) {
            const size_t i = first + (size_t)k * kMtThreads;
            if (i < end)
                e.grad[i] = 0.0f;
        }
    });
}

/* ---- launchers ---- */

static fn_status build(fn_multi_tensor *mt, fn_param *const *params, int n,
                       const fn_tensor *state1, const fn_tensor *state2)
{
    fn_mt_entry *host = (fn_mt_entry *)calloc((size_t)n, sizeof *host);
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a multi-tensor table");
    long long chunks = 0;
    for (int i = 0; i < n; i++) {
        const size_t count = fn_tensor_count(&params[i]->value);
        __nv_bfloat16 *copy =
            static_cast<__nv_bfloat16 *>(fn_param_bf16_written(params[i], mt->ctx));
        host[i] = fn_mt_entry{params[i]->value.data, copy, params[i]->grad.data,
                              state1 ? state1[i].data : NULL, state2 ? state2[i].data : NULL,
                              NULL, count, chunks};
        chunks += (long long)((count + kMtChunk - 1) / kMtChunk);
    }
    mt->chunks = chunks;
    mt->host_table = host; /* kept for parts (fn_multi_tensor_split) */
    cudaError_t e = cudaMalloc(&mt->table, (size_t)n * sizeof *host);
    if (e == cudaSuccess)
        e = cudaMemcpy(mt->table, host, (size_t)n * sizeof *host, cudaMemcpyHostToDevice);
    FN_CUDA_CHECK_NAMED(e, "a multi-tensor table");
    return FN_OK;
}

/* Part `part` of the whole: its entries [from, to) with their pieces
 * numbered from 0, the whole's scalars. */
static fn_status build_part(fn_multi_tensor *part, const fn_multi_tensor *whole, int from, int to)
{
    *part = fn_multi_tensor{};
    part->ctx = whole->ctx;
    part->scalars = whole->scalars;
    part->scalar_bytes = whole->scalar_bytes;
    part->n = to - from;
    if (part->n == 0)
        return FN_OK;
    const fn_mt_entry *all = static_cast<const fn_mt_entry *>(whole->host_table);
    fn_mt_entry *host = (fn_mt_entry *)calloc((size_t)part->n, sizeof *host);
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a multi-tensor table's part");
    for (int i = 0; i < part->n; i++) {
        host[i] = all[from + i];
        host[i].chunk0 = all[from + i].chunk0 - all[from].chunk0;
    }
    const fn_mt_entry &last = all[to - 1];
    part->chunks = last.chunk0 - all[from].chunk0 + (long long)((last.n + kMtChunk - 1) / kMtChunk);
    cudaError_t e = cudaMalloc(&part->table, (size_t)part->n * sizeof *host);
    if (e == cudaSuccess)
        e = cudaMemcpy(part->table, host, (size_t)part->n * sizeof *host, cudaMemcpyHostToDevice);
    free(host);
    FN_CUDA_CHECK_NAMED(e, "a multi-tensor table's part");
    return FN_OK;
}

static void release_parts(fn_multi_tensor *mt)
{
    for (int k = 0; mt->parts && k < mt->n_parts; k++)
        cudaFree(mt->parts[k].table); /* the scalars are the whole's */
    free(mt->parts);
    mt->parts = NULL;
    mt->n_parts = 0;
}

extern "C" fn_status fn_multi_tensor_split(fn_multi_tensor *mt, const int *first, int n)
{
    release_parts(mt);
    if (n < 1 || first[0] != 0 || first[n] != mt->n)
        return fn_fail(FN_ERR_INVALID, "a multi-tensor table of %d cut into parts that cover "
                                       "[%d, %d)", mt->n, n > 0 ? first[0] : 0, n > 0 ? first[n] : 0);
    for (int k = 0; k < n; k++)
        if (first[k] > first[k + 1])
            return fn_fail(FN_ERR_INVALID, "a multi-tensor table's part %d is [%d, %d)", k,
                           first[k], first[k + 1]);
    mt->parts = (fn_multi_tensor *)calloc((size_t)n, sizeof *mt->parts);
    if (!mt->parts)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a multi-tensor table's parts");
    mt->n_parts = n;
    for (int k = 0; k < n; k++)
        FN_TRY(build_part(&mt->parts[k], mt, first[k], first[k + 1]));
    return FN_OK;
}

extern "C" fn_status fn_multi_tensor_create(fn_multi_tensor *mt, fn_context *ctx,
                                            fn_param *const *params, int n,
                                            const fn_tensor *state1, const fn_tensor *state2,
                                            size_t scalar_bytes)
{
    *mt = fn_multi_tensor{};
    mt->ctx = ctx;
    mt->n = n;
    mt->scalar_bytes = scalar_bytes;
    FN_TRY(build(mt, params, n, state1, state2));
    mt->sent = calloc(1, scalar_bytes);
    if (!mt->sent)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a multi-tensor table");
    FN_CUDA_CHECK(cudaMalloc(&mt->scalars, scalar_bytes));
    FN_CUDA_CHECK(cudaMemset(mt->scalars, 0, scalar_bytes));
    return FN_OK;
}

extern "C" void fn_multi_tensor_release(fn_multi_tensor *mt)
{
    if (!mt->table && !mt->scalars && !mt->sent && !mt->host_table)
        return; /* never built: not even the CUDA runtime is touched */
    release_parts(mt);
    free(mt->host_table);
    cudaFree(mt->table);
    cudaFree(mt->scalars);
    free(mt->sent);
    *mt = fn_multi_tensor{};
}

extern "C" fn_status fn_multi_tensor_set_scalars(fn_multi_tensor *mt, const void *scalars)
{
    if (mt->sent_valid && memcmp(mt->sent, scalars, mt->scalar_bytes) == 0)
        return FN_OK; /* the device holds them: nothing else writes there */
    /* Pageable source: staged by the runtime before the call returns. */
    mt->sent_valid = 0;
    FN_CUDA_CHECK(cudaMemcpyAsync(mt->scalars, scalars, mt->scalar_bytes, cudaMemcpyHostToDevice,
                                  fn_ctx_stream(mt->ctx)));
    memcpy(mt->sent, scalars, mt->scalar_bytes);
    mt->sent_valid = 1;
    return FN_OK;
}

extern "C" fn_status fn_multi_tensor_zero_grad(const fn_multi_tensor *mt)
{
    fn_launch(mt->ctx, mt_zero_grad_kernel, fn_mt_blocks(mt), kMtThreads, 0, fn_ctx_stream(mt->ctx),
              (const fn_mt_entry *)mt->table, mt->n, mt->chunks);
    FN_CUDA_CHECK_LAUNCH(mt_zero_grad_kernel);
    return FN_OK;
}

/* Entry i's field at byte offset `at` (size bytes from value) set in the
 * host copy, the device table and the part that holds the entry. */
static fn_status set_field(fn_multi_tensor *mt, int i, size_t at, const void *value, size_t size)
{
    if (i < 0 || i >= mt->n)
        return fn_fail(FN_ERR_INVALID, "multi-tensor table: entry %d of %d", i, mt->n);
    fn_mt_entry *host = static_cast<fn_mt_entry *>(mt->host_table); /* for parts made later */
    memcpy(reinterpret_cast<char *>(&host[i]) + at, value, size);
    char *entry = static_cast<char *>(mt->table) + (size_t)i * sizeof(fn_mt_entry) + at;
    FN_CUDA_CHECK(cudaMemcpy(entry, value, size, cudaMemcpyHostToDevice));
    for (int k = 0, from = 0; k < mt->n_parts; from += mt->parts[k].n, k++) {
        if (i >= from + mt->parts[k].n)
            continue;
        char *part = static_cast<char *>(mt->parts[k].table);
        part += (size_t)(i - from) * sizeof(fn_mt_entry) + at;
        FN_CUDA_CHECK(cudaMemcpy(part, value, size, cudaMemcpyHostToDevice));
        break;
    }
    return FN_OK;
}

extern "C" fn_status fn_multi_tensor_set_state1_bf16(fn_multi_tensor *mt, int i, void *state1_bf16)
{
    __nv_bfloat16 *ptr = static_cast<__nv_bfloat16 *>(state1_bf16);
    return set_field(mt, i, offsetof(fn_mt_entry, state1_bf16), &ptr, sizeof ptr);
}

extern "C" fn_status fn_multi_tensor_set_grad(fn_multi_tensor *mt, int i, float *grad)
{
    return set_field(mt, i, offsetof(fn_mt_entry, grad), &grad, sizeof grad);
}
