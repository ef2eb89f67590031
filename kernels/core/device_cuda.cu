/* device_cuda.cu — the GPU half of fn_context: device selection with a clear
 * error when there is no GPU, one stream, one cuBLAS handle on that stream in
 * deterministic mode, a cuBLASLt handle and the table of its chosen
 * algorithms, a side stream with the events that fork work onto it and join
 * it back, each stream's cuBLAS workspace, the device's multiprocessor
 * count and whether kernels launch with PDL (FUSENET_PDL). Before any of
 * that, the check that this build has code for the GPU and that the GPU has
 * what the math mode needs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_runtime.h"
#include "core/cuda_check.h"
#include "core/cuda_state.h"
#include "core/gemm_lt_cuda.h"
#include "core/kernel_launch_cuda.cuh"
#include "fusenet/version.h"

/* cuBLAS's recommended workspace for Hopper; set explicitly so cuBLAS never
 * allocates inside a step. */
static const size_t kCublasWorkspaceBytes = 32u << 20;

extern "C" int fn_cuda_count_devices(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
}

extern "C" void fn_cuda_device_label(int gpu, char *buf, size_t cap)
{
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, gpu) != cudaSuccess) {
        cudaGetLastError();
        snprintf(buf, cap, "cuda:%d", gpu);
        return;
    }
    snprintf(buf, cap, "cuda:%d %s", gpu, prop.name);
}

/* Never launched: cudaFuncGetAttributes on it says whether the binary
 * holds machine code the GPU runs or PTX its driver can compile. */
__global__ void arch_probe_kernel(int *out) { FN_GRID_WAIT(); *out = 0; }

/* A GPU the build has no code for fails here, at start, naming its compute
 * capability and the option that adds it, never with a kernel failure
 * mid-run. tf32, tf32x3 and bf16 use the tensor cores' TF32 and bfloat16,
 * which compute capability 8.0 (Ampere) brought. */
static fn_status check_gpu(int gpu, fn_math math)
{
    int major = 0, minor = 0;
    FN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, gpu));
    FN_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, gpu));
    cudaFuncAttributes attrs;
    cudaError_t err = cudaFuncGetAttributes(&attrs, arch_probe_kernel);
    if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction ||
        err == cudaErrorUnsupportedPtxVersion) {
        cudaGetLastError(); /* not sticky, but cleared all the same */
        return fn_fail(FN_ERR_NODEV,
                       "GPU %d has compute capability %d.%d, and this build of fusenet has no code "
                       "for it (built for %s): rebuild with -DCMAKE_CUDA_ARCHITECTURES=%d%d (or "
                       "native, for the GPUs of the building machine)",
                       gpu, major, minor, fn_build_cuda_archs(), major, minor);
    }
    FN_CUDA_CHECK(err);
    if (math != FN_MATH_FP32 && major < 8)
        return fn_fail(FN_ERR_NODEV,
                       "math = %s needs a GPU of compute capability 8.0 or later (Ampere), and GPU "
                       "%d has %d.%d; use math = fp32",
                       fn_math_name(math), gpu, major, minor);
    return FN_OK;
}

/* Programmatic dependent launch (kernel_launch_cuda.cuh) on GPUs of sm_90
 * and later running code compiled for sm_90 or later (where FN_GRID_WAIT
 * is compiled in: code JIT-compiled from older PTX has no wait), unless the
 * environment says FUSENET_PDL=0. The probe stands for every kernel: one
 * build compiles them all for the same architectures. */
static fn_status pdl_allowed(int *pdl, int gpu)
{
    int major = 0;
    FN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, gpu));
    cudaFuncAttributes attrs;
    FN_CUDA_CHECK(cudaFuncGetAttributes(&attrs, arch_probe_kernel));
    const char *env = getenv("FUSENET_PDL");
    *pdl = major >= 9 && attrs.ptxVersion >= 90 && !(env && strcmp(env, "0") == 0);
    return FN_OK;
}

static fn_status create_state(fn_cuda_state *s, int gpu)
{
    FN_CUDA_CHECK(cudaDeviceGetAttribute(&s->sm_count, cudaDevAttrMultiProcessorCount, gpu));
    FN_TRY(pdl_allowed(&s->pdl, gpu));
    /* A blocking stream, so the synchronous copies of memory_cuda.cu (legacy
     * default stream) are ordered after the kernels queued here. */
    FN_CUDA_CHECK(cudaStreamCreate(&s->own_stream));
    s->stream = s->own_stream;
    FN_CUDA_CHECK(cudaEventCreateWithFlags(&s->switch_event, cudaEventDisableTiming));
    FN_CUBLAS_CHECK(cublasCreate(&s->cublas));
    FN_CUBLAS_CHECK(cublasSetStream(s->cublas, s->stream));
    /* Bit-identical runs: no atomics-based reductions inside cuBLAS. */
    FN_CUBLAS_CHECK(cublasSetAtomicsMode(s->cublas, CUBLAS_ATOMICS_NOT_ALLOWED));
    /* Blocking too, for the same reason. */
    FN_CUDA_CHECK(cudaStreamCreate(&s->side_stream));
    FN_CUDA_CHECK(cudaEventCreateWithFlags(&s->fork_event, cudaEventDisableTiming));
    FN_CUDA_CHECK(cudaEventCreateWithFlags(&s->join_event, cudaEventDisableTiming));
    FN_CUDA_CHECK(cudaMalloc(&s->cublas_workspace, kCublasWorkspaceBytes));
    FN_CUDA_CHECK(cudaMalloc(&s->side_workspace, kCublasWorkspaceBytes));
    s->cublas_workspace_bytes = kCublasWorkspaceBytes;
    FN_CUBLAS_CHECK(cublasSetWorkspace(s->cublas, s->cublas_workspace, kCublasWorkspaceBytes));
    FN_CUBLAS_CHECK(cublasLtCreate(&s->lt));
    FN_TRY(fn_gemm_lt_cache_create(&s->gemm_algos));
    FN_CUDA_CHECK(cudaMalloc(&s->reduce, (FN_CUDA_REDUCE_SLOTS + 1) * sizeof(double)));
    return FN_OK;
}

