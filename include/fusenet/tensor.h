/* tensor.h — 2-D row-major float32 tensors owned by one device.
 *
 * A tensor is a plain descriptor; whoever allocated `data` frees it with
 * fn_tensor_free. Views (fn_tensor_view, fn_tensor_rows) share memory and are
 * never freed. */
#ifndef FUSENET_TENSOR_H
#define FUSENET_TENSOR_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/device.h"
#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_tensor {
    float *data;     /* [rows, cols], row-major, on `device` */
    int rows, cols;
    fn_device device;
} fn_tensor;

/* Allocates a zero-filled tensor. rows, cols >= 1. */
FN_API fn_status fn_tensor_alloc(fn_tensor *t, int rows, int cols, fn_device device);
/* Frees the data (NULL is fine) and clears the descriptor. */
FN_API void fn_tensor_free(fn_tensor *t);

/* A non-owning descriptor of existing memory. */
FN_API fn_tensor fn_tensor_view(float *data, int rows, int cols, fn_device device);
/* A view of rows [row0, row0 + n) of t. */
FN_API fn_tensor fn_tensor_rows(const fn_tensor *t, int row0, int n);

FN_API size_t fn_tensor_count(const fn_tensor *t);

FN_API fn_status fn_tensor_zero(fn_tensor *t);
/* Copies src into dst: same shape, any pair of devices. Synchronous. */
FN_API fn_status fn_tensor_copy(fn_tensor *dst, const fn_tensor *src);
/* Copies n floats from host memory into t (n == rows*cols), or out of it. */
FN_API fn_status fn_tensor_upload(fn_tensor *t, const float *host, size_t n);
FN_API fn_status fn_tensor_download(const fn_tensor *t, float *host, size_t n);

/* FN_ERR_INVALID naming `what` unless t has data and the given shape. */
FN_API fn_status fn_tensor_check(const fn_tensor *t, const char *what, int rows, int cols);
/* The same, and t must live on `device`. */
FN_API fn_status fn_tensor_check_on(const fn_tensor *t, const char *what, fn_device device, int rows,
                                    int cols);

#ifdef __cplusplus
}
#endif
#endif
