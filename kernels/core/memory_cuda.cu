/* memory_cuda.cu — plain device memory for fn_tensor: cudaMalloc, zeroing and
 * synchronous copies between any pair of devices; and pinned (page-locked)
 * host memory, which asynchronous copies need to overlap with kernels. */
#include "core/cuda_runtime.h"
#include "core/cuda_check.h"

extern "C" fn_status fn_cuda_alloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    cudaError_t err = cudaMalloc(ptr, bytes);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        size_t free_bytes = 0, total = 0;
        cudaMemGetInfo(&free_bytes, &total);
        return fn_fail(FN_ERR_NOMEM, "out of GPU memory: asked for %zu MiB, %zu MiB free of %zu",
                       bytes >> 20, free_bytes >> 20, total >> 20);
    }
    FN_CUDA_CHECK(err);
    return FN_OK;
}

extern "C" void fn_cuda_free(void *ptr)
{
    if (ptr)
        cudaFree(ptr);
}

extern "C" fn_status fn_cuda_memset_zero(void *ptr, size_t bytes)
{
    FN_CUDA_CHECK(cudaMemset(ptr, 0, bytes));
    return FN_OK;
}

extern "C" fn_status fn_cuda_copy(void *dst, fn_device dst_device, const void *src,
                                  fn_device src_device, size_t bytes)
{
    cudaMemcpyKind kind = dst_device == FN_CUDA
                              ? (src_device == FN_CUDA ? cudaMemcpyDeviceToDevice
                                                       : cudaMemcpyHostToDevice)
                              : (src_device == FN_CUDA ? cudaMemcpyDeviceToHost
                                                       : cudaMemcpyHostToHost);
    FN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
    return FN_OK;
}

extern "C" fn_status fn_cuda_host_alloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    cudaError_t err = cudaHostAlloc(ptr, bytes, cudaHostAllocDefault);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return fn_fail(FN_ERR_NOMEM, "out of pinned host memory: asked for %zu MiB", bytes >> 20);
    }
    FN_CUDA_CHECK(err);
    return FN_OK;
}

extern "C" void fn_cuda_host_free(void *ptr)
{
    if (ptr)
        cudaFreeHost(ptr);
}

extern "C" fn_status fn_cuda_memory_free(int gpu, size_t *free_bytes, size_t *total)
{
    *free_bytes = *total = 0;
    FN_CUDA_CHECK(cudaSetDevice(gpu));
    FN_CUDA_CHECK(cudaMemGetInfo(free_bytes, total));
    return FN_OK;
}
