/* kernel_launch_cuda.cuh — how every fusenet kernel is launched, and how it
 * starts: programmatic dependent launch (PDL, sm_90 and later).
 *
 * fn_launch(ctx, kernel, grid, block, smem, stream, args...) replaces
 * `kernel<<<grid, block, smem, stream>>>(args...)`. When the context allows
 * PDL (fn_ctx_pdl) and its stream is being captured into a CUDA graph
 * (fn_launch_pdl) it launches with cudaLaunchKernelEx and the attribute
 * cudaLaunchAttributeProgrammaticStreamSerialization = 1: the kernel may be
 * scheduled while its predecessor on the stream is still running, which
 * hides the launch gap between the short kernels of a small network's step
 * (captured in a CUDA graph, each launch becomes a programmatic edge).
 * Like `<<<`, it returns nothing: the FN_CUDA_CHECK_LAUNCH(kernel) on the
 * next line reads the launch's error (cudaGetLastError reports the last
 * error of any runtime call, cudaLaunchKernelEx's included).
 *
 * The price of the early start: a kernel launched so must not touch memory
 * before FN_GRID_WAIT() (griddepcontrol.wait) returns, which waits until
 * every grid it depends on has completed and its writes are visible. The
 * rule that keeps this from being forgotten: EVERY __global__ function in
 * kernels/, src/ and scripts/ opens its body with FN_GRID_WAIT(); as its
 * first statement, before any declaration or early return, and no `<<<`
 * launch is left. The CPU test check_launches (scripts/check_launches.py)
 * fails on a kernel without it, on a `<<<`, on an fn_launch not followed by
 * its error check, and on the PDL attribute, cudaLaunchKernelEx or the
 * device-side wait used outside this file; so a new kernel cannot be
 * launched early without waiting. The rule is on every kernel, launched
 * through fn_launch or not, so the check need not follow launches to their
 * kernels. A kernel that waits when launched without the attribute loses
 * nothing: the wait returns at once. Since every kernel waits before it
 * can finish, a kernel completes only after its predecessors: ordering
 * stays transitive for the ordinary launches (cuBLAS's products, copies,
 * events) that follow.
 *
 * FN_GRID_WAIT() also triggers the launch of the kernel's own dependents
 * (griddepcontrol.launch_dependents) right after the wait. That moves only
 * when the next kernel is scheduled, never what it sees: its own wait still
 * waits for this whole grid to complete and flush its memory. Triggering
 * after (not before) the wait keeps at most one grid parked ahead of the
 * running one.
 *
 * The switch: FUSENET_PDL=0 in the environment when a context is created
 * turns PDL off for it (every launch then is an ordinary one, ordered as
 * `<<<` orders it); a GPU older than sm_90, or code compiled for one and
 * JIT-compiled (without the wait), never uses it (device_cuda.cu). It is
 * there for side-by-side timings and as a safety valve
 * (docs/performance.md). Launches without a context (ctx == NULL: the
 * initialisers on the legacy default stream) are ordinary ones.
 *
 * Dynamic shared memory: `smem` is passed through as the launch's dynamic
 * shared memory, as `<<<`'s third argument was (every kernel today uses
 * static shared memory only and passes 0). */
#ifndef FUSENET_KERNELS_KERNEL_LAUNCH_CUDA_CUH
#define FUSENET_KERNELS_KERNEL_LAUNCH_CUDA_CUH

#include <cuda_runtime.h>
#include <stddef.h>

#include <type_traits>

#include "core/cuda_state.h"

/* The first statement of every kernel: wait for the grids this one depends
 * on (a no-op when launched without the PDL attribute), then let its own
 * dependents be scheduled. */
#define FN_GRID_WAIT() fn_grid_wait()

static __device__ __forceinline__ void fn_grid_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

/* 1 when launches on this context may use PDL. */
static inline int fn_ctx_pdl(const fn_context *ctx)
{
    return ctx != NULL && ctx->cuda != NULL && ctx->cuda->pdl;
}

/* 1 when this launch uses it: only into a graph being captured. Launched
 * one by one, kernels with the attribute made a small network's step
 * slower, where in a graph they made it faster (docs/performance.md). */
static inline int fn_launch_pdl(const fn_context *ctx)
{
    return fn_ctx_pdl(ctx) && ctx->cuda->capturing;
}

/* The arguments convert to the kernel's parameter types as in a call
 * (NULL to a pointer), as `<<<` converts them. */
template <typename... Params>
static inline void fn_launch(const fn_context *ctx, void (*kernel)(Params...), dim3 grid,
                             dim3 block, size_t smem, cudaStream_t stream,
                             std::type_identity_t<Params>... args)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = fn_launch_pdl(ctx) ? 1u : 0u;
    /* The error stays the runtime's last error, for FN_CUDA_CHECK_LAUNCH. */
    (void)cudaLaunchKernelEx(&cfg, kernel, args...);
}

#endif
