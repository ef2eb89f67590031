/* tensor.c — allocation, views, zeroing and copies of 2-D float32 tensors on
 * either device (GPU memory through kernels/core/memory_cuda.cu). */
#include <stdlib.h>
#include <string.h>

#include "core/cuda_runtime.h"
#include "fusenet/tensor.h"

size_t fn_tensor_count(const fn_tensor *t) { return (size_t)t->rows * (size_t)t->cols; }

fn_status fn_tensor_alloc(fn_tensor *t, int rows, int cols, fn_device device)
{
    if (!t)
        return fn_fail(FN_ERR_INVALID, "fn_tensor_alloc: tensor is NULL");
    *t = (fn_tensor){0};
    if (rows < 1 || cols < 1)
        return fn_fail(FN_ERR_INVALID, "fn_tensor_alloc: shape [%d, %d] has a size below 1",
                       rows, cols);
    size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
    void *data = NULL;
    if (device == FN_CUDA) {
        FN_TRY(fn_cuda_alloc(&data, bytes));
        fn_status st = fn_cuda_memset_zero(data, bytes);
        if (st != FN_OK) {
            fn_cuda_free(data);
            return st;
        }
    } else {
        data = calloc((size_t)rows * (size_t)cols, sizeof(float));
        if (!data)
            return fn_fail(FN_ERR_NOMEM, "out of host memory for a [%d, %d] tensor", rows, cols);
    }
    *t = (fn_tensor){.data = data, .rows = rows, .cols = cols, .device = device};
    return FN_OK;
}

void fn_tensor_free(fn_tensor *t)
{
    if (!t)
        return;
    if (t->device == FN_CUDA)
        fn_cuda_free(t->data);
    else
        free(t->data);
    *t = (fn_tensor){0};
}

fn_tensor fn_tensor_view(float *data, int rows, int cols, fn_device device)
{
    return (fn_tensor){.data = data, .rows = rows, .cols = cols, .device = device};
}

fn_tensor fn_tensor_rows(const fn_tensor *t, int row0, int n)
{
    return fn_tensor_view(t->data + (size_t)row0 * (size_t)t->cols, n, t->cols, t->device);
}

fn_status fn_tensor_zero(fn_tensor *t)
{
    FN_TRY(fn_tensor_check(t, "tensor", t ? t->rows : 0, t ? t->cols : 0));
    size_t bytes = fn_tensor_count(t) * sizeof(float);
    if (t->device == FN_CUDA)
        return fn_cuda_memset_zero(t->data, bytes);
    memset(t->data, 0, bytes);
    return FN_OK;
}

fn_status fn_tensor_copy(fn_tensor *dst, const fn_tensor *src)
{
    FN_TRY(fn_tensor_check(src, "copy source", src ? src->rows : 0, src ? src->cols : 0));
    FN_TRY(fn_tensor_check(dst, "copy destination", src->rows, src->cols));
    size_t bytes = fn_tensor_count(src) * sizeof(float);
    if (dst->device == FN_CPU && src->device == FN_CPU) {
        memmove(dst->data, src->data, bytes);
        return FN_OK;
    }
    return fn_cuda_copy(dst->data, dst->device, src->data, src->device, bytes);
}

fn_status fn_tensor_upload(fn_tensor *t, const float *host, size_t n)
{
    if (!host)
        return fn_fail(FN_ERR_INVALID, "fn_tensor_upload: host buffer is NULL");
    const fn_tensor src = fn_tensor_view((float *)host, t ? t->rows : 0, t ? t->cols : 0, FN_CPU);
    if (t && n != fn_tensor_count(t))
        return fn_fail(FN_ERR_INVALID, "fn_tensor_upload: %zu values for a [%d, %d] tensor", n,
                       t->rows, t->cols);
    return fn_tensor_copy(t, &src);
}

fn_status fn_tensor_download(const fn_tensor *t, float *host, size_t n)
{
    if (!host)
        return fn_fail(FN_ERR_INVALID, "fn_tensor_download: host buffer is NULL");
    fn_tensor dst = fn_tensor_view(host, t ? t->rows : 0, t ? t->cols : 0, FN_CPU);
    if (t && n != fn_tensor_count(t))
        return fn_fail(FN_ERR_INVALID, "fn_tensor_download: %zu values for a [%d, %d] tensor", n,
                       t->rows, t->cols);
    return fn_tensor_copy(&dst, t);
}

fn_status fn_tensor_check(const fn_tensor *t, const char *what, int rows, int cols)
{
    if (!t || !t->data)
        return fn_fail(FN_ERR_INVALID, "%s is NULL", what);
    if (t->rows != rows || t->cols != cols)
        return fn_fail(FN_ERR_INVALID, "%s has shape [%d, %d], expected [%d, %d]", what, t->rows,
                       t->cols, rows, cols);
    return FN_OK;
}

fn_status fn_tensor_check_on(const fn_tensor *t, const char *what, fn_device device, int rows,
                             int cols)
{
    FN_TRY(fn_tensor_check(t, what, rows, cols));
    if (t->device != device)
        return fn_fail(FN_ERR_INVALID, "%s is on the %s, expected the %s", what,
                       fn_device_name(t->device), fn_device_name(device));
    return FN_OK;
}
