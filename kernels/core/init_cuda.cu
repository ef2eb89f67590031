/* init_cuda.cu — initialisation on the GPU: cuRAND's Philox generator through
 * its host API, generating into device memory (curandCreateGenerator; the
 * CPU side, src/core/init.c, uses curandCreateGeneratorHost), which gives the
 * same uniforms for the same seed and offset, and the transform to [lo, hi)
 * in the same float arithmetic as src/core/init.c (round-to-nearest multiply
 * then add, never fused). */
#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/kernel_launch_cuda.cuh"

extern "C" const char *fn_curand_error_string(curandStatus_t status)
{
    switch (status) {
    case CURAND_STATUS_SUCCESS: return "success";
    case CURAND_STATUS_VERSION_MISMATCH: return "header and library versions differ";
    case CURAND_STATUS_NOT_INITIALIZED: return "generator not initialised";
    case CURAND_STATUS_ALLOCATION_FAILED: return "memory allocation failed";
    case CURAND_STATUS_TYPE_ERROR: return "wrong generator type";
    case CURAND_STATUS_OUT_OF_RANGE: return "argument out of range";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "length not a multiple of the dimension";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "GPU lacks double precision";
    case CURAND_STATUS_LAUNCH_FAILURE: return "kernel launch failed";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "an earlier failure was not cleared";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "initialisation failed (no GPU?)";
    case CURAND_STATUS_ARCH_MISMATCH: return "GPU architecture not supported";
    case CURAND_STATUS_INTERNAL_ERROR: return "internal error";
    }
    return "unknown cuRAND status";
}

/* ---- kernels ---- */

__global__ void scale_uniform_kernel(float *out /* [n] */, size_t n, float lo, float hi)
{
    FN_GRID_WAIT();
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = __fadd_rn(lo, __fmul_rn(__fsub_rn(hi, lo), out[i]));
}

__global__ void fill_kernel(float *out /* [n] */, size_t n, float value)
{
    FN_GRID_WAIT();
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = value;
}

/* ---- launchers ---- */

static fn_status draw_uniform(curandGenerator_t gen, float *out, size_t n, uint64_t seed,
                              uint64_t offset)
{
    FN_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
    FN_CURAND_CHECK(curandSetGeneratorOffset(gen, offset));
    FN_CURAND_CHECK(curandGenerateUniform(gen, out, n));
    return FN_OK;
}

/* The generator (no curandSetStream) and the kernel run on the legacy
 * default stream, which the context's blocking stream is ordered with, so
 * work queued there later sees the values. */
extern "C" fn_status fn_cuda_init_uniform(float *out, size_t n, float lo, float hi, uint64_t seed,
                                          uint64_t offset)
{
    curandGenerator_t gen;
    FN_CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    fn_status st = draw_uniform(gen, out, n, seed, offset);
    curandDestroyGenerator(gen);
    FN_TRY(st);
    const int threads = 256;
    fn_launch(nullptr, scale_uniform_kernel, (unsigned)((n + threads - 1) / threads), threads, 0, 0,
              out, n, lo, hi);
    FN_CUDA_CHECK_LAUNCH(scale_uniform_kernel);
    return FN_OK;
}

extern "C" fn_status fn_cuda_fill(float *out, size_t n, float value)
{
    const int threads = 256;
    fn_launch(nullptr, fill_kernel, (unsigned)((n + threads - 1) / threads), threads, 0, 0, out, n,
              value);
    FN_CUDA_CHECK_LAUNCH(fill_kernel);
    return FN_OK;
}
