/* cuda_check.h — error checks that say where: one macro per library (CUDA
 * runtime, cuBLAS, cuRAND), each turning a failure into an fn_status whose
 * message carries the library's own error text and this file:line. Used after
 * every call and every launch; FN_CUDA_DEBUG_SYNC adds a synchronise after
 * each launch so an asynchronous fault is reported at its kernel. */
#ifndef FUSENET_KERNELS_CUDA_CHECK_H
#define FUSENET_KERNELS_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include "fusenet/status.h"

extern "C" const char *fn_curand_error_string(curandStatus_t status);

/* Running out of device memory is its own status, so callers can say so. */
static inline fn_status fn_cuda_status(cudaError_t err, const char *what, const char *file, int line)
{
    fn_status s = err == cudaErrorMemoryAllocation ? FN_ERR_NOMEM
                  : (err == cudaErrorNoDevice || err == cudaErrorInvalidDevice ||
                     err == cudaErrorInsufficientDriver)
                      ? FN_ERR_NODEV
                      : FN_ERR_CUDA;
    return fn_fail(s, "%s:%d: %s: %s (%s)", file, line, what, cudaGetErrorString(err),
                   cudaGetErrorName(err));
}

/* A CUDA runtime call; FN_CUDA_CHECK_NAMED says `what` instead of the call. */
#define FN_CUDA_CHECK_NAMED(call, what)                                             \
    do {                                                                            \
        cudaError_t fn_err_ = (call);                                               \
        if (fn_err_ != cudaSuccess)                                                 \
            return fn_cuda_status(fn_err_, what, __FILE__, __LINE__);               \
    } while (0)

#define FN_CUDA_CHECK(call) FN_CUDA_CHECK_NAMED(call, #call)

#define FN_CUBLAS_CHECK(call)                                                       \
    do {                                                                            \
        cublasStatus_t fn_err_ = (call);                                            \
        if (fn_err_ != CUBLAS_STATUS_SUCCESS)                                       \
            return fn_fail(fn_err_ == CUBLAS_STATUS_ALLOC_FAILED ? FN_ERR_NOMEM     \
                                                                 : FN_ERR_CUDA,     \
                           "%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call,         \
                           cublasGetStatusString(fn_err_),                          \
                           cublasGetStatusName(fn_err_));                           \
    } while (0)

#define FN_CURAND_CHECK(call)                                                       \
    do {                                                                            \
        curandStatus_t fn_err_ = (call);                                            \
        if (fn_err_ != CURAND_STATUS_SUCCESS)                                       \
            return fn_fail(FN_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
                           fn_curand_error_string(fn_err_));                        \
    } while (0)

/* After a kernel launch: the launch error, and in debug builds the kernel's,
 * each naming the kernel ("launch of sgd_kernel", "after sgd_kernel"). */
#ifdef FN_CUDA_DEBUG_SYNC
#define FN_CUDA_CHECK_LAUNCH(name)                                                  \
    do {                                                                            \
        FN_CUDA_CHECK_NAMED(cudaGetLastError(), "launch of " #name);                \
        FN_CUDA_CHECK_NAMED(cudaDeviceSynchronize(), "after " #name);               \
    } while (0)
#else
#define FN_CUDA_CHECK_LAUNCH(name) FN_CUDA_CHECK_NAMED(cudaGetLastError(), "launch of " #name)
#endif

#endif