extern "C" int fn_cuda_context_pdl(const fn_context *ctx) { return fn_ctx_pdl(ctx); }

extern "C" fn_status fn_cuda_context_init(fn_context *ctx, int gpu)
{
    int n = fn_cuda_count_devices();
    if (n == 0)
        return fn_fail(FN_ERR_NODEV, "no CUDA GPU is present (cudaGetDeviceCount found none)");
    if (gpu < 0 || gpu >= n)
        return fn_fail(FN_ERR_NODEV, "GPU %d does not exist: this machine has %d (0..%d)", gpu, n,
                       n - 1);
    FN_CUDA_CHECK(cudaSetDevice(gpu));
    FN_TRY(check_gpu(gpu, ctx->math));
    fn_cuda_state *s = (fn_cuda_state *)calloc(1, sizeof *s);
    if (!s)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the CUDA context");
    ctx->cuda = s;
    ctx->gpu = gpu;
    fn_status st = create_state(s, gpu);
    if (st != FN_OK) {
        fn_cuda_context_release(ctx);
        return st;
    }
    return FN_OK;
}

extern "C" void fn_cuda_context_release(fn_context *ctx)
{
    fn_cuda_state *s = ctx->cuda;
    if (!s)
        return;
    if (s->stream)
        cudaStreamSynchronize(s->stream);
    if (s->own_stream)
        cudaStreamSynchronize(s->own_stream);
    if (s->side_stream)
        cudaStreamSynchronize(s->side_stream);
    if (s->cublas)
        cublasDestroy(s->cublas);
    if (s->lt)
        cublasLtDestroy(s->lt);
    fn_gemm_lt_cache_destroy(s->gemm_algos);
    cudaFree(s->cublas_workspace);
    cudaFree(s->side_workspace);
    if (s->fork_event)
        cudaEventDestroy(s->fork_event);
    if (s->join_event)
        cudaEventDestroy(s->join_event);
    if (s->side_stream)
        cudaStreamDestroy(s->side_stream);
    cudaFree(s->reduce);
    if (s->switch_event)
        cudaEventDestroy(s->switch_event);
    if (s->own_stream)
        cudaStreamDestroy(s->own_stream); /* never a caller's stream */
    free(s);
    ctx->cuda = NULL;
}

extern "C" fn_status fn_cuda_context_use_stream(fn_context *ctx, void *stream, int own)
{
    fn_cuda_state *s = ctx->cuda;
    cudaStream_t next = own ? s->own_stream : (cudaStream_t)stream;
    if (s->on_side)
        return fn_fail(FN_ERR_INVALID, "fn_context_use_stream: called between a side stream's "
                                       "begin and end");
    if (next == s->stream)
        return FN_OK;
    FN_CUDA_CHECK(cudaSetDevice(ctx->gpu));
    /* Across the edge of a capture (a caller capturing its stream into a
     * CUDA graph, as torch.cuda.graph does) there is no order to keep, and
     * none may be made: a capturing stream may not wait on an event
     * recorded outside its capture, and a stream waiting on a captured
     * event would join the capture. The caller orders that edge (PyTorch
     * synchronises before it captures). Between two streams of one
     * capture the event is the fork or join the graph records. */
    cudaStreamCaptureStatus was = cudaStreamCaptureStatusNone, will = cudaStreamCaptureStatusNone;
    FN_CUDA_CHECK(cudaStreamIsCapturing(s->stream, &was));
    FN_CUDA_CHECK(cudaStreamIsCapturing(next, &will));
    if ((was == cudaStreamCaptureStatusNone) == (will == cudaStreamCaptureStatusNone)) {
        FN_CUDA_CHECK(cudaEventRecord(s->switch_event, s->stream));
        FN_CUDA_CHECK(cudaStreamWaitEvent(next, s->switch_event, 0));
    }
    FN_CUBLAS_CHECK(cublasSetStream(s->cublas, next));
    s->stream = next;
    return FN_OK;
}

extern "C" fn_status fn_cuda_side_begin(fn_context *ctx)
{
    fn_cuda_state *s = ctx->cuda;
    FN_CUDA_CHECK(cudaEventRecord(s->fork_event, s->stream));
    FN_CUDA_CHECK(cudaStreamWaitEvent(s->side_stream, s->fork_event, 0));
    s->on_side = 1;
    return FN_OK;
}

extern "C" void fn_cuda_side_end(fn_context *ctx) { ctx->cuda->on_side = 0; }

extern "C" fn_status fn_cuda_join(fn_context *ctx)
{
    fn_cuda_state *s = ctx->cuda;
    FN_CUDA_CHECK(cudaEventRecord(s->join_event, s->side_stream));
    FN_CUDA_CHECK(cudaStreamWaitEvent(s->stream, s->join_event, 0));
    return FN_OK;
}

extern "C" fn_status fn_cuda_context_sync(fn_context *ctx)
{
    FN_CUDA_CHECK(cudaStreamSynchronize(ctx->cuda->stream));
    return FN_OK;
}
